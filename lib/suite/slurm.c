/*
 * The Slurm executor: a suite's elements as one job array (`sbatch
 * --array`, one element per task x trajectory, the array index being the
 * element's number), watched with squeue (and sacct, where the cluster
 * keeps accounting), cancelled with scancel.
 *
 * Everything a job needs lives in the run directory on the shared
 * filesystem: suite.json (what each element runs), job.sh (the batch
 * script: paths and names only, never a secret), logs/<job>_<index>.log,
 * shards/<task>-t<k>.db (the element's own store: one writer, the rollback
 * journal, never WAL — pragma/store.h says why), runs/<task>-t<k>/ (its
 * artifacts). Only this process, on the submit host, writes the suite's
 * store: it merges a shard once its job has ended.
 *
 * A job killed by its time limit, by preemption or by a node failure is
 * resubmitted (twice at most per session) and resumes its run from its
 * shard, losing at most the attempt in flight; `--resume` resubmits every
 * element that is not done and takes over those still queued or running.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pragma/config.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/proc.h"
#include "pragma/store.h"
#include "suite/suite_int.h"

extern char **environ;

#define RETRIES 2 /* automatic resubmissions of an element after a time limit / preemption */

struct slurm {
	char *self, *db, *run_dir, *job_name;
	json_t *suite;
	struct pragma_slurm_opts so;
	json_t *keep; /* owns the strings of so */
	struct pragma_store *store;
	struct pragma_suite_elem *els;
	int n_els;
	long *jobs; /* array job ids submitted or taken over */
	int n_jobs;
	double next_poll;
	int poll_ms;
	int sacct_ok; /* -1 unknown, 0 no accounting, 1 works */
};

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ helpers */

enum pragma_suite_state suite_slurm_state(const char *w)
{
	static const char *const pending[] = { "PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD",
					       "CONFIGURING", NULL };
	static const char *const running[] = { "RUNNING", "COMPLETING", "SUSPENDED", "STAGE_OUT", "SIGNALING",
					       "RESIZING", "STOPPED", NULL };
	char word[32];

	snprintf(word, sizeof(word), "%.*s", (int)strcspn(w, " +"), w);
	for (int i = 0; pending[i]; i++)
		if (!strcmp(word, pending[i]))
			return PRAGMA_SUITE_PENDING;
	for (int i = 0; running[i]; i++)
		if (!strcmp(word, running[i]))
			return PRAGMA_SUITE_RUNNING;
	if (!strcmp(word, "COMPLETED"))
		return PRAGMA_SUITE_DONE;
	return PRAGMA_SUITE_FAILED; /* FAILED, CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL, OUT_OF_MEMORY, ... */
}

int suite_slurm_retryable(const char *w)
{
	return !strncmp(w, "TIMEOUT", 7) || !strncmp(w, "PREEMPTED", 9) || !strncmp(w, "NODE_FAIL", 9) ||
	       !strncmp(w, "BOOT_FAIL", 9);
}

void suite_array_spec(const int *idx, int n, struct pragma_buf *out)
{
	for (int i = 0; i < n;) {
		int j = i;
		while (j + 1 < n && idx[j + 1] == idx[j] + 1)
			j++;
		if (j > i)
			pragma_buf_addf(out, "%s%d-%d", out->len ? "," : "", idx[i], idx[j]);
		else
			pragma_buf_addf(out, "%s%d", out->len ? "," : "", idx[i]);
		i = j + 1;
	}
}

static int name_wanted(const char *name, size_t n)
{
	static const char *const exact[] = { "PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "LD_LIBRARY_PATH",
					     "PYTHONPATH", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "CUDA_HOME", "CUDA_PATH",
					     "SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "HTTPS_PROXY",
					     "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
					     "ALL_PROXY", "all_proxy", NULL };
	for (int i = 0; exact[i]; i++)
		if (strlen(exact[i]) == n && !strncmp(name, exact[i], n))
			return 1;
	if (!strncmp(name, "PRAGMA_", 7) || !strncmp(name, "LC_", 3) || !strncmp(name, "OMP_", 4))
		return 1;
	return n > 8 && !strncmp(name + n - 8, "_API_KEY", 8);
}

void suite_export_names(char *const *env, const char *extra_name, struct pragma_buf *out)
{
	for (char *const *e = env; e && *e; e++) {
		size_t n = strcspn(*e, "=");
		int ok = n > 0 && (*e)[n] == '=';
		for (size_t i = 0; ok && i < n; i++)
			ok = isalnum((unsigned char)(*e)[i]) || (*e)[i] == '_';
		if (!ok || !name_wanted(*e, n))
			continue;
		pragma_buf_addf(out, "%s%.*s", out->len ? "," : "", (int)n, *e);
	}
	/* A key named by the configuration (llm.api_key_env) goes too. */
	if (extra_name && *extra_name && getenv(extra_name) && !name_wanted(extra_name, strlen(extra_name)))
		pragma_buf_addf(out, "%s%s", out->len ? "," : "", extra_name);
}

