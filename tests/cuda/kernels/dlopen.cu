// Forbidden: loading a library at run time (cuBLAS, say, behind the
// import check's back).
#include <dlfcn.h>
#include <pragma/kernel.h>

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	void *h = dlopen("libcublas.so.13", RTLD_NOW);
	(void)in;
	(void)n_in;
	(void)out;
	(void)n_out;
	return h ? 0 : 1;
}
