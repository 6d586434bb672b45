// expect: memory_limit
// Asks for 100 GB of scratch and does not check what malloc returned.
#include <pragma/kernel.h>
#include <stdlib.h>
#include <string.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t N = in[0].shape[0], M = in[0].shape[1];
    const float *a = in[0].data;
    float *scratch = malloc((size_t)100 << 30);
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < M; j++)
            scratch[j * N + i] = a[i * M + j];
    memcpy(out[0].data, scratch, sizeof(float) * (size_t)(N * M));
    free(scratch);
    return 0;
}
