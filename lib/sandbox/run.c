/*
 * Running kernels in pragma-harness (runtime/): the request file, the
 * child with its limits and deadline, and the answer turned into a status.
 * One-shot runs (run and time modes) and serve mode for interleaved timing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/run.h"
#include "pragma/tensor.h"

int pragma_usable_cores(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	return 1;
}

uint64_t pragma_flush_bytes(void)
{
	uint64_t best = 0;

	for (int i = 0; i < 8; i++) {
		char path[128];
		unsigned long long kb = 0;
		char unit = 'K';
		FILE *f;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu%c", &kb, &unit) >= 1) {
			uint64_t b = kb * (unit == 'M' ? 1024 * 1024 : 1024);
			if (b > best)
				best = b;
		}
		fclose(f);
	}
	best *= 2;
	return best < (64u << 20) ? (64u << 20) : best;
}

int pragma_landlock_abi(char *why, size_t len)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	if (v >= 1) {
		if (why)
			snprintf(why, len, "abi %ld", v);
		return (int)v;
	}
	if (why)
		snprintf(why, len, "unavailable: %s", errno == ENOSYS ? "the kernel has no Landlock (ENOSYS)" :
					       errno == EOPNOTSUPP ? "Landlock is disabled (boot with lsm=...,landlock)" :
								     strerror(errno));
	return 0;
}

void pragma_run_result_release(struct pragma_run_result *r)
{
	free(r->times_ms);
	json_decref(r->raw);
	json_decref(r->sandbox);
	memset(r, 0, sizeof(*r));
}

int pragma_harness_path(struct pragma_buf *out, struct pragma_err *err)
{
	struct pragma_buf exe = PRAGMA_BUF_INIT;

	pragma_buf_reset(out);
	if (getenv("PRAGMA_HARNESS") && *getenv("PRAGMA_HARNESS")) {
		pragma_buf_adds(out, getenv("PRAGMA_HARNESS"));
	} else if (pragma_exe_dir(&exe) == 0) {
		pragma_buf_addf(out, "%s/pragma-harness", exe.data);
#ifdef PRAGMA_BUILD_DIR
		if (!pragma_path_exists(out->data)) {
			pragma_buf_reset(out);
			pragma_buf_addf(out, "%s/pragma-harness", PRAGMA_BUILD_DIR);
		}
#endif
	}
	pragma_buf_release(&exe);
	if (!out->len || !pragma_path_exists(out->data)) {
		pragma_err_set(err, PRAGMA_E_ENV, "cannot find pragma-harness (looked for %s)", out->data);
		pragma_err_hint(err, "build it (cmake --build build) or set PRAGMA_HARNESS");
		return -1;
	}
	return 0;
}

static uint64_t spec_bytes(const struct pragma_tensor_spec *s, int n)
{
	uint64_t total = 0;

	for (int i = 0; i < n; i++) {
		int64_t e = pragma_shape_numel(s[i].shape, s[i].ndim);
		if (e > 0)
			total += (uint64_t)e * pragma_dtype_size(s[i].dtype);
	}
	return total;
}

static uint64_t largest_output(const struct pragma_task *t)
{
	uint64_t best = 0;

	for (int i = 0; i < t->n_outputs; i++) {
		uint64_t b = spec_bytes(&t->outputs[i], 1);
		if (b > best)
			best = b;
	}
	return best;
}

void pragma_run_default_limits(const struct pragma_run_opts *o, struct pragma_rlimits *l)
{
	const struct pragma_task *t = o->task;
	uint64_t in = spec_bytes(t->inputs, t->n_inputs), out = spec_bytes(t->outputs, t->n_outputs);
	uint64_t data = (uint64_t)o->n_sets * (in + 2 * out) + (o->cold ? (o->flush_bytes ? o->flush_bytes :
									    pragma_flush_bytes()) : 0);
	int steps = o->steps ? o->n_steps : o->n_sets;
	int threads = o->threads > 0 ? o->threads : pragma_usable_cores();
	int timeout = o->timeout_ms > 0 ? o->timeout_ms : 60000;

	memset(l, 0, sizeof(*l));
	/* Every pk_forward thread reserves a stack and (glibc) a 64 MiB heap
	 * arena of address space; 4 GiB covers those with room to spare while
	 * a runaway allocation still fails fast. */
	l->address_space = data + ((uint64_t)4 << 30);
	l->cpu_seconds = (uint64_t)(timeout / 1000 + 5) * (uint64_t)threads;
	l->file_size = largest_output(t) + (1u << 20);
	l->open_files = (uint64_t)(64 + (steps + o->n_sets) * t->n_outputs);
	/* Not enforced for root, and seccomp already forbids new processes; a
	 * generous cap keeps thread creation working for ordinary users. */
	l->processes = 4096;
	l->no_core = 1;
}

