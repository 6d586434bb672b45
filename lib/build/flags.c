/*
 * The compiler-flag allow-list (DESIGN 3.4). An LLM may tune how its kernel
 * is compiled, never where files go, which tools or libraries are used, or
 * what else the compiler reads or writes. Flags are passed to execve()
 * one by one (no shell), so quoting tricks do not apply; what is checked
 * is each argument's meaning to gcc/clang.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/build.h"

#define MAX_FLAG_LEN 200
#define MAX_FLAGS 64

static int starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* Values of -f/-m/--param options: names and numbers, no paths. */
static int plain_value(const char *v)
{
	for (; *v; v++)
		if (!isalnum((unsigned char)*v) && !strchr("_-.,:+=", *v))
			return 0;
	return 1;
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

static int refuse(char *why, size_t len, const char *flag, const char *reason)
{
	snprintf(why, len, "compiler flag '%.80s' is not allowed: %s", flag, reason);
	return -1;
}

/* -f options that read or write files, load code, or need libraries. */
static const char *const bad_f[] = {
	"plugin", "dump", "profile", "auto-profile", "branch-probabilities", "debug-prefix-map", "file-prefix-map",
	"macro-prefix-map", "profile-prefix-map", "stack-usage", "callgraph-info", "lto", "sanitize",
	"instrument-functions", "syntax-only", "preprocessed", "compare-debug", "record-gcc-switches",
	"save-optimization-record", "diagnostics-format=json-file", "ltrans", "wpa", "resolution",
	"working-directory", "coverage", "test-coverage", "pch-", "modules", "module-", "crash-diagnostics",
	"use-ld", "use-linker-plugin", "linker-output", "embed-bitcode", "pic", "PIC", "pie", "PIE",
	"no-pic", "no-PIC", "no-pie", "no-PIE", "openmp-targets", "offload", "hosted", "freestanding",
	"build-session", "time-report", "report-bug", "sanitize-coverage", "xray", "patchable-function-entry",
	NULL,
};

int pragma_flag_check(const char *flag, char *why, size_t len)
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

	/* Optimization levels. */
	if (!strcmp(flag, "-O") || (flag[1] == 'O' && flag[2] && !flag[3] && strchr("0123sgz", flag[2])) ||
	    !strcmp(flag, "-Ofast"))
		return 0;
	/* Tunables: -DNAME, -DNAME=VALUE, -UNAME. */
	if (flag[1] == 'D' || flag[1] == 'U') {
		const char *name = flag + 2, *eq = strchr(name, '=');
		size_t nl = eq ? (size_t)(eq - name) : strlen(name);
		if (!identifier(name, nl) || (flag[1] == 'U' && eq))
			return refuse(why, len, flag, "-D takes NAME or NAME=VALUE (one argument, no space)");
		return 0;
	}
	if (starts(flag, "-gsplit-dwarf"))
		return refuse(why, len, flag, "it writes a separate debug file");
	if (!strcmp(flag, "-g") || (flag[1] == 'g' && plain_value(flag + 2) && !strchr(flag, '=')))
		return 0;
	if (!strcmp(flag, "-w") || !strcmp(flag, "-pthread") || !strcmp(flag, "-fopenmp") ||
	    !strcmp(flag, "-fopenmp-simd") || !strcmp(flag, "-pedantic") || !strcmp(flag, "-pedantic-errors"))
		return 0;
	if (starts(flag, "-std=")) {
		static const char *const stds[] = { "c99", "c11", "c17", "c18", "c2x", "c23", "gnu99", "gnu11",
						    "gnu17", "gnu18", "gnu2x", "gnu23", NULL };
		for (int i = 0; stds[i]; i++)
			if (!strcmp(flag + 5, stds[i]))
				return 0;
		return refuse(why, len, flag, "kernels are C (c99/c11/c17/c2x or gnu*)");
	}
	if (starts(flag, "--param=") || starts(flag, "--param ")) {
		const char *v = flag + 8;
		if (!strchr(v, '=') || !plain_value(v))
			return refuse(why, len, flag, "--param takes NAME=VALUE");
		return 0;
	}
	if (flag[1] == 'W') {
		/* -Wl, -Wa, -Wp pass options to the linker, assembler, preprocessor. */
		if (flag[2] && flag[3] == ',' && strchr("lap", flag[2]))
			return refuse(why, len, flag, "no pass-through to the linker, assembler or preprocessor");
		if (!plain_value(flag + 2))
			return refuse(why, len, flag, "warning options take names and numbers only");
		return 0;
	}
	if (flag[1] == 'f') {
		const char *name = flag + 2;
		if (starts(name, "no-"))
			name += 3;
		if (starts(name, "opt-info") && strchr(name, '='))
			return refuse(why, len, flag, "-fopt-info may print to stderr, not write a file");
		for (int i = 0; bad_f[i]; i++)
			if (starts(name, bad_f[i]))
				return refuse(why, len, flag,
					      "it reads or writes other files, loads code, needs libraries, or changes "
					      "what pragma builds");
		if (!plain_value(flag + 2))
			return refuse(why, len, flag, "option values must be names or numbers, not paths");
		return 0;
	}
	if (flag[1] == 'm') {
		static const char *const bad_m[] = { "32", "x32", "16", "abi=", "cmodel=kernel", "fentry",
						     "record-mcount", "nop-mcount", "instrument-return", NULL };
		for (int i = 0; bad_m[i]; i++)
			if (starts(flag + 2, bad_m[i]))
				return refuse(why, len, flag, "the kernel must be a normal x86-64 shared object");
		if (!flag[2] || !plain_value(flag + 2))
			return refuse(why, len, flag, "option values must be names or numbers, not paths");
		return 0;
	}

	/* Everything else: say why for the usual suspects. */
	if (!strcmp(flag, "-o") || starts(flag, "-o"))
		return refuse(why, len, flag, "output paths are pragma's");
	if (flag[1] == 'B' || starts(flag, "-specs") || starts(flag, "--specs") || starts(flag, "-wrapper") ||
	    starts(flag, "--sysroot") || starts(flag, "-isysroot") || starts(flag, "-fplugin") ||
	    starts(flag, "-no-canonical-prefixes") || starts(flag, "--gcc-toolchain") || starts(flag, "-ccc-") ||
	    starts(flag, "-fuse-ld") || starts(flag, "--ld-path") || starts(flag, "-target") || starts(flag, "--target"))
		return refuse(why, len, flag, "compiler tools, specs, wrappers and plugins are pragma's");
	if (flag[1] == 'l' || flag[1] == 'L' || starts(flag, "-static") || starts(flag, "-nostd") ||
	    starts(flag, "-nodefault") || starts(flag, "-shared") || starts(flag, "-rdynamic") ||
	    starts(flag, "-Xlinker") || starts(flag, "-Xassembler") || starts(flag, "-Xpreprocessor") ||
	    starts(flag, "-Xclang") || starts(flag, "-T") || starts(flag, "-z") || starts(flag, "-u") ||
	    starts(flag, "-e") || starts(flag, "-symbolic") || starts(flag, "-s"))
		return refuse(why, len, flag, "no extra libraries, linker scripts or linker options");
	if (flag[1] == 'I' || starts(flag, "-i") || flag[1] == 'M' || starts(flag, "-save-temps") ||
	    starts(flag, "-dump") || starts(flag, "-aux") || starts(flag, "-H") || starts(flag, "--include") ||
	    starts(flag, "-include") || starts(flag, "-imacros") || starts(flag, "-iquote") || starts(flag, "-idirafter"))
		return refuse(why, len, flag, "the compiler reads and writes no files but the kernel's");
	if (!strcmp(flag, "-c") || !strcmp(flag, "-S") || !strcmp(flag, "-E") || flag[1] == 'x' ||
	    !strcmp(flag, "-p") || !strcmp(flag, "-pg") || starts(flag, "-v") || starts(flag, "-###") ||
	    starts(flag, "-print") || starts(flag, "--help") || starts(flag, "--version") || starts(flag, "-pipe") ||
	    starts(flag, "-pie") || starts(flag, "-no-pie"))
		return refuse(why, len, flag, "it changes what pragma builds");
	return refuse(why, len, flag, "not on the allow-list (-O*, -f*, -m*, -W*, -g*, -std=, --param, -D, -U)");
}

