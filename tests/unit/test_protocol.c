/*
 * The harness protocol (runtime/protocol.c) is one implementation under
 * every harness. Here it runs under two adapters: pragma-harness (the CPU
 * one: the kernel works on the loaded data in place) and
 * pragma-copy-harness (tests/unit/copy_harness.c: the kernel's buffers are
 * copies, read back through a scratch buffer, poisoned from a pattern —
 * how the CUDA harness holds tensors, which cannot run without a GPU).
 * Same kernels, same requests (lib/sandbox/run.c): the same verdicts and
 * the same output bytes, the steps' data moves included; the modes a
 * harness does not offer are malformed requests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pragma/build.h"
#include "pragma/cuda.h"
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
	" \"sizes\": {\"N\": 1031},\n"
	" \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [\"N\"],\n"
	"             \"init\": {\"dist\": \"uniform\", \"low\": -1.0, \"high\": 1.0}}],\n"
	" \"outputs\": [{\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [\"N\"]}],\n"
	" \"tolerance\": {\"atol\": 1e-6, \"rtol\": 1e-6}, \"flops\": \"N\", \"bytes\": \"8*N\"}\n";

#define KERNEL_HEAD                                                                 \
	"#include <pragma/kernel.h>\n#include <string.h>\n"                         \
	"static void twice(const struct pk_tensor *in, struct pk_tensor *out) {\n" \
	"  const float *x = in[0].data; float *y = out[0].data;\n"                 \
	"  for (int64_t i = 0; i < in[0].shape[0]; i++) y[i] = 2.0f * x[i]; }\n"
#define FWD "int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no) {\n"

static const char reference_c[] = KERNEL_HEAD FWD "twice(in, out); return 0; }\n";

/* The two harnesses: NULL is pragma-harness. */
static const char *const harnesses[] = { NULL, COPY_HARNESS };

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
	snprintf(tmp, sizeof(tmp), "/tmp/pragma-test-protocol-XXXXXX");
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

#define NEED_CC()                                                                      \
	do {                                                                           \
		if (!have_cc)                                                          \
			skip_because("no C compiler (gcc) to build the test kernels"); \
	} while (0)

