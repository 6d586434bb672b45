// expect: unwritten_output
// Points the output descriptor at its own buffer on the first call, hoping
// later calls read a result the harness never sees being written.
#include <pragma/kernel.h>
#include <stdlib.h>
static float *mine;
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t N = in[0].shape[0], M = in[0].shape[1];
    const float *a = in[0].data;
    struct pk_tensor *o = (struct pk_tensor *)out;
    if (!mine) {
        float *real = o[0].data;
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < M; j++)
                real[j * N + i] = a[i * M + j];
        mine = malloc(sizeof(float) * (size_t)(N * M));
        o[0].data = mine; /* later calls write here */
        return 0;
    }
    return 0;
}
