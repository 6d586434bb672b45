/*
 * pragma-harness: runs one kernel on the task's input sets, in its own
 * process, and reports what happened. The parent (lib/sandbox/run.c, for
 * lib/verify) writes a request file, runs this program with a deadline and
 * limits, then compares the outputs it wrote with the reference — this
 * process never holds or can read the expected outputs (DESIGN 3.4).
 *
 * Request (JSON):
 *   {"kernel": "k.so", "mode": "run" | "time" | "serve",
 *    "sets": [{"inputs": ["a/in_000.npy", ...], "out_dir": "o/set0"}, ...],
 *    "inputs": [{"dtype": "float32"}, ...],          expected dtypes (bf16 needs it)
 *    "outputs": [{"dtype": "float32", "shape": [..]}, ...],
 *    "steps": [{"buf": 0, "data": 1, "save": "swap"}, ...],   run mode
 *    "settle_us": 2000, "final_settle_ms": 20,
 *    "warmup": 2, "reps": 10, "cold": true, "flush_bytes": 67108864,
 *    "save_timed": true, "preload": ["libgomp.so.1"],
 *    "sandbox": {"enabled": true, "landlock": true, "seccomp": true}}
 *
 * run: each step calls the kernel on the buffers of set `buf` after moving
 *   the data of set `data` into them (default: one step per set, buf = data,
 *   save "out"), and writes the outputs as they stood at return to
 *   <out_dir of data>/<save>_NNN.npy. Calling on set A's buffers with set
 *   B's data is how a kernel that caches by pointer is caught.
 * time: warm-up calls, then timed calls cycling through the sets.
 * serve: warm-up, a {"ready": true} line, then "time R" commands on stdin,
 *   one {"times_ms": [...]} line each, until "quit" (DESIGN 3.5: the final
 *   comparison interleaves baseline and candidate rounds in warm processes).
 * With save_timed, the outputs of the last timed call on each set go to
 * <out_dir>/timed_NNN.npy, so the parent checks timed calls too.
 *
 * Every call: outputs poisoned (NaN) before, inputs checksummed before and
 * after, outputs copied the moment pk_forward returns; outputs that change
 * after the copy mean a thread of the kernel kept working (work_after_return).
 *
 * The result is one JSON line on the result fd (our stdout at start; the
 * kernel's stdout goes to stderr): {"ok": true, "times_ms": [...], ...} or
 * {"ok": false, "status": "<category>", "message": "..."}.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pragma/hash.h"
#include "pragma/kernel.h"
#include "pragma/run.h"
#include "pragma/tensor.h"
#include "harness.h"
#include "perf_counters.h"

typedef int (*forward_fn)(const struct pk_tensor *, int, struct pk_tensor *, int);

struct hset {
	struct pragma_tensor *in;      /* n_in buffers */
	struct pk_tensor *in_abi;
	int data;                      /* whose data the buffers hold now */
	uint64_t *sum;                 /* checksums of this set's own data */
	struct pragma_tensor *out;     /* handed to the kernel */
	struct pk_tensor *out_abi;
	struct pragma_tensor *snap;    /* copied the moment pk_forward returned */
	int snap_valid;
	const char *out_dir;
	int timed_calls;
	int *timed_fd;                 /* n_out, or NULL */
};

struct step {
	int buf, data;
	int *fd;                       /* n_out pre-opened files, or NULL */
};

static struct hset *sets;
static int n_sets, n_in, n_out;
static forward_fn fwd;
static int calls;
static int cold;
static struct harness_sandbox sb;
static struct perf_counters pc;   /* the profiler's counters (perf_counters.h) */

static volatile unsigned char *flush_buf;
static size_t flush_len;

static void emit(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	if (s) {
		harness_write_all(harness_guard.result_fd, s, strlen(s));
		harness_write_all(harness_guard.result_fd, "\n", 1);
	}
	free(s);
	json_decref(o);
}

