/*
 * The sandboxed harness, driven directly (lib/sandbox/run.c): what the
 * kernel may and may not do in it, the limits, serve mode, and that the
 * parent always gets an answer. Uses a tiny native task made in a temp dir
 * and kernels compiled on the fly; skips when no compiler is installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pragma/build.h"
#include "pragma/fs.h"
#include "pragma/proc.h"
#include "pragma/refdata.h"
#include "pragma/run.h"
#include "pragma/task.h"
#include "pragma/tensor.h"

static char tmp[256];
static struct pragma_task task;
static struct pragma_refset sets[2];
static int have_cc;

static const char task_json[] =
	"{\"name\": \"twice\", \"category\": \"others\", \"description\": \"y = 2 x\",\n"
	" \"sizes\": {\"N\": 4099},\n"
	" \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [\"N\"],\n"
	"             \"init\": {\"dist\": \"uniform\", \"low\": -1.0, \"high\": 1.0}}],\n"
	" \"outputs\": [{\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [\"N\"]}],\n"
	" \"tolerance\": {\"atol\": 1e-6, \"rtol\": 1e-6}, \"flops\": \"N\", \"bytes\": \"8*N\"}\n";

#define KERNEL_HEAD                                                                             \
	"#include <pragma/kernel.h>\n#include <stdlib.h>\n#include <string.h>\n"            \
	"static long raw(long nr, long a, long b, long c, long d) { long r;\n"                  \
	"  register long r10 __asm__(\"r10\") = d;\n"                                          \
	"  __asm__ volatile(\"syscall\" : \"=a\"(r) : \"a\"(nr), \"D\"(a), \"S\"(b), \"d\"(c), \"r\"(r10)" \
	" : \"rcx\", \"r11\", \"memory\"); return r; }\n"                                      \
	"static void twice(const struct pk_tensor *in, struct pk_tensor *out) {\n"             \
	"  const float *x = in[0].data; float *y = out[0].data;\n"                             \
	"  for (int64_t i = 0; i < in[0].shape[0]; i++) y[i] = 2.0f * x[i]; }\n"

static const char reference_c[] = KERNEL_HEAD
	"int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)\n"
	"{ twice(in, out); (void)raw; return 0; }\n";

static void write_text(const char *dir, const char *name, const char *text)
{
	char p[512];
	struct pragma_err err = PRAGMA_ERR_INIT;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(pragma_write_file_atomic(p, text, strlen(text), &err), 0);
}

static int setup(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	char dir[300];
	uint64_t seeds[2] = { pragma_ref_seed(0), pragma_ref_seed(1) };

	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/pragma-test-sandbox-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	setenv("PRAGMA_CACHE_DIR", tmp, 1);
	have_cc = pragma_which("gcc", NULL);
	if (!have_cc)
		return 0;
	snprintf(dir, sizeof(dir), "%s/task", tmp);
	if (pragma_mkdir_p(dir, 0755, &err) < 0)
		return -1;
	write_text(dir, "task.json", task_json);
	write_text(dir, "reference.c", reference_c);
	if (pragma_task_load(dir, NULL, 0, &task, &err) < 0 || pragma_ref_ensure(&task, seeds, 2, sets, &err) < 0) {
		fprintf(stderr, "setup: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (have_cc)
		pragma_task_release(&task);
	pragma_rm_rf(tmp, NULL);
	return 0;
}

/* Compile body (after KERNEL_HEAD) with extra flags into an .so. */
static void build(const char *name, const char *body, const char *const *flags, char *so, size_t len)
{
	char src[512];
	struct pragma_buf text = PRAGMA_BUF_INIT, log = PRAGMA_BUF_INIT;
	struct pragma_build_opts bo = { .flags = flags };
	struct pragma_err err = PRAGMA_ERR_INIT;

	snprintf(src, sizeof(src), "%s/%s.c", tmp, name);
	snprintf(so, len, "%s/%s.so", tmp, name);
	pragma_buf_adds(&text, KERNEL_HEAD);
	pragma_buf_adds(&text, body);
	assert_int_equal(pragma_write_file_atomic(src, text.data, text.len, &err), 0);
	if (pragma_build_so(src, so, &bo, &log, &err) < 0)
		fail_msg("%s: %s\n%s", name, err.msg, log.data);
	pragma_buf_release(&text);
	pragma_buf_release(&log);
}

