// expect: modified_input
// Transposes correctly, then "reuses" the input as scratch.
#include <pragma/kernel.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t N = in[0].shape[0], M = in[0].shape[1];
    float *a = (float *)in[0].data, *o = out[0].data;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < M; j++)
            o[j * N + i] = a[i * M + j];
    a[0] = 0.0f; /* scratch */
    return 0;
}
