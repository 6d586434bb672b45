/* nbody_forces reference: O(N^2) softened gravitational accelerations in
 * float32, one body at a time, j summed in order. */
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

    const float *pos = (const float *)p->data;
    const float *mass = (const float *)m->data;
    float *acc = (float *)a->data;
    const float eps2 = 0.01f;

    for (int64_t i = 0; i < N; i++) {
        float ax = 0.0f, ay = 0.0f, az = 0.0f;
        for (int64_t j = 0; j < N; j++) {
            float dx = pos[j * 3 + 0] - pos[i * 3 + 0];
            float dy = pos[j * 3 + 1] - pos[i * 3 + 1];
            float dz = pos[j * 3 + 2] - pos[i * 3 + 2];
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