int suite_parse_squeue_line(const char *line, struct suite_squeue_row *r)
{
	char f[5][160];
	int k = 0;
	const char *p = line;

	memset(r, 0, sizeof(*r));
	while (k < 5) {
		size_t n = strcspn(p, k < 4 ? "|" : "\n");
		snprintf(f[k], sizeof(f[k]), "%.*s", (int)n, p);
		k++;
		if (k < 5 && p[n] != '|')
			return -1;
		p += n + (p[n] ? 1 : 0);
	}
	char *end;
	r->job = strtol(f[0], &end, 10);
	if (end == f[0] || *end != '_')
		return -1;
	r->index = (int)strtol(end + 1, &end, 10);
	if (*end && !isspace((unsigned char)*end))
		return -1;
	snprintf(r->state, sizeof(r->state), "%.*s", (int)strcspn(f[1], " "), f[1]);
	long st = strtol(f[2], NULL, 10);
	r->exit_code = (int)((st >> 8) & 0xff);
	r->signal = (int)(st & 0x7f);
	snprintf(r->nodes, sizeof(r->nodes), "%.*s", (int)strcspn(f[3], " "), f[3]);
	size_t rl = strlen(f[4]);
	while (rl && isspace((unsigned char)f[4][rl - 1]))
		rl--;
	snprintf(r->reason, sizeof(r->reason), "%.*s", (int)rl, f[4]);
	return 0;
}

/* Run a Slurm command; its output in *out, its complaint in *errt. Returns
 * its exit code, or -1 when it could not run (err set). */
static int slurm_cmd(const char *const *argv, struct pragma_buf *out, struct pragma_buf *errt, int timeout_ms,
		     struct pragma_err *err)
{
	struct pragma_child c = PRAGMA_CHILD_INIT;
	int rc = -1;

	c.argv = argv;
	c.timeout_ms = timeout_ms;
	c.out_cap = 8 << 20;
	c.err_cap = 64 << 10;
	if (pragma_child_run(&c, err) < 0)
		goto out;
	if (c.timed_out) {
		pragma_err_set(err, PRAGMA_E_ENV, "%s did not answer within %d s%s%.300s", argv[0], timeout_ms / 1000,
			       c.err.len ? ": " : "", c.err.len ? c.err.data : "");
		pragma_err_hint(err, "is the Slurm controller up and SLURM_CONF right? `scontrol ping` says");
		goto out;
	}
	rc = c.exited ? c.exit_code : 128 + c.term_sig;
	if (out)
		pragma_buf_add(out, c.out.data ? c.out.data : "", c.out.len);
	if (errt)
		pragma_buf_add(errt, c.err.data ? c.err.data : "", c.err.len);
out:
	pragma_child_release(&c);
	return rc;
}

static void trim(struct pragma_buf *b)
{
	while (b->len && isspace((unsigned char)b->data[b->len - 1]))
		b->data[--b->len] = '\0';
}

int pragma_slurm_check(struct pragma_err *err)
{
	static const char *const progs[] = { "sbatch", "squeue", "scancel" };
	struct pragma_buf out = PRAGMA_BUF_INIT, errt = PRAGMA_BUF_INIT;
	int rc;

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		if (!pragma_which(progs[i], NULL)) {
			pragma_err_set(err, PRAGMA_E_ENV, "--executor slurm: %s is not on PATH", progs[i]);
			pragma_err_hint(err, "run pragma bench on a submit host of the cluster (module load slurm?), install "
					"Slurm's commands (Debian: slurm-client; a one-node cluster for trying: "
					"scripts/slurm-dev.sh start), or run here with --executor local");
			return -1;
		}
	const char *argv[] = { "squeue", "-h", "-o", "%i", "--name=pragma-check", NULL };
	rc = slurm_cmd(argv, &out, &errt, 30000, err);
	if (rc < 0)
		goto out;
	if (rc != 0) {
		trim(&errt);
		pragma_err_set(err, PRAGMA_E_ENV, "the Slurm controller does not answer: %.600s",
			       errt.len ? errt.data : "squeue failed");
		pragma_err_hint(err, "check `scontrol ping` and SLURM_CONF (%s); for the development cluster: "
				"scripts/slurm-dev.sh start, then eval \"$(scripts/slurm-dev.sh env)\"",
				getenv("SLURM_CONF") ? getenv("SLURM_CONF") : "unset: Slurm's default /etc/slurm/slurm.conf");
		rc = -1;
		goto out;
	}
	rc = 0;
out:
	pragma_buf_release(&out);
	pragma_buf_release(&errt);
	return rc;
}

json_t *pragma_suite_executor_config(const char *name, const struct pragma_slurm_opts *so)
{
	json_t *c = json_pack("{s:s}", "name", name);

	if (!so || strcmp(name, "slurm"))
		return c;
	if (so->partition)
		json_object_set_new(c, "partition", json_string(so->partition));
	if (so->account)
		json_object_set_new(c, "account", json_string(so->account));
	if (so->time)
		json_object_set_new(c, "time", json_string(so->time));
	if (so->gres)
		json_object_set_new(c, "gres", json_string(so->gres));
	if (so->max_jobs > 0)
		json_object_set_new(c, "max_jobs", json_integer(so->max_jobs));
	if (so->shared_dir)
		json_object_set_new(c, "shared_dir", json_string(so->shared_dir));
	if (so->n_sbatch_args) {
		json_t *a = json_array();
		for (int i = 0; i < so->n_sbatch_args; i++)
			json_array_append_new(a, json_string(so->sbatch_args[i]));
		json_object_set_new(c, "sbatch_args", a);
	}
	return c;
}

/* ------------------------------------------------------------ files */

