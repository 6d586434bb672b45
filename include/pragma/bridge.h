/* Running the PyTorch bridge (bridge/pragma_bridge.py) as a subprocess. */
#ifndef PRAGMA_BRIDGE_H
#define PRAGMA_BRIDGE_H

#include <jansson.h>
#include <stdint.h>

#include "pragma/buf.h"
#include "pragma/err.h"

struct pragma_task;
struct pragma_refset;

/* The interpreter: $PRAGMA_PYTHON, else /usr/bin/python3 (DESIGN 3.3). */
const char *pragma_bridge_python(void);
/* Runtime versions without importing torch ("python 3.11.2 torch 1.13.0a0
 * numpy 1.24.2"); cached for the process. */
int pragma_bridge_versions(char *out, size_t len, struct pragma_err *err);
/* Environment for a fair baseline with `threads` threads (DESIGN 3.3):
 * OMP/OpenBLAS/MKL thread counts and tcmalloc preloaded when installed.
 * Returns a static NULL-terminated "K=V" array. */
const char *const *pragma_bridge_env(int threads);
/* Run the bridge with args (after the script path); parse its one JSON
 * object from stdout into *out. A bridge refusal ({"ok": false}) becomes
 * err (PRAGMA_E_INPUT for problem errors, PRAGMA_E_ENV for environment). */
int pragma_bridge_run(const char *const *args, int threads, int timeout_ms, json_t **out,
		      struct pragma_err *err);

/* The same with another script that speaks the bridge's command line (the
 * GPU timing script, runtime/cuda/torch_cuda_time.py). */
int pragma_bridge_run_script(const char *script, const char *const *args, int threads, int timeout_ms, json_t **out,
			     struct pragma_err *err);

/* The arguments of the bridge's `time` command for a task, its input sets
 * and the timing protocol (after the script path). */
struct pragma_bridge_args {
	const char *argv[160];
	int n;
	char warm[16], reps[16], threads[16], flush[32];
	struct pragma_buf dirs;
};
void pragma_bridge_time_args(struct pragma_bridge_args *a, const struct pragma_task *t,
			     const struct pragma_refset *sets, int n_sets, int warmup, int reps, int threads, int cold,
			     uint64_t flush_bytes, int serve);
void pragma_bridge_args_release(struct pragma_bridge_args *a);

/* The bridge in serve mode (lib/task/bridge_serve.c): one warm process
 * that times forward() in rounds on request, for interleaved comparisons.
 * Start it with script and `time ... --serve` args; it answers "ready"
 * with its configuration (torch, BLAS, threads, allocator, device). */
struct pragma_bridge_server;
int pragma_bridge_serve_start(const char *script, const struct pragma_bridge_args *a, int threads, int timeout_ms,
			      struct pragma_bridge_server **out, json_t **config, struct pragma_err *err);
/* One round of reps timed calls: times appended to *times (realloc'ed),
 * *n updated. The bridge failing is PRAGMA_E_ENV with its message. */
int pragma_bridge_serve_time(struct pragma_bridge_server *s, int reps, int timeout_ms, double **times, int *n,
			     struct pragma_err *err);
/* Its process id; 0 when gone. */
int pragma_bridge_serve_pid(const struct pragma_bridge_server *s);
/* Ask it to quit, wait, free. */
void pragma_bridge_serve_stop(struct pragma_bridge_server *s);

#endif
