/*
 * What a compiled kernel imports, checked before anything runs (DESIGN
 * 3.4). The ELF reader takes the object's section headers: .dynsym for
 * undefined symbols, .dynamic for DT_NEEDED, and the constructor arrays.
 * It trusts nothing in the file: every offset and size is bounds-checked.
 *
 * The allow-list is what a numeric kernel needs: memory and string basics,
 * formatted printing (it lands on the harness's stderr), libm (and glibc's
 * vector math), OpenMP (gcc and clang runtimes), pthreads and C11 threads,
 * time, and the compiler runtime. Everything else is refused, with the
 * usual suspects named by purpose so the Conductor knows what to change.
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/build.h"
#include "pragma/fs.h"

static const char *const allowed_exact[] = {
	/* memory */
	"malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "memalign", "valloc",
	"reallocarray", "malloc_usable_size", "madvise",
	/* strings and bytes */
	"memcpy", "memmove", "memset", "memcmp", "memchr", "memrchr", "bzero", "explicit_bzero", "strlen", "strnlen",
	"strcmp", "strncmp", "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr", "strstr", "strdup",
	"strndup", "strspn", "strcspn", "strtok_r", "strerror", "strerror_r", "stpcpy", "mempcpy", "__mempcpy",
	"__memcpy_chk", "__memmove_chk", "__memset_chk", "__strcpy_chk", "__strncpy_chk", "__strcat_chk",
	"__strncat_chk", "__stpcpy_chk", "__mempcpy_chk", "__explicit_bzero_chk", "ffs", "ffsl", "ffsll",
	/* numbers */
	"abs", "labs", "llabs", "div", "ldiv", "lldiv", "atoi", "atol", "atoll", "atof", "strtol", "strtoll",
	"strtoul", "strtoull", "strtof", "strtod", "strtold", "__isoc23_strtol", "__isoc23_strtoll",
	"__isoc23_strtoul", "__isoc23_strtoull", "qsort", "qsort_r", "bsearch", "rand", "srand", "rand_r",
	"__ctype_b_loc", "__ctype_tolower_loc", "__ctype_toupper_loc", "tolower", "toupper",
	/* printing to stdout/stderr (the harness sends both to its stderr) */
	"printf", "fprintf", "vprintf", "vfprintf", "puts", "putchar", "fputs", "fputc", "putc", "fwrite", "fflush",
	"snprintf", "sprintf", "vsnprintf", "vsprintf", "sscanf", "__isoc99_sscanf", "__isoc23_sscanf",
	"__printf_chk", "__fprintf_chk", "__vprintf_chk", "__vfprintf_chk", "__snprintf_chk", "__sprintf_chk",
	"__vsnprintf_chk", "__vsprintf_chk", "stdout", "stderr", "perror",
	/* errors and assertions */
	"__assert_fail", "__assert", "__stack_chk_fail", "__chk_fail", "__fortify_fail", "__errno_location", "abort",
	"__cxa_finalize", "__cxa_atexit", "atexit", "__gmon_start__", "_ITM_deregisterTMCloneTable",
	"_ITM_registerTMCloneTable", "__tls_get_addr", "_dl_find_object", "setjmp", "_setjmp", "longjmp",
	"__longjmp_chk", "__sigsetjmp",
	/* time, sizes, cores */
	"clock_gettime", "clock", "time", "gettimeofday", "nanosleep", "usleep", "sched_yield", "sched_getcpu",
	"sched_getaffinity", "sysconf", "get_nprocs", "get_nprocs_conf", "getpagesize", "getenv", "secure_getenv",
	"thrd_create", "thrd_join", "thrd_detach", "thrd_current", "thrd_equal", "thrd_exit", "thrd_sleep",
	"thrd_yield", "mtx_init", "mtx_lock", "mtx_timedlock", "mtx_trylock", "mtx_unlock", "mtx_destroy",
	"cnd_init", "cnd_signal", "cnd_broadcast", "cnd_wait", "cnd_timedwait", "cnd_destroy", "call_once",
	"tss_create", "tss_get", "tss_set", "tss_delete",
	NULL,
};