static void shard_of(const char *run_dir, const struct pragma_suite_elem *el, char *out, size_t n)
{
	snprintf(out, n, "%s/shards/%s-t%d.db", run_dir, el->name, el->traj + 1);
}

/* 'text' for /bin/sh. */
static void sh_quote(struct pragma_buf *b, const char *s)
{
	pragma_buf_addch(b, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			pragma_buf_adds(b, "'\\''");
		else
			pragma_buf_addch(b, *s);
	}
	pragma_buf_addch(b, '\'');
}

/* A #SBATCH line holds one argument: no newline may end it early. */
static int sbatch_line(struct pragma_buf *b, const char *arg, struct pragma_err *err)
{
	if (strpbrk(arg, "\n\r"))
		return pragma_err_set(err, PRAGMA_E_INPUT, "an sbatch argument holds a line break: %.80s", arg);
	pragma_buf_addf(b, "#SBATCH %s\n", arg);
	return 0;
}

/* The names exported at the suite's first submission that are not set now:
 * a --resume from a shell without the model's URL or key would send its jobs
 * to the wrong endpoint, or none. The model's settings missing is an error;
 * anything else a warning. */
static int check_exports(const char *spec_path, const char *now, struct pragma_err *err)
{
	json_t *old = json_load_file(spec_path, 0, NULL), *x;
	struct pragma_buf miss = PRAGMA_BUF_INIT, fatal = PRAGMA_BUF_INIT;
	size_t i;
	int ret = 0;

	json_array_foreach(json_object_get(old, "exported"), i, x) {
		const char *n = json_string_value(x);
		size_t len = n ? strlen(n) : 0;
		int found = 0;
		for (const char *p = now; len && (p = strstr(p, n)); p += len)
			if ((p == now || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) {
				found = 1;
				break;
			}
		if (found || !n)
			continue;
		int model = !strncmp(n, "PRAGMA_LLM", 10) || (len > 8 && !strcmp(n + len - 8, "_API_KEY"));
		pragma_buf_addf(model ? &fatal : &miss, "%s%s", (model ? fatal.len : miss.len) ? ", " : "", n);
	}
	if (fatal.len) {
		pragma_err_set(err, PRAGMA_E_ENV, "the suite's jobs were submitted with %s set, and it is not set now: "
			       "resubmitted jobs would not reach the model", fatal.data);
		pragma_err_hint(err, "export %s as when the suite was started, then resume again", fatal.data);
		ret = -1;
	} else if (miss.len) {
		pragma_warn("set when the suite's jobs were first submitted, not set now (the jobs will not have it): %s",
			    miss.data);
	}
	json_decref(old);
	pragma_buf_release(&miss);
	pragma_buf_release(&fatal);
	return ret;
}

static int write_files(struct slurm *S, struct pragma_err *err)
{
	struct pragma_buf p = PRAGMA_BUF_INIT, sh = PRAGMA_BUF_INIT, names = PRAGMA_BUF_INIT;
	json_t *spec = NULL, *elems = json_array();
	json_t *cfg = json_object_get(S->suite, "config");
	json_t *tasks = json_object_get(cfg, "tasks");
	int ret = -1, n_tasks = (int)json_array_size(tasks);
	char *text = NULL;

	static const char *const sub[] = { "logs", "shards", "runs" };
	for (size_t i = 0; i < 3; i++) {
		pragma_buf_reset(&p);
		pragma_buf_addf(&p, "%s/%s", S->run_dir, sub[i]);
		if (pragma_mkdir_p(p.data, 0755, err) < 0)
			goto out;
	}
	for (int i = 0; i < S->n_els; i++) {
		struct pragma_suite_elem *el = &S->els[i];
		char out[PATH_MAX];
		snprintf(out, sizeof(out), "%s/runs/%s-t%d", S->run_dir, el->name, el->traj + 1);
		json_array_append_new(elems, json_pack("{s:i, s:O, s:i, s:s, s:s}", "index", el->index, "task",
						       json_array_get(tasks, (size_t)el->task), "trajectory", el->traj,
						       "shard", el->shard, "out", out));
	}
	suite_export_names(environ, pragma_config_get("llm", "api_key_env"), &names);
	pragma_buf_reset(&p);
	pragma_buf_addf(&p, "%s/suite.json", S->run_dir);
	if (check_exports(p.data, names.data ? names.data : "", err) < 0)
		goto out;
	json_t *exported = json_array();
	for (const char *q = names.data; q && *q;) {
		size_t n = strcspn(q, ",");
		json_array_append_new(exported, json_stringn(q, n));
		q += n + (q[n] == ',');
	}
	/* "exported": names only (what the next submission must have too). */
	spec = json_pack("{s:i, s:s, s:s, s:{s:O, s:O, s:O}, s:o, s:o}", "version", 1, "pragma", S->self, "run_dir",
			 S->run_dir, "suite", "id", json_object_get(S->suite, "id"), "mode", json_object_get(S->suite, "mode"),
			 "config", cfg, "exported", exported, "elements", elems);
	elems = NULL;
	text = json_dumps(spec, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	if (!text || pragma_write_file_atomic(p.data, text, strlen(text), err) < 0)
		goto out;

	pragma_buf_addf(&sh,
			"#!/bin/sh\n"
			"# pragma bench, suite run %s: one array element per task x trajectory\n"
			"# (element = trajectory * %d + task; suite.json beside this file says which).\n"
			"# Written by pragma bench. It holds paths and names only: the environment the\n"
			"# job needs, model keys included, comes by name through --export, from the\n"
			"# environment of the sbatch that submitted it — never as a value on disk.\n",
			json_string_value(json_object_get(S->suite, "id")), n_tasks);
	pragma_buf_reset(&p);
	pragma_buf_addf(&p, "--job-name=%s", S->job_name);
	if (sbatch_line(&sh, p.data, err) < 0)
		goto out;
	pragma_buf_reset(&p);
	pragma_buf_addf(&p, "--output=%s/logs/%%A_%%a.log", S->run_dir);
	if (sbatch_line(&sh, p.data, err) < 0)
		goto out;
	sbatch_line(&sh, "--open-mode=append", err);
	pragma_buf_reset(&p);
	pragma_buf_addf(&p, "--chdir=%s", S->run_dir);
	if (sbatch_line(&sh, p.data, err) < 0)
		goto out;
	/* Preempted or on a failed node: back in the queue, and the element
	 * resumes from its shard. */
	sbatch_line(&sh, "--requeue", err);
	pragma_buf_reset(&p);
	pragma_buf_addf(&p, "--export=%s", names.len ? names.data : "NONE");
	sbatch_line(&sh, p.data, err);
	const char *const opt[][2] = { { "--partition", S->so.partition },
				       { "--account", S->so.account },
				       { "--time", S->so.time },
				       { "--gres", S->so.gres } };
	for (size_t i = 0; i < 4; i++) {
		if (!opt[i][1] || !*opt[i][1])
			continue;
		pragma_buf_reset(&p);
		pragma_buf_addf(&p, "%s=%s", opt[i][0], opt[i][1]);
		if (sbatch_line(&sh, p.data, err) < 0)
			goto out;
	}
	for (int i = 0; i < S->so.n_sbatch_args; i++)
		if (sbatch_line(&sh, S->so.sbatch_args[i], err) < 0)
			goto out;
	pragma_buf_adds(&sh, "\nexec ");
	sh_quote(&sh, S->self);
	pragma_buf_adds(&sh, " bench --element \"$SLURM_ARRAY_TASK_ID\" ");
	pragma_buf_reset(&p);
	pragma_buf_addf(&p, "%s/suite.json", S->run_dir);
	sh_quote(&sh, p.data);
	pragma_buf_addch(&sh, '\n');
	pragma_buf_reset(&p);
	pragma_buf_addf(&p, "%s/job.sh", S->run_dir);
	if (pragma_write_file_atomic(p.data, sh.data, sh.len, err) < 0)
		goto out;
	ret = 0;
out:
	free(text);
	json_decref(spec);
	json_decref(elems);
	pragma_buf_release(&p);
	pragma_buf_release(&sh);
	pragma_buf_release(&names);
	return ret;
}

/* ------------------------------------------------------------ submitting */

static void add_job(struct slurm *S, long job)
{
	for (int i = 0; i < S->n_jobs; i++)
		if (S->jobs[i] == job)
			return;
	S->jobs = realloc(S->jobs, (size_t)(S->n_jobs + 1) * sizeof(*S->jobs));
	if (!S->jobs)
		abort();
	S->jobs[S->n_jobs++] = job;
}

/* sbatch's complaint as an error of the right kind, with a hint. */
static int sbatch_error(struct slurm *S, const char *msg, struct pragma_err *err)
{
	static const struct {
		const char *needle, *hint;
		enum pragma_err_kind kind;
	} known[] = {
		{ "Unable to contact slurm controller", "check `scontrol ping` and SLURM_CONF; for the development cluster: "
			"scripts/slurm-dev.sh start", PRAGMA_E_ENV },
		{ "Invalid partition", "`sinfo -s` lists the partitions; choose one with --partition", PRAGMA_E_INPUT },
		{ "nvalid account", "`sacctmgr show assoc user=$USER` lists your accounts; choose one with --account",
		  PRAGMA_E_INPUT },
		{ "Invalid generic resource", "the partition has no such GRES: `sinfo -o '%P %G'` lists what each offers; "
			"choose a GPU partition with --partition or the GRES with --gres", PRAGMA_E_INPUT },
		{ "time limit", "--time takes Slurm's forms: MINUTES, HH:MM:SS, D-HH:MM", PRAGMA_E_INPUT },
		{ "job array", "more task runs than the cluster's MaxArraySize (`scontrol show config | grep "
			"MaxArraySize`): split the suite, or fewer --repeat", PRAGMA_E_INPUT },
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strstr(msg, known[i].needle)) {
			pragma_err_set(err, known[i].kind, "sbatch refused the suite's job array: %.800s", msg);
			pragma_err_hint(err, "%s", known[i].hint);
			return -1;
		}
	pragma_err_set(err, PRAGMA_E_ENV, "sbatch refused the suite's job array: %.800s", msg);
	pragma_err_hint(err, "the batch script is %s/job.sh; pass what the cluster needs with --sbatch-arg", S->run_dir);
	return -1;
}

static int submit(struct slurm *S, struct pragma_suite_elem **els, int n, struct pragma_err *err)
{
	struct pragma_buf spec = PRAGMA_BUF_INIT, arr = PRAGMA_BUF_INIT, script = PRAGMA_BUF_INIT,
			  out = PRAGMA_BUF_INIT, errt = PRAGMA_BUF_INIT;
	int *idx = malloc((size_t)n * sizeof(*idx)), ret = -1;

	if (!idx)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "out of memory");
	for (int i = 0; i < n; i++)
		idx[i] = els[i]->index;
	for (int i = 1; i < n; i++) /* insertion sort: they come nearly sorted */
		for (int j = i; j > 0 && idx[j - 1] > idx[j]; j--) {
			int t = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	suite_array_spec(idx, n, &spec);
	pragma_buf_addf(&arr, "--array=%s", spec.data);
	if (S->so.max_jobs > 0)
		pragma_buf_addf(&arr, "%%%d", S->so.max_jobs);
	pragma_buf_addf(&script, "%s/job.sh", S->run_dir);
	const char *argv[] = { "sbatch", "--parsable", arr.data, script.data, NULL };
	int rc = slurm_cmd(argv, &out, &errt, 120000, err);
	if (rc < 0)
		goto out;
	trim(&errt);
	trim(&out);
	char *end = NULL;
	long job = out.len ? strtol(out.data, &end, 10) : 0;
	if (rc != 0 || job <= 0 || (end && *end && *end != ';')) {
		sbatch_error(S, errt.len ? errt.data : out.len ? out.data : "no job id", err);
		goto out;
	}
	add_job(S, job);
	for (int i = 0; i < n; i++) {
		struct pragma_suite_elem *el = els[i];
		el->state = PRAGMA_SUITE_PENDING;
		el->submissions++;
		el->node[0] = '\0';
		snprintf(el->job, sizeof(el->job), "%ld_%d", job, el->index);
		snprintf(el->log, sizeof(el->log), "%s/logs/%ld_%d.log", S->run_dir, job, el->index);
	}
	pragma_info("submitted job array %ld (%s) to Slurm", job, arr.data);
	ret = 0;
out:
	free(idx);
	pragma_buf_release(&spec);
	pragma_buf_release(&arr);
	pragma_buf_release(&script);
	pragma_buf_release(&out);
	pragma_buf_release(&errt);
	return ret;
}

/* ------------------------------------------------------------ watching */

/* Every element of this suite that squeue still knows (one per element: the
 * latest submission's). Returns the number of rows, or -1. */
static int squeue_rows(struct slurm *S, struct suite_squeue_row **rows, struct pragma_err *err)
{
	struct pragma_buf out = PRAGMA_BUF_INIT, errt = PRAGMA_BUF_INIT, name = PRAGMA_BUF_INIT;
	int n = 0, cap = 0, ret = -1;

	*rows = NULL;
	pragma_buf_addf(&name, "--name=%s", S->job_name);
	const char *argv[] = { "squeue", "-h", "-r", "-t", "all", name.data, "-O",
			       "JobArrayID:|,State:|,exit_code:|,NodeList:|,Reason:", NULL };
	int rc = slurm_cmd(argv, &out, &errt, 60000, err);
	if (rc < 0)
		goto out;
	if (rc != 0) {
		trim(&errt);
		pragma_err_set(err, PRAGMA_E_ENV, "squeue failed: %.600s", errt.len ? errt.data : "?");
		pragma_err_hint(err, "check `scontrol ping`; the jobs go on: `pragma bench --resume %s` watches them again",
				json_string_value(json_object_get(S->suite, "id")));
		goto out;
	}
	for (char *line = out.data; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		struct suite_squeue_row r;
		if (suite_parse_squeue_line(line, &r) == 0 && r.index >= 0 && r.index < S->n_els) {
			int k;
			for (k = 0; k < n && (*rows)[k].index != r.index; k++)
				;
			if (k == n) {
				if (n == cap) {
					cap = cap ? 2 * cap : 64;
					*rows = realloc(*rows, (size_t)cap * sizeof(**rows));
					if (!*rows)
						abort();
				}
				(*rows)[n++] = r;
			} else if (r.job > (*rows)[k].job) {
				(*rows)[k] = r;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	ret = n;
out:
	pragma_buf_release(&out);
	pragma_buf_release(&errt);
	pragma_buf_release(&name);
	return ret;
}

/* What sacct says of a job squeue has forgotten; 0 and r filled, or -1. */
static int sacct_row(struct slurm *S, const char *job, struct suite_squeue_row *r)
{
	struct pragma_buf out = PRAGMA_BUF_INIT, arg = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	int ret = -1;

	if (S->sacct_ok == 0 || !pragma_which("sacct", NULL))
		return -1;
	pragma_buf_addf(&arg, "--jobs=%s", job);
	const char *argv[] = { "sacct", "-n", "-P", "-X", arg.data, "--format=JobID,State,ExitCode,NodeList", NULL };
	int rc = slurm_cmd(argv, &out, NULL, 60000, &e);
	if (rc != 0) {
		S->sacct_ok = 0; /* no accounting here ("accounting storage is disabled") */
		goto out;
	}
	S->sacct_ok = 1;
	char id[64], state[64], ec[32], nodes[128];
	if (out.len && sscanf(out.data, "%63[^|]|%63[^|]|%31[^|]|%127[^\n]", id, state, ec, nodes) >= 3) {
		memset(r, 0, sizeof(*r));
		snprintf(r->state, sizeof(r->state), "%.*s", (int)strcspn(state, " "), state);
		r->exit_code = atoi(ec);
		r->signal = strchr(ec, ':') ? atoi(strchr(ec, ':') + 1) : 0;
		snprintf(r->nodes, sizeof(r->nodes), "%s", nodes);
		ret = 0;
	}
out:
	pragma_buf_release(&out);
	pragma_buf_release(&arg);
	return ret;
}

static long job_of(const struct pragma_suite_elem *el)
{
	return strtol(el->job, NULL, 10);
}

static void ended(struct pragma_suite_elem *el, const struct suite_squeue_row *r)
{
	if (!strcmp(r->state, "COMPLETED") && !r->exit_code && !r->signal) {
		el->state = PRAGMA_SUITE_DONE;
		el->detail[0] = '\0';
		return;
	}
	el->state = PRAGMA_SUITE_FAILED;
	if (r->signal)
		snprintf(el->detail, sizeof(el->detail), "Slurm state %s (signal %d)%s%s", r->state, r->signal,
			 r->nodes[0] ? " on " : "", r->nodes);
	else
		snprintf(el->detail, sizeof(el->detail), "Slurm state %s, exit %d%s%s", r->state, r->exit_code,
			 r->nodes[0] ? " on " : "", r->nodes);
}

static int apply(struct slurm *S, struct pragma_suite_elem *el, const struct suite_squeue_row *r)
{
	enum pragma_suite_state st = suite_slurm_state(r->state), was = el->state;

	if (st == PRAGMA_SUITE_PENDING) {
		el->state = PRAGMA_SUITE_PENDING;
		if (strcmp(r->reason, el->detail) && strcmp(r->reason, "None") && strcmp(r->reason, "Priority") &&
		    strcmp(r->reason, "Resources") && strcmp(r->reason, "JobArrayTaskLimit") &&
		    strcmp(r->reason, "BeginTime"))
			pragma_warn("%s (trajectory %d), job %s: pending: %s", el->name, el->traj + 1, el->job, r->reason);
		snprintf(el->detail, sizeof(el->detail), "%s", r->reason);
	} else if (st == PRAGMA_SUITE_RUNNING) {
		if (was != PRAGMA_SUITE_RUNNING)
			el->started = now_wall();
		el->state = PRAGMA_SUITE_RUNNING;
		snprintf(el->node, sizeof(el->node), "%s", r->nodes);
		el->detail[0] = '\0';
	} else {
		ended(el, r);
	}
	(void)S;
	return el->state != was;
}

static int slurm_prepare(struct pragma_suite_executor *x, struct pragma_suite_elem *els, int n,
			 struct pragma_err *err)
{
	struct slurm *S = x->priv;
	struct suite_squeue_row *rows = NULL;
	int nr;

	S->els = els;
	S->n_els = n;
	for (int i = 0; i < n; i++)
		shard_of(S->run_dir, &els[i], els[i].shard, sizeof(els[i].shard));
	if ((nr = squeue_rows(S, &rows, err)) < 0)
		return -1;
	/* Jobs of this suite still queued or running (a session that ended
	 * without cancelling them): watched, not submitted twice. */
	for (int k = 0; k < nr; k++) {
		struct pragma_suite_elem *el = &els[rows[k].index];
		enum pragma_suite_state st = suite_slurm_state(rows[k].state);
		if (st != PRAGMA_SUITE_PENDING && st != PRAGMA_SUITE_RUNNING)
			continue;
		snprintf(el->job, sizeof(el->job), "%ld_%d", rows[k].job, el->index);
		snprintf(el->log, sizeof(el->log), "%s/logs/%s.log", S->run_dir, el->job);
		add_job(S, rows[k].job);
		apply(S, el, &rows[k]);
	}
	free(rows);
	/* The others' shards hold whatever their jobs did: into the store. */
	for (int i = 0; i < n; i++) {
		int copied = 0;
		if (els[i].state == PRAGMA_SUITE_PENDING || els[i].state == PRAGMA_SUITE_RUNNING)
			continue;
		if (pragma_store_merge(S->store, els[i].shard, &copied, err) < 0)
			return -1;
		if (copied)
			pragma_info("%s (trajectory %d): merged its shard", els[i].name, els[i].traj + 1);
	}
	return 0;
}

static int slurm_start(struct pragma_suite_executor *x, struct pragma_suite_elem **els, int n, struct pragma_err *err)
{
	struct slurm *S = x->priv;

	if (write_files(S, err) < 0)
		return -1;
	if (submit(S, els, n, err) < 0)
		return -1;
	S->next_poll = now_mono() + 1;
	return 0;
}

static int slurm_poll(struct pragma_suite_executor *x, int timeout_ms, struct pragma_err *err)
{
	struct slurm *S = x->priv;
	struct suite_squeue_row *rows = NULL;
	struct pragma_suite_elem **again = NULL;
	int changed = 0, n_again = 0, nr;
	double wait = S->next_poll - now_mono();

	if (wait > 0) {
		if (wait > timeout_ms / 1000.0)
			wait = timeout_ms / 1000.0;
		struct timespec ts = { (time_t)wait, (long)((wait - (time_t)wait) * 1e9) };
		nanosleep(&ts, NULL); /* a signal ends it early, which is what Ctrl-C wants */
		if (now_mono() < S->next_poll)
			return 0;
	}
	S->next_poll = now_mono() + S->poll_ms / 1000.0;
	if ((nr = squeue_rows(S, &rows, err)) < 0)
		return -1;
	again = calloc((size_t)S->n_els + 1, sizeof(*again));
	for (int i = 0; i < S->n_els; i++) {
		struct pragma_suite_elem *el = &S->els[i];
		struct suite_squeue_row r, *row = NULL;
		if (el->state != PRAGMA_SUITE_PENDING && el->state != PRAGMA_SUITE_RUNNING)
			continue;
		for (int k = 0; k < nr; k++)
			if (rows[k].index == el->index && rows[k].job == job_of(el))
				row = &rows[k];
		if (!row && sacct_row(S, el->job, &r) == 0)
			row = &r;
		if (!row) {
			/* Forgotten by squeue (MinJobAge) and no accounting: its
			 * shard says whether its run finished. */
			int copied;
			json_t *run;
			pragma_store_merge(S->store, el->shard, &copied, NULL);
			run = suite_find_run(S->store, json_string_value(json_object_get(S->suite, "id")), el->path, el->traj);
			const char *st = run ? json_string_value(json_object_get(run, "status")) : NULL;
			if (st && (!strcmp(st, "done") || !strcmp(st, "stopped"))) {
				el->state = PRAGMA_SUITE_DONE;
			} else {
				el->state = PRAGMA_SUITE_FAILED;
				snprintf(el->detail, sizeof(el->detail),
					 "job %s is no longer known to Slurm (squeue, sacct) and its run is %s", el->job,
					 st ? st : "not in its shard");
			}
			json_decref(run);
			changed++;
			continue;
		}
		changed += apply(S, el, row);
		if (el->state == PRAGMA_SUITE_FAILED && suite_slurm_retryable(row->state) && el->submissions <= RETRIES) {
			/* What it did so far into the suite's store; the run it
			 * resumes is the one its shard holds. */
			struct pragma_err me = PRAGMA_ERR_INIT;
			if (pragma_store_merge(S->store, el->shard, NULL, &me) < 0)
				pragma_warn("%s", me.msg);
			json_t *run = suite_find_run(S->store, json_string_value(json_object_get(S->suite, "id")), el->path,
						     el->traj);
			if (run)
				snprintf(el->resume_run, sizeof(el->resume_run), "%s",
					 json_string_value(json_object_get(run, "id")));
			json_decref(run);
			again[n_again++] = el;
			pragma_warn("%s (trajectory %d): job %s ended with Slurm state %s: resubmitted, it resumes from its "
				    "shard (log: %s)", el->name, el->traj + 1, el->job, row->state, el->log);
		}
	}
	free(rows);
	if (n_again) {
		char(*why)[sizeof(again[0]->detail)] = calloc((size_t)n_again, sizeof(*why));
		if (!why)
			abort();
		for (int i = 0; i < n_again; i++)
			snprintf(why[i], sizeof(why[i]), "%s", again[i]->detail);
		if (submit(S, again, n_again, err) < 0) {
			free(why);
			free(again);
			return -1;
		}
		for (int i = 0; i < n_again; i++)
			snprintf(again[i]->detail, sizeof(again[i]->detail), "resubmitted after %.200s", why[i]);
		free(why);
	}
	free(again);
	return changed;
}

static int slurm_collect(struct pragma_suite_executor *x, struct pragma_suite_elem *el, struct pragma_err *err)
{
	struct slurm *S = x->priv;

	return pragma_store_merge(S->store, el->shard, NULL, err);
}

static int slurm_cancel(struct pragma_suite_executor *x, struct pragma_err *err)
{
	struct slurm *S = x->priv;
	const char **argv = calloc((size_t)S->n_jobs + 3, sizeof(*argv));
	char(*ids)[24] = calloc((size_t)S->n_jobs + 1, sizeof(*ids));
	int n = 0, rc;

	if (!argv || !ids) {
		free(argv);
		free(ids);
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "out of memory");
	}
	argv[n++] = "scancel";
	for (int i = 0; i < S->n_jobs; i++) {
		snprintf(ids[i], sizeof(ids[i]), "%ld", S->jobs[i]);
		argv[n++] = ids[i];
	}
	rc = n > 1 ? slurm_cmd(argv, NULL, NULL, 60000, err) : 0;
	free(argv);
	free(ids);
	if (rc != 0)
		return rc < 0 ? -1 : pragma_err_set(err, PRAGMA_E_ENV, "scancel exited %d", rc);
	return 0;
}

static void slurm_free(struct pragma_suite_executor *x)
{
	struct slurm *S = x->priv;

	free(S->self);
	free(S->db);
	free(S->run_dir);
	free(S->job_name);
	json_decref(S->suite);
	json_decref(S->keep);
	free((void *)S->so.sbatch_args);
	free(S->jobs);
	pragma_store_close(S->store);
	free(S);
	free(x);
}

struct pragma_suite_executor *suite_slurm_new(const char *self, const char *db, json_t *suite,
					      const struct pragma_slurm_opts *so, const char *run_dir,
					      struct pragma_err *err)
{
	struct pragma_suite_executor *x;
	struct slurm *S;
	char abs[PATH_MAX];

	if (pragma_slurm_check(err) < 0)
		return NULL;
	if (pragma_mkdir_p(run_dir, 0755, err) < 0)
		return NULL;
	x = calloc(1, sizeof(*x));
	S = calloc(1, sizeof(*S));
	if (!x || !S)
		abort();
	/* Jobs run in other folders, on other machines: absolute paths only. */
	S->run_dir = strdup(realpath(run_dir, abs) ? abs : run_dir);
	S->self = strdup(self);
	S->db = strdup(db);
	S->suite = json_incref(suite);
	S->sacct_ok = -1;
	const char *pm = getenv("PRAGMA_SLURM_POLL_MS");
	S->poll_ms = pm && atoi(pm) >= 100 ? atoi(pm) : 5000;
	size_t jl = strlen(json_string_value(json_object_get(suite, "id"))) + 16;
	S->job_name = malloc(jl);
	snprintf(S->job_name, jl, "pragma-%s", json_string_value(json_object_get(suite, "id")));
	/* Our own copy of the settings. */
	S->keep = pragma_suite_executor_config("slurm", so);
	S->so.partition = json_string_value(json_object_get(S->keep, "partition"));
	S->so.account = json_string_value(json_object_get(S->keep, "account"));
	S->so.time = json_string_value(json_object_get(S->keep, "time"));
	S->so.gres = json_string_value(json_object_get(S->keep, "gres"));
	S->so.max_jobs = so->max_jobs;
	json_t *args = json_object_get(S->keep, "sbatch_args");
	S->so.n_sbatch_args = (int)json_array_size(args);
	const char **av = calloc((size_t)S->so.n_sbatch_args + 1, sizeof(*av));
	for (int i = 0; i < S->so.n_sbatch_args; i++)
		av[i] = json_string_value(json_array_get(args, (size_t)i));
	S->so.sbatch_args = av;
	/* CUDA tasks go to GPU nodes: one GPU each unless told otherwise. */
	const char *backend = json_string_value(json_object_get(json_object_get(suite, "config"), "backend"));
	if (!S->so.gres && backend && !strcmp(backend, "cuda")) {
		json_object_set_new(S->keep, "gres", json_string("gpu:1"));
		S->so.gres = json_string_value(json_object_get(S->keep, "gres"));
	}
	if (!strcmp(S->so.gres ? S->so.gres : "", "none"))
		S->so.gres = NULL;
	if (pragma_store_open(&S->store, db, err) < 0) {
		x->priv = S;
		slurm_free(x);
		return NULL;
	}
	x->name = "slurm";
	x->priv = S;
	x->prepare = slurm_prepare;
	x->start = slurm_start;
	x->poll = slurm_poll;
	x->collect = slurm_collect;
	x->cancel = slurm_cancel;
	x->free = slurm_free;
	return x;
}

/* ------------------------------------------------------------ job side */

int pragma_suite_element_argv(const char *spec_path, int index, char ***argv, char **about, struct pragma_err *err)
{
	json_error_t je;
	json_t *spec = json_load_file(spec_path, 0, &je), *el = NULL, *x, *run = NULL;
	struct pragma_store *shard = NULL;
	struct pragma_buf a = PRAGMA_BUF_INIT;
	char host[256] = "?";
	size_t i;
	int ret = -1;

	*argv = NULL;
	*about = NULL;
	if (!spec)
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s: %s (line %d)", spec_path, je.text, je.line);
	json_array_foreach(json_object_get(spec, "elements"), i, x)
		if (json_integer_value(json_object_get(x, "index")) == index)
			el = x;
	if (!el) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s has no element %d", spec_path, index);
		goto out;
	}
	json_t *suite = json_object_get(spec, "suite"), *task = json_object_get(el, "task");
	const char *shard_path = json_string_value(json_object_get(el, "shard"));
	const char *path = json_string_value(json_object_get(task, "path"));
	int traj = (int)json_integer_value(json_object_get(el, "trajectory"));
	if (!shard_path || !path) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s: element %d lacks its shard or task", spec_path, index);
		goto out;
	}
	if (pragma_store_open_shard(&shard, shard_path, err) < 0)
		goto out;
	run = suite_find_run(shard, json_string_value(json_object_get(suite, "id")), path, traj);
	pragma_store_close(shard);
	gethostname(host, sizeof(host) - 1);
	pragma_buf_addf(&a, "pragma bench element %d of suite run %s: %s, trajectory %d, on %s; shard %s", index,
			json_string_value(json_object_get(suite, "id")), json_string_value(json_object_get(task, "name")),
			traj + 1, host, shard_path);
	const char *st = run ? json_string_value(json_object_get(run, "status")) : NULL;
	if (st && (!strcmp(st, "done") || !strcmp(st, "stopped"))) {
		pragma_buf_addf(&a, "; its run %s is %s already: nothing to do",
				json_string_value(json_object_get(run, "id")), st);
	} else {
		const char *rid = run ? json_string_value(json_object_get(run, "id")) : NULL;
		if (rid)
			pragma_buf_addf(&a, "; resuming its run %s (status %s)", rid, st ? st : "?");
		*argv = suite_optimize_argv(json_string_value(json_object_get(spec, "pragma")), suite, task, traj, rid,
					    shard_path, json_string_value(json_object_get(el, "out")), 0);
	}
	*about = pragma_buf_detach(&a, NULL);
	ret = 0;
out:
	json_decref(run);
	json_decref(spec);
	pragma_buf_release(&a);
	return ret;
}
