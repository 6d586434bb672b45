// Forbidden: starting a process from host code.
#include <stdlib.h>
#include <pragma/kernel.h>

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	(void)in;
	(void)n_in;
	(void)out;
	(void)n_out;
	return system("cp /tmp/expected.npy /tmp/out.npy");
}