static json_t *spec_array(const struct pragma_tensor_spec *s, int n, int with_shape)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++) {
		json_t *o = json_pack("{s:s}", "dtype", pragma_dtype_name(s[i].dtype));
		if (with_shape) {
			json_t *sh = json_array();
			for (int k = 0; k < s[i].ndim; k++)
				json_array_append_new(sh, json_integer(s[i].shape[k]));
			json_object_set_new(o, "shape", sh);
		}
		json_array_append_new(a, o);
	}
	return a;
}

/* Write work_dir/request.json for mode; req_path receives its path. */
static int write_request(const struct pragma_run_opts *o, const char *mode, struct pragma_buf *req_path,
			 struct pragma_err *err)
{
	json_t *req = NULL, *sets = json_array(), *pre = json_array();
	char *dump = NULL;
	int ret = -1;

	for (int s = 0; s < o->n_sets; s++) {
		json_t *files = json_array();
		struct pragma_buf d = PRAGMA_BUF_INIT;
		char p[4200];

		for (int i = 0; i < o->task->n_inputs; i++) {
			pragma_ref_input_path(&o->sets[s], i, p, sizeof(p));
			json_array_append_new(files, json_string(p));
		}
		pragma_buf_addf(&d, "%s/set%d", o->work_dir, s);
		if (pragma_mkdir_p(d.data, 0755, err) < 0) {
			pragma_buf_release(&d);
			json_decref(files);
			goto out;
		}
		json_array_append_new(sets, json_pack("{s:o, s:s}", "inputs", files, "out_dir", d.data));
		pragma_buf_release(&d);
	}
	for (int i = 0; o->preload && o->preload[i]; i++)
		json_array_append_new(pre, json_string(o->preload[i]));
	req = json_pack("{s:s, s:s, s:O, s:o, s:o, s:i, s:i, s:b, s:I, s:b, s:i, s:i, s:O, s:{s:b, s:b, s:b}}",
			"kernel", o->kernel_so, "mode", mode, "sets", sets,
			"inputs", spec_array(o->task->inputs, o->task->n_inputs, 0),
			"outputs", spec_array(o->task->outputs, o->task->n_outputs, 1),
			"warmup", o->time_mode ? o->warmup : 0, "reps", o->time_mode ? o->reps : 0, "cold", o->cold,
			"flush_bytes", (json_int_t)(o->flush_bytes ? o->flush_bytes : pragma_flush_bytes()),
			"save_timed", o->save_timed, "settle_us", o->settle_us, "final_settle_ms", o->final_settle_ms,
			"preload", pre, "sandbox", "enabled", o->sandbox, "landlock", !o->no_landlock, "seccomp",
			!o->no_seccomp);
	if (!req) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot build the harness request");
		goto out;
	}
	/* A collector's members (perf counters, the profiler's switches). */
	if (json_is_object(o->request)) {
		const char *k;
		json_t *v;
		json_object_foreach(o->request, k, v) {
			if (json_is_object(v) && json_is_object(json_object_get(req, k)))
				json_object_update(json_object_get(req, k), v);
			else
				json_object_set(req, k, v);
		}
	}
	if (o->steps) {
		json_t *st = json_array();
		for (int i = 0; i < o->n_steps; i++) {
			json_t *x = json_pack("{s:i, s:i}", "buf", o->steps[i].buf, "data", o->steps[i].data);
			if (o->steps[i].save)
				json_object_set_new(x, "save", json_string(o->steps[i].save));
			json_array_append_new(st, x);
		}
		json_object_set_new(req, "steps", st);
	}
	pragma_buf_reset(req_path);
	pragma_buf_addf(req_path, "%s/request-%s.json", o->work_dir, mode);
	dump = json_dumps(req, JSON_INDENT(1));
	if (pragma_write_file_atomic(req_path->data, dump, strlen(dump), err) < 0)
		goto out;
	ret = 0;
