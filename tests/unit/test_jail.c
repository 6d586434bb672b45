/* The compiler jail (issue 12 item 4, issue 14): gcc, clang and nvcc run
 * under Landlock with read access to the system's programs, headers and
 * libraries, the few /etc files toolchains open, their own installation and
 * pragma's headers — nothing else. A kernel that .incbin's or #include's
 * /etc/shadow, /proc/self/environ or a file in the user's home fails to
 * compile; ordinary kernels (OpenMP, immintrin.h, math.h; cuda_fp16.h, CUB)
 * still build. Each refusal has a control: the same kernel built without
 * the jail does carry the file, so the test shows the jail is what stops
 * it. Skipped (with the reason) without Landlock, a compiler or nvcc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pragma_test.h"

#include "pragma/buf.h"
#include "pragma/build.h"
#include "pragma/cuda.h"
#include "pragma/fs.h"
#include "pragma/run.h"

static char work[256];
static char home_secret[4096];     /* a file we create under $HOME */
static const char home_marker[] = "pragma-jail-test-home-secret-4f1c";

static int setup(void **state)
{
	char tmpl[] = "/tmp/pragma-jail-XXXXXX";
	const char *home = getenv("HOME");
	FILE *f;

	(void)state;
	if (!mkdtemp(tmpl))
		return -1;
	snprintf(work, sizeof(work), "%s", tmpl);
	setenv("PRAGMA_CACHE_DIR", work, 1);
	home_secret[0] = '\0';
	/* A home directory that is not under a place the jail grants. */
	if (home && *home && strncmp(home, "/usr", 4) && strncmp(home, "/tmp", 4) && access(home, W_OK) == 0) {
		snprintf(home_secret, sizeof(home_secret), "%s/.pragma-jail-test-%d.h", home, (int)getpid());
		f = fopen(home_secret, "w");
		if (!f) {
			home_secret[0] = '\0';
		} else {
			fprintf(f, "__attribute__((used)) static const char secret[] = \"%s\";\n", home_marker);
			fclose(f);
		}
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (home_secret[0])
		unlink(home_secret);
	pragma_rm_rf(work, NULL);
	return 0;
}

static int have_landlock(void)
{
	char why[160];

	return pragma_landlock_abi(why, sizeof(why)) > 0;
}

static int have_prog(const char *p)
{
	return pragma_which(p, NULL);
}

static const char *write_src(const char *name, const char *text)
{
	static char path[4][512];
	static int k;
	FILE *f;

	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s/%s", work, name);
	f = fopen(path[k], "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path[k];
}

/* Does the built object contain marker? */
static int so_contains(const char *so, const char *marker)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;
	int found = 0;

	if (pragma_read_file(so, &b, 64 << 20, NULL) == 0)
		found = memmem(b.data, b.len, marker, strlen(marker)) != NULL;
	pragma_buf_release(&b);
	return found;
}

/* Build src with cc ("nvcc" for CUDA), jailed or not. 0 on success; the
 * log and error message are left in log/err. */
static int build(const char *cc, const char *src, int confine, const char *so, struct pragma_buf *log,
		 struct pragma_err *err)
{
	pragma_buf_reset(log);
	*err = (struct pragma_err)PRAGMA_ERR_INIT;
	if (!strcmp(cc, "nvcc")) {
		struct pragma_cuda_build_opts o = { .arch = "sm_80", .confine = confine };
		return pragma_cuda_build_so(src, so, &o, log, err);
	}
	struct pragma_build_opts o = { .compiler = cc, .confine = confine };
	return pragma_build_so(src, so, &o, log, err);
}

/* A kernel whose object embeds PATH by .incbin (host code in the .cu). */
static void incbin_kernel(const char *path, int cuda, struct pragma_buf *out)
{
	pragma_buf_reset(out);
	pragma_buf_addf(out,
			"#include <pragma/kernel.h>\n"
			"__asm__(\".section .rodata\\n.globl stolen\\nstolen:\\n.incbin \\\"%s\\\"\\n.byte 0\\n"
			".previous\\n\");\n"
			"%sconst char stolen[];\n"
			"%sint pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)\n"
			"{ (void)in; (void)n_in; (void)out; (void)n_out; return stolen[0] == 1; }\n",
			path, cuda ? "extern \"C\" " : "extern ", cuda ? "extern \"C\" " : "");
}

struct probe {
	const char *what;
	const char *path;             /* the file a kernel tries to take */
	const char *marker;           /* text the unjailed object then carries; NULL: no control */
	int include;                  /* #include instead of .incbin */
};

/* Every probe fails in the jail, naming the file; where the file is
 * readable to this user, the control build without the jail succeeds and
 * carries it. */
static void check_compiler(const char *cc, int cuda)
{
	struct probe probes[5];
	struct pragma_buf src = PRAGMA_BUF_INIT, log = PRAGMA_BUF_INIT;
	struct pragma_err err;
	char so[600];
	int n = 0, checked = 0;

	probes[n++] = (struct probe){ "/etc/shadow", "/etc/shadow", access("/etc/shadow", R_OK) ? NULL : ":", 0 };
	probes[n++] = (struct probe){ "/etc/passwd", "/etc/passwd", "root:", 0 };
	probes[n++] = (struct probe){ "/proc/self/environ", "/proc/self/environ", NULL, 0 };
	if (home_secret[0]) {
		probes[n++] = (struct probe){ "a file in $HOME (.incbin)", home_secret, home_marker, 0 };
		probes[n++] = (struct probe){ "a file in $HOME (#include)", home_secret, home_marker, 1 };
	} else {
		print_message("note: no writable home directory outside /usr and /tmp; $HOME probes skipped\n");
	}
	snprintf(so, sizeof(so), "%s/probe.so", work);
	for (int i = 0; i < n; i++) {
		const char *path;
		if (probes[i].include) {
			pragma_buf_reset(&src);
			pragma_buf_addf(&src,
					"#include <pragma/kernel.h>\n#include \"%s\"\n"
					"%sint pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, "
					"int n_out)\n{ (void)in; (void)n_in; (void)out; (void)n_out; const char *volatile p = secret; return p[0] == 0; }\n",
					probes[i].path, cuda ? "extern \"C\" " : "");
		} else {
			incbin_kernel(probes[i].path, cuda, &src);
		}
		path = write_src(cuda ? "probe.cu" : "probe.c", src.data);
		unlink(so);
		if (build(cc, path, 1, so, &log, &err) == 0)
			fail_msg("%s: a kernel taking %s compiled in the jail%s", cc, probes[i].what,
				 so_contains(so, probes[i].marker ? probes[i].marker : "=") ? " (and carries it)" : "");
		assert_int_equal(err.kind, PRAGMA_E_NEGATIVE);
		if (!strstr(log.data, probes[i].path) && !strstr(err.msg, probes[i].path))
			fail_msg("%s: the failure does not name %s: %s\n%s", cc, probes[i].path, err.msg, log.data);
		/* The jail's private directory means nothing to the author or
		 * to a model reading the log: the source goes by its own name. */
		if (strstr(log.data, "/.cc-") || strstr(log.data, "/.nvcc-") || strstr(err.msg, "/.cc-") ||
		    strstr(err.msg, "/.nvcc-"))
			fail_msg("%s: the log names the jail's directory: %s\n%s", cc, err.msg, log.data);
		if (probes[i].include && !strstr(log.data, cuda ? "kernel.cu:" : "probe.c:"))
			fail_msg("%s: the log does not name the source as %s: %s", cc, cuda ? "kernel.cu" : "probe.c",
				 log.data);
		if (probes[i].marker) {
			unlink(so);
			if (build(cc, path, 0, so, &log, &err) != 0)
				fail_msg("%s: control build without the jail failed for %s: %s\n%s", cc, probes[i].what,
					 err.msg, log.data);
			if (!so_contains(so, probes[i].marker))
				fail_msg("%s: control object lacks %s", cc, probes[i].what);
			checked++;
		}
	}
	assert_true(checked >= 1);
	pragma_buf_release(&src);
	pragma_buf_release(&log);
}

static const char c_kernel[] =
	"#include <pragma/kernel.h>\n"
	"#include <immintrin.h>\n"
	"#include <math.h>\n"
	"#include <omp.h>\n"
	"#include <stdlib.h>\n"
	"int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)\n"
	"{\n"
	"	const float *x = in[0].data;\n"
	"	float *y = out[0].data;\n"
	"	long n = in[0].shape[0];\n"
	"	(void)n_in; (void)n_out;\n"
	"	#pragma omp parallel for\n"
	"	for (long i = 0; i < n; i++)\n"
	"		y[i] = expf(x[i]) + (float)omp_get_num_threads() * 0.f;\n"
	"#ifdef __AVX__\n"
	"	__m256 v = _mm256_setzero_ps(); (void)v;\n"
	"#endif\n"
	"	return 0;\n"
	"}\n";

static void test_gcc(void **state)
{
	struct pragma_buf log = PRAGMA_BUF_INIT;
	struct pragma_err err;
	char so[600];

	(void)state;
	if (!have_landlock())
		skip_because("no Landlock: the compiler cannot be jailed here");
	if (!have_prog("gcc"))
		skip_because("gcc not installed");
	snprintf(so, sizeof(so), "%s/ok.so", work);
	if (build("gcc", write_src("ok.c", c_kernel), 1, so, &log, &err) != 0)
		fail_msg("gcc: a normal kernel does not build in the jail: %s\n%s", err.msg, log.data);
	check_compiler("gcc", 0);
	pragma_buf_release(&log);
}

static void test_clang(void **state)
{
	struct pragma_buf log = PRAGMA_BUF_INIT;
	struct pragma_err err;
	char so[600];

	(void)state;
	if (!have_landlock())
		skip_because("no Landlock: the compiler cannot be jailed here");
	if (!have_prog("clang"))
		skip_because("clang not installed");
	snprintf(so, sizeof(so), "%s/ok.so", work);
	if (build("clang", write_src("ok.c", c_kernel), 1, so, &log, &err) != 0)
		fail_msg("clang: a normal kernel does not build in the jail: %s\n%s", err.msg, log.data);
	check_compiler("clang", 0);
	pragma_buf_release(&log);
}

static const char cu_kernel[] =
	"#include <cuda_fp16.h>\n"
	"#include <cub/block/block_reduce.cuh>\n"
	"#include <pragma/kernel.h>\n"
	"__global__ void k(const float *x, float *y, long n)\n"
	"{\n"
	"	typedef cub::BlockReduce<float, 128> R;\n"
	"	__shared__ typename R::TempStorage t;\n"
	"	long i = blockIdx.x * (long)blockDim.x + threadIdx.x;\n"
	"	__half h = __float2half(i < n ? x[i] : 0.f);\n"
	"	float s = R(t).Sum(__half2float(h));\n"
	"	if (i < n) y[i] = x[i] + 0.f * s;\n"
	"}\n"
	"extern \"C\" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)\n"
	"{\n"
	"	long n = in[0].shape[0];\n"
	"	(void)n_in; (void)n_out;\n"
	"	k<<<(unsigned)((n + 127) / 128), 128>>>((const float *)in[0].data, (float *)out[0].data, n);\n"
	"	return 0;\n"
	"}\n";

static void test_nvcc(void **state)
{
	struct pragma_cuda_toolkit tk;
	struct pragma_buf log = PRAGMA_BUF_INIT;
	struct pragma_err err;
	char so[600];

	(void)state;
	if (!have_landlock())
		skip_because("no Landlock: the compiler cannot be jailed here");
	if (pragma_cuda_toolkit_find(&tk, NULL) < 0)
		skip_because("nvcc not found");
	snprintf(so, sizeof(so), "%s/ok.so", work);
	if (build("nvcc", write_src("ok.cu", cu_kernel), 1, so, &log, &err) != 0)
		fail_msg("nvcc: a kernel with cuda_fp16.h and CUB does not build in the jail: %s\n%s", err.msg, log.data);
	check_compiler("nvcc", 1);
	pragma_buf_release(&log);
}

/* The toolkit is granted read and execute where it really lives (issue
 * 12: the jail granted read only, which is harmless while CUDA is under
 * /usr and fatal anywhere else: conda, environment modules). A copy of the
 * toolkit outside /usr (hard links: same files, no space), reached
 * through a symlink, must still build in the jail. */
static void test_nvcc_outside_usr(void **state)
{
	struct pragma_cuda_toolkit tk;
	struct pragma_buf log = PRAGMA_BUF_INIT, cmd = PRAGMA_BUF_INIT;
	struct pragma_err err;
	char copy[600], link[600], nvcc[700], so[600], *real;

	(void)state;
	if (!have_landlock())
		skip_because("no Landlock: the compiler cannot be jailed here");
	if (pragma_cuda_toolkit_find(&tk, NULL) < 0)
		skip_because("nvcc not found");
	real = realpath(tk.root, NULL);
	assert_non_null(real);
	snprintf(copy, sizeof(copy), "%s/opt-cuda", work);
	pragma_buf_addf(&cmd, "cp -al '%s' '%s' 2>/dev/null", real, copy);
	free(real);
	if (system(cmd.data) != 0) {
		pragma_buf_release(&cmd);
		skip_because("cannot hard-link the toolkit outside /usr (another filesystem?)");
	}
	snprintf(link, sizeof(link), "%s/cuda", work);
	assert_int_equal(symlink(copy, link), 0);
	snprintf(nvcc, sizeof(nvcc), "%s/bin/nvcc", link);
	setenv("PRAGMA_NVCC", nvcc, 1);
	assert_int_equal(pragma_cuda_toolkit_find(&tk, &err), 0);
	assert_string_equal(tk.nvcc, nvcc);
	snprintf(so, sizeof(so), "%s/ok2.so", work);
	if (build("nvcc", write_src("ok2.cu", cu_kernel), 1, so, &log, &err) != 0)
		fail_msg("nvcc at %s (really %s) does not build in the jail: %s\n%s", nvcc, copy, err.msg, log.data);
	unsetenv("PRAGMA_NVCC");
	pragma_buf_release(&log);
	pragma_buf_release(&cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gcc),
		cmocka_unit_test(test_clang),
		cmocka_unit_test(test_nvcc),
		cmocka_unit_test(test_nvcc_outside_usr),
	};

	return pragma_run_tests(tests, setup, teardown);
}