static char last_work[512];

/* Run so in the sandbox (or not); r filled, last_work names the work dir. */
static void run(const char *so, int sandbox, int no_landlock, int timeout_ms, struct pragma_run_result *r)
{
	struct pragma_run_opts o = { 0 };
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf work = PRAGMA_BUF_INIT;
	static const char *const pre[] = { "libgomp.so.1", "libm.so.6", NULL };

	assert_int_equal(pragma_mkdtemp(tmp, "run-", &work, &err), 0);
	o.kernel_so = so;
	o.task = &task;
	o.sets = sets;
	o.n_sets = 2;
	o.work_dir = work.data;
	o.timeout_ms = timeout_ms ? timeout_ms : 20000;
	o.sandbox = sandbox;
	o.no_landlock = no_landlock;
	o.preload = pre;
	o.settle_us = 1000;
	o.final_settle_ms = 5;
	if (pragma_run_kernel(&o, r, &err) < 0)
		fail_msg("run: %s", err.msg);
	snprintf(last_work, sizeof(last_work), "%s", work.data);
	pragma_buf_release(&work);
}

#define NEED_CC()                                              \
	do {                                                   \
		if (!have_cc)                                  \
			skip_because("no C compiler (gcc) to build the test kernels"); \
	} while (0)

static void test_ok_with_threads(void **state)
{
	char so[512];
	struct pragma_run_result r;
	static const char *const omp[] = { "-fopenmp", NULL };

	(void)state;
	NEED_CC();
	/* OpenMP threads that malloc (glibc arenas) and a printf: all allowed. */
	build("omp", "#include <stdio.h>\n"
		     "int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no) {\n"
		     "  const float *x = in[0].data; float *y = out[0].data; int64_t n = in[0].shape[0];\n"
		     "  #pragma omp parallel\n  { float *t = malloc(1 << 20); t[7] = 1; free(t);\n"
		     "    #pragma omp for\n    for (int64_t i = 0; i < n; i++) y[i] = 2.0f * x[i]; }\n"
		     "  printf(\"hello from the kernel\\n\"); (void)raw; (void)twice; return 0; }\n",
	      omp, so, sizeof(so));
	run(so, 1, 0, 0, &r);
	if (!r.ok)
		fail_msg("%s: %s", r.status, r.message);
	assert_true(json_is_true(json_object_get(r.sandbox, "seccomp")));
	assert_true(json_is_true(json_object_get(r.sandbox, "seccomp_locked")));
	assert_int_equal(r.calls, 2);
	/* The outputs came back through the pre-opened files. */
	{
		char p[4300];
		struct pragma_tensor got = PRAGMA_TENSOR_INIT, want = PRAGMA_TENSOR_INIT;
		struct pragma_err err = PRAGMA_ERR_INIT;
		snprintf(p, sizeof(p), "%s/set1/out_000.npy", last_work);
		assert_int_equal(pragma_npy_read(p, -1, &got, &err), 0);
		pragma_ref_output_path(&sets[1], 0, p, sizeof(p));
		assert_int_equal(pragma_npy_read(p, -1, &want, &err), 0);
		assert_int_equal(got.nbytes, want.nbytes);
		assert_memory_equal(got.data, want.data, got.nbytes);
		pragma_tensor_release(&want);
		pragma_tensor_release(&got);
	}
	pragma_run_result_release(&r);
}

/* The constructor runs at dlopen, after Landlock and seccomp stage 1: its
 * raw openat of the reference output is refused by Landlock (EACCES), and
 * only by Landlock — without it the same open succeeds. */
static void test_landlock_hides_reference(void **state)
{
	char so[512], why[160], def[4400], p[4200];
	struct pragma_run_result r;
	const char *flags[2] = { def, NULL };

	(void)state;
	NEED_CC();
	if (pragma_landlock_abi(why, sizeof(why)) == 0)
		skip_because("Landlock is unavailable on this kernel: file access cannot be confined");
	pragma_ref_output_path(&sets[0], 0, p, sizeof(p));
	snprintf(def, sizeof(def), "-DREF_PATH=\"%s\"", p);
	build("peek", "static long got = -1;\n"
		      "__attribute__((constructor)) static void peek(void) { got = raw(257, -100, (long)REF_PATH, 0, 0); }\n"
		      "int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no) {\n"
		      "  twice(in, out); return got >= 0 ? 0 : (int)-got; }\n",
	      flags, so, sizeof(so));
	run(so, 1, 0, 0, &r);
	assert_false(r.ok);
	assert_string_equal(r.status, "kernel_error");
	assert_non_null(strstr(r.message, "returned 13")); /* EACCES */
	pragma_run_result_release(&r);

	run(so, 1, 1, 0, &r); /* seccomp only */
	if (!r.ok)
		fail_msg("without Landlock the open should work: %s: %s", r.status, r.message);
	pragma_run_result_release(&r);
}

