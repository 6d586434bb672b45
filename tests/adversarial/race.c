// expect: nondeterministic
// Threads race on shared, unsynchronized state that feeds the output: a
// counter with lost updates, and a last-writer-wins element. When the
// machine runs the two threads one after the other the race has nothing to
// lose, so the element also takes the microsecond the last writer finished
// at: the outcome then still differs from call to call, as a race's does.
#include <pragma/kernel.h>
#include <omp.h>
#include <time.h>
static volatile long counter;
static volatile int last;
static volatile long finished_us;
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t N = in[0].shape[0], M = in[0].shape[1];
    const float *a = in[0].data;
    float *o = out[0].data;
    counter = 0;
    #pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num();
        #pragma omp barrier
        for (int k = 0; k < 2000000; k++) {
            counter = counter + 1; /* lost updates: the count varies run to run */
            if ((k & 1023) == 0)
                last = me;         /* whoever writes last wins */
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        finished_us = ts.tv_nsec / 1000;   /* and when it finished */
    }
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < M; j++)
            o[j * N + i] = a[i * M + j];
    o[0] += (float)(counter % 1000);
    o[1] += (float)last + (float)(finished_us % 1000);
    return 0;
}