/* Prefixes: threads, OpenMP runtimes, vector math, compiler runtime. */
static const char *const allowed_prefix[] = {
	"pthread_", "GOMP_", "omp_", "__kmpc_", "__kmp_", "_ZGV", "__atomic_", "__sync_", "__cpu_", "__popcount",
	"__clz", "__ctz", "__bswap", "__ffs", "__parity", "__extend", "__trunc", "__fix", "__float", "__mul",
	"__div", "__mod", "__udiv", "__umod", "__neg", "__ashl", "__ashr", "__lshr", "__cmp", "__ucmp", "__powi",
	"__add", "__sub", "__eq", "__ne", "__ge", "__gt", "__le", "__lt", "__unord", "__bid_", "__dpd_",
	NULL,
};

/* libm, by name: the C99/C11 functions in float, double and long double. */
static const char *const libm_names[] = {
	"acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign", "cos", "cosh",
	"erf", "erfc", "exp", "exp2", "exp10", "expm1", "fabs", "fdim", "floor", "fma", "fmax", "fmin", "fmod",
	"frexp", "hypot", "ilogb", "ldexp", "lgamma", "llrint", "llround", "log", "log10", "log1p", "log2", "logb",
	"lrint", "lround", "modf", "nan", "nearbyint", "nextafter", "nexttoward", "pow", "pow10", "remainder",
	"remquo", "rint", "round", "roundeven", "scalbln", "scalbn", "sin", "sincos", "sinh", "sqrt", "tan", "tanh",
	"tgamma", "trunc", "j0", "j1", "jn", "y0", "y1", "yn", "significand", "gamma", "lgamma_r", "isinf", "isnan",
	"finite", "__isinf", "__isnan", "__finite", "__fpclassify", "__signbit", "__isinff", "__isnanf", "__finitef",
	"__fpclassifyf", "__signbitf", "feclearexcept", "fegetround", "fesetround", "fetestexcept", "fegetenv",
	"fesetenv", "feholdexcept", "feupdateenv", "feraiseexcept",
	NULL,
};

/* Named for what they do, so a refusal says it. */
struct forbidden {
	const char *name;
	int prefix;
	const char *why;
};

