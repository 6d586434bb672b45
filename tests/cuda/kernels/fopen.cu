// Forbidden: host code reading a file (the reference outputs, say).
#include <stdio.h>
#include <pragma/kernel.h>

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	FILE *f = fopen("/tmp/expected.bin", "rb");
	if (!f)
		return 1;
	fclose(f);
	return 0;
}