out:
	free(dump);
	json_decref(req);
	json_decref(sets);
	json_decref(pre);
	return ret;
}

static const char *signal_status(int sig)
{
	switch (sig) {
	case SIGSYS:
		return "forbidden_syscall";
	case SIGXCPU:
		return "timeout";
	case SIGXFSZ:
		return "output_limit";
	case SIGKILL:
		return "memory_limit"; /* not ours: the OOM killer */
	default:
		return "crash";
	}
}

/* The name of a syscall for messages ("openat"), from its number. */
static void syscall_name(int nr, uint32_t arch, char *out, size_t len)
{
	char *n = seccomp_syscall_resolve_num_arch(arch ? arch : SCMP_ARCH_NATIVE, nr);

	snprintf(out, len, "%s", n ? n : "?");
	free(n);
}

/* One "function\nfile:line" pair of addr2line's output: "F at kernel.c:14"
 * (the file's last component, no discriminator); 0 when it knows nothing. */
static int a2l_pair(const char **p, char *out, size_t len)
{
	char fn[160] = "", loc[256] = "", *file, *sp;
	size_t n;

	if (sscanf(*p, "%159s %255[^\n]", fn, loc) != 2)
		return 0;
	for (int k = 0; k < 2 && **p; k++) {
		const char *nl = strchr(*p, '\n');
		*p = nl ? nl + 1 : *p + strlen(*p);
	}
	file = strrchr(loc, '/') ? strrchr(loc, '/') + 1 : loc;
	sp = strchr(file, ' '); /* " (discriminator 2)" */
	if (sp)
		*sp = 0;
	n = strlen(file);
	if (n <= 2 || !strncmp(file, "??", 2) || !strcmp(file + n - 2, ":0") || !strcmp(file + n - 2, ":?"))
		return 0;
	snprintf(out, len, "%s at %s", strcmp(fn, "??") ? fn : "(unknown function)", file);
	return 1;
}

/* Where in the kernel's source the code at offset pc of kernel_so lies,
 * from addr2line and the .so's debug information (kernels are built with
 * -g): "in raw at kernel.c:6, inlined into pk_forward at kernel.c:14"
 * (the innermost and the outermost function of an inline chain); "at
 * kernel+0x1234" when addr2line cannot say. */
static void kernel_line(const char *kernel_so, unsigned long pc, char *out, size_t len)
{
	char addr[32], inner[300], outer[300], cur[300];
	const char *argv[] = { "addr2line", "-f", "-i", "-e", kernel_so, addr, NULL };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	const char *p;
	int n = 0;

	snprintf(out, len, "at kernel+0x%lx", pc);
	if (!kernel_so || !*kernel_so)
		return;
	snprintf(addr, sizeof(addr), "0x%lx", pc);
	c.argv = argv;
	c.timeout_ms = 10000;
	c.out_cap = 64 << 10;
	if (pragma_child_run(&c, &e) == 0 && c.exited && c.exit_code == 0 && c.out.data) {
		p = c.out.data;
		while (n < 64 && a2l_pair(&p, cur, sizeof(cur))) {
			memcpy(n ? outer : inner, cur, sizeof(cur));
			n++;
		}
		if (n == 1)
			snprintf(out, len, "in %.250s", inner);
		else if (n > 1)
			snprintf(out, len, "in %.190s, inlined into %.190s", inner, outer);
	}
	pragma_child_release(&c);
}

/* Fill r from the harness's answer (one JSON object); kernel_so names the
 * kernel for messages that point into its source. */
