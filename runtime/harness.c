/*
 * pragma-harness: runs one kernel on the task's input sets, in its own
 * process, and reports what happened. The parent (lib/verify, lib/timing)
 * writes a request file, runs this program with a deadline and limits, then
 * compares the outputs it wrote with the reference — this process never sees
 * the expected outputs (DESIGN 3.4).
 *
 * Request (JSON):
 *   {"kernel": "k.so", "mode": "run"|"time",
 *    "sets": [{"inputs": ["a/in_000.npy", ...], "out_dir": "o/set0"}, ...],
 *    "inputs": [{"dtype": "float32"}, ...],          expected dtypes (bf16 needs it)
 *    "outputs": [{"dtype": "float32", "shape": [..]}, ...],
 *    "warmup": 2, "reps": 10, "cold": true, "flush_bytes": 67108864,
 *    "calls_per_set": 1}
 * Result on stdout (JSON): {"ok": true, "times_ms": [...], "calls": N,
 *   "modified_input": [set, input] or null, "rc": 0, ...}; or
 *   {"ok": false, "status": "<category>", "message": "..."}.
 */
#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pragma/hash.h"
#include "pragma/kernel.h"
#include "pragma/tensor.h"
#include "harness.h"

typedef int (*forward_fn)(const struct pk_tensor *, int, struct pk_tensor *, int);

struct set {
	struct pragma_tensor *in;      /* n_in */
	struct pk_tensor *in_abi;
	uint64_t *in_sum;              /* checksums taken at load */
	struct pragma_tensor *out;     /* handed to the kernel */
	struct pk_tensor *out_abi;
	struct pragma_tensor *snap;    /* copied the moment pk_forward returned */
	const char *out_dir;
};

