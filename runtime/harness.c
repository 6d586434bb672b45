/*
 * pragma-harness: the CPU harness. The protocol — the request, the input
 * sets, the checks around every call, the modes, the answer — is
 * protocol.c's, shared with the CUDA harness; this file is what is
 * particular to running a kernel on the CPU:
 *
 *   - the kernel's tensors are host memory: the loaded inputs are its
 *     input buffers, and the outputs are host allocations checked in place;
 *   - a call is timed with CLOCK_MONOTONIC around pk_forward, with the
 *     profiler's perf counters (perf_counters.h) around counted calls;
 *   - cold mode touches every line of a buffer larger than the last-level
 *     cache before each call;
 *   - the sandbox is sandbox.c's (Landlock, seccomp in two stages);
 *   - `pragma-harness confine ...` is the compiler jail (sandbox.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pragma/tensor.h"
#include "harness.h"
#include "perf_counters.h"
#include "protocol.h"

static struct harness_sandbox sb;
static struct perf_counters pc;   /* the profiler's counters (perf_counters.h) */

static volatile unsigned char *flush_buf;
static size_t flush_len;
static double t0;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void cpu_parse(json_t *req)
{
	if (harness_sandbox_parse(req, &sb) < 0)
		harness_fail("harness_error", "malformed sandbox section");
	if (perf_counters_parse(req, &pc) < 0)
		harness_fail("harness_error", "malformed perf section");
}

/* The loaded data is the kernel's buffer: no copy. */
static void *cpu_input(struct pragma_tensor *host)
{
	return host->data;
}

static void *cpu_output(int set, int k, const struct pragma_tensor *like)
{
	struct pragma_tensor t = PRAGMA_TENSOR_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	if (pragma_tensor_alloc(&t, like->dtype, like->ndim, like->shape, &err) < 0)
		harness_fail("harness_error", "output %d: %s (address-space limit too low?)", k, err.msg);
	return t.data;   /* lives as long as the process */
}

static void cpu_poison(int k, void *buf, const struct pragma_tensor *like)
{
	harness_poison_host(buf, like->nbytes, like->dtype);
}

static const void *cpu_read(const void *buf, size_t n)
{
	return buf;
}

static void cpu_download(void *host, const void *buf, size_t n)
{
	memcpy(host, buf, n);
}

static void cpu_swap(void *a, void *b, size_t n)
{
	unsigned char *x = a, *y = b, t[4096];

	for (size_t o = 0; o < n; o += sizeof(t)) {
		size_t k = n - o < sizeof(t) ? n - o : sizeof(t);
		memcpy(t, x + o, k);
		memcpy(x + o, y + o, k);
		memcpy(y + o, t, k);
	}
}

static void cpu_flush_setup(size_t bytes)
{
	flush_len = bytes;
	flush_buf = calloc(flush_len, 1);
	if (!flush_buf)
		harness_fail("harness_error", "cannot allocate the cache-flush buffer (%zu bytes)", flush_len);
}

/* Touch every line of a buffer larger than the last-level cache. */
static void cpu_before_call(int cold)
{
	if (!cold)
		return;
	for (size_t i = 0; i < flush_len; i += 64)
		flush_buf[i]++;
}

static void cpu_call_begin(int counted)
{
	if (counted)
		perf_counters_start(&pc);
	t0 = now_ms();
}

static double cpu_call_end(int counted, int set)
{
	double t1 = now_ms();

	if (counted)
		perf_counters_stop(&pc);
	return t1 - t0;
}

static void cpu_enter(const char *kernel_so)
{
	struct pragma_err err = PRAGMA_ERR_INIT;

	/* perf_event_open is not on the sandbox's list, and the counters must
	 * exist before the kernel starts threads (they inherit them). */
	perf_counters_open(&pc);
	if (harness_sandbox_enter(&sb, kernel_so, &err) < 0)
		harness_fail("sandbox_error", "%s", err.msg);
}

static void cpu_lock(void)
{
	struct pragma_err err = PRAGMA_ERR_INIT;

	if (harness_sandbox_lock(&sb, &err) < 0)
		harness_fail("sandbox_error", "%s", err.msg);
}

static void cpu_sandbox_report(json_t *answer)
{
	harness_sandbox_report(&sb, answer);
}

static void cpu_finish(json_t *answer)
{
	perf_counters_report(&pc, answer);
}

static const struct harness_ops cpu_ops = {
	.name = "pragma-harness",
	.usage = "       pragma-harness confine [--ro P|--rw P]... -- PROGRAM ARGS...\n",
	.settled_after = "pk_forward returned",
	.settled_culprit = "a thread the kernel started kept working",
	.forward_hint = "",
	.host_alloc_hint = " (address-space limit too low?)",
	/* Checking inputs costs per byte, as much as many a kernel: timed
	 * calls skip it (a change still shows in the outputs or at the end). */
	.check_inputs_timed = 0,
	.parse = cpu_parse,
	.input = cpu_input,
	.output = cpu_output,
	.poison = cpu_poison,
	.read = cpu_read,
	.download = cpu_download,
	.swap = cpu_swap,
	.flush_setup = cpu_flush_setup,
	.before_call = cpu_before_call,
	.call_begin = cpu_call_begin,
	.call_end = cpu_call_end,
	.enter = cpu_enter,
	.lock = cpu_lock,
	.sandbox_report = cpu_sandbox_report,
	.finish = cpu_finish,
};

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "confine"))
		return harness_confine_main(argc, argv);
	return harness_main(argc, argv, &cpu_ops);
}