static void fail(const char *status, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

static void fail(const char *status, const char *fmt, ...)
{
	char msg[2048];
	unsigned long nfail;
	size_t largest;
	va_list ap;
	json_t *o;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o = json_pack("{s:b, s:s, s:s, s:i}", "ok", 0, "status", status, "message", msg, "calls", calls);
	harness_alloc_failures(&nfail, &largest);
	if (nfail)
		json_object_set_new(o, "alloc_failures",
				    json_pack("{s:I, s:I}", "count", (json_int_t)nfail, "largest", (json_int_t)largest));
	harness_sandbox_report(&sb, o);
	emit(o);
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
 * unwritten never looks right by accident (patterns in run.h). */
static void poison(struct pragma_tensor *t)
{
	if (!t->nbytes)
		return;
	switch (t->dtype) {
	case PK_FLOAT32: {
		uint32_t *p = t->data;
		for (size_t i = 0; i < t->nbytes / 4; i++)
			p[i] = PRAGMA_POISON_F32;
		break;
	}
	case PK_FLOAT64: {
		uint64_t *p = t->data;
		for (size_t i = 0; i < t->nbytes / 8; i++)
			p[i] = PRAGMA_POISON_F64;
		break;
	}
	case PK_FLOAT16:
	case PK_BFLOAT16: {
		uint16_t v = t->dtype == PK_FLOAT16 ? PRAGMA_POISON_F16 : PRAGMA_POISON_BF16, *p = t->data;
		for (size_t i = 0; i < t->nbytes / 2; i++)
			p[i] = v;
		break;
	}
	case PK_BOOL:
		memset(t->data, PRAGMA_POISON_BOOL, t->nbytes);
		break;
	default:
		memset(t->data, PRAGMA_POISON_BYTE, t->nbytes);
		break;
	}
}

static uint64_t checksum(const struct pragma_tensor *t)
{
	return pragma_hash64(t->data, t->nbytes, 0x5eed);
}

/* Touch every line of a buffer larger than the last-level cache. */
static void flush_cache(void)
{
	for (size_t i = 0; i < flush_len; i += 64)
		flush_buf[i]++;
}

/* Exchange the contents of two sets' input buffers (same shapes). */
static void swap_data(struct hset *a, struct hset *b)
{
	for (int i = 0; i < n_in; i++) {
		unsigned char *x = a->in[i].data, *y = b->in[i].data, t[4096];
		size_t n = a->in[i].nbytes;
		for (size_t o = 0; o < n; o += sizeof(t)) {
			size_t k = n - o < sizeof(t) ? n - o : sizeof(t);
			memcpy(t, x + o, k);
			memcpy(x + o, y + o, k);
			memcpy(y + o, t, k);
		}
	}
	int d = a->data;
	a->data = b->data;
	b->data = d;
}

/* Put set `data`'s inputs into the buffers of set `buf`. */
static void arrange(int buf, int data)
{
	if (sets[buf].data == data)
		return;
	for (int s = 0; s < n_sets; s++)
		if (sets[s].data == data) {
			swap_data(&sets[buf], &sets[s]);
			return;
		}
}

static void check_inputs(struct hset *S, const char *when)
{
	const uint64_t *want = sets[S->data].sum;

	for (int i = 0; i < n_in; i++)
		if (checksum(&S->in[i]) != want[i])
			fail("modified_input", "input %d changed %s (set %d, call %d); inputs are read-only", i, when,
			     S->data, calls);
}

/* Outputs must stay as they were when pk_forward returned. */
static void check_settled(struct hset *S, const char *when)
{
	if (!S->snap_valid)
		return;
	for (int k = 0; k < n_out; k++)
		if (S->out[k].nbytes && memcmp(S->out[k].data, S->snap[k].data, S->out[k].nbytes)) {
			size_t es = pragma_dtype_size(S->out[k].dtype), first = 0, n = 0;
			const unsigned char *a = S->out[k].data, *b = S->snap[k].data;
			for (size_t e = 0; e < S->out[k].nbytes / es; e++)
				if (memcmp(a + e * es, b + e * es, es) && !n++)
					first = e;
			fail("work_after_return",
			     "output[%d] changed %s pk_forward returned (%zu elements, first at flat index %zu; "
			     "set %d, call %d): a thread the kernel started kept working; finish all work before "
			     "returning",
			     k, when, n, first, S->data, calls);
		}
}

/* One call on set `b`'s buffers; returns the time of pk_forward in ms.
 * Counted calls (the timed ones) run inside the profiler's counter window. */
static double call_once(int b, int counted)
{
	struct hset *S = &sets[b];
	double t0, t1;
	int rc;

	check_settled(S, "after");
	/* Timed calls skip this one (its cost is per byte): a change between
	 * calls still shows, as wrong outputs or in the final check. */
	if (!counted)
		check_inputs(S, "between calls");
	for (int k = 0; k < n_out; k++)
		poison(&S->out[k]);
	/* Fresh descriptors every call: a kernel that scribbles on them (they
	 * are only const by convention) cannot steer later calls. */
	for (int i = 0; i < n_in; i++)
		to_abi(&S->in[i], &S->in_abi[i]);
	for (int k = 0; k < n_out; k++)
		to_abi(&S->out[k], &S->out_abi[k]);
	if (cold)
		flush_cache();
	calls++;
	harness_guard.set = S->data;
	harness_guard.call = calls;
	harness_guard.in_kernel = 1;
	if (counted)
		perf_counters_start(&pc);
	t0 = now_ms();
	rc = fwd(S->in_abi, n_in, S->out_abi, n_out);
	t1 = now_ms();
	if (counted)
		perf_counters_stop(&pc);
	/* Outputs count as they stand at return (DESIGN 3.4). */
	for (int k = 0; k < n_out; k++)
		if (S->out[k].nbytes)
			memcpy(S->snap[k].data, S->out[k].data, S->out[k].nbytes);
	harness_guard.in_kernel = 0;
	S->snap_valid = 1;
	if (rc != 0) {
		unsigned long nfail;
		size_t largest;
		harness_alloc_failures(&nfail, &largest);
		if (nfail)
			fail("memory_limit",
			     "pk_forward returned %d after an allocation of %.1f MB failed under the address-space "
			     "limit (set %d, call %d); allocate less",
			     rc, largest / 1e6, S->data, calls);
		fail("kernel_error", "pk_forward returned %d on input set %d (call %d); it must return 0", rc, S->data,
		     calls);
	}
	check_inputs(S, "during the call");
	return t1 - t0;
}

/* .npy v1 header + data to a pre-opened file (the sandbox allows no open). */
static int write_npy_fd(int fd, const struct pragma_tensor *t)
{
	static const char *const descr[] = { [PK_FLOAT32] = "<f4", [PK_FLOAT64] = "<f8", [PK_FLOAT16] = "<f2",
					     [PK_BFLOAT16] = "<u2", [PK_INT64] = "<i8", [PK_INT32] = "<i4",
					     [PK_INT8] = "|i1", [PK_UINT8] = "|u1", [PK_BOOL] = "|b1" };
	char hdr[1024];
	int n = snprintf(hdr + 10, sizeof(hdr) - 80, "{'descr': '%s', 'fortran_order': False, 'shape': (",
			 descr[t->dtype]);
	size_t total;

	for (int i = 0; i < t->ndim; i++)
		n += snprintf(hdr + 10 + n, sizeof(hdr) - 80 - (size_t)n, "%lld,%s", (long long)t->shape[i],
			      i + 1 < t->ndim ? " " : "");
	n += snprintf(hdr + 10 + n, sizeof(hdr) - 80 - (size_t)n, "), }");
	total = ((size_t)n + 11 + 63) & ~(size_t)63;
	while ((size_t)n + 11 < total)
		hdr[10 + n++] = ' ';
	hdr[10 + n++] = '\n';
	memcpy(hdr, "\x93NUMPY\x01\x00", 8);
	hdr[8] = (char)(n & 255);
	hdr[9] = (char)(n >> 8);
	if (lseek(fd, 0, SEEK_SET) < 0 || ftruncate(fd, 0) < 0)
		return -1;
	if (harness_write_all(fd, hdr, (size_t)n + 10) < 0)
		return -1;
	return t->nbytes ? harness_write_all(fd, t->data, t->nbytes) : 0;
}

static int *open_outputs(const char *dir, const char *name)
{
	int *fd = calloc((size_t)n_out + 1, sizeof(int));

	for (int k = 0; k < n_out; k++) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/%s_%03d.npy", dir, name, k);
		fd[k] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd[k] < 0)
			fail("harness_error", "cannot create %s: %s", path, strerror(errno));
	}
	return fd;
}