static void fail(const char *status, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

static void fail(const char *status, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *o = json_pack("{s:b, s:s, s:s}", "ok", 0, "status", status, "message", msg);
	json_dumpf(o, stdout, JSON_COMPACT);
	fputc('\n', stdout);
	fflush(stdout);
	_exit(1);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void to_abi(const struct pragma_tensor *t, struct pk_tensor *a)
{
	memset(a, 0, sizeof(*a));
	a->data = t->data;
	a->dtype = t->dtype;
	a->ndim = t->ndim;
	memcpy(a->shape, t->shape, sizeof(a->shape));
}

/* NaN for floats; an unlikely pattern for integers, so an output left
 * unwritten never looks right by accident. */
static void poison(struct pragma_tensor *t)
{
	if (!t->nbytes)
		return;
	switch (t->dtype) {
	case PK_FLOAT32: {
		uint32_t nan = 0x7fc00000u;
		for (size_t i = 0; i < t->nbytes / 4; i++)
			memcpy((char *)t->data + 4 * i, &nan, 4);
		break;
	}
	case PK_FLOAT64: {
		uint64_t nan = 0x7ff8000000000000ull;
		for (size_t i = 0; i < t->nbytes / 8; i++)
			memcpy((char *)t->data + 8 * i, &nan, 8);
		break;
	}
	case PK_FLOAT16:
	case PK_BFLOAT16: {
		uint16_t nan = t->dtype == PK_FLOAT16 ? 0x7e00 : 0x7fc0;
		for (size_t i = 0; i < t->nbytes / 2; i++)
			memcpy((char *)t->data + 2 * i, &nan, 2);
		break;
	}
	case PK_BOOL:
		memset(t->data, 0x5a, t->nbytes);
		break;
	default:
		memset(t->data, 0xa5, t->nbytes);
		break;
	}
}

static uint64_t checksum(const struct pragma_tensor *t)
{
	return pragma_hash64(t->data, t->nbytes, 0x5eed);
}

static volatile unsigned char *flush_buf;
static size_t flush_len;

/* Touch every line of a buffer larger than the last-level cache. */
static void flush_cache(void)
{
	for (size_t i = 0; i < flush_len; i += 64)
		flush_buf[i]++;
}

static void snapshot(struct set *s, int n_out)
{
	for (int k = 0; k < n_out; k++)
		if (s->out[k].nbytes)
			memcpy(s->snap[k].data, s->out[k].data, s->out[k].nbytes);
}

static int64_t jint(json_t *o, const char *k, int64_t def)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? json_integer_value(v) : def;
}

int main(int argc, char **argv)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_error_t jerr;
	json_t *req, *jsets, *jout, *jin, *times;
	struct set *sets;
	const char *mode, *kernel;
	int n_sets, n_in, n_out, warmup, reps, cold;
	void *dl;
	forward_fn fwd;
	struct harness_sandbox sb;

	if (argc != 2) {
		fprintf(stderr, "usage: pragma-harness REQUEST.json\n");
		return 2;
	}
	req = json_load_file(argv[1], 0, &jerr);
	if (!req)
		fail("harness_error", "cannot read request %s: %s", argv[1], jerr.text);
	kernel = json_string_value(json_object_get(req, "kernel"));
	mode = json_string_value(json_object_get(req, "mode"));
	jsets = json_object_get(req, "sets");
	jout = json_object_get(req, "outputs");
	jin = json_object_get(req, "inputs");
	if (!kernel || !mode || !json_is_array(jsets) || !json_array_size(jsets) || !json_is_array(jout) ||
	    !json_is_array(jin))
		fail("harness_error", "malformed request");
	n_sets = (int)json_array_size(jsets);
	n_in = (int)json_array_size(jin);
	n_out = (int)json_array_size(jout);
	warmup = (int)jint(req, "warmup", 1);
	reps = (int)jint(req, "reps", 0);
	cold = json_is_true(json_object_get(req, "cold"));
	if (harness_sandbox_parse(req, &sb) < 0)
		fail("harness_error", "malformed sandbox section");

	/* Load everything before the kernel is in the address space. */
	sets = calloc((size_t)n_sets, sizeof(*sets));
	for (int s = 0; s < n_sets; s++) {
		json_t *js = json_array_get(jsets, (size_t)s);
		json_t *files = json_object_get(js, "inputs");
		struct set *S = &sets[s];

		S->out_dir = json_string_value(json_object_get(js, "out_dir"));
		if (!json_is_array(files) || (int)json_array_size(files) != n_in || !S->out_dir)
			fail("harness_error", "set %d: expected %d input files and out_dir", s, n_in);
		S->in = calloc((size_t)n_in + 1, sizeof(*S->in));
		S->in_abi = calloc((size_t)n_in + 1, sizeof(*S->in_abi));
		S->in_sum = calloc((size_t)n_in + 1, sizeof(*S->in_sum));
		for (int i = 0; i < n_in; i++) {
			enum pk_dtype want;
			const char *dt = json_string_value(json_object_get(json_array_get(jin, (size_t)i), "dtype"));
			if (!dt || pragma_dtype_from_name(dt, &want) < 0)
				fail("harness_error", "input %d: bad dtype", i);
			if (pragma_npy_read(json_string_value(json_array_get(files, (size_t)i)), (int)want, &S->in[i],
					    &err) < 0)
				fail("harness_error", "input %d: %s", i, err.msg);
			to_abi(&S->in[i], &S->in_abi[i]);
			S->in_sum[i] = checksum(&S->in[i]);
		}
		S->out = calloc((size_t)n_out + 1, sizeof(*S->out));
		S->snap = calloc((size_t)n_out + 1, sizeof(*S->snap));
		S->out_abi = calloc((size_t)n_out + 1, sizeof(*S->out_abi));
		for (int k = 0; k < n_out; k++) {
			json_t *o = json_array_get(jout, (size_t)k), *shape = json_object_get(o, "shape"), *d;
			int64_t sh[PK_MAX_DIMS];
			enum pk_dtype dt;
			size_t j;
			const char *dts = json_string_value(json_object_get(o, "dtype"));

			if (!dts || pragma_dtype_from_name(dts, &dt) < 0 || !json_is_array(shape) ||
			    json_array_size(shape) > PK_MAX_DIMS)
				fail("harness_error", "output %d: bad spec", k);
			json_array_foreach(shape, j, d)
				sh[j] = json_integer_value(d);
			if (pragma_tensor_alloc(&S->out[k], dt, (int)json_array_size(shape), sh, &err) < 0 ||
			    pragma_tensor_alloc(&S->snap[k], dt, (int)json_array_size(shape), sh, &err) < 0)
				fail("memory_limit", "output %d: %s", k, err.msg);
			to_abi(&S->out[k], &S->out_abi[k]);
		}
	}
	if (cold) {
		flush_len = (size_t)jint(req, "flush_bytes", 64 << 20);
		flush_buf = calloc(flush_len, 1);
		if (!flush_buf)
			fail("memory_limit", "cannot allocate the cache-flush buffer");
	}

	dl = dlopen(kernel, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		fail("link_error", "cannot load the kernel: %s", dlerror());
	fwd = (forward_fn)(uintptr_t)dlsym(dl, "pk_forward");
	if (!fwd)
		fail("link_error", "the kernel does not define pk_forward");

	if (harness_sandbox_enter(&sb, &err) < 0)
		fail("sandbox_error", "%s", err.msg);

	times = json_array();
	int calls = 0;
	int total = !strcmp(mode, "time") ? warmup + reps : n_sets;
	for (int c = 0; c < total; c++) {
		int s = c % n_sets;
		int timed = !strcmp(mode, "time") && c >= warmup;
		struct set *S = &sets[s];
		double t0, t1;
		int rc;

		for (int k = 0; k < n_out; k++)
			poison(&S->out[k]);
		if (cold)
			flush_cache();
		t0 = now_ms();
		rc = fwd(S->in_abi, n_in, S->out_abi, n_out);
		t1 = now_ms();
		/* Outputs count as they stand at return (DESIGN 3.4). */
		snapshot(S, n_out);
		calls++;
		if (rc != 0)
			fail("kernel_error", "pk_forward returned %d on input set %d (call %d)", rc, s, calls);
		for (int i = 0; i < n_in; i++)
			if (checksum(&S->in[i]) != S->in_sum[i])
				fail("modified_input", "the kernel wrote input %d (set %d, call %d); inputs are read-only",
				     i, s, calls);
		if (timed)
			json_array_append_new(times, json_real(t1 - t0));
	}
	for (int s = 0; s < n_sets; s++) {
		struct set *S = &sets[s];
		for (int k = 0; k < n_out; k++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/out_%03d.npy", S->out_dir, k);
			if (pragma_npy_write(path, &S->snap[k], &err) < 0)
				fail("harness_error", "writing outputs: %s", err.msg);
		}
	}
	json_t *res = json_pack("{s:b, s:o, s:i}", "ok", 1, "times_ms", times, "calls", calls);
	harness_sandbox_report(&sb, res);
	json_dumpf(res, stdout, JSON_COMPACT);
	fputc('\n', stdout);
	fflush(stdout);
	/* Threads the kernel left behind must not hold us up. */
	_exit(0);
}