static const struct forbidden forbidden[] = {
	{ "cblas_", 1, "is BLAS (kernels must not link libraries)" },
	{ "openblas_", 1, "is BLAS (kernels must not link libraries)" },
	{ "mkl_", 1, "is MKL (kernels must not link libraries)" }, { "MKL_", 1, "is MKL" },
	{ "dnnl_", 1, "is oneDNN (kernels must not link libraries)" },
	{ "LAPACKE_", 1, "is LAPACK (kernels must not link libraries)" },
	{ "bli_", 1, "is BLIS (kernels must not link libraries)" },
	{ "fftw", 1, "is FFTW (kernels must not link libraries)" },
	{ "at::", 1, "is PyTorch" }, { "_ZN2at", 1, "is PyTorch (ATen)" }, { "_ZN5torch", 1, "is PyTorch" },
	{ "dlopen", 0, "loads code at run time" }, { "dlmopen", 0, "loads code at run time" },
	{ "dlsym", 0, "loads code at run time" }, { "dlvsym", 0, "loads code at run time" },
	{ "__libc_dl", 1, "loads code at run time" }, { "dl_iterate_phdr", 0, "walks the loaded libraries" },
	{ "system", 0, "starts processes" }, { "popen", 0, "starts processes" }, { "exec", 1, "starts processes" },
	{ "fexecve", 0, "starts processes" }, { "fork", 0, "starts processes" }, { "vfork", 0, "starts processes" },
	{ "_Fork", 0, "starts processes" }, { "__fork", 0, "starts processes" }, { "clone", 0, "starts processes" },
	{ "posix_spawn", 1, "starts processes" }, { "daemon", 0, "starts processes" },
	{ "wait", 1, "manages processes" }, { "kill", 0, "signals processes" }, { "raise", 0, "signals processes" },
	{ "signal", 0, "changes signal handlers (the harness's)" }, { "sigaction", 0, "changes signal handlers" },
	{ "ptrace", 0, "debugs processes" }, { "prctl", 0, "changes the process" },
	{ "socket", 0, "uses the network" }, { "connect", 0, "uses the network" }, { "bind", 0, "uses the network" },
	{ "listen", 0, "uses the network" }, { "accept", 1, "uses the network" }, { "send", 1, "uses the network" },
	{ "recv", 1, "uses the network" }, { "getaddrinfo", 0, "uses the network" },
	{ "gethostby", 1, "uses the network" }, { "inet_", 1, "uses the network" },
	{ "curl_", 1, "uses the network" },
	{ "open", 1, "does file I/O" }, { "__open", 1, "does file I/O" }, { "fopen", 1, "does file I/O" },
	{ "freopen", 1, "does file I/O" }, { "fdopen", 0, "does file I/O" }, { "creat", 1, "does file I/O" },
	{ "read", 1, "does file I/O" }, { "__read", 1, "does file I/O" }, { "pread", 1, "does file I/O" },
	{ "write", 1, "does file I/O" }, { "pwrite", 1, "does file I/O" }, { "fread", 1, "does file I/O" },
	{ "fgets", 0, "does file I/O" }, { "fclose", 0, "does file I/O" }, { "fseek", 1, "does file I/O" },
	{ "ftell", 1, "does file I/O" }, { "rewind", 0, "does file I/O" }, { "fileno", 0, "does file I/O" }, { "fgetc", 0, "does file I/O" }, { "getc", 0, "does file I/O" },
	{ "getline", 0, "does file I/O" }, { "fscanf", 0, "does file I/O" }, { "__isoc99_fscanf", 0, "does file I/O" },
	{ "scanf", 0, "reads stdin" }, { "__isoc99_scanf", 0, "reads stdin" }, { "stdin", 0, "reads stdin" },
	{ "mmap", 1, "maps memory or files directly (use malloc/aligned_alloc)" },
	{ "stat", 1, "inspects files" }, { "fstat", 1, "inspects files" }, { "lstat", 1, "inspects files" },
	{ "__xstat", 1, "inspects files" }, { "access", 0, "inspects files" }, { "opendir", 0, "lists files" },
	{ "readdir", 1, "lists files" }, { "scandir", 0, "lists files" }, { "glob", 0, "lists files" },
	{ "unlink", 1, "removes files" }, { "remove", 0, "removes files" }, { "rename", 1, "renames files" },
	{ "mkdir", 1, "creates directories" }, { "chdir", 0, "changes directory" }, { "chmod", 0, "changes files" },
	{ "truncate", 0, "changes files" }, { "ftruncate", 0, "changes files" }, { "shm_", 1, "shares memory" },
	{ "shmget", 0, "shares memory" }, { "shmat", 0, "shares memory" }, { "memfd_create", 0, "creates files" },
	{ "tmpfile", 0, "creates files" }, { "mkstemp", 1, "creates files" }, { "mkostemp", 1, "creates files" },
	{ "pipe", 1, "creates pipes" }, { "dup", 1, "manipulates file descriptors" }, { "close", 0, "closes files" },
	{ "ioctl", 0, "talks to devices" }, { "syscall", 0, "makes raw system calls" },
	{ "setrlimit", 0, "changes limits" }, { "prlimit", 0, "changes limits" }, { "setenv", 0, "changes the environment" },
	{ "putenv", 0, "changes the environment" }, { "unsetenv", 0, "changes the environment" },
	{ "exit", 0, "ends the process" }, { "_exit", 0, "ends the process" }, { "_Exit", 0, "ends the process" },
	{ "quick_exit", 0, "ends the process" }, { "sched_setaffinity", 0, "changes CPU affinity" },
	{ "setpriority", 0, "changes scheduling" }, { "sched_set", 1, "changes scheduling" },
	{ "mlock", 1, "locks memory" }, { "alarm", 0, "sets timers" }, { "setitimer", 0, "sets timers" },
	{ "timer_", 1, "sets timers" },
	{ NULL, 0, NULL },
};