static void expect(const char *name, const char *body, const char *status, const char *msg_part, int timeout_ms)
{
	char so[512];
	struct pragma_run_result r;

	build(name, body, NULL, so, sizeof(so));
	run(so, 1, 0, timeout_ms, &r);
	if (r.ok || strcmp(r.status, status) || (msg_part && !strstr(r.message, msg_part)))
		fail_msg("%s: wanted %s (%s), got %s: %s", name, status, msg_part ? msg_part : "", r.status, r.message);
	pragma_run_result_release(&r);
}

#define FWD "int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no) {\n"

static void test_seccomp(void **state)
{
	(void)state;
	NEED_CC();
	/* After load, opening anything is a forbidden call. */
	expect("open", FWD "twice(in, out); raw(257, -100, (long)\"/etc/hostname\", 0, 0); return 0; }\n",
	       "forbidden_syscall", "openat", 0);
	expect("sock", FWD "raw(41, 2, 1, 0, 0); return 0; }\n", "forbidden_syscall", "socket", 0);
	expect("fork", FWD "raw(57, 0, 0, 0, 0); return 0; }\n", "forbidden_syscall", "fork", 0);
	/* A process-creating clone (no CLONE_THREAD). */
	expect("clone", FWD "raw(56, 17 /* SIGCHLD */, 0, 0, 0); return 0; }\n", "forbidden_syscall", "clone", 0);
	/* Signals to other processes (the parent!) are forbidden... */
	expect("killparent", FWD "raw(62, raw(110, 0, 0, 0, 0), 0, 0, 0); return 0; }\n", "forbidden_syscall", "kill", 0);
	expect("ptrace", FWD "raw(101, 16, raw(110, 0, 0, 0, 0), 0, 0); return 0; }\n", "forbidden_syscall", "ptrace", 0);
	/* ...and so is taking over SIGSYS, the harness's report channel. */
	expect("sigsys", FWD "long sa[4] = { 1 }; raw(13, 31, (long)sa, 0, 8); return 0; }\n", "forbidden_syscall",
	       "rt_sigaction", 0);
	/* Where the call came from. KERNEL_HEAD is 9 lines: a body starts at
	 * line 10. A raw call in a helper: its line, through the inline chain. */
	expect("where", "__attribute__((noinline)) static long sock(void) {\n"
			"  return raw(41, 2, 1, 0, 0); }\n" FWD "twice(in, out); return (int)sock(); }\n",
	       "forbidden_syscall", "socket (syscall 41), in raw at where.c:6, inlined into sock at where.c:11", 0);
	/* A library function making the call for the kernel: the kernel's line
	 * that called it (the stack walked back into the kernel's code). */
	expect("vialibc",
	       "#include <stdio.h>\n" FWD "twice(in, out);\n"
	       "  FILE *f = fopen(\"/etc/hostname\", \"r\"); if (f) fclose(f); return 0; }\n",
	       "forbidden_syscall", "openat (syscall 257), through a library function called in pk_forward at vialibc.c:13",
	       0);
	/* The same from OpenMP worker threads, all at once: one report, from
	 * the outlined region. Several threads trapping together could race
	 * the handler's SA_RESETHAND and die by the default action, unnamed;
	 * now the first reports and the others wait for its exit. */
	expect("omp", "#include <stdio.h>\n" FWD "twice(in, out);\n#pragma omp parallel num_threads(8)\n"
		      "  { FILE *f = fopen(\"/etc/hostname\", \"r\"); if (f) fclose(f); }\n return 0; }\n",
	       "forbidden_syscall", "openat (syscall 257), through a library function called in pk_forward._omp_fn.0 at omp.c:14",
	       0);
	for (int i = 0; i < 3; i++)
		expect("threads", "#include <pthread.h>\n"
				  "static void *go(void *p) { (void)p; raw(41, 2, 1, 0, 0); return 0; }\n" FWD
				  "pthread_t t[8]; for (int i = 0; i < 8; i++) pthread_create(&t[i], 0, go, 0);\n"
				  "  for (int i = 0; i < 8; i++) pthread_join(t[i], 0); return 0; }\n",
		       "forbidden_syscall", "socket (syscall 41), in raw at threads.c:6, inlined into go at threads.c:11", 0);
	/* A constructor's call, said so. */
	expect("ctor", "__attribute__((constructor)) static void c(void) { raw(41, 2, 1, 0, 0); }\n" FWD
		       "twice(in, out); return 0; }\n",
	       "forbidden_syscall", "socket (syscall 41), in raw at ctor.c:6, inlined into c at ctor.c:10 while it was being loaded", 0);
	/* With SIGSYS blocked the kernel kills at once (the sandbox holds);
	 * the message says why the call is not named. */
	expect("blocked", FWD "long m = 1L << 30; raw(14, 0, (long)&m, 0, 8); raw(41, 2, 1, 0, 0); return 0; }\n",
	       "forbidden_syscall", "blocks signals", 0);
	/* clone3 fails with ENOSYS (so glibc falls back to clone). */
	expect("clone3", FWD "twice(in, out); long r = raw(435, 0, 0, 0, 0); return r == -38 ? 38 : 0; }\n",
	       "kernel_error", "returned 38", 0);
}

