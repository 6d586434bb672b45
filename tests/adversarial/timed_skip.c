// expect: timed_mismatch
// command: eval
// Right for the first 15 calls in a process (the verification makes 15),
// then skips the work: the timing processes call it more often.
#include <pragma/kernel.h>
static int calls;
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t N = in[0].shape[0], M = in[0].shape[1];
    const float *a = in[0].data;
    float *o = out[0].data;
    if (++calls > 15)
        return 0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < M; j++)
            o[j * N + i] = a[i * M + j];
    return 0;
}
