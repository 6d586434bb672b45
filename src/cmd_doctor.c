#include <errno.h>
#include <linux/perf_event.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli.h"
#include "opts.h"
#include "pragma/bridge.h"
#include "pragma/build.h"
#include "pragma/backend.h"
#include "pragma/config.h"
#include "pragma/cuda.h"
#include "pragma/fs.h"
#include "pragma/llm.h"
#include "pragma/proc.h"

extern char **environ;

static const char usage[] =
	"usage: pragma doctor [--json]\n"
	"\n"
	"Checks what pragma needs and what works on this machine: compilers, the\n"
	"PyTorch baseline (torch, its BLAS, tcmalloc), the harness, sandboxing\n"
	"(seccomp, Landlock), profilers (perf counters, valgrind), CUDA (nvcc, ncu)\n"
	"and the LLM configuration. Each line says ok, warn or fail, with a hint.\n"
	"Exit 0 when everything required works, 3 when something required is missing.\n";

struct report {
	json_t *checks;
	int failed;
	int json;
};

static void check(struct report *r, const char *name, const char *level, int required, const char *detail,
		  const char *hint)
{
	json_t *c = json_pack("{s:s, s:s, s:b, s:s}", "name", name, "status", level, "required", required, "detail",
			      detail ? detail : "");
	if (hint && *hint)
		json_object_set_new(c, "hint", json_string(hint));
	json_array_append_new(r->checks, c);
	if (required && !strcmp(level, "fail"))
		r->failed = 1;
	if (!r->json) {
		printf("%-5s %-22s %s\n", level, name, detail ? detail : "");
		if (hint && *hint && strcmp(level, "ok"))
			printf("      %-22s Hint: %s\n", "", hint);
	}
}

/* First line of a command's output, or NULL. */
static int first_line(const char *const *argv, char *out, size_t len)
{
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	int ok = 0;

	c.argv = argv;
	c.timeout_ms = 20000;
	if (pragma_child_run(&c, &e) == 0 && c.exited && c.exit_code == 0) {
		const char *s = c.out.len ? c.out.data : c.err.data;
		size_t n = strcspn(s, "\n");
		snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), s);
		ok = 1;
	}
	pragma_child_release(&c);
	return ok;
}

static void check_compilers(struct report *r)
{
	struct pragma_buf p = PRAGMA_BUF_INIT;
	char d[256];

	if (pragma_which("gcc", &p)) {
		snprintf(d, sizeof(d), "%s (%s)", pragma_compiler_version("gcc"), p.data);
		check(r, "compiler gcc", "ok", 1, d, NULL);
	} else {
		check(r, "compiler gcc", "fail", 1, "not found", "apt-get install gcc (scripts/install-deps.sh)");
	}
	if (pragma_which("clang", &p)) {
		snprintf(d, sizeof(d), "%s (%s)", pragma_compiler_version("clang"), p.data);
		check(r, "compiler clang", "ok", 0, d, NULL);
	} else {
		check(r, "compiler clang", "warn", 0, "not found (optional: --cc clang)", "apt-get install clang");
	}
	pragma_buf_release(&p);
}

static void check_torch(struct report *r)
{
	struct pragma_err e = PRAGMA_ERR_INIT;
	char v[160], d[512];
	json_t *res = NULL;
	const char *args[] = { "versions", NULL };

	if (pragma_bridge_versions(v, sizeof(v), &e) < 0) {
		check(r, "pytorch", "fail", 0, e.msg, e.hint);
		return;
	}
	snprintf(d, sizeof(d), "%s (%s)", v, pragma_bridge_python());
	check(r, "pytorch", "ok", 0, d, NULL);
	if (pragma_bridge_run(args, 1, 120000, &res, &e) < 0) {
		check(r, "pytorch blas", "fail", 0, e.msg, e.hint);
		return;
	}
	const char *blas = json_string_value(json_object_get(res, "blas"));
	const char *alloc = json_string_value(json_object_get(res, "allocator"));
	int openblas = blas && strstr(blas, "openblas");
	snprintf(d, sizeof(d), "%s", blas ? blas : "none found");
	check(r, "pytorch blas", openblas ? "ok" : "warn", 0, d,
	      openblas ? NULL : "apt-get install libopenblas0-pthread: without it matmul baselines run ~30x slower");
	snprintf(d, sizeof(d), "%s", alloc ? alloc : "?");
	check(r, "baseline allocator", alloc && !strcmp(alloc, "tcmalloc") ? "ok" : "warn", 0, d,
	      "apt-get install libtcmalloc-minimal4: glibc malloc gives torch fresh pages on every call (DESIGN 3.3)");
	json_decref(res);
}