static void take_answer(struct pragma_run_result *r, json_t *a, const char *kernel_so)
{
	json_t *t, *v, *af;
	size_t i;

	if (json_object_get(a, "sandbox")) {
		json_decref(r->sandbox);
		r->sandbox = json_incref(json_object_get(a, "sandbox"));
	}
	af = json_object_get(a, "alloc_failures");
	if (af) {
		r->alloc_failures = (unsigned long)json_integer_value(json_object_get(af, "count"));
		r->alloc_largest = (uint64_t)json_integer_value(json_object_get(af, "largest"));
	}
	if (json_object_get(a, "calls"))
		r->calls = (int)json_integer_value(json_object_get(a, "calls"));
	if (json_is_true(json_object_get(a, "ok"))) {
		t = json_object_get(a, "times_ms");
		if (json_array_size(t)) {
			r->times_ms = realloc(r->times_ms, sizeof(double) * ((size_t)r->n_times + json_array_size(t) + 1));
			json_array_foreach(t, i, v)
				r->times_ms[r->n_times++] = json_number_value(v);
		}
		r->ok = 1;
		snprintf(r->status, sizeof(r->status), "ok");
		return;
	}
	const char *s = json_string_value(json_object_get(a, "status"));
	const char *m = json_string_value(json_object_get(a, "message"));
	r->ok = 0;
	snprintf(r->status, sizeof(r->status), "%s", s ? s : "crash");
	snprintf(r->message, sizeof(r->message), "%s", m ? m : "");
	if (!strcmp(r->status, "forbidden_syscall") && json_is_integer(json_object_get(a, "syscall"))) {
		char name[64], site[512] = "";
		json_t *pc = json_object_get(a, "kernel_pc");
		r->syscall_nr = (int)json_integer_value(json_object_get(a, "syscall"));
		syscall_name(r->syscall_nr, (uint32_t)json_integer_value(json_object_get(a, "arch")), name,
			     sizeof(name));
		if (json_is_integer(pc)) {
			char line[400];
			kernel_line(kernel_so, (unsigned long)json_integer_value(pc), line, sizeof(line));
			/* A library function (fopen, sysconf, malloc growing a
			 * thread's arena...) made the call for the kernel. */
			snprintf(site, sizeof(site), json_is_true(json_object_get(a, "direct")) ? ", %s" :
				 ", through a library function called %s", line);
		}
		snprintf(r->message, sizeof(r->message),
			 "the kernel called %s (syscall %d)%s%s, which the sandbox forbids: kernels may not open files, "
			 "start processes, use the network or signal other processes%s",
			 name, r->syscall_nr, site,
			 json_is_true(json_object_get(a, "loading")) ? " while it was being loaded (in a constructor)" : "",
			 strstr(m ? m : "", " on input set") ? strstr(m, " on input set") : "");
	}
}

/* A harness killed by SIGSYS without an answer: the handler that names the
 * call never ran (SIGSYS was blocked, so the kernel delivered it with the
 * default action). */
#define SIGSYS_UNNAMED \
	"the kernel made a system call the sandbox forbids, and SIGSYS killed it before the harness could say " \
	"which (a kernel that blocks signals with sigprocmask or pthread_sigmask dies at once on a forbidden " \
	"call): kernels may not open files, start processes, use the network or signal other processes"

/* Status for a harness that ended without an answer. */
static void take_death(struct pragma_run_result *r, const struct pragma_child *c, const char *err_tail)
{
	char st[64];

	r->ok = 0;
	if (c->timed_out) {
		snprintf(r->status, sizeof(r->status), "timeout");
		snprintf(r->message, sizeof(r->message),
			 "the kernel did not finish within %.0f ms (killed); look for a loop that never ends", c->wall_ms);
	} else if (c->signaled) {
		snprintf(r->status, sizeof(r->status), "%s", signal_status(c->term_sig));
		if (c->term_sig == SIGXCPU)
			snprintf(r->message, sizeof(r->message), "the kernel used up its CPU-time limit");
		else if (c->term_sig == SIGKILL)
			snprintf(r->message, sizeof(r->message),
				 "the harness was killed by SIGKILL (out of memory? max RSS %ld MiB)",
				 c->usage.ru_maxrss / 1024);
		else if (c->term_sig == SIGXFSZ)
			snprintf(r->message, sizeof(r->message), "the harness exceeded the file-size limit");
		else
			snprintf(r->message, sizeof(r->message), "the harness was %s%s%.300s",
				 pragma_child_status_str(c, st, sizeof(st)), err_tail && *err_tail ? "; stderr: " : "",
				 err_tail ? err_tail : "");
	} else {
		snprintf(r->status, sizeof(r->status), "crash");
		snprintf(r->message, sizeof(r->message), "the harness %s without a result%s%.300s",
			 pragma_child_status_str(c, st, sizeof(st)), err_tail && *err_tail ? "; stderr: " : "",
			 err_tail ? err_tail : "");
	}
}