static void save(struct hset *S, const int *fd)
{
	for (int k = 0; k < n_out; k++)
		if (write_npy_fd(fd[k], &S->snap[k]) < 0)
			fail("harness_error", "writing output %d: %s", k, strerror(errno));
}

static int64_t jint(json_t *o, const char *k, int64_t def)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? json_integer_value(v) : def;
}

static void settle(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void settle_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void final_checks(int ms)
{
	if (ms > 0)
		settle(ms);
	for (int s = 0; s < n_sets; s++) {
		check_settled(&sets[s], "after");
		check_inputs(&sets[s], "after the last call returned");
	}
}

static void load_sets(json_t *jsets, json_t *jin, json_t *jout)
{
	struct pragma_err err = PRAGMA_ERR_INIT;

	sets = calloc((size_t)n_sets, sizeof(*sets));
	for (int s = 0; s < n_sets; s++) {
		json_t *js = json_array_get(jsets, (size_t)s);
		json_t *files = json_object_get(js, "inputs");
		struct hset *S = &sets[s];

		S->data = s;
		S->out_dir = json_string_value(json_object_get(js, "out_dir"));
		if (!json_is_array(files) || (int)json_array_size(files) != n_in || !S->out_dir)
			fail("harness_error", "set %d: expected %d input files and out_dir", s, n_in);
		S->in = calloc((size_t)n_in + 1, sizeof(*S->in));
		S->in_abi = calloc((size_t)n_in + 1, sizeof(*S->in_abi));
		S->sum = calloc((size_t)n_in + 1, sizeof(*S->sum));
		for (int i = 0; i < n_in; i++) {
			enum pk_dtype want;
			const char *dt = json_string_value(json_object_get(json_array_get(jin, (size_t)i), "dtype"));
			if (!dt || pragma_dtype_from_name(dt, &want) < 0)
				fail("harness_error", "input %d: bad dtype", i);
			if (pragma_npy_read(json_string_value(json_array_get(files, (size_t)i)), (int)want, &S->in[i],
					    &err) < 0)
				fail("harness_error", "input %d: %s", i, err.msg);
			if (s && (S->in[i].nbytes != sets[0].in[i].nbytes || S->in[i].ndim != sets[0].in[i].ndim))
				fail("harness_error", "input %d of set %d differs in shape from set 0", i, s);
			to_abi(&S->in[i], &S->in_abi[i]);
			S->sum[i] = checksum(&S->in[i]);
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
				fail("harness_error", "output %d: %s (address-space limit too low?)", k, err.msg);
			to_abi(&S->out[k], &S->out_abi[k]);
		}
	}
}

/* Read one line from stdin (serve mode); 0 at EOF. */
static int read_line(char *buf, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap) {
		char c;
		ssize_t r = read(0, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (c == '\n') {
			buf[n] = 0;
			return 1;
		}
		buf[n++] = c;
	}
	buf[n] = 0;
	return n > 0;
}

static json_t *timed_rounds(int reps, int *next)
{
	json_t *times = json_array();

	for (int r = 0; r < reps; r++) {
		int s = (*next)++ % n_sets;
		double t = call_once(s, 1);
		sets[s].timed_calls++;
		json_array_append_new(times, json_real(t));
	}
	return times;
}

static void save_timed(void)
{
	for (int s = 0; s < n_sets; s++)
		if (sets[s].timed_fd && sets[s].timed_calls)
			save(&sets[s], sets[s].timed_fd);
}

static json_t *finish_result(json_t *res)
{
	json_t *tc = json_array();
	unsigned long nfail;
	size_t largest;
	struct rusage ru;

	for (int s = 0; s < n_sets; s++)
		json_array_append_new(tc, json_integer(sets[s].timed_calls));
	json_object_set_new(res, "timed_calls", tc);
	json_object_set_new(res, "calls", json_integer(calls));
	harness_alloc_failures(&nfail, &largest);
	if (nfail)
		json_object_set_new(res, "alloc_failures",
				    json_pack("{s:I, s:I}", "count", (json_int_t)nfail, "largest", (json_int_t)largest));
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		json_object_set_new(res, "maxrss_kb", json_integer(ru.ru_maxrss));
	harness_sandbox_report(&sb, res);
	perf_counters_report(&pc, res);
	return res;
}

int main(int argc, char **argv)
{
	json_error_t jerr;
	json_t *req, *jsets, *jout, *jin, *jsteps, *pre;
	struct step *steps = NULL;
	const char *mode, *kernel;
	int n_steps = 0, warmup, reps, save_t, settle_step_us, final_ms;
	struct pragma_err err = PRAGMA_ERR_INIT;
	void *dl;
	size_t j;

	if (argc >= 2 && !strcmp(argv[1], "confine"))
		return harness_confine_main(argc, argv);
	/* Who we are, for the parent's check before it trusts our answers. */
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("pragma-harness protocol %d\n", HARNESS_PROTOCOL);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: pragma-harness REQUEST.json\n"
				"       pragma-harness confine [--ro P|--rw P]... -- PROGRAM ARGS...\n");
		return 2;
	}
	/* Our stdout is the result channel; whatever the kernel prints goes to
	 * stderr instead, so it cannot garble the answer by accident. */
	harness_guard.result_fd = fcntl(1, F_DUPFD_CLOEXEC, 10);
	if (harness_guard.result_fd < 0 || dup2(2, 1) < 0) {
		perror("pragma-harness: result fd");
		return 3;
	}
	/* Nothing inherited by accident reaches the kernel. */
	close_range(3, (unsigned)harness_guard.result_fd - 1, 0);
	close_range((unsigned)harness_guard.result_fd + 1, ~0U, 0);
	harness_guard_install();
	req = json_load_file(argv[1], 0, &jerr);
	if (!req)
		fail("harness_error", "cannot read request %s: %s", argv[1], jerr.text);
	if (harness_sandbox_parse(req, &sb) < 0)
		fail("harness_error", "malformed sandbox section");
	if (perf_counters_parse(req, &pc) < 0)
		fail("harness_error", "malformed perf section");
	kernel = json_string_value(json_object_get(req, "kernel"));
	mode = json_string_value(json_object_get(req, "mode"));
	jsets = json_object_get(req, "sets");
	jout = json_object_get(req, "outputs");
	jin = json_object_get(req, "inputs");
	if (!kernel || !mode || !json_is_array(jsets) || !json_array_size(jsets) || !json_is_array(jout) ||
	    !json_is_array(jin) || (strcmp(mode, "run") && strcmp(mode, "time") && strcmp(mode, "serve")))
		fail("harness_error", "malformed request");
	n_sets = (int)json_array_size(jsets);
	n_in = (int)json_array_size(jin);
	n_out = (int)json_array_size(jout);
	warmup = (int)jint(req, "warmup", 0);
	reps = (int)jint(req, "reps", 0);
	cold = json_is_true(json_object_get(req, "cold"));
	save_t = json_is_true(json_object_get(req, "save_timed"));
	settle_step_us = (int)jint(req, "settle_us", 0);
	final_ms = (int)jint(req, "final_settle_ms", 0);

	/* 1. Everything the run needs, before the kernel is in the address space. */
	load_sets(jsets, jin, jout);
	if (cold) {
		flush_len = (size_t)jint(req, "flush_bytes", 64 << 20);
		flush_buf = calloc(flush_len, 1);
		if (!flush_buf)
			fail("harness_error", "cannot allocate the cache-flush buffer (%zu bytes)", flush_len);
	}
	jsteps = json_object_get(req, "steps");
	if (!strcmp(mode, "run")) {
		n_steps = json_is_array(jsteps) ? (int)json_array_size(jsteps) : n_sets;
		steps = calloc((size_t)n_steps + 1, sizeof(*steps));
		for (int i = 0; i < n_steps; i++) {
			json_t *st = json_array_get(jsteps, (size_t)i);
			const char *name = st ? json_string_value(json_object_get(st, "save")) : "out";
			steps[i].buf = st ? (int)jint(st, "buf", -1) : i;
			steps[i].data = st ? (int)jint(st, "data", steps[i].buf) : i;
			if (steps[i].buf < 0 || steps[i].buf >= n_sets || steps[i].data < 0 || steps[i].data >= n_sets)
				fail("harness_error", "step %d: bad set index", i);
			if (name)
				steps[i].fd = open_outputs(sets[steps[i].data].out_dir, name);
		}
	}
	if (save_t)
		for (int s = 0; s < n_sets; s++)
			sets[s].timed_fd = open_outputs(sets[s].out_dir, "timed");

	/* 2. Trusted runtimes initialize outside the sandbox. */
	pre = json_object_get(req, "preload");
	json_array_foreach(pre, j, jin) {
		const char *so = json_string_value(jin);
		void *h = so ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
		int (*init)(void);
		if (!h) {
			fprintf(stderr, "pragma-harness: preload %s: %s\n", so ? so : "?", dlerror());
			continue;
		}
		/* OpenMP runtimes initialize lazily; clang's libomp reads /sys
		 * and registers in /dev/shm on first use. Make that first use
		 * happen now, while files may still be opened. */
		init = (int (*)(void))(uintptr_t)dlsym(h, "omp_get_num_procs");
		if (init)
			init();
		init = (int (*)(void))(uintptr_t)dlsym(h, "omp_get_max_threads");
		if (init)
			init();
	}

	/* perf_event_open is not on the sandbox's list, and the counters must
	 * exist before the kernel starts threads (they inherit them). */
	perf_counters_open(&pc);

	/* 3.-5. Confine, load the kernel (constructors run confined), lock. */
	if (harness_sandbox_enter(&sb, kernel, &err) < 0)
		fail("sandbox_error", "%s", err.msg);
	dl = dlopen(kernel, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		fail("link_error", "cannot load the kernel: %s", dlerror());
	fwd = (forward_fn)(uintptr_t)dlsym(dl, "pk_forward");
	if (!fwd)
		fail("link_error", "the kernel does not define pk_forward");
	if (harness_sandbox_lock(&sb, &err) < 0)
		fail("sandbox_error", "%s", err.msg);

	/* 6. Run. */
	if (!strcmp(mode, "run")) {
		for (int i = 0; i < n_steps; i++) {
			arrange(steps[i].buf, steps[i].data);
			call_once(steps[i].buf, 0);
			if (settle_step_us > 0) {
				settle_us(settle_step_us);
				check_settled(&sets[steps[i].buf], "after");
				check_inputs(&sets[steps[i].buf], "after the call returned");
			}
			if (steps[i].fd)
				save(&sets[steps[i].buf], steps[i].fd);
		}
		final_checks(final_ms);
		emit(finish_result(json_pack("{s:b, s:[]}", "ok", 1, "times_ms")));
		_exit(0);
	}

	int next = 0;
	for (int w = 0; w < warmup; w++)
		call_once(next++ % n_sets, 0);
	if (!strcmp(mode, "time")) {
		json_t *times = timed_rounds(reps, &next);
		final_checks(final_ms);
		save_timed();
		emit(finish_result(json_pack("{s:b, s:o}", "ok", 1, "times_ms", times)));
		_exit(0);
	}

	/* serve */
	{
		json_t *ready = json_pack("{s:b, s:b, s:i}", "ok", 1, "ready", 1, "sets", n_sets);
		harness_sandbox_report(&sb, ready);
		emit(ready);
	}
	for (;;) {
		char line[256];
		int r;

		if (!read_line(line, sizeof(line)) || !strcmp(line, "quit"))
			break;
		if (sscanf(line, "time %d", &r) == 1 && r > 0 && r <= 1000000) {
			json_t *times = timed_rounds(r, &next);
			emit(json_pack("{s:b, s:o}", "ok", 1, "times_ms", times));
		} else {
			fail("harness_error", "serve: expected 'time R' or 'quit', got '%.100s'", line);
		}
	}
	final_checks(final_ms);
	save_timed();
	emit(finish_result(json_pack("{s:b, s:b}", "ok", 1, "done", 1)));
	_exit(0);
}
