/* Compiling kernels into shared objects (DESIGN 3.4: -O3 -march=native
 * -fopenmp -fPIC -shared, plus allowed flags). */
#ifndef PRAGMA_BUILD_H
#define PRAGMA_BUILD_H

#include "pragma/buf.h"
#include "pragma/err.h"

struct pragma_build_opts {
	const char *compiler;            /* "gcc" or "clang"; NULL: $PRAGMA_CC or gcc */
	const char *const *flags;        /* extra flags, already allowed; NULL-terminated or NULL */
	int no_avx512;                   /* -mno-avx512f (valgrind 3.19 lacks AVX-512) */
	int timeout_ms;                  /* 0: 120 s */
};

/* Compile src_path into out_so. The compiler's output (capped) goes to log.
 * A failed compile is PRAGMA_E_NEGATIVE with the first error line in the
 * message; a missing compiler is PRAGMA_E_ENV. */
int pragma_build_so(const char *src_path, const char *out_so, const struct pragma_build_opts *o,
		    struct pragma_buf *log, struct pragma_err *err);

/* Build once and cache by content (source + options + compiler version)
 * under <cache>/build/<hash>.so; so_path receives the path. */
int pragma_build_cached(const char *src_path, const struct pragma_build_opts *o, struct pragma_buf *so_path,
			struct pragma_err *err);

/* "gcc 12.2.0" */
const char *pragma_compiler_version(const char *compiler);

#endif
