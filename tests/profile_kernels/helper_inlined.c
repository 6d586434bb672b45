/* A loop whose body is mostly an inlined helper from the same file: the
 * helper's one line holds five FMAs, the loop's own line only its counter
 * and jump. The loop must be named by its own line (28), not the helper's
 * (17), where most of its instructions come from. */
#include <stdint.h>
#include "pragma/kernel.h"

/*
 * A polynomial in Horner form, on one line so that all its instructions
 * carry that line.
 *
 *
 *
 */
static inline float poly(float x)
{
	return ((((x * 0.5f + 1.0f) * x + 0.25f) * x + 0.125f) * x + 0.0625f) * x + 0.03125f;
}

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t n = in[0].shape[0] * in[0].shape[1];

	(void)n_in;
	(void)n_out;
	for (int64_t i = 0; i < n; i++)
		y[i] = poly(x[i]);
	return 0;
}
