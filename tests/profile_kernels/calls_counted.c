/* 13_relu through two calls, each in an innermost loop: relu_rare runs
 * once per row (a loop of BATCH iterations), relu_hot once per element.
 * Both are "inside an innermost loop" to the static collector; only the
 * simulation's counts tell the one that costs from the one that runs a
 * handful of times (a player was told "calls memcpy inside an innermost
 * loop" of a call that ran for one tile of 64 rows). noipa keeps each a
 * real call. */
#include <stdint.h>
#include "pragma/kernel.h"

__attribute__((noipa)) static float relu_rare(float v)
{
	return v > 0 ? v : 0.0f;
}

__attribute__((noipa)) static float relu_hot(float v)
{
	return v > 0 ? v : 0.0f;
}

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t rows = in[0].shape[0], cols = in[0].shape[1];

	(void)n_in;
	(void)n_out;
	for (int64_t r = 0; r < rows; r++)
		y[r * cols] = relu_rare(x[r * cols]);
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 1; c < cols; c++)
			y[r * cols + c] = relu_hot(x[r * cols + c]);
	return 0;
}
