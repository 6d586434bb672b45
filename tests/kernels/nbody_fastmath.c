// task: nbody_forces --set N=2048
// Honest reordering: -ffast-math vectorizes the inner loop (8 lanes summed
// in another order) and turns 1/sqrtf into rsqrt plus a Newton step.
// pragma:flags -ffast-math
/* nbody_forces baseline: the reference with the outer loop split across
 * OpenMP threads and the inner loop marked as a SIMD reduction. Note: with
 * plain -O3 GCC still does not vectorize the inner loop, because sqrtf keeps
 * its errno branch (only -fno-math-errno or -ffast-math removes it), so this
 * baseline is essentially the reference on all cores. Same formula; only the
 * summation order may differ. */
#include <pragma/kernel.h>
#include <math.h>
#include <stdint.h>

int pk_forward(const struct pk_tensor *inputs, int n_inputs,
               struct pk_tensor *outputs, int n_outputs)
{
    if (n_inputs != 2 || n_outputs != 1) return 1;
    const struct pk_tensor *p = &inputs[0], *m = &inputs[1];
    struct pk_tensor *a = &outputs[0];
    if (p->dtype != PK_FLOAT32 || m->dtype != PK_FLOAT32 ||
        a->dtype != PK_FLOAT32) return 2;
    if (p->ndim != 2 || p->shape[1] != 3 || m->ndim != 1 ||
        a->ndim != 2 || a->shape[1] != 3) return 3;
    int64_t N = p->shape[0];
    if (m->shape[0] != N || a->shape[0] != N) return 4;

    const float *restrict pos = (const float *)p->data;
    const float *restrict mass = (const float *)m->data;
    float *restrict acc = (float *)a->data;
    const float eps2 = 0.01f;

    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < N; i++) {
        float px = pos[i * 3 + 0], py = pos[i * 3 + 1], pz = pos[i * 3 + 2];
        float ax = 0.0f, ay = 0.0f, az = 0.0f;
        #pragma omp simd reduction(+:ax, ay, az)
        for (int64_t j = 0; j < N; j++) {
            float dx = pos[j * 3 + 0] - px;
            float dy = pos[j * 3 + 1] - py;
            float dz = pos[j * 3 + 2] - pz;
            float r2 = dx * dx + dy * dy + dz * dz + eps2;
            float inv_r = 1.0f / sqrtf(r2);
            float s = mass[j] * inv_r * inv_r * inv_r;
            ax += s * dx;
            ay += s * dy;
            az += s * dz;
        }
        acc[i * 3 + 0] = ax;
        acc[i * 3 + 1] = ay;
        acc[i * 3 + 2] = az;
    }
    return 0;
}