/* Compile KERNEL_HEAD + body into tmp/name.so. */
static void build(const char *name, const char *body, char *so, size_t len)
{
	char src[512];
	struct pragma_buf text = PRAGMA_BUF_INIT, log = PRAGMA_BUF_INIT;
	struct pragma_build_opts bo = { 0 };
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

/* Which harness lib/sandbox/run.c starts: $PRAGMA_HARNESS, as a user
 * would point it at another build. */
static void use_harness(const char *h)
{
	if (h)
		setenv("PRAGMA_HARNESS", h, 1);
	else
		unsetenv("PRAGMA_HARNESS");
}

static const char *hname(const char *h)
{
	return h ? "pragma-copy-harness" : "pragma-harness";
}

/* The steps every run takes: each set on its own buffers, then set 1's
 * data in set 0's buffers (saved as swap_000.npy). */
static const struct pragma_run_step steps[] = { { 0, 0, "out" }, { 1, 1, "out" }, { 0, 1, "swap" } };

static void opts(const char *so, struct pragma_buf *work, struct pragma_run_opts *o)
{
	struct pragma_err err = PRAGMA_ERR_INIT;

	assert_int_equal(pragma_mkdtemp(tmp, "run-", work, &err), 0);
	memset(o, 0, sizeof(*o));
	o->kernel_so = so;
	o->task = &task;
	o->sets = sets;
	o->n_sets = 2;
	o->work_dir = work->data;
	o->timeout_ms = 20000;
	o->settle_us = 1000;
	/* The "late" cheat writes 0.3 ms after returning; on a loaded 2-core
	 * machine its thread can wait several ms to run, so the last check
	 * waits long enough for it to have run. */
	o->final_settle_ms = 50;
}

static void run_steps(const char *h, const char *so, struct pragma_buf *work, struct pragma_run_result *r)
{
	struct pragma_run_opts o;
	struct pragma_err err = PRAGMA_ERR_INIT;

	opts(so, work, &o);
	o.steps = steps;
	o.n_steps = 3;
	use_harness(h);
	if (pragma_run_kernel(&o, r, &err) < 0)
		fail_msg("%s: %s", hname(h), err.msg);
	use_harness(NULL);
}

/* The bytes of work/file. */
static void read_out(const char *work, const char *file, struct pragma_tensor *t)
{
	char p[4300];
	struct pragma_err err = PRAGMA_ERR_INIT;

	snprintf(p, sizeof(p), "%s/%s", work, file);
	if (pragma_npy_read(p, -1, t, &err) < 0)
		fail_msg("%s", err.msg);
}

static int same_as_ref(const struct pragma_tensor *got, int set)
{
	char p[4200];
	struct pragma_tensor want = PRAGMA_TENSOR_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	int same;

	pragma_ref_output_path(&sets[set], 0, p, sizeof(p));
	assert_int_equal(pragma_npy_read(p, -1, &want, &err), 0);
	same = got->nbytes == want.nbytes && !memcmp(got->data, want.data, got->nbytes);
	pragma_tensor_release(&want);
	return same;
}

/* An honest kernel: every step's outputs are its data's reference, the
 * swap included (the data moved between buffers). A kernel that caches
 * by buffer address answers the swap step with set 0's result: the data
 * moved, the address did not. Both harnesses alike. */
static void test_steps(void **state)
{
	char honest[512], cache[512];

	(void)state;
	NEED_CC();
	build("honest", FWD "twice(in, out); return 0; }\n", honest, sizeof(honest));
	build("cache", "static const void *seen; static float keep[1031];\n" FWD
		       "  if (in[0].data == seen) { memcpy(out[0].data, keep, sizeof(keep)); return 0; }\n"
		       "  twice(in, out); if (!seen) { seen = in[0].data; memcpy(keep, out[0].data, sizeof(keep)); }\n"
		       "  return 0; }\n",
	      cache, sizeof(cache));
	for (int i = 0; i < 2; i++) {
		struct pragma_buf work = PRAGMA_BUF_INIT;
		struct pragma_run_result r;
		struct pragma_tensor t0 = PRAGMA_TENSOR_INIT, t1 = PRAGMA_TENSOR_INIT, ts = PRAGMA_TENSOR_INIT;

		run_steps(harnesses[i], honest, &work, &r);
		if (!r.ok)
			fail_msg("%s: %s: %s", hname(harnesses[i]), r.status, r.message);
		assert_int_equal(r.calls, 3);
		read_out(work.data, "set0/out_000.npy", &t0);
		read_out(work.data, "set1/out_000.npy", &t1);
		read_out(work.data, "set1/swap_000.npy", &ts);
		assert_true(same_as_ref(&t0, 0));
		assert_true(same_as_ref(&t1, 1));
		if (!same_as_ref(&ts, 1))
			fail_msg("%s: the swap step did not run on set 1's data", hname(harnesses[i]));
		pragma_tensor_release(&ts);
		pragma_run_result_release(&r);
		pragma_buf_release(&work);

		run_steps(harnesses[i], cache, &work, &r);
		assert_true(r.ok);
		read_out(work.data, "set1/swap_000.npy", &ts);
		if (!same_as_ref(&ts, 0) || same_as_ref(&ts, 1))
			fail_msg("%s: the caching kernel should answer the swap with set 0's result", hname(harnesses[i]));
		pragma_tensor_release(&t0);
		pragma_tensor_release(&t1);
		pragma_tensor_release(&ts);
		pragma_run_result_release(&r);
		pragma_buf_release(&work);
	}
}

/* The same cheat, the same verdict, whichever way the tensors are held. */
static void test_verdicts(void **state)
{
	static const struct {
		const char *name, *body, *status, *msg;
	} cheats[] = {
		{ "writes_input", FWD "twice(in, out); ((float *)in[0].data)[5] = 3; return 0; }\n", "modified_input",
		  "input 0 changed during the call" },
		/* A thread that writes one element 0.3 ms after return. */
		{ "late",
		  "#include <pthread.h>\n#include <time.h>\n"
		  "static void *late(void *p) { struct timespec t = { 0, 300000 }; nanosleep(&t, 0);\n"
		  "  ((float *)p)[1] = 42; return 0; }\n" FWD
		  "twice(in, out); pthread_t t; pthread_create(&t, 0, late, out[0].data); pthread_detach(t);\n"
		  "  return 0; }\n",
		  "work_after_return", "output[0] changed after pk_forward returned (1 elements, first at flat index 1;" },
		{ "rc", FWD "(void)twice; return 7; }\n", "kernel_error", "pk_forward returned 7" },
	};

	(void)state;
	NEED_CC();
	for (size_t c = 0; c < sizeof(cheats) / sizeof(cheats[0]); c++) {
		char so[512];

		build(cheats[c].name, cheats[c].body, so, sizeof(so));
		for (int i = 0; i < 2; i++) {
			struct pragma_buf work = PRAGMA_BUF_INIT;
			struct pragma_run_result r;

			run_steps(harnesses[i], so, &work, &r);
			if (r.ok || strcmp(r.status, cheats[c].status) || !strstr(r.message, cheats[c].msg))
				fail_msg("%s under %s: wanted %s (%s), got %s: %s", cheats[c].name, hname(harnesses[i]),
					 cheats[c].status, cheats[c].msg, r.ok ? "ok" : r.status, r.message);
			pragma_run_result_release(&r);
			pragma_buf_release(&work);
		}
	}
}

/* An output the kernel never writes holds the poison of run.h, byte for
 * byte, whether poisoned in place or copied from a pattern. */
static void test_poison(void **state)
{
	char so[512];

	(void)state;
	NEED_CC();
	build("nowrite", FWD "(void)twice; return 0; }\n", so, sizeof(so));
	for (int i = 0; i < 2; i++) {
		struct pragma_buf work = PRAGMA_BUF_INIT;
		struct pragma_run_result r;
		struct pragma_tensor t = PRAGMA_TENSOR_INIT;

		run_steps(harnesses[i], so, &work, &r);
		assert_true(r.ok);
		read_out(work.data, "set1/swap_000.npy", &t);
		assert_int_equal(t.nbytes, 1031 * 4);
		for (size_t e = 0; e < t.nbytes / 4; e++)
			if (((uint32_t *)t.data)[e] != PRAGMA_POISON_F32)
				fail_msg("%s: element %zu is 0x%08x, not the poison", hname(harnesses[i]), e,
					 ((uint32_t *)t.data)[e]);
		pragma_tensor_release(&t);
		pragma_run_result_release(&r);
		pragma_buf_release(&work);
	}
}

/* Time mode (cold, the timed outputs saved) and serve mode on both. */
static void test_time_and_serve(void **state)
{
	char so[512];

	(void)state;
	NEED_CC();
	build("timed", FWD "twice(in, out); return 0; }\n", so, sizeof(so));
	for (int i = 0; i < 2; i++) {
		struct pragma_buf work = PRAGMA_BUF_INIT;
		struct pragma_run_opts o;
		struct pragma_run_result r = { 0 };
		struct pragma_err err = PRAGMA_ERR_INIT;
		struct pragma_run_server *s = NULL;
		struct pragma_tensor t = PRAGMA_TENSOR_INIT;

		opts(so, &work, &o);
		o.time_mode = 1;
		o.warmup = 2;
		o.reps = 5;
		o.cold = 1;
		o.flush_bytes = 1 << 20;
		o.save_timed = 1;
		use_harness(harnesses[i]);
		assert_int_equal(pragma_run_kernel(&o, &r, &err), 0);
		if (!r.ok)
			fail_msg("%s: %s: %s", hname(harnesses[i]), r.status, r.message);
		assert_int_equal(r.n_times, 5);
		assert_int_equal(r.calls, 7);
		if (harnesses[i])
			assert_int_equal(json_integer_value(json_object_get(r.raw, "flushes")), 7);
		read_out(work.data, "set1/timed_000.npy", &t);
		assert_true(same_as_ref(&t, 1));
		pragma_tensor_release(&t);
		pragma_run_result_release(&r);

		assert_int_equal(pragma_run_serve_start(&o, &s, &r, &err), 0);
		if (!s)
			fail_msg("%s: %s: %s", hname(harnesses[i]), r.status, r.message);
		for (int round = 0; round < 2; round++) {
			assert_int_equal(pragma_run_serve_time(s, 3, 20000, &r, &err), 0);
			assert_true(r.ok);
		}
		assert_int_equal(r.n_times, 6);
		pragma_run_result_release(&r);
		assert_int_equal(pragma_run_serve_finish(s, &r, &err), 0);
		assert_true(r.ok);
		assert_true(json_is_true(json_object_get(r.raw, "done")));
		/* Warm-up 2, then 6 timed calls cycling through the sets: 3 each. */
		assert_int_equal(json_integer_value(json_array_get(json_object_get(r.raw, "timed_calls"), 0)), 3);
		assert_int_equal(json_integer_value(json_array_get(json_object_get(r.raw, "timed_calls"), 1)), 3);
		pragma_run_result_release(&r);
		pragma_run_server_free(s);
		use_harness(NULL);
		pragma_buf_release(&work);
	}
}

/* Run harness h on the request at path; the answer line parsed. */
static json_t *ask(const char *h, const char *path, struct pragma_child *c)
{
	const char *argv[] = { h, path, NULL };
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_error_t jerr;

	c->argv = argv;
	c->timeout_ms = 20000;
	assert_int_equal(pragma_child_run(c, &err), 0);
	c->argv = NULL;
	return json_loadb(c->out.data, strcspn(c->out.data, "\n"), 0, &jerr);
}

/* Mode "profile" exists where the harness offers a profiler window
 * (the CUDA harness, the copy harness): profile_calls timed calls inside
 * it. pragma-harness has none: a malformed request, on the result line. */
static void test_profile_mode(void **state)
{
	char so[512], cpu[4200], req[4400], preq[4400];
	struct pragma_buf work = PRAGMA_BUF_INIT;
	struct pragma_run_opts o;
	struct pragma_run_result r;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf h = PRAGMA_BUF_INIT;
	struct pragma_child c = PRAGMA_CHILD_INIT;
	json_error_t jerr;
	json_t *rq, *a;

	(void)state;
	NEED_CC();
	build("profiled", FWD "twice(in, out); return 0; }\n", so, sizeof(so));
	/* A time-mode request as lib/sandbox/run.c writes it, made a profile one. */
	opts(so, &work, &o);
	o.time_mode = 1;
	o.warmup = 1;
	o.reps = 2;
	o.save_timed = 1;
	assert_int_equal(pragma_run_kernel(&o, &r, &err), 0);
	assert_true(r.ok);
	pragma_run_result_release(&r);
	snprintf(req, sizeof(req), "%s/request-time.json", work.data);
	snprintf(preq, sizeof(preq), "%s/request-profile.json", work.data);
	rq = json_load_file(req, 0, &jerr);
	assert_non_null(rq);
	json_object_set_new(rq, "mode", json_string("profile"));
	json_object_set_new(rq, "profile_calls", json_integer(3));
	assert_int_equal(json_dump_file(rq, preq, 0), 0);
	json_decref(rq);

	a = ask(COPY_HARNESS, preq, &c);
	assert_non_null(a);
	if (!json_is_true(json_object_get(a, "ok")))
		fail_msg("%s", json_string_value(json_object_get(a, "message")));
	assert_int_equal(json_array_size(json_object_get(a, "times_ms")), 3);
	assert_int_equal(json_integer_value(json_object_get(a, "profiled_calls")), 3);
	assert_int_equal(json_integer_value(json_object_get(a, "calls")), 4);
	json_decref(a);
	pragma_child_release(&c);

	assert_int_equal(pragma_harness_path(&h, &err), 0);
	snprintf(cpu, sizeof(cpu), "%s", h.data);
	c = (struct pragma_child)PRAGMA_CHILD_INIT;
	a = ask(cpu, preq, &c);
	assert_non_null(a);
	assert_false(json_is_true(json_object_get(a, "ok")));
	assert_string_equal(json_string_value(json_object_get(a, "status")), "harness_error");
	assert_string_equal(json_string_value(json_object_get(a, "message")), "malformed request");
	json_decref(a);
	pragma_child_release(&c);

	/* Who answers: each harness names itself and the protocol. */
	{
		const char *argv[] = { COPY_HARNESS, "--version", NULL };
		c = (struct pragma_child)PRAGMA_CHILD_INIT;
		c.argv = argv;
		assert_int_equal(pragma_child_run(&c, &err), 0);
		assert_true(c.exited && c.exit_code == 0);
		assert_string_equal(c.out.data, "pragma-copy-harness protocol 1\n");
		pragma_child_release(&c);
		argv[0] = cpu;
		c = (struct pragma_child)PRAGMA_CHILD_INIT;
		c.argv = argv;
		assert_int_equal(pragma_child_run(&c, &err), 0);
		assert_string_equal(c.out.data, "pragma-harness protocol 1\n");
		pragma_child_release(&c);
	}
	pragma_buf_release(&h);
	pragma_buf_release(&work);
}

/* A profiler's injection is preloaded into the harness and opens its
 * connection to the tool before main (ncu does). The harness closes
 * inherited descriptors, but not under a profiler (request member
 * "profiler": true): ncu's injection crashed at its first CUDA call when
 * they were. Here a preloaded library holds fd 100 open and the kernel
 * fails when it is gone. */
static void test_profiler_keeps_tool_fds(void **state)
{
	char so[512], probe_so[512], pre[512], src[512], req[4400], mine[4400], cpu[4200];
	struct pragma_buf work = PRAGMA_BUF_INIT, h = PRAGMA_BUF_INIT, env = PRAGMA_BUF_INIT;
	struct pragma_run_opts o;
	struct pragma_run_result r;
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_error_t jerr;
	json_t *rq;

	(void)state;
	NEED_CC();
	build("plain", FWD "twice(in, out); return 0; }\n", so, sizeof(so));
	build("needs_fd", "#include <fcntl.h>\n" FWD "if (fcntl(100, F_GETFD) < 0) return 7; twice(in, out); return 0; }\n",
	      probe_so, sizeof(probe_so));
	snprintf(src, sizeof(src), "%s/tool.c", tmp);
	snprintf(pre, sizeof(pre), "%s/libtool.so", tmp);
	write_text(tmp, "tool.c",
		   "#include <fcntl.h>\n#include <unistd.h>\n"
		   "__attribute__((constructor)) static void up(void) {\n"
		   "  int fd = open(\"/dev/null\", O_WRONLY);\n  if (fd >= 0 && fd != 100) { dup2(fd, 100); close(fd); } }\n");
	{
		const char *argv[] = { "gcc", "-shared", "-fPIC", "-o", pre, src, NULL };
		struct pragma_child c = PRAGMA_CHILD_INIT;
		c.argv = argv;
		assert_int_equal(pragma_child_run(&c, &err), 0);
		if (!c.exited || c.exit_code)
			fail_msg("gcc: %s", c.err.data);
		pragma_child_release(&c);
	}
	/* A time-mode request as lib/sandbox/run.c writes it. */
	opts(so, &work, &o);
	o.time_mode = 1;
	o.warmup = 1;
	o.reps = 2;
	assert_int_equal(pragma_run_kernel(&o, &r, &err), 0);
	assert_true(r.ok);
	pragma_run_result_release(&r);
	snprintf(req, sizeof(req), "%s/request-time.json", work.data);
	snprintf(mine, sizeof(mine), "%s/request-tool.json", work.data);
	assert_int_equal(pragma_harness_path(&h, &err), 0);
	snprintf(cpu, sizeof(cpu), "%s", h.data);
	pragma_buf_addf(&env, "LD_PRELOAD=%s", pre);
	for (int profiler = 0; profiler < 2; profiler++) {
		const char *argv[] = { "env", env.data, cpu, mine, NULL };
		struct pragma_child c = PRAGMA_CHILD_INIT;
		json_t *a;

		rq = json_load_file(req, 0, &jerr);
		assert_non_null(rq);
		json_object_set_new(rq, "kernel", json_string(probe_so));
		json_object_set_new(rq, "profiler", json_boolean(profiler));
		assert_int_equal(json_dump_file(rq, mine, 0), 0);
		json_decref(rq);
		c.argv = argv;
		c.timeout_ms = 20000;
		assert_int_equal(pragma_child_run(&c, &err), 0);
		a = json_loadb(c.out.data, strcspn(c.out.data, "\n"), 0, &jerr);
		if (!a)
			fail_msg("no answer: %s", c.err.data);
		if (profiler && !json_is_true(json_object_get(a, "ok")))
			fail_msg("under a profiler the tool's descriptor was closed: %s",
				 json_string_value(json_object_get(a, "message")));
		if (!profiler && json_is_true(json_object_get(a, "ok")))
			fail_msg("an inherited descriptor reached the kernel");
		json_decref(a);
		pragma_child_release(&c);
	}
	pragma_buf_release(&env);
	pragma_buf_release(&h);
	pragma_buf_release(&work);
}

/* pragma-cuda-harness reads its own members of the request: profiler
 * mode from sandbox.profiler, or from the top level where
 * lib/cuda/profile.c puts it. Its answer's sandbox report says what it
 * parsed, with or without a device (no_device, or link_error for a kernel
 * that does not exist). */
static void test_cuda_members(void **state)
{
	static const char *const cases[] = { "none", "sandbox", "top" };
	char so[512], req[4400], path[4400];
	struct pragma_buf work = PRAGMA_BUF_INIT, h = PRAGMA_BUF_INIT;
	struct pragma_run_opts o;
	struct pragma_run_result r;
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_error_t jerr;

	(void)state;
	NEED_CC();
	if (pragma_cuda_harness_path(&h, &err) < 0)
		skip_because("pragma-cuda-harness was not built (no nvcc)");
	build("members", FWD "twice(in, out); return 0; }\n", so, sizeof(so));
	opts(so, &work, &o);
	o.time_mode = 1;
	o.reps = 1;
	assert_int_equal(pragma_run_kernel(&o, &r, &err), 0);
	assert_true(r.ok);
	pragma_run_result_release(&r);
	snprintf(req, sizeof(req), "%s/request-time.json", work.data);
	for (int c = 0; c < 3; c++) {
		struct pragma_child ch = PRAGMA_CHILD_INIT;
		json_t *rq = json_load_file(req, 0, &jerr), *a, *sbx;

		assert_non_null(rq);
		json_object_set_new(rq, "kernel", json_string("/nonexistent/kernel.so"));
		json_object_set_new(rq, "device", json_integer(0));
		if (c == 1)
			json_object_set_new(json_object_get(rq, "sandbox"), "profiler", json_true());
		if (c == 2)
			json_object_set_new(rq, "profiler", json_true());
		snprintf(path, sizeof(path), "%s/request-%s.json", work.data, cases[c]);
		assert_int_equal(json_dump_file(rq, path, 0), 0);
		json_decref(rq);
		a = ask(h.data, path, &ch);
		if (!a)
			fail_msg("%s: no answer; stderr: %s", cases[c], ch.err.data);
		assert_false(json_is_true(json_object_get(a, "ok")));
		sbx = json_object_get(a, "sandbox");
		assert_non_null(sbx);
		if (json_is_true(json_object_get(sbx, "profiler")) != (c > 0))
			fail_msg("%s: profiler mode %s (%s: %s)", cases[c], c ? "off" : "on",
				 json_string_value(json_object_get(a, "status")),
				 json_string_value(json_object_get(a, "message")));
		json_decref(a);
		pragma_child_release(&ch);
	}
	pragma_buf_release(&h);
	pragma_buf_release(&work);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steps),
		cmocka_unit_test(test_verdicts),
		cmocka_unit_test(test_poison),
		cmocka_unit_test(test_time_and_serve),
		cmocka_unit_test(test_profile_mode),
		cmocka_unit_test(test_profiler_keeps_tool_fds),
		cmocka_unit_test(test_cuda_members),
	};

	return pragma_run_tests(tests, setup, teardown);
}
