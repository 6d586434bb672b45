/*
 * Backends, finding nvcc, and the nvcc flag allow-list. The rules follow
 * lib/build/flags.c: an LLM may tune how its kernel is compiled, never where
 * files go, which tools or libraries are used, or what else the compiler
 * reads or writes. Flags reach execve() one by one, so what is checked is
 * each argument's meaning to nvcc.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cuda_int.h"
#include "pragma/cuda.h"
#include "pragma/fs.h"
#include "pragma/proc.h"

#define MAX_FLAG_LEN 200
#define MAX_FLAGS 64

/* -------------------------------------------------------------- toolkit */

int pragma_nvcc_parse_version(const char *text, int *major, int *minor)
{
	const char *p = text ? strstr(text, "release ") : NULL;

	if (!p || sscanf(p + 8, "%d.%d", major, minor) != 2)
		return -1;
	return 0;
}

static struct pragma_cuda_toolkit tk_cache;
static int tk_state;            /* 0 unknown, 1 found, -1 missing */
static char tk_env[4096];       /* $PRAGMA_NVCC when tk_state was set */
static pthread_mutex_t tk_lock = PTHREAD_MUTEX_INITIALIZER;

static int try_nvcc(const char *path, struct pragma_cuda_toolkit *tk)
{
	const char *argv[] = { path, "--version", NULL };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	int ok = 0;

	if (!path || !*path || access(path, X_OK) != 0)
		return 0;
	c.argv = argv;
	c.timeout_ms = 30000;
	if (pragma_child_run(&c, &e) == 0 && c.exited && c.exit_code == 0 &&
	    pragma_nvcc_parse_version(c.out.data, &tk->major, &tk->minor) == 0) {
		char *slash;
		snprintf(tk->nvcc, sizeof(tk->nvcc), "%s", path);
		snprintf(tk->version, sizeof(tk->version), "%d.%d", tk->major, tk->minor);
		snprintf(tk->root, sizeof(tk->root), "%s", path);
		/* <root>/bin/nvcc -> <root> */
		for (int k = 0; k < 2 && (slash = strrchr(tk->root, '/')); k++)
			*slash = '\0';
		if (!tk->root[0])
			snprintf(tk->root, sizeof(tk->root), "/");
		ok = 1;
	}
	pragma_child_release(&c);
	return ok;
}

