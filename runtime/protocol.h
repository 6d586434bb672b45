/*
 * The harness protocol, one implementation for every harness
 * (runtime/protocol.c). lib/sandbox/run.c writes a request file, runs a
 * harness on it, and reads one JSON answer line; pragma-harness (CPU,
 * runtime/harness.c) and pragma-cuda-harness (runtime/cuda/harness.cu)
 * both answer through this code, so the request, the checks around every
 * call and the answers cannot drift apart between backends.
 *
 * What a harness supplies is a struct harness_ops: where the kernel's
 * tensors live (host or device memory), how a call is timed and checked
 * afterwards, the sandbox, and its own members of the request and answer.
 * Everything else is here:
 *   - the request: read, checked, "malformed request" on the result fd;
 *   - the input sets: .npy inputs loaded and checksummed, outputs allocated
 *     (host snapshots here, the kernel's buffers by the ops), every output
 *     file pre-opened before confinement (out_NNN.npy, timed_NNN.npy);
 *   - every call: outputs poisoned, fresh pk_tensor descriptors, inputs
 *     checksummed before and after, outputs snapshotted at return and
 *     checked later (work_after_return), the cache flushed in cold mode;
 *   - the modes: run (steps: out/rep/swap), time, serve ("time R" / "quit"
 *     on stdin) and, where the harness offers it, profile;
 *   - the answer line and harness_fail().
 *
 * Compiled as C into both harnesses (the CUDA one links it from the
 * pragma_cuda_host library): one compiler and -Werror for the protocol,
 * and C (designated initializers, no casts of void *) where C++ would
 * need another dialect.
 */
#ifndef PRAGMA_PROTOCOL_H
#define PRAGMA_PROTOCOL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "pragma/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * What differs between harnesses. Every member is called from the
 * harness's one thread; a member that cannot do its job calls
 * harness_fail() (it never returns). Members marked "may be NULL" are
 * skipped when absent.
 */
struct harness_ops {
	/* The program's name, for --version, usage and messages. */
	const char *name;
	/* Further usage lines after "usage: NAME REQUEST.json" (or NULL). */
	const char *usage;
	/* Texts of messages that say what "settled" means here: after what
	 * the outputs must not change, and who kept working when they did. */
	const char *settled_after;
	const char *settled_culprit;
	/* Appended when pk_forward is missing; when a host allocation fails. */
	const char *forward_hint;
	const char *host_alloc_hint;
	/* Check the inputs before timed calls too, not only untimed ones. */
	int check_inputs_timed;

	/* The harness's own members of the request (sandbox, perf, device),
	 * read right after the request is loaded. */
	void (*parse)(json_t *req);
	/* After the request is checked, before the inputs load (CUDA: the
	 * device and its context). May be NULL. */
	void (*init)(void);

	/* Tensors. `input` returns the buffer the kernel reads, holding the
	 * data of host (which stays as loaded: its checksum is the truth);
	 * `output` returns a buffer the kernel writes for output k of set
	 * `set`, shaped like `like` (the host snapshot). */
	void *(*input)(struct pragma_tensor *host);
	void *(*output)(int set, int k, const struct pragma_tensor *like);
	/* Once every set is loaded: the largest buffer in bytes (scratch for
	 * read-backs and swaps). May be NULL. */
	void (*loaded)(size_t largest);
	/* Fill output k's buffer with the poison patterns of run.h. */
	void (*poison)(int k, void *buf, const struct pragma_tensor *like);
	/* A buffer's n bytes readable by the host; valid until the next read. */
	const void *(*read)(const void *buf, size_t n);
	/* Copy a buffer's n bytes to host memory (the snapshot at return). */
	void (*download)(void *host, const void *buf, size_t n);
	/* Exchange the contents of two buffers of n bytes. */
	void (*swap)(void *a, void *b, size_t n);

	/* Cold mode: make a flush of bytes (at least) possible, and before each
	 * call: flush when cold, and whatever else must precede a call. */
	void (*flush_setup)(size_t bytes);
	void (*before_call)(int cold);
	/* Around pk_forward: start the clock (counters when counted), then
	 * stop it, check what the call left behind (the kernel's errors, as
	 * harness_fail verdicts) and return the call's time in ms. */
	void (*call_begin)(int counted);
	double (*call_end)(int counted, int set);

	/* Confinement: stage 1 before the kernel is loaded (trusted runtimes
	 * are already in), stage 2 after. */
	void (*enter)(const char *kernel_so);
	void (*lock)(void);

	/* Mode "profile": warm-up, then the request's profile_calls timed
	 * calls between these two. NULL: the mode is not offered. */
	void (*profile_start)(void);
	void (*profile_stop)(void);

	/* The answer: the sandbox's report (every answer, failures too), and
	 * the harness's own members of a final report (device, counters). */
	void (*sandbox_report)(json_t *answer);
	void (*finish)(json_t *answer);
};

/* The whole program after the harness's own subcommands (confine, probe):
 * --version, usage, or one request. Returns only an exit code for those;
 * a request ends in _exit with its answer on the result fd. */
int harness_main(int argc, char **argv, const struct harness_ops *ops);

/* A failure as the answer: {"ok": false, "status", "message", "calls",
 * ...}; exits with 1. */
void harness_fail(const char *status, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* Calls of pk_forward so far (the current one included), for messages. */
int harness_calls(void);

/* An integer member of a JSON object, or def. */
int64_t harness_json_int(json_t *o, const char *key, int64_t def);

/* Host memory filled with the poison patterns of run.h for dtype: NaN for
 * floats, an unlikely byte for integers. */
void harness_poison_host(void *data, size_t nbytes, enum pk_dtype dtype);

#ifdef __cplusplus
}
#endif

#endif
