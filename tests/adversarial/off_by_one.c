// expect: wrong_output
// Clears the output, then misses the last row of the input.
#include <pragma/kernel.h>
#include <string.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t N = in[0].shape[0], M = in[0].shape[1];
    const float *a = in[0].data;
    float *o = out[0].data;
    memset(o, 0, sizeof(float) * (size_t)(N * M));
    for (int64_t i = 0; i < N - 1; i++)
        for (int64_t j = 0; j < M; j++)
            o[j * N + i] = a[i * M + j];
    return 0;
}