static void test_limits_and_faults(void **state)
{
	(void)state;
	NEED_CC();
	expect("hang", FWD "for (volatile int s = 1; s;) ; return 0; }\n", "timeout", NULL, 1500);
	expect("segv", FWD "*(volatile int *)16 = 1; return 0; }\n", "crash", "SIGSEGV", 0);
	expect("abort", FWD "abort(); }\n", "crash", "SIGABRT", 0);
	/* 64 GiB is over the address-space limit: malloc fails, noticed. */
	expect("bigalloc", FWD "char *p = malloc((size_t)64 << 30); if (!p) return 12; p[0] = 1; return 0; }\n",
	       "memory_limit", "allocation", 0);
	expect("input", FWD "twice(in, out); ((float *)in[0].data)[5] = 3; return 0; }\n", "modified_input", NULL, 0);
	expect("rc", FWD "return 7; }\n", "kernel_error", "returned 7", 0);
	/* Outputs that change after return: a thread kept working. */
	expect("late", "#include <pthread.h>\n#include <time.h>\n"
		       "static void *late(void *p) { struct timespec t = { 0, 300000 }; nanosleep(&t, 0);\n"
		       "  ((float *)p)[1] = 42; return 0; }\n" FWD
		       "pthread_t t; twice(in, out); pthread_create(&t, 0, late, out[0].data); pthread_detach(t);"
		       " return 0; }\n",
	       "work_after_return", NULL, 0);
}

static void test_serve(void **state)
{
	char so[512];
	struct pragma_run_opts o = { 0 };
	struct pragma_run_result r = { 0 };
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf work = PRAGMA_BUF_INIT;
	struct pragma_run_server *s = NULL;

	(void)state;
	NEED_CC();
	build("serve", FWD "twice(in, out); (void)raw; return 0; }\n", NULL, so, sizeof(so));
	assert_int_equal(pragma_mkdtemp(tmp, "serve-", &work, &err), 0);
	o.kernel_so = so;
	o.task = &task;
	o.sets = sets;
	o.n_sets = 2;
	o.work_dir = work.data;
	o.warmup = 2;
	o.cold = 1;
	o.flush_bytes = 1 << 20;
	o.sandbox = 1;
	o.save_timed = 1;
	o.timeout_ms = 20000;
	assert_int_equal(pragma_run_serve_start(&o, &s, &r, &err), 0);
	if (!s)
		fail_msg("%s: %s", r.status, r.message);
	assert_true(pragma_run_server_pid(s) > 0);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(pragma_run_serve_time(s, 5, 20000, &r, &err), 0);
		if (!r.ok)
			fail_msg("%s: %s", r.status, r.message);
	}
	assert_int_equal(r.n_times, 15);
	pragma_run_result_release(&r);
	assert_int_equal(pragma_run_serve_finish(s, &r, &err), 0);
	assert_true(r.ok);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(r.raw, "timed_calls"), 0)), 8);
	{
		char p[4400];
		struct pragma_tensor got = PRAGMA_TENSOR_INIT, want = PRAGMA_TENSOR_INIT;
		snprintf(p, sizeof(p), "%s/set1/timed_000.npy", work.data);
		assert_int_equal(pragma_npy_read(p, -1, &got, &err), 0);
		pragma_ref_output_path(&sets[1], 0, p, sizeof(p));
		assert_int_equal(pragma_npy_read(p, -1, &want, &err), 0);
		assert_int_equal(got.nbytes, want.nbytes);
		assert_memory_equal(got.data, want.data, got.nbytes);
		pragma_tensor_release(&got);
		pragma_tensor_release(&want);
	}
	pragma_run_result_release(&r);
	pragma_run_server_free(s);
	pragma_buf_release(&work);
}