/* Fortran BLAS/LAPACK names: sgemm_, dgemm_, ... */
static int fortran_blas(const char *n)
{
	static const char *const ops[] = { "gemm", "gemv", "symm", "syrk", "trsm", "trmm", "axpy", "dot", "scal",
					   "ger", "gesv", "getrf", "potrf", "syev", "gesvd", "copy", "nrm2", NULL };
	size_t len = strlen(n);

	if (len < 4 || n[len - 1] != '_' || !strchr("sdcz", n[0]))
		return 0;
	for (int i = 0; ops[i]; i++)
		if (!strncmp(n + 1, ops[i], strlen(ops[i])))
			return 1;
	return 0;
}

static int is_libm(const char *n)
{
	char base[64];
	size_t len;

	/* glibc's finite-math entry points: __expf_finite. */
	if (!strncmp(n, "__", 2) && strstr(n, "_finite")) {
		snprintf(base, sizeof(base), "%.*s", (int)(strstr(n, "_finite") - n - 2), n + 2);
		n = base;
	}
	len = strlen(n);
	for (int i = 0; libm_names[i]; i++) {
		size_t m = strlen(libm_names[i]);
		if (strncmp(n, libm_names[i], m))
			continue;
		/* exact, or with an f / l / f32 / f64 / f128 / _r suffix */
		if (len == m || !strcmp(n + m, "f") || !strcmp(n + m, "l") || !strcmp(n + m, "f32") ||
		    !strcmp(n + m, "f64") || !strcmp(n + m, "f32x") || !strcmp(n + m, "f64x") || !strcmp(n + m, "f128") ||
		    !strcmp(n + m, "f_r") || !strcmp(n + m, "l_r"))
			return 1;
	}
	return 0;
}

int pragma_symbol_allowed(const char *name, const char **why)
{
	static const char *const not_listed = "is not on the allow-list (libc basics, libm, OpenMP, pthreads)";

	*why = NULL;
	for (int i = 0; allowed_exact[i]; i++)
		if (!strcmp(name, allowed_exact[i]))
			return 1;
	if (is_libm(name))
		return 1;
	for (int i = 0; forbidden[i].name; i++)
		if (forbidden[i].prefix ? !strncmp(name, forbidden[i].name, strlen(forbidden[i].name))
					: !strcmp(name, forbidden[i].name)) {
			*why = forbidden[i].why;
			return 0;
		}
	if (fortran_blas(name)) {
		*why = "is BLAS/LAPACK (kernels must not link libraries)";
		return 0;
	}
	for (int i = 0; allowed_prefix[i]; i++)
		if (!strncmp(name, allowed_prefix[i], strlen(allowed_prefix[i])))
			return 1;
	*why = not_listed;
	return 0;
}

int pragma_library_allowed(const char *soname)
{
	static const char *const ok[] = { "libc.so.6", "libm.so.6", "libmvec.so.1", "libgomp.so.1", "libomp.so.5",
					  "libomp.so", "libiomp5.so", "libpthread.so.0", "libgcc_s.so.1",
					  "libatomic.so.1", "ld-linux-x86-64.so.2", "librt.so.1", NULL };

	for (int i = 0; ok[i]; i++)
		if (!strcmp(soname, ok[i]))
			return 1;
	return 0;
}

/* ------------------------------------------------------------ ELF reading */

struct elf {
	const unsigned char *d;
	size_t n;
	const Elf64_Ehdr *eh;
};

static const Elf64_Shdr *section(const struct elf *e, unsigned i)
{
	const Elf64_Ehdr *h = e->eh;
	uint64_t off = h->e_shoff + (uint64_t)i * h->e_shentsize;

	if (i >= h->e_shnum || off + sizeof(Elf64_Shdr) > e->n || off < h->e_shoff)
		return NULL;
	return (const Elf64_Shdr *)(e->d + off);
}

static int in_file(const struct elf *e, uint64_t off, uint64_t size)
{
	return off <= e->n && size <= e->n - off;
}

