/* Compiling kernels into shared objects (DESIGN 3.4: -O3 -march=native
 * -fopenmp -fPIC -shared, plus allowed flags), the flag allow-list, and the
 * check of what a compiled object imports. */
#ifndef PRAGMA_BUILD_H
#define PRAGMA_BUILD_H

#include <stddef.h>

#include "pragma/buf.h"
#include "pragma/err.h"
#include "pragma/proc.h"

struct pragma_build_opts {
	const char *compiler;            /* "gcc" or "clang"; NULL: $PRAGMA_CC or gcc */
	const char *const *flags;        /* extra flags, already allowed; NULL-terminated or NULL */
	int timeout_ms;                  /* 0: 120 s */
	/* Untrusted sources: run the compiler under Landlock (reads: the
	 * system's programs, headers and libraries, the few /etc files
	 * toolchains open, the compiler's own installation, pragma's include
	 * dir and the source; writes: a private temp dir) with memory/CPU/file
	 * limits, so `#include` or `.incbin` cannot pull the reference outputs,
	 * /etc/shadow or a home directory's files into the object. */
	int confine;
};

/* Compile src_path into out_so. The compiler's output (capped at 256 KiB)
 * goes to log. A failed compile is PRAGMA_E_NEGATIVE with the first error
 * line in the message; a missing compiler is PRAGMA_E_ENV. */
int pragma_build_so(const char *src_path, const char *out_so, const struct pragma_build_opts *o,
		    struct pragma_buf *log, struct pragma_err *err);

/* Build once and cache by content (source + options + compiler version)
 * under <cache>/build/<hash>.so; so_path receives the path. */
int pragma_build_cached(const char *src_path, const struct pragma_build_opts *o, struct pragma_buf *so_path,
			struct pragma_err *err);
/* The same, keeping the compiler's output (also for cache hits: it is
 * stored next to the object as <hash>.log). */
int pragma_build_cached_log(const char *src_path, const struct pragma_build_opts *o, struct pragma_buf *so_path,
			    struct pragma_buf *log, struct pragma_err *err);

/* The compiler's installation, for the compile jail to grant read and
 * execute on: its real path (found in PATH, symlinks resolved), two levels
 * up (/opt/conda/bin/gcc -> /opt/conda). Left empty when that is inside
 * /usr, which the jail grants anyway, or when the compiler cannot be found
 * (the jail then fails to run it, and says so). */
void pragma_compiler_install(const char *cc, struct pragma_buf *out);

/* "gcc 12.2.0" */
const char *pragma_compiler_version(const char *compiler);

/* ---- flags (lib/build/flags.c) ----
 * Allowed: optimization and code generation (-O*, -f*, -m*, --param),
 * warnings (-W*, -w), debug info (-g*), -std=, -pthread, and -D/-U for
 * tunables. Never: output paths (-o), tool and search paths (-B, -I, -L,
 * --sysroot), plugins and wrappers (-fplugin, -wrapper, -specs), linker and
 * assembler pass-through (-Wl, -Xlinker, -Wa), extra libraries (-l),
 * response files (@file), anything that writes or reads other files
 * (-save-temps, -fdump-*, -fprofile-*, -include, -M*), or changes what is
 * built (-c, -S, -E, -x, -static, -nostdlib, -m32). */
struct pragma_flags {
	char **v;                        /* malloc'ed strings */
	int n;
};

#define PRAGMA_FLAGS_INIT { 0 }

/* 0 when allowed; otherwise -1 and why ("-o: output paths are pragma's"). */
int pragma_flag_check(const char *flag, char *why, size_t len);
/* Split text on whitespace (no quoting: flags never need spaces), check
 * each flag, append. A refused flag is PRAGMA_E_NEGATIVE naming it; nothing
 * is appended then. "--param N=V" is joined into "--param=N=V". */
int pragma_flags_add(struct pragma_flags *f, const char *text, struct pragma_err *err);
/* The flags a kernel asks for in "// pragma:flags ..." lines (DESIGN 3.10). */
int pragma_flags_from_source(struct pragma_flags *f, const char *src, size_t len, struct pragma_err *err);
/* NULL-terminated view for pragma_build_opts.flags (valid until release). */
const char *const *pragma_flags_argv(struct pragma_flags *f);
void pragma_flags_release(struct pragma_flags *f);

/* ---- imported symbols (lib/build/symbols.c) ---- */
struct pragma_symbols {
	char **imports;                  /* undefined dynamic symbols */
	int n_imports;
	char **needed;                   /* DT_NEEDED sonames */
	int n_needed;
	int init_entries;                /* .init_array + .preinit_array + .ctors entries */
};

#define PRAGMA_SYMBOLS_INIT { 0 }

/* Read an ELF64 shared object's imports and needed libraries. A file that
 * is not one is PRAGMA_E_NEGATIVE. */
int pragma_symbols_read(const char *so_path, struct pragma_symbols *s, struct pragma_err *err);
void pragma_symbols_release(struct pragma_symbols *s);
/* Is a symbol on the allow-list (libc basics, libm, OpenMP, pthreads, C11
 * threads, compiler runtime)? When not, *why says what the symbol is for
 * ("starts processes", "file I/O", "BLAS", or "not on the allow-list"). */
int pragma_symbol_allowed(const char *name, const char **why);
/* Is a needed library allowed (libc, libm, libmvec, libgomp, libomp,
 * libpthread, libgcc_s, libatomic, the loader)? */
int pragma_library_allowed(const char *soname);
/* Check everything: 0 when allowed; -1, PRAGMA_E_NEGATIVE, with a message
 * naming the first forbidden symbol or library and how many there are. */
int pragma_symbols_check(const struct pragma_symbols *s, struct pragma_err *err);
/* The allowed needed libraries (but libc and the loader) to load before the
 * sandbox: out[] gets up to cap-1 sonames (borrowed from s) and a NULL;
 * returns how many. */
int pragma_symbols_preload(const struct pragma_symbols *s, const char **out, int cap);

#endif