static void test_serve_crash(void **state)
{
	char so[512];
	struct pragma_run_opts o = { 0 };
	struct pragma_run_result r = { 0 };
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf work = PRAGMA_BUF_INIT;
	struct pragma_run_server *s = NULL;

	(void)state;
	NEED_CC();
	/* Fine while warming up, dies in the first timed round. */
	build("servecrash", "static int n;\n" FWD "twice(in, out); (void)raw; if (++n > 3) *(volatile int *)0 = 0; return 0; }\n",
	      NULL, so, sizeof(so));
	assert_int_equal(pragma_mkdtemp(tmp, "serve-", &work, &err), 0);
	o.kernel_so = so;
	o.task = &task;
	o.sets = sets;
	o.n_sets = 2;
	o.work_dir = work.data;
	o.warmup = 2;
	o.sandbox = 1;
	o.timeout_ms = 20000;
	assert_int_equal(pragma_run_serve_start(&o, &s, &r, &err), 0);
	assert_non_null(s);
	assert_int_equal(pragma_run_serve_time(s, 5, 20000, &r, &err), 0);
	assert_false(r.ok);
	assert_string_equal(r.status, "crash");
	pragma_run_result_release(&r);
	pragma_run_server_free(s);
	pragma_buf_release(&work);
}

static void test_confine(void **state)
{
	struct pragma_buf h = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_child c = PRAGMA_CHILD_INIT;
	char ref[4200], why[160];
	const char *argv[8];

	(void)state;
	NEED_CC();
	if (pragma_landlock_abi(why, sizeof(why)) == 0)
		skip_because("Landlock is unavailable on this kernel: file access cannot be confined");
	assert_int_equal(pragma_harness_path(&h, &err), 0);
	pragma_ref_output_path(&sets[0], 0, ref, sizeof(ref));
	/* The compiler jail: the loader's files readable, the reference cache
	 * not, and of /etc only what toolchains open (test_jail has the
	 * compilers themselves). */
	argv[0] = h.data;
	argv[1] = "confine";
	argv[2] = "--rw";
	argv[3] = tmp; /* nothing under it is readable but by this rule... */
	argv[4] = "--";
	argv[5] = "cat";
	argv[6] = "/etc/ld.so.cache";
	argv[7] = NULL;
	c.argv = argv;
	c.timeout_ms = 10000;
	assert_int_equal(pragma_child_run(&c, &err), 0);
	assert_true(c.exited && c.exit_code == 0);
	argv[6] = "/etc/passwd";
	assert_int_equal(pragma_child_run(&c, &err), 0);
	assert_true(c.exited && c.exit_code != 0);
	assert_non_null(strstr(c.err.data, "Permission denied"));
	argv[3] = "/nonexistent-dir";
	argv[6] = ref;
	assert_int_equal(pragma_child_run(&c, &err), 0);
	assert_true(c.exited && c.exit_code != 0);
	assert_non_null(strstr(c.err.data, "Permission denied"));
	pragma_child_release(&c);
	pragma_buf_release(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ok_with_threads),
		cmocka_unit_test(test_landlock_hides_reference),
		cmocka_unit_test(test_seccomp),
		cmocka_unit_test(test_limits_and_faults),
		cmocka_unit_test(test_serve),
		cmocka_unit_test(test_serve_crash),
		cmocka_unit_test(test_confine),
	};

	return pragma_run_tests(tests, setup, teardown);
}