/* A NUL-terminated string inside a string table section, or NULL. */
static const char *str_at(const struct elf *e, const Elf64_Shdr *strtab, uint64_t off)
{
	if (!strtab || strtab->sh_type != SHT_STRTAB || !in_file(e, strtab->sh_offset, strtab->sh_size) ||
	    off >= strtab->sh_size)
		return NULL;
	const char *s = (const char *)e->d + strtab->sh_offset + off;
	if (!memchr(s, 0, strtab->sh_size - off))
		return NULL;
	return s;
}

static void push(char ***v, int *n, const char *s)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp((*v)[i], s))
			return;
	*v = realloc(*v, sizeof(char *) * (size_t)(*n + 1));
	(*v)[(*n)++] = strdup(s);
}

int pragma_symbols_read(const char *so_path, struct pragma_symbols *s, struct pragma_err *err)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;
	struct elf e;
	const Elf64_Shdr *shstr;
	int ret = -1;

	memset(s, 0, sizeof(*s));
	if (pragma_read_file(so_path, &b, (size_t)256 << 20, err) < 0)
		return -1;
	e.d = (const unsigned char *)b.data;
	e.n = b.len;
	e.eh = (const Elf64_Ehdr *)e.d;
	if (e.n < sizeof(Elf64_Ehdr) || memcmp(e.d, ELFMAG, SELFMAG) || e.d[EI_CLASS] != ELFCLASS64 ||
	    e.d[EI_DATA] != ELFDATA2LSB || e.eh->e_type != ET_DYN || e.eh->e_shentsize != sizeof(Elf64_Shdr)) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "%s is not a 64-bit little-endian ELF shared object", so_path);
		goto out;
	}
	if (e.eh->e_machine != EM_X86_64 && e.eh->e_machine != EM_AARCH64) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "%s is for another machine (e_machine %u)", so_path,
			       e.eh->e_machine);
		goto out;
	}
	shstr = section(&e, e.eh->e_shstrndx);
	int have_dynsym = 0;
	for (unsigned i = 0; i < e.eh->e_shnum; i++) {
		const Elf64_Shdr *sh = section(&e, i);
		const char *name = sh && shstr ? str_at(&e, shstr, sh->sh_name) : NULL;

		if (!sh) {
			pragma_err_set(err, PRAGMA_E_NEGATIVE, "%s: section table out of bounds", so_path);
			goto out;
		}
		if (sh->sh_type == SHT_INIT_ARRAY || sh->sh_type == SHT_PREINIT_ARRAY ||
		    (name && (!strcmp(name, ".ctors") || !strncmp(name, ".ctors.", 7))))
			s->init_entries += (int)(sh->sh_size / 8);
		if (sh->sh_type == SHT_DYNSYM) {
			const Elf64_Shdr *strtab = section(&e, sh->sh_link);
			have_dynsym = 1;
			if (!in_file(&e, sh->sh_offset, sh->sh_size) || sh->sh_entsize != sizeof(Elf64_Sym)) {
				pragma_err_set(err, PRAGMA_E_NEGATIVE, "%s: bad .dynsym", so_path);
				goto out;
			}
			for (uint64_t k = 1; k < sh->sh_size / sizeof(Elf64_Sym); k++) {
				const Elf64_Sym *sym = (const Elf64_Sym *)(e.d + sh->sh_offset) + k;
				int bind = ELF64_ST_BIND(sym->st_info);
				const char *sn;
				if (sym->st_shndx != SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK))
					continue;
				sn = str_at(&e, strtab, sym->st_name);
				if (!sn) {
					pragma_err_set(err, PRAGMA_E_NEGATIVE, "%s: bad symbol name", so_path);
					goto out;
				}
				if (*sn)
					push(&s->imports, &s->n_imports, sn);
			}
		}
		if (sh->sh_type == SHT_DYNAMIC) {
			const Elf64_Shdr *strtab = section(&e, sh->sh_link);
			if (!in_file(&e, sh->sh_offset, sh->sh_size)) {
				pragma_err_set(err, PRAGMA_E_NEGATIVE, "%s: bad .dynamic", so_path);
				goto out;
			}
			for (uint64_t k = 0; k < sh->sh_size / sizeof(Elf64_Dyn); k++) {
				const Elf64_Dyn *d = (const Elf64_Dyn *)(e.d + sh->sh_offset) + k;
				const char *sn;
				if (d->d_tag == DT_NULL)
					break;
				if (d->d_tag != DT_NEEDED && d->d_tag != DT_AUXILIARY && d->d_tag != DT_FILTER)
					continue;
				sn = str_at(&e, strtab, d->d_un.d_val);
				if (!sn) {
					pragma_err_set(err, PRAGMA_E_NEGATIVE, "%s: bad DT_NEEDED", so_path);
					goto out;
				}
				push(&s->needed, &s->n_needed, sn);
			}
		}
	}
	/* Without a dynamic symbol table there is nothing to check against:
	 * refuse rather than pass it unread. */
	if (!have_dynsym) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "%s has no dynamic symbol table to check", so_path);
		goto out;
	}
	ret = 0;