/* clang's OpenMP runtime registers itself in /dev/shm and removes the file
 * at exit; the harness leaves with _exit(), so the parent sweeps entries
 * whose process is gone (anyone's: they are garbage either way). */
static void sweep_kmp_registrations(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		int pid;
		char p[300];
		if (sscanf(de->d_name, "__KMP_REGISTERED_LIB_%d_", &pid) != 1 || pid <= 0)
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(p, sizeof(p), "/dev/shm/%s", de->d_name);
		unlink(p);
	}
	closedir(d);
}

#define MAX_ENV 16
#define MAX_ARGV 48

/* Is this pragma's harness? `HARNESS --version` must say so, once per
 * path and process: a broken $PRAGMA_HARNESS is a configuration problem
 * (exit 3), never a kernel's crash. */
static int harness_check(const char *path, struct pragma_err *err)
{
	static char ok_path[4096];
	const char *argv[] = { path, "--version", NULL };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	char st[64];
	int ret = -1;

	if (!strcmp(ok_path, path))
		return 0;
	c.argv = argv;
	c.timeout_ms = 30000;
	c.out_cap = c.err_cap = 4096;
	if (pragma_child_run(&c, err) < 0) {
		pragma_err_prefix(err, "cannot start the harness %s", path);
		goto out;
	}
	if (!c.exited || c.exit_code || strncmp(c.out.data, "pragma-", 7) || !strstr(c.out.data, " protocol ")) {
		pragma_buf_rtrim(&c.err);
		pragma_err_set(err, PRAGMA_E_ENV, "%s is not a working pragma harness: asked for its version it %s%s%.200s",
			       path, pragma_child_status_str(&c, st, sizeof(st)), c.err.len ? ": " : "", c.err.data);
		pragma_err_hint(err, "rebuild (cmake --build build), or unset PRAGMA_HARNESS / PRAGMA_CUDA_HARNESS");
		goto out;
	}
	snprintf(ok_path, sizeof(ok_path), "%s", path);
	ret = 0;
out:
	pragma_child_release(&c);
	return ret;
}

/* The command line: the wrapper's argv, the backend's harness, the request. */
static int harness_argv(const struct pragma_run_opts *o, struct pragma_buf *harness, const char *req,
			const char **argv, struct pragma_err *err)
{
	const struct pragma_backend *b = pragma_backend_or_default(o->backend);
	int n = 0;

	if (b->harness(harness, err) < 0 || harness_check(harness->data, err) < 0)
		return -1;
	for (int i = 0; o->wrapper && o->wrapper[i]; i++) {
		if (n >= MAX_ARGV - 3)
			return pragma_err_set(err, PRAGMA_E_INTERNAL, "the harness wrapper has too many arguments");
		argv[n++] = o->wrapper[i];
	}
	argv[n++] = harness->data;
	argv[n++] = req;
	argv[n] = NULL;
	return 0;
}

static void child_env(const struct pragma_run_opts *o, struct pragma_buf *omp, const char **env)
{
	const struct pragma_backend *b = pragma_backend_or_default(o->backend);
	int n = 0;

	pragma_buf_reset(omp);
	pragma_buf_addf(omp, "OMP_NUM_THREADS=%d", o->threads > 0 ? o->threads : pragma_usable_cores());
	env[n++] = omp->data;
	env[n++] = "OMP_PROC_BIND=false";
	env[n++] = "LD_PRELOAD";   /* unset: the baseline's tcmalloc is not the candidate's business */
	env[n++] = "MALLOC_PERTURB_";
	for (int i = 0; b->env && b->env[i] && n < MAX_ENV - 1; i++)
		env[n++] = b->env[i];
	env[n] = NULL;
}