static int add_one(struct pragma_flags *f, const char *flag, struct pragma_err *err)
{
	char why[256];

	if (pragma_flag_check(flag, why, sizeof(why)) < 0)
		return pragma_err_set(err, PRAGMA_E_NEGATIVE, "%s", why);
	if (f->n >= MAX_FLAGS)
		return pragma_err_set(err, PRAGMA_E_NEGATIVE, "more than %d compiler flags", MAX_FLAGS);
	f->v = realloc(f->v, sizeof(char *) * (size_t)(f->n + 2));
	f->v[f->n++] = strdup(flag);
	f->v[f->n] = NULL;
	return 0;
}

int pragma_flags_add(struct pragma_flags *f, const char *text, struct pragma_err *err)
{
	struct pragma_flags tmp = PRAGMA_FLAGS_INIT;
	const char *p = text;
	char tok[MAX_FLAG_LEN * 2 + 16];
	int ret = -1;

	while (*p) {
		size_t n;
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		n = strcspn(p, " \t\r\n\v\f");
		if (n > MAX_FLAG_LEN) {
			pragma_err_set(err, PRAGMA_E_NEGATIVE, "compiler flag '%.40s...' is not allowed: too long", p);
			goto out;
		}
		snprintf(tok, sizeof(tok), "%.*s", (int)n, p);
		p += n;
		if (!strcmp(tok, "--param")) {
			/* The one two-word flag: join it with its value. */
			while (*p && isspace((unsigned char)*p))
				p++;
			n = strcspn(p, " \t\r\n\v\f");
			if (!n || n > MAX_FLAG_LEN) {
				pragma_err_set(err, PRAGMA_E_NEGATIVE, "compiler flag '--param' needs NAME=VALUE");
				goto out;
			}
			snprintf(tok, sizeof(tok), "--param=%.*s", (int)n, p);
			p += n;
		}
		if (add_one(&tmp, tok, err) < 0)
			goto out;
	}
	for (int i = 0; i < tmp.n; i++)
		if (add_one(f, tmp.v[i], err) < 0)
			goto out;
	ret = 0;
out:
	pragma_flags_release(&tmp);
	return ret;
}

int pragma_flags_from_source(struct pragma_flags *f, const char *src, size_t len, struct pragma_err *err)
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
				int rc = pragma_flags_add(f, text, err);
				free(text);
				if (rc < 0)
					return -1;
			}
		}
		p = eol ? eol + 1 : end;
	}
	return 0;
}

const char *const *pragma_flags_argv(struct pragma_flags *f)
{
	return f->n ? (const char *const *)f->v : NULL;
}

void pragma_flags_release(struct pragma_flags *f)
{
	for (int i = 0; i < f->n; i++)
		free(f->v[i]);
	free(f->v);
	f->v = NULL;
	f->n = 0;
}