out:
	pragma_buf_release(&b);
	if (ret < 0)
		pragma_symbols_release(s);
	return ret;
}

void pragma_symbols_release(struct pragma_symbols *s)
{
	for (int i = 0; i < s->n_imports; i++)
		free(s->imports[i]);
	for (int i = 0; i < s->n_needed; i++)
		free(s->needed[i]);
	free(s->imports);
	free(s->needed);
	memset(s, 0, sizeof(*s));
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int pragma_symbols_check(const struct pragma_symbols *s, struct pragma_err *err)
{
	const char **bad = calloc((size_t)s->n_imports + 1, sizeof(char *));
	const char *first, *first_why = NULL;
	char names[512] = "";
	size_t len = 0;
	int n_bad = 0;

	for (int i = 0; i < s->n_needed; i++)
		if (!pragma_library_allowed(s->needed[i])) {
			free(bad);
			return pragma_err_set(err, PRAGMA_E_NEGATIVE,
					      "the kernel links %s; kernels may use only libc, libm, OpenMP and "
					      "pthreads (no BLAS or other libraries)",
					      s->needed[i]);
		}
	for (int i = 0; i < s->n_imports; i++) {
		const char *why;
		if (!pragma_symbol_allowed(s->imports[i], &why))
			bad[n_bad++] = s->imports[i];
	}
	if (!n_bad) {
		free(bad);
		return 0;
	}
	/* Stable, readable order; the first one's purpose leads. */
	qsort(bad, (size_t)n_bad, sizeof(char *), by_name);
	/* Explain the one whose purpose is known (fopen, not fclose). */
	first = bad[0];
	pragma_symbol_allowed(first, &first_why);
	for (int i = 0; i < n_bad; i++) {
		const char *why;
		pragma_symbol_allowed(bad[i], &why);
		if (strncmp(why, "is not on", 9)) {
			first = bad[i];
			first_why = why;
			break;
		}
	}
	for (int i = 0; i < n_bad && i < 4; i++)
		len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "", bad[i]);
	if (n_bad > 4)
		snprintf(names + len, sizeof(names) - len, " and %d more", n_bad - 4);
	pragma_err_set(err, PRAGMA_E_NEGATIVE,
		       "the kernel calls %s: %s %s; kernels may use libc basics, libm, OpenMP and pthreads only", names,
		       first, first_why);
	free(bad);
	return -1;
}

int pragma_symbols_preload(const struct pragma_symbols *s, const char **out, int cap)
{
	int n = 0;

	/* Runtimes with initializers worth running before the sandbox. */
	for (int i = 0; i < s->n_needed && n + 1 < cap; i++)
		if (pragma_library_allowed(s->needed[i]) && strcmp(s->needed[i], "libc.so.6") &&
		    strcmp(s->needed[i], "ld-linux-x86-64.so.2"))
			out[n++] = s->needed[i];
	out[n] = NULL;
	return n;
}
