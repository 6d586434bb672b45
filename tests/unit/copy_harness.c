/*
 * pragma-copy-harness: a harness for tests/unit/test_protocol.c that runs
 * runtime/protocol.c the way the CUDA harness does, without a GPU. The
 * kernel's buffers are separate from the data the protocol loaded (like
 * device memory): inputs are copied in, outputs are poisoned by copying a
 * pattern made once from set 0, checks read through a scratch buffer that
 * the next read overwrites, swaps go through a temporary buffer, and the
 * snapshot is a copy. The same cheats must get the same verdicts here as
 * in pragma-harness, and the outputs the same bytes. Never sandboxed (the
 * test runs it with sandbox off); mode "profile" is offered and counts
 * the calls inside its window.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pragma/tensor.h"
#include "harness.h"
#include "protocol.h"

static void **pattern;          /* per output: its poison, made from set 0 */
static int n_pattern;
static unsigned char *scratch, *tmp;
static size_t flush_len;
static volatile unsigned char *flush_buf;
static int profiling, profiled_calls, flushes;
static double t0;

static void *copy_alloc(size_t n)
{
	void *p = n ? malloc(n) : NULL;

	if (n && !p)
		harness_fail("harness_error", "out of memory (%zu bytes)", n);
	return p;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void copy_parse(json_t *req)
{
}

static void *copy_input(struct pragma_tensor *host)
{
	void *d = copy_alloc(host->nbytes);

	if (host->nbytes)
		memcpy(d, host->data, host->nbytes);
	return d;
}

static void *copy_output(int set, int k, const struct pragma_tensor *like)
{
	void *d = copy_alloc(like->nbytes);

	if (!set) {
		pattern = realloc(pattern, (size_t)(k + 1) * sizeof(void *));
		if (!pattern)
			harness_fail("harness_error", "out of memory for the poison table");
		n_pattern = k + 1;
		pattern[k] = copy_alloc(like->nbytes);
		harness_poison_host(pattern[k], like->nbytes, like->dtype);
	}
	return d;
}

static void copy_loaded(size_t largest)
{
	scratch = copy_alloc(largest ? largest : 1);
	tmp = copy_alloc(largest ? largest : 1);
}

static void copy_poison(int k, void *buf, const struct pragma_tensor *like)
{
	if (k >= n_pattern)
		harness_fail("harness_error", "output %d has no poison pattern", k);
	memcpy(buf, pattern[k], like->nbytes);
}

/* Through scratch, like a device read-back: the next read overwrites it. */
static const void *copy_read(const void *buf, size_t n)
{
	memcpy(scratch, buf, n);
	return scratch;
}

static void copy_download(void *host, const void *buf, size_t n)
{
	memcpy(host, buf, n);
}

static void copy_swap(void *a, void *b, size_t n)
{
	memcpy(tmp, a, n);
	memcpy(a, b, n);
	memcpy(b, tmp, n);
}

static void copy_flush_setup(size_t bytes)
{
	flush_len = bytes;
	flush_buf = copy_alloc(flush_len);
}

static void copy_before_call(int cold)
{
	if (!cold)
		return;
	for (size_t i = 0; i < flush_len; i += 64)
		flush_buf[i] = 1;
	flushes++;
}

static void copy_call_begin(int counted)
{
	t0 = now_ms();
}

static double copy_call_end(int counted, int set)
{
	double t1 = now_ms();

	profiled_calls += profiling;
	return t1 - t0;
}

static void copy_nothing(void)
{
}

static void copy_enter(const char *kernel_so)
{
}

static void copy_profile_start(void)
{
	profiling = 1;
}

static void copy_profile_stop(void)
{
	profiling = 0;
}

static void copy_sandbox_report(json_t *answer)
{
	json_object_set_new(answer, "sandbox", json_pack("{s:b}", "enabled", 0));
}

static void copy_finish(json_t *answer)
{
	json_object_set_new(answer, "profiled_calls", json_integer(profiled_calls));
	json_object_set_new(answer, "flushes", json_integer(flushes));
}

static const struct harness_ops copy_ops = {
	.name = "pragma-copy-harness",
	.settled_after = "pk_forward returned",
	.settled_culprit = "a thread the kernel started kept working",
	.forward_hint = "",
	.host_alloc_hint = "",
	.check_inputs_timed = 1,
	.parse = copy_parse,
	.input = copy_input,
	.output = copy_output,
	.loaded = copy_loaded,
	.poison = copy_poison,
	.read = copy_read,
	.download = copy_download,
	.swap = copy_swap,
	.flush_setup = copy_flush_setup,
	.before_call = copy_before_call,
	.call_begin = copy_call_begin,
	.call_end = copy_call_end,
	.enter = copy_enter,
	.lock = copy_nothing,
	.profile_start = copy_profile_start,
	.profile_stop = copy_profile_stop,
	.sandbox_report = copy_sandbox_report,
	.finish = copy_finish,
};

int main(int argc, char **argv)
{
	return harness_main(argc, argv, &copy_ops);
}
