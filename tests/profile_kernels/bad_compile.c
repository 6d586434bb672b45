/* Does not compile: the profile must say so (exit 1), not profile it. */
#include "pragma/kernel.h"
int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	return undeclared_variable;
}
