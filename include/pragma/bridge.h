/* Running the PyTorch bridge (bridge/pragma_bridge.py) as a subprocess. */
#ifndef PRAGMA_BRIDGE_H
#define PRAGMA_BRIDGE_H

#include <jansson.h>

#include "pragma/err.h"

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

#endif