/* The limits of a sandboxed run: the caller's, else the backend's. */
static const struct pragma_rlimits *run_limits(const struct pragma_run_opts *o, struct pragma_rlimits *lim)
{
	if (o->limits)
		return o->limits;
	if (!o->sandbox)
		return NULL;
	pragma_backend_or_default(o->backend)->limits(o, lim);
	return lim;
}

/* The harness's answer in its stdout: the first line, or with a wrapper
 * (whose own lines come first) the first line that is a JSON object. */
static json_t *find_answer(const struct pragma_run_opts *o, const struct pragma_buf *out)
{
	const char *p = out->data;

	while (p && *p) {
		size_t k = strcspn(p, "\n");
		json_error_t jerr;
		json_t *a = json_loadb(p, k, 0, &jerr);
		if (json_is_object(a) || !o->wrapper)
			return a;
		json_decref(a);
		p = p[k] ? p + k + 1 : NULL;
	}
	return NULL;
}

static void take_log(struct pragma_run_result *r, const struct pragma_child *c)
{
	size_t n = c->err.len < sizeof(r->log) - 1 ? c->err.len : sizeof(r->log) - 1;

	memcpy(r->log, c->err.data, n);
	r->log[n] = '\0';
	r->log_truncated = c->err_truncated || n < c->err.len;
}

int pragma_run_kernel(const struct pragma_run_opts *o, struct pragma_run_result *r, struct pragma_err *err)
{
	struct pragma_buf req_path = PRAGMA_BUF_INIT, harness = PRAGMA_BUF_INIT, omp = PRAGMA_BUF_INIT;
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_rlimits lim;
	const char *argv[MAX_ARGV];
	const char *env[MAX_ENV];
	json_t *ans = NULL;
	int ret = -1;

	memset(r, 0, sizeof(*r));
	r->syscall_nr = -1;
	if (write_request(o, o->time_mode ? "time" : "run", &req_path, err) < 0 ||
	    harness_argv(o, &harness, req_path.data, argv, err) < 0)
		goto out;
	child_env(o, &omp, env);
	c.argv = argv;
	c.env = env;
	c.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 60000;
	c.limits = run_limits(o, &lim);
	c.out_cap = 1 << 20;
	c.err_cap = 64 << 10;
	if (pragma_child_run(&c, err) < 0)
		goto out;
	r->wall_ms = c.wall_ms;
	r->maxrss_kb = c.usage.ru_maxrss;
	r->user_s = c.usage.ru_utime.tv_sec + c.usage.ru_utime.tv_usec / 1e6;
	r->sys_s = c.usage.ru_stime.tv_sec + c.usage.ru_stime.tv_usec / 1e6;

	/* The answer (a kernel's own prints went to stderr). */
	ans = find_answer(o, &c.out);
	pragma_buf_rtrim(&c.err);
	take_log(r, &c);
	if (c.timed_out) {
		take_death(r, &c, NULL);
	} else if (ans && json_is_object(ans)) {
		take_answer(r, ans, o->kernel_so);
		r->raw = ans;
		ans = NULL;
		if (r->ok && !(c.exited && c.exit_code == 0)) {
			/* Said ok, then died: a thread left behind crashed it. */
			take_death(r, &c, c.err.data);
			snprintf(r->status, sizeof(r->status), "work_after_return");
			snprintf(r->message + strlen(r->message), sizeof(r->message) - strlen(r->message),
				 " after its last call had returned: a thread the kernel started kept running");
		}
	} else if (c.signaled) {
		take_death(r, &c, c.err.data);
		if (c.term_sig == SIGSYS)
			snprintf(r->message, sizeof(r->message), "%s", SIGSYS_UNNAMED);
	} else {
		take_death(r, &c, c.err.data);
	}
	sweep_kmp_registrations();
	ret = 0;
out:
	json_decref(ans);
	pragma_child_release(&c);
	pragma_buf_release(&req_path);
	pragma_buf_release(&harness);
	pragma_buf_release(&omp);
	return ret;
}

/* ------------------------------------------------------------- serve mode */

struct pragma_run_server {
	struct pragma_child c;
	struct pragma_rlimits lim;
	struct pragma_buf harness, req_path, omp, in;
	struct pragma_buf kernel_so;     /* for messages that point into its source */
	const char *argv[MAX_ARGV];
	const char *env[MAX_ENV];
	int to, from;
	int dead;
};

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Read one line (without '\n') into line within timeout_ms. 1: got it;
 * 0: EOF; -1: timeout. */