static void check_harness(struct report *r)
{
	struct pragma_buf exe = PRAGMA_BUF_INIT, h = PRAGMA_BUF_INIT;

	if (getenv("PRAGMA_HARNESS"))
		pragma_buf_adds(&h, getenv("PRAGMA_HARNESS"));
	else if (pragma_exe_dir(&exe) == 0)
		pragma_buf_addf(&h, "%s/pragma-harness", exe.data);
	if (h.len && access(h.data, X_OK) == 0)
		check(r, "harness", "ok", 1, h.data, NULL);
	else
		check(r, "harness", "fail", 1, h.len ? h.data : "not found", "build pragma-harness next to pragma");
	pragma_buf_release(&exe);
	pragma_buf_release(&h);
}

static void check_sandbox(struct report *r)
{
	const struct scmp_version *v = seccomp_version();
	char d[256];
	long abi;

	snprintf(d, sizeof(d), "libseccomp %u.%u.%u, kernel API level %d", v->major, v->minor, v->micro,
		 seccomp_api_get());
	check(r, "seccomp", seccomp_api_get() > 0 ? "ok" : "fail", 0, d,
	      "the kernel lacks seccomp filters: candidates cannot be confined");
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */);
	if (abi > 0) {
		snprintf(d, sizeof(d), "ABI version %ld", abi);
		check(r, "landlock", "ok", 0, d, NULL);
	} else {
		snprintf(d, sizeof(d), "unavailable (%s)", strerror(errno));
		check(r, "landlock", "warn", 0, d,
		      "boot with lsm=landlock,... (Linux 5.13+): without it the harness cannot be kept from reading files; "
		      "every verdict says so");
	}
}

static void check_perf(struct report *r)
{
	struct perf_event_attr a;
	char d[256], par[32] = "?";
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	long fd;

	if (f) {
		if (!fgets(par, sizeof(par), f))
			snprintf(par, sizeof(par), "?");
		par[strcspn(par, "\n")] = '\0';
		fclose(f);
	}
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd >= 0) {
		close((int)fd);
		snprintf(d, sizeof(d), "hardware counters available (perf_event_paranoid=%s)", par);
		check(r, "perf counters", "ok", 0, d, NULL);
	} else {
		int e = errno;
		snprintf(d, sizeof(d), "no hardware counters: %s (perf_event_paranoid=%s)", strerror(e), par);
		check(r, "perf counters", "warn", 0, d,
		      e == EACCES || e == EPERM ? "lower /proc/sys/kernel/perf_event_paranoid (e.g. sysctl kernel.perf_event_paranoid=1)"
						: "this machine (a VM?) exposes no PMU; the sim and static collectors profile instead");
	}
	const char *vg[] = { "valgrind", "--version", NULL };
	if (first_line(vg, d, sizeof(d)))
		check(r, "valgrind", "ok", 0, d, NULL);
	else
		check(r, "valgrind", "warn", 0, "not found", "apt-get install valgrind (the sim collector needs it)");
	const char *od[] = { "objdump", "--version", NULL };
	if (first_line(od, d, sizeof(d)))
		check(r, "objdump", "ok", 0, d, NULL);
	else
		check(r, "objdump", "warn", 0, "not found", "apt-get install binutils (the static collector needs it)");
	/* the mca collector takes the newest llvm-mca (lib/profile/run.c) */
	struct pragma_buf mca = PRAGMA_BUF_INIT;
	if (pragma_which("llvm-mca-19", &mca) || pragma_which("llvm-mca", &mca) || pragma_which("llvm-mca-14", &mca))
		check(r, "llvm-mca", "ok", 0, mca.data, NULL);
	else
		check(r, "llvm-mca", "warn", 0, "not found",
		      "apt-get install llvm-19 (the mca collector models the hot loops with it)");
	pragma_buf_release(&mca);
}

/* Each backend's own lines (the CUDA backend: nvcc, its harness, runtime,
 * device, ncu and counter permission, a CUDA torch). Optional backends
 * warn, never fail. */
static void check_backends(struct report *r)
{
	const struct pragma_backend *const *all = pragma_backends();
	struct pragma_check c[24];

	for (int b = 0; all[b]; b++) {
		int n = all[b]->doctor ? all[b]->doctor(c, 24) : 0;
		for (int i = 0; i < n; i++)
			check(r, c[i].name, c[i].level, 0, c[i].detail, c[i].hint);
	}
}

/* The model: configured or not, and whether a client opens with it (a
 * bad spec or a missing key fails here, before a run finds out). */
