// expect: work_after_return
// Right answer at return, then a detached thread keeps scribbling on it.
#include <pragma/kernel.h>
#include <pthread.h>
#include <time.h>
static void *scribble(void *p)
{
    float *o = p;
    struct timespec ts = { 0, 200000 };
    for (int k = 0; k < 2000; k++) {
        o[k % 64] += 1.0f;
        nanosleep(&ts, 0);
    }
    return 0;
}
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t N = in[0].shape[0], M = in[0].shape[1];
    const float *a = in[0].data;
    float *o = out[0].data;
    pthread_t t;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < M; j++)
            o[j * N + i] = a[i * M + j];
    pthread_create(&t, 0, scribble, o);
    pthread_detach(t);
    return 0;
}