int pragma_cuda_toolkit_find(struct pragma_cuda_toolkit *tk, struct pragma_err *err)
{
	struct pragma_buf p = PRAGMA_BUF_INIT;
	char cand[4200];
	const char *env;
	int found = 0;

	pthread_mutex_lock(&tk_lock);
	env = getenv("PRAGMA_NVCC");
	/* A changed $PRAGMA_NVCC is a new choice. */
	if (tk_state && strcmp(tk_env, env ? env : ""))
		tk_state = 0;
	snprintf(tk_env, sizeof(tk_env), "%s", env ? env : "");
	if (tk_state) {
		found = tk_state > 0;
		if (found)
			*tk = tk_cache;
		pthread_mutex_unlock(&tk_lock);
		goto done;
	}
	memset(&tk_cache, 0, sizeof(tk_cache));
	if (env && *env) {
		/* An explicit choice is the only one tried. */
		found = try_nvcc(env, &tk_cache);
	} else {
		if (pragma_which("nvcc", &p))
			found = try_nvcc(p.data, &tk_cache);
		const char *homes[] = { getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda", NULL };
		for (int i = 0; !found && i < 3; i++)
			if (homes[i] && *homes[i]) {
				snprintf(cand, sizeof(cand), "%s/bin/nvcc", homes[i]);
				found = try_nvcc(cand, &tk_cache);
			}
	}
	tk_state = found ? 1 : -1;
	if (found)
		*tk = tk_cache;
	pthread_mutex_unlock(&tk_lock);
done:
	pragma_buf_release(&p);
	if (!found) {
		env = getenv("PRAGMA_NVCC");
		pragma_err_set(err, PRAGMA_E_ENV, "nvcc not found%s%s%s", env && *env ? " ($PRAGMA_NVCC=" : "",
			       env && *env ? env : "", env && *env ? " does not run)" : " (PATH, $CUDA_HOME, /usr/local/cuda)");
		pragma_err_hint(err, "install the CUDA toolkit, or set PRAGMA_NVCC to its nvcc");
		return -1;
	}
	return 0;
}

const char *pragma_cuda_compiler_version(void)
{
	static char v[64];
	struct pragma_cuda_toolkit tk;

	if (pragma_cuda_toolkit_find(&tk, NULL) == 0)
		snprintf(v, sizeof(v), "nvcc %s", tk.version);
	else
		snprintf(v, sizeof(v), "nvcc unknown");
	return v;
}

/* ---------------------------------------------------------------- flags */

static int starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

static int refuse(char *why, size_t len, const char *flag, const char *reason)
{
	snprintf(why, len, "nvcc flag '%.80s' is not allowed: %s", flag, reason);
	return -1;
}

static int identifier(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

static int plain_value(const char *v)
{
	if (!*v)
		return 0;
	for (; *v; v++)
		if (!isalnum((unsigned char)*v) && !strchr("_-.,:+=", *v))
			return 0;
	return 1;
}

static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* sm_80, sm_90a, sm_100f, compute_80 */
static int arch_value(const char *v)
{
	const char *d = starts(v, "sm_") ? v + 3 : starts(v, "compute_") ? v + 8 : NULL;
	size_t n;

	if (!d)
		return 0;
	n = strspn(d, "0123456789");
	if (n < 2 || n > 3)
		return 0;
	return !d[n] || ((d[n] == 'a' || d[n] == 'f') && !d[n + 1]);
}

/* Options ptxas may get through -Xptxas. */
static int ptxas_option_ok(const char *o)
{
	static const char *const exact[] = { "-v", "--verbose", "-O0", "-O1", "-O2", "-O3", "--warn-on-spills",
					     "-warn-spills", "--warn-on-local-memory-usage", "-warn-lmem-usage",
					     "--warn-on-double-precision-use", "-warn-double-usage", "-w",
					     "--disable-warnings", "--allow-expensive-optimizations=true",
					     "--allow-expensive-optimizations=false", "-allow-expensive-optimizations",
					     NULL };
	static const char *const prefixed[] = { "-dlcm=", "--def-load-cache=", "-dscm=", "--def-store-cache=",
						"-maxrregcount=", "--maxrregcount=", "--register-usage-level=",
						"-regUsageLevel=", NULL };

	for (int i = 0; exact[i]; i++)
		if (!strcmp(o, exact[i]))
			return 1;
	for (int i = 0; prefixed[i]; i++)
		if (starts(o, prefixed[i]) && plain_value(o + strlen(prefixed[i])) && !strchr(o + strlen(prefixed[i]), '/'))
			return 1;
	return 0;
}

static int fast_math_flag(const char *flag)
{
	return !strcmp(flag, "--use_fast_math") || !strcmp(flag, "-use_fast_math") || !strcmp(flag, "-ftz=true") ||
	       !strcmp(flag, "--ftz=true") || !strcmp(flag, "-prec-div=false") || !strcmp(flag, "--prec-div=false") ||
	       !strcmp(flag, "-prec-sqrt=false") || !strcmp(flag, "--prec-sqrt=false");
}

int pragma_cuda_fast_math_allowed(double atol, double rtol)
{
	return rtol >= 1e-3 || atol >= 1e-3;
}

int pragma_nvcc_flag_check(const char *flag, int fast_math_ok, char *why, size_t len)
{
	size_t n = strlen(flag);

	if (!n)
		return refuse(why, len, flag, "empty");
	if (n > MAX_FLAG_LEN)
		return refuse(why, len, flag, "too long");
	for (const char *p = flag; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			return refuse(why, len, flag, "control or non-ASCII characters");
	if (flag[0] == '@')
		return refuse(why, len, flag, "response files read other files");
	if (flag[0] != '-')
		return refuse(why, len, flag, "not an option (source files and objects are pragma's to choose)");

	/* Fast math: results move by a few ulp, so only with a loose tolerance. */
	if (fast_math_flag(flag)) {
		if (fast_math_ok)
			return 0;
		return refuse(why, len, flag,
			      "fast math (approximate division, sqrt and transcendentals, flush-to-zero) needs a task "
			      "tolerance of at least 1e-3; this task's is tighter");
	}
	if (!strcmp(flag, "-ftz=false") || !strcmp(flag, "--ftz=false") || !strcmp(flag, "-prec-div=true") ||
	    !strcmp(flag, "--prec-div=true") || !strcmp(flag, "-prec-sqrt=true") || !strcmp(flag, "--prec-sqrt=true") ||
	    !strcmp(flag, "-fmad=true") || !strcmp(flag, "-fmad=false") || !strcmp(flag, "--fmad=true") ||
	    !strcmp(flag, "--fmad=false"))
		return 0;
	/* Host optimization level (device code is always optimized). */
	if (flag[1] == 'O' && (!flag[2] || (strchr("0123", flag[2]) && !flag[3])))
		return 0;
	if (starts(flag, "-arch=") || starts(flag, "--gpu-architecture=") || starts(flag, "-code=") ||
	    starts(flag, "--gpu-code=")) {
		if (!arch_value(strchr(flag, '=') + 1))
			return refuse(why, len, flag, "-arch takes one architecture, sm_NN (with a or f suffix if needed)");
		return 0;
	}
	if (starts(flag, "-gencode") || starts(flag, "--generate-code"))
		return refuse(why, len, flag, "pragma builds for the device's architecture; use -arch=sm_NN");
	if (!strcmp(flag, "-lineinfo") || !strcmp(flag, "--generate-line-info") || !strcmp(flag, "-restrict") ||
	    !strcmp(flag, "--restrict") || !strcmp(flag, "--extra-device-vectorization") ||
	    !strcmp(flag, "-extra-device-vectorization") || !strcmp(flag, "--expt-relaxed-constexpr") ||
	    !strcmp(flag, "-expt-relaxed-constexpr") || !strcmp(flag, "--extended-lambda") ||
	    !strcmp(flag, "-extended-lambda") || !strcmp(flag, "--expt-extended-lambda") ||
	    !strcmp(flag, "-expt-extended-lambda") || !strcmp(flag, "-w") || !strcmp(flag, "--disable-warnings") ||
	    !strcmp(flag, "-g") || !strcmp(flag, "--resource-usage") || !strcmp(flag, "-res-usage") ||
	    !strcmp(flag, "--default-stream=per-thread") || !strcmp(flag, "--default-stream=legacy") ||
	    !strcmp(flag, "-default-stream=per-thread") || !strcmp(flag, "-default-stream=legacy"))
		return 0;
	if (starts(flag, "-maxrregcount=") || starts(flag, "--maxrregcount=")) {
		const char *v = strchr(flag, '=') + 1;
		if (!all_digits(v) || atoi(v) < 16 || atoi(v) > 255)
			return refuse(why, len, flag, "-maxrregcount takes a number of registers (16..255)");
		return 0;
	}
	if (starts(flag, "-std=") || starts(flag, "--std=")) {
		static const char *const stds[] = { "c++11", "c++14", "c++17", "c++20", NULL };
		for (int i = 0; stds[i]; i++)
			if (!strcmp(strchr(flag, '=') + 1, stds[i]))
				return 0;
		return refuse(why, len, flag, "CUDA C++ standards: c++11, c++14, c++17, c++20");
	}
	/* Tunables: -DNAME, -DNAME=VALUE, -UNAME. */
	if (flag[1] == 'D' || flag[1] == 'U') {
		const char *name = flag + 2, *eq = strchr(name, '=');
		size_t nl = eq ? (size_t)(eq - name) : strlen(name);
		if (!identifier(name, nl) || (flag[1] == 'U' && eq) || (eq && strchr(eq, '/')))
			return refuse(why, len, flag, "-D takes NAME or NAME=VALUE (one argument, no space)");
		return 0;
	}
	/* -Xptxas=OPT[,OPT] (two-word forms are joined by pragma_nvcc_flags_add). */
	if (starts(flag, "-Xptxas=") || starts(flag, "--ptxas-options=")) {
		char buf[MAX_FLAG_LEN + 1], *save = NULL;
		snprintf(buf, sizeof(buf), "%s", strchr(flag, '=') + 1);
		if (!buf[0])
			return refuse(why, len, flag, "-Xptxas needs an option");
		for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
			if (!ptxas_option_ok(t))
				return refuse(why, len, flag,
					      "ptxas options allowed: -O0..-O3, -v, -dlcm=/-dscm= cache policies, "
					      "--warn-on-spills, --allow-expensive-optimizations, -maxrregcount=N");
		return 0;
	}
	/* Host compiler flags go through gcc's own allow-list. */
	if (starts(flag, "-Xcompiler=") || starts(flag, "--compiler-options=")) {
		char buf[MAX_FLAG_LEN + 1], *save = NULL, w[256];
		snprintf(buf, sizeof(buf), "%s", strchr(flag, '=') + 1);
		if (!buf[0])
			return refuse(why, len, flag, "-Xcompiler needs an option");
		for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
			if (pragma_flag_check(t, w, sizeof(w)) < 0 || starts(t, "-fno-PIC") || starts(t, "-fno-pic"))
				return refuse(why, len, flag, "host compiler options follow the C allow-list (see 'pragma verify --help')");
		return 0;
	}
	if (flag[1] == 'W') {
		if (starts(flag, "-Wl,") || starts(flag, "-Wa,") || starts(flag, "-Wp,"))
			return refuse(why, len, flag, "no pass-through to the linker, assembler or preprocessor");
		if (!plain_value(flag + 2))
			return refuse(why, len, flag, "warning options take names and numbers only");
		return 0;
	}

	/* Everything else: say why for the usual suspects. */
	if (starts(flag, "-o") || starts(flag, "--output-file") || starts(flag, "-odir") ||
	    starts(flag, "--output-directory"))
		return refuse(why, len, flag, "output paths are pragma's");
	if (starts(flag, "-ccbin") || starts(flag, "--compiler-bindir") || starts(flag, "-B") ||
	    starts(flag, "--nvlink-options") || starts(flag, "-Xnvlink") || starts(flag, "--dependency-drive-prefix") ||
	    starts(flag, "-allow-unsupported-compiler") || starts(flag, "--allow-unsupported-compiler"))
		return refuse(why, len, flag, "compiler tools are pragma's");
	if (flag[1] == 'l' || flag[1] == 'L' || starts(flag, "--library") || starts(flag, "-Xlinker") ||
	    starts(flag, "--linker-options") || starts(flag, "-Xarchive") || starts(flag, "--archive-options") ||
	    starts(flag, "-cudart") || starts(flag, "--cudart") || starts(flag, "-cudadevrt") ||
	    starts(flag, "--cudadevrt") || starts(flag, "-shared") || starts(flag, "-static") || starts(flag, "-lib") ||
	    starts(flag, "--lib"))
		return refuse(why, len, flag, "no extra libraries or linker options (kernels use the CUDA runtime only)");
	if (!strcmp(flag, "-rdc=true") || !strcmp(flag, "--relocatable-device-code=true") || !strcmp(flag, "-dc") ||
	    !strcmp(flag, "-dw") || !strcmp(flag, "-dlink") || starts(flag, "-rdc") ||
	    starts(flag, "--relocatable-device-code") || !strcmp(flag, "--device-c") || !strcmp(flag, "--device-w") ||
	    !strcmp(flag, "--device-link"))
		return refuse(why, len, flag, "relocatable device code needs a device link step pragma does not do");
	if (flag[1] == 'I' || starts(flag, "-isystem") || starts(flag, "--include-path") ||
	    starts(flag, "--system-include") || starts(flag, "-include") || starts(flag, "--pre-include") ||
	    starts(flag, "--options-file") || starts(flag, "-optf") || starts(flag, "-keep") ||
	    starts(flag, "--keep") || starts(flag, "-save-temps") || starts(flag, "--save-temps") ||
	    starts(flag, "-time") || starts(flag, "--time") || flag[1] == 'M' || starts(flag, "--generate-dependencies") ||
	    starts(flag, "--dependency-output") || starts(flag, "-MF") || starts(flag, "--run") ||
	    starts(flag, "-run") || starts(flag, "--fdevice-time-trace") || starts(flag, "-fdevice-time-trace") ||
	    starts(flag, "--optix-ir") || starts(flag, "--list-gpu"))
		return refuse(why, len, flag, "the compiler reads and writes no files but the kernel's");
	if (!strcmp(flag, "-G") || !strcmp(flag, "--device-debug"))
		return refuse(why, len, flag, "device debug code is unoptimized; use -lineinfo for source lines");
	if (!strcmp(flag, "-c") || !strcmp(flag, "-E") || !strcmp(flag, "-cubin") || !strcmp(flag, "-ptx") ||
	    !strcmp(flag, "-fatbin") || starts(flag, "-x") || starts(flag, "--x") || !strcmp(flag, "-dryrun") ||
	    !strcmp(flag, "--dryrun") || starts(flag, "-Xptxas") || starts(flag, "-Xcompiler") ||
	    starts(flag, "--ptxas-options") || starts(flag, "--compiler-options") || starts(flag, "-m32"))
		return refuse(why, len, flag, "it changes what pragma builds");
	return refuse(why, len, flag,
		      "not on the allow-list (-O*, -arch=sm_NN, -lineinfo, -maxrregcount=N, -D, -U, -std=c++NN, "
		      "-Xptxas, -Xcompiler, --use_fast_math with a loose tolerance)");
}

static int add_one(struct pragma_flags *f, const char *flag, int fast_math_ok, struct pragma_err *err)
{
	char why[320];

	if (pragma_nvcc_flag_check(flag, fast_math_ok, why, sizeof(why)) < 0)
		return pragma_err_set(err, PRAGMA_E_NEGATIVE, "%s", why);
	if (f->n >= MAX_FLAGS)
		return pragma_err_set(err, PRAGMA_E_NEGATIVE, "more than %d nvcc flags", MAX_FLAGS);
	f->v = realloc(f->v, sizeof(char *) * (size_t)(f->n + 2));
	if (!f->v)
		abort();
	f->v[f->n++] = strdup(flag);
	f->v[f->n] = NULL;
	return 0;
}

/* Flags nvcc spells as two words; joined with '=' so each is one argument. */
static const char *const two_word[] = { "-Xptxas", "--ptxas-options", "-Xcompiler", "--compiler-options",
					"-maxrregcount", "--maxrregcount", "-arch", "--gpu-architecture", "-code",
					"--gpu-code", "-std", "--std", "--default-stream", "-default-stream", NULL };

int pragma_nvcc_flags_add(struct pragma_flags *f, const char *text, int fast_math_ok, struct pragma_err *err)
{
	struct pragma_flags tmp = PRAGMA_FLAGS_INIT;
	const char *p = text;
	char tok[MAX_FLAG_LEN * 2 + 16];
	int ret = -1;

	while (*p) {
		size_t n;
		int joined = 0;

		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		n = strcspn(p, " \t\r\n\v\f");
		if (n > MAX_FLAG_LEN) {
			pragma_err_set(err, PRAGMA_E_NEGATIVE, "nvcc flag '%.40s...' is not allowed: too long", p);
			goto out;
		}
		snprintf(tok, sizeof(tok), "%.*s", (int)n, p);
		p += n;
		for (int i = 0; two_word[i] && !joined; i++)
			if (!strcmp(tok, two_word[i])) {
				while (*p && isspace((unsigned char)*p))
					p++;
				n = strcspn(p, " \t\r\n\v\f");
				if (!n || n > MAX_FLAG_LEN) {
					pragma_err_set(err, PRAGMA_E_NEGATIVE, "nvcc flag '%s' needs a value", two_word[i]);
					goto out;
				}
				snprintf(tok, sizeof(tok), "%s=%.*s", two_word[i], (int)n, p);
				p += n;
				joined = 1;
			}
		if (add_one(&tmp, tok, fast_math_ok, err) < 0)
			goto out;
	}
	for (int i = 0; i < tmp.n; i++)
		if (add_one(f, tmp.v[i], fast_math_ok, err) < 0)
			goto out;
	ret = 0;
out:
	pragma_flags_release(&tmp);
	return ret;
}

int pragma_nvcc_flags_from_source(struct pragma_flags *f, const char *src, size_t len, int fast_math_ok,
				  struct pragma_err *err)
{
	const char *p = src, *end = src + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *q = p, *line_end = eol ? eol : end;

		while (q < line_end && (*q == ' ' || *q == '\t'))
			q++;
		if (line_end - q > 2 && q[0] == '/' && q[1] == '/') {
			q += 2;
			while (q < line_end && (*q == ' ' || *q == '\t'))
				q++;
			if (line_end - q >= 13 && !strncmp(q, "pragma:flags", 12) &&
			    (q[12] == ' ' || q[12] == '\t' || q + 12 == line_end)) {
				char *text = strndup(q + 12, (size_t)(line_end - q - 12));
				int rc = pragma_nvcc_flags_add(f, text, fast_math_ok, err);
				free(text);
				if (rc < 0)
					return -1;
			}
		}
		p = eol ? eol + 1 : end;
	}
	return 0;
}
