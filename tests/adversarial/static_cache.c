// expect: output_cached
// Computes once, then returns the stored result on every later call.
#include <pragma/kernel.h>
#include <stdlib.h>
#include <string.h>
static float *cache;
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t N = in[0].shape[0], M = in[0].shape[1];
    const float *a = in[0].data;
    float *o = out[0].data;
    if (!cache) {
        cache = malloc(sizeof(float) * (size_t)(N * M));
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < M; j++)
                cache[j * N + i] = a[i * M + j];
    }
    memcpy(o, cache, sizeof(float) * (size_t)(N * M));
    return 0;
}