static void check_llm(struct report *r)
{
	struct pragma_llm_options opt = PRAGMA_LLM_OPTIONS_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	const struct pragma_setting *s = pragma_setting_find_env("PRAGMA_LLM");
	struct pragma_llm *llm = NULL;
	char from[1024], d[4400], why[256];
	const char *spec = s ? pragma_setting_value(s, from, sizeof(from)) : NULL;

	if (!spec) {
		check(r, "llm", "warn", 0, "no model configured (PRAGMA_LLM or --llm)",
		      "e.g. PRAGMA_LLM=openai:gpt-4o with PRAGMA_LLM_API_KEY, or anthropic:MODEL, or exec:COMMAND");
		return;
	}
	if (pragma_setting_check_value(s, spec, why, sizeof(why)) < 0) {
		snprintf(d, sizeof(d), "%s = '%.200s' %s", from, spec, why);
		check(r, "llm", "fail", 1, d,
		      "write PROVIDER:MODEL: openai:gpt-4o, anthropic:claude-sonnet-4-5, exec:'my-agent', replay:FILE");
		return;
	}
	opt.cache = 0;
	if (pragma_llm_open(&llm, &opt, &e) < 0) {
		snprintf(d, sizeof(d), "%s (from %s)", e.msg, from);
		check(r, "llm", "fail", 1, d, e.hint[0] ? e.hint : "see docs/llm.md");
		return;
	}
	snprintf(d, sizeof(d), "%s (from %s)", pragma_llm_describe(llm), from);
	check(r, "llm", "ok", 0, d, "'pragma llm ping' sends a test request");
	pragma_llm_free(llm);
}

struct bad_ctx {
	struct report *r;
	int n;
};

static void on_bad_setting(void *ctx, const char *name, const struct pragma_err *e)
{
	struct bad_ctx *b = ctx;
	char n[128];

	snprintf(n, sizeof(n), "setting %s", name);
	check(b->r, n, "fail", 1, e->msg, e->hint);
	b->n++;
}

/* Every setting in effect (README's Configuration section): bad values and
 * unknown config keys fail (every other command refuses to start with
 * them), programs that are not there fail, and PRAGMA_* variables pragma
 * does not know are named (a misspelling does nothing). */
static void check_settings(struct report *r)
{
	struct bad_ctx b = { r, 0 };
	const struct pragma_setting *s;
	size_t n;
	char d[4400];

	pragma_settings_check_each(on_bad_setting, &b);
	s = pragma_settings(&n);
	for (size_t i = 0; i < n; i++) {
		const char *v;
		if (s[i].kind != PRAGMA_SETTING_PROGRAM || !s[i].env || !(v = getenv(s[i].env)) || !*v)
			continue;
		if (!pragma_which(v, NULL)) {
			char name[96];
			snprintf(name, sizeof(name), "setting %s", s[i].env);
			snprintf(d, sizeof(d), "%s='%.300s' is not a program that can be run (not found in PATH, or "
				 "not executable)", s[i].env, v);
			check(r, name, "fail", 1, d, "point it at the program, or unset it for the default");
			b.n++;
		}
	}
	for (char **e = environ; *e; e++) {
		/* Set by pragma for exec: models, read by scripts/llm_mailbox.sh,
		 * or by the tests: not settings of the binary. */
		static const char *const set_by_pragma[] = { "PRAGMA_AGENT", "PRAGMA_ATTEMPT", "PRAGMA_LLM_MODEL",
							     "PRAGMA_TASK", "PRAGMA_MODE", "PRAGMA_MAILBOX",
							     "PRAGMA_MAILBOX_BY_TASK", "PRAGMA_TEST_DATA",
							     "PRAGMA_BUILD_DIR", "PRAGMA_TEST_VERBOSE", NULL };
		char name[128];
		size_t k = strcspn(*e, "=");
		int known = 0;
		if (strncmp(*e, "PRAGMA_", 7) || k >= sizeof(name))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)k, *e);
		known = pragma_setting_find_env(name) != NULL;
		for (int j = 0; !known && set_by_pragma[j]; j++)
			known = !strcmp(name, set_by_pragma[j]);
		if (!known) {
			char label[160];
			snprintf(label, sizeof(label), "setting %s", name);
			snprintf(d, sizeof(d), "%s is set but pragma reads no such variable", name);
			check(r, label, "warn", 0, d, "a misspelling? README's Configuration section lists the settings");
		}
	}
	if (!b.n)
		check(r, "settings", "ok", 0, "every setting in the environment and the config files is valid", NULL);
}

int cmd_doctor(int argc, char **argv)
{
	struct report r = { .checks = json_array() };
	struct cli_opts o;
	struct pragma_buf cache = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	int rc;

	if (cli_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	if ((rc = cli_parse(argc, argv, &o, NULL, NULL)))
		return rc;
	r.json = o.json;
	check_compilers(&r);
	check_harness(&r);
	check_torch(&r);
	check_sandbox(&r);
	check_perf(&r);
	check_backends(&r);
	check_settings(&r);
	check_llm(&r);
	if (pragma_cache_dir(&cache, &e) == 0)
		check(&r, "cache dir", "ok", 1, cache.data, NULL);
	else
		check(&r, "cache dir", "fail", 1, e.msg, "set PRAGMA_CACHE_DIR to a writable directory");
	pragma_buf_release(&cache);
	if (o.json)
		cli_print_json(json_pack("{s:s, s:o}", "status", r.failed ? "fail" : "ok", "checks", r.checks));
	else {
		json_decref(r.checks);
		printf("\n%s\n", r.failed ? "something required is missing (see 'fail' lines)" : "everything required works");
	}
	return r.failed ? 3 : 0;
}