static int read_line(struct pragma_run_server *s, struct pragma_buf *line, int timeout_ms)
{
	double deadline = mono_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(s->in.data, '\n', s->in.len);
		if (nl) {
			size_t n = (size_t)(nl - s->in.data);
			pragma_buf_reset(line);
			pragma_buf_add(line, s->in.data, n);
			memmove(s->in.data, nl + 1, s->in.len - n - 1);
			pragma_buf_setlen(&s->in, s->in.len - n - 1);
			return 1;
		}
		if (s->in.len > (8u << 20))
			return 0; /* garbage without newlines: treat as a dead harness */
		double left = deadline - mono_ms();
		if (left <= 0)
			return -1;
		struct pollfd p = { .fd = s->from, .events = POLLIN };
		int pr = poll(&p, 1, (int)left + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		char chunk[65536];
		ssize_t n = read(s->from, chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return 0;
		pragma_buf_add(&s->in, chunk, (size_t)n);
	}
}

/* write() to a pipe whose reader may be gone, without SIGPIPE killing us
 * and without touching the process's signal dispositions. */
static int write_nosigpipe(int fd, const char *buf, size_t len)
{
	sigset_t pipe_set, old;
	ssize_t n;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	n = write(fd, buf, len);
	if (n < 0 && errno == EPIPE) {
		struct timespec zero = { 0, 0 };
		sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return n == (ssize_t)len ? 0 : -1;
}

/* The server is gone or misbehaved: kill, reap, and say why in r.
 * timed_out: the deadline (ms) it missed, 0 when it did not. */
static void serve_died(struct pragma_run_server *s, struct pragma_run_result *r, int timed_out)
{
	if (s->dead)
		return;
	if (timed_out) {
		pragma_child_kill(&s->c);
		s->c.timed_out = 1;
		/* A server's own wall time is its whole life: the deadline
		 * it missed is the one to report. */
		s->c.wall_ms = timed_out;
	} else {
		pragma_child_wait(&s->c, 5000);
	}
	s->dead = 1;
	r->maxrss_kb = s->c.usage.ru_maxrss;
	take_death(r, &s->c, NULL);
	if (s->c.signaled && s->c.term_sig == SIGSYS)
		snprintf(r->message, sizeof(r->message), "%s", SIGSYS_UNNAMED);
}

/* Wait for one answer line; 1: r filled from it, 0: died (r says how). */
static int serve_answer(struct pragma_run_server *s, int timeout_ms, struct pragma_run_result *r)
{
	struct pragma_buf line = PRAGMA_BUF_INIT;
	json_error_t jerr;
	json_t *a;
	int got = read_line(s, &line, timeout_ms);

	if (got <= 0) {
		pragma_buf_release(&line);
		serve_died(s, r, got < 0 ? timeout_ms : 0);
		return 0;
	}
	a = json_loadb(line.data, line.len, 0, &jerr);
	pragma_buf_release(&line);
	if (!a || !json_is_object(a)) {
		json_decref(a);
		serve_died(s, r, 1);
		snprintf(r->status, sizeof(r->status), "crash");
		snprintf(r->message, sizeof(r->message), "the harness answered garbage (the kernel wrote to its channel?)");
		return 0;
	}
	take_answer(r, a, s->kernel_so.data);
	json_decref(r->raw);
	r->raw = a;
	if (!r->ok) {
		/* The harness reported a failure and exits. */
		pragma_child_wait(&s->c, 5000);
		s->dead = 1;
		return 0;
	}
	return 1;
}

int pragma_run_serve_start(const struct pragma_run_opts *o, struct pragma_run_server **out,
			   struct pragma_run_result *r, struct pragma_err *err)
{
	struct pragma_run_server *s = calloc(1, sizeof(*s));
	struct pragma_run_opts so = *o;

	*out = NULL;
	memset(r, 0, sizeof(*r));
	r->syscall_nr = -1;
	so.time_mode = 1;
	so.reps = 0;
	pragma_buf_init(&s->harness);
	pragma_buf_init(&s->req_path);
	pragma_buf_init(&s->omp);
	pragma_buf_init(&s->in);
	pragma_buf_init(&s->kernel_so);
	pragma_buf_adds(&s->kernel_so, o->kernel_so ? o->kernel_so : "");
	s->c = (struct pragma_child)PRAGMA_CHILD_INIT;
	s->to = s->from = -1;
	if (write_request(&so, "serve", &s->req_path, err) < 0 ||
	    harness_argv(o, &s->harness, s->req_path.data, s->argv, err) < 0)
		goto fail;
	child_env(o, &s->omp, s->env);
	s->c.argv = s->argv;
	s->c.env = s->env;
	s->c.inherit_err = 0;
	s->c.limits = run_limits(&so, &s->lim);
	if (s->c.limits == &s->lim)
		/* A server lives for many rounds: the CPU cap follows the
		 * caller's overall deadline, not one run's. */
		s->lim.cpu_seconds = 0;
	if (pragma_child_start(&s->c, &s->to, &s->from, err) < 0)
		goto fail;
	if (!serve_answer(s, o->timeout_ms > 0 ? o->timeout_ms : 60000, r)) {
		pragma_run_server_free(s);
		return 0;
	}
	*out = s;
	return 0;
fail:
	pragma_run_server_free(s);
	return -1;
}

int pragma_run_serve_time(struct pragma_run_server *s, int reps, int timeout_ms, struct pragma_run_result *r,
			  struct pragma_err *err)
{
	char cmd[32];
	int n = snprintf(cmd, sizeof(cmd), "time %d\n", reps);

	if (s->dead)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "the harness server is gone");
	int before = r->n_times;

	if (write_nosigpipe(s->to, cmd, (size_t)n) < 0) {
		serve_died(s, r, 0);
		return 0;
	}
	if (serve_answer(s, timeout_ms > 0 ? timeout_ms : 60000, r) && r->n_times - before != reps) {
		/* Not the harness's answer to this command: the kernel wrote
		 * to the result channel. */
		serve_died(s, r, 1);
		snprintf(r->status, sizeof(r->status), "crash");
		snprintf(r->message, sizeof(r->message),
			 "the harness answered with %d times for %d calls: the kernel interfered with its result channel",
			 r->n_times - before, reps);
	}
	return 0;
}

int pragma_run_serve_finish(struct pragma_run_server *s, struct pragma_run_result *r, struct pragma_err *err)
{
	if (s->dead)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "the harness server is gone");
	if (write_nosigpipe(s->to, "quit\n", 5) < 0) {
		serve_died(s, r, 0);
		return 0;
	}
	if (serve_answer(s, 60000, r)) {
		if (!json_is_true(json_object_get(r->raw, "done"))) {
			serve_died(s, r, 1);
			snprintf(r->status, sizeof(r->status), "crash");
			snprintf(r->message, sizeof(r->message),
				 "the harness's final report is missing: the kernel interfered with its result channel");
			return 0;
		}
		pragma_child_wait(&s->c, 10000);
		s->dead = 1;
		r->maxrss_kb = s->c.usage.ru_maxrss;
		r->user_s = s->c.usage.ru_utime.tv_sec + s->c.usage.ru_utime.tv_usec / 1e6;
		r->sys_s = s->c.usage.ru_stime.tv_sec + s->c.usage.ru_stime.tv_usec / 1e6;
	}
	return 0;
}

void pragma_run_server_free(struct pragma_run_server *s)
{
	if (!s)
		return;
	if (s->to >= 0)
		close(s->to);
	if (s->from >= 0)
		close(s->from);
	if (!s->dead && s->c.pid > 0)
		pragma_child_kill(&s->c);
	pragma_child_release(&s->c);
	sweep_kmp_registrations();
	pragma_buf_release(&s->harness);
	pragma_buf_release(&s->req_path);
	pragma_buf_release(&s->omp);
	pragma_buf_release(&s->in);
	pragma_buf_release(&s->kernel_so);
	free(s);
}

int pragma_run_server_pid(const struct pragma_run_server *s)
{
	return s && !s->dead ? (int)s->c.pid : 0;
}
