/*
 * The suite runner: every task x trajectory of a suite run through an
 * executor (local.c, slurm.c), resumable as a whole, the suite row kept up
 * to date. Formerly the body of src/cmd_bench.c; the CLI is now a user of
 * this like any other.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pragma/bench.h"
#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/store.h"
#include "pragma/task.h"
#include "suite/suite_int.h"

const char *pragma_suite_state_name(enum pragma_suite_state s)
{
	static const char *const names[] = { "queued", "pending", "running", "done", "failed" };

	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* ------------------------------------------------------------ the tasks */

static int is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Jobs on other machines and in other folders must find the task: keep
 * its absolute path (as given when it cannot be resolved). */
static json_t *brief_json(const struct pragma_task_brief *b)
{
	char abs[PATH_MAX];
	const char *p = realpath(b->path, abs) ? abs : b->path;

	return json_pack("{s:s, s:s, s:s, s:s}", "path", p, "name", b->name, "category", b->category, "kind", b->kind);
}

static int add_task(json_t *tasks, const char *arg, struct pragma_err *err)
{
	struct pragma_task_brief b;
	char *path = NULL;

	if (pragma_task_resolve(arg, &path, err) < 0)
		return -1;
	int r = pragma_task_brief(path, &b, err);
	free(path);
	if (r < 0)
		return -1;
	json_array_append_new(tasks, brief_json(&b));
	return 0;
}

json_t *pragma_suite_tasks(const char *const *args, int n, char **name_out, struct pragma_err *err)
{
	json_t *tasks = json_array();
	struct pragma_buf dir = PRAGMA_BUF_INIT, rel = PRAGMA_BUF_INIT, name = PRAGMA_BUF_INIT;

	*name_out = NULL;
	if (n == 1 && !strchr(args[0], ',')) {
		pragma_buf_addf(&rel, "%s/task.json", args[0]);
		int is_task = pragma_path_exists(rel.data);
		pragma_buf_reset(&rel);
		if (is_task) {
			/* a native task's folder, not a suite */
		} else if (is_dir(args[0])) {
			pragma_buf_adds(&dir, args[0]);
		} else if (!strchr(args[0], '/')) {
			pragma_buf_addf(&rel, "tasks/%s", args[0]);
			if (pragma_data_path(rel.data, &dir, NULL) < 0 || !is_dir(dir.data))
				pragma_buf_reset(&dir);
		}
	}
	if (dir.len) {
		struct pragma_task_brief *b = NULL;
		int nb = 0;
		if (pragma_task_scan(dir.data, &b, &nb, err) < 0)
			goto fail;
		for (int i = 0; i < nb; i++)
			json_array_append_new(tasks, brief_json(&b[i]));
		free(b);
		if (!nb) {
			pragma_err_set(err, PRAGMA_E_INPUT, "no tasks in %s", dir.data);
			goto fail;
		}
		pragma_buf_adds(&name, args[0]);
	} else {
		for (int i = 0; i < n; i++) {
			char *list = strdup(args[i]), *save = NULL;
			for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (!*t)
					continue;
				if (add_task(tasks, t, err) < 0) {
					free(list);
					goto fail;
				}
				pragma_buf_addf(&name, "%s%s", name.len ? "," : "", t);
			}
			free(list);
		}
		if (!json_array_size(tasks)) {
			pragma_err_set(err, PRAGMA_E_INPUT, "no tasks given");
			goto fail;
		}
	}
	pragma_buf_release(&dir);
	pragma_buf_release(&rel);
	*name_out = pragma_buf_detach(&name, NULL);
	return tasks;
fail:
	pragma_buf_release(&dir);
	pragma_buf_release(&rel);
	pragma_buf_release(&name);
	json_decref(tasks);
	return NULL;
}

int pragma_suite_task_defines(const char *path, const char *name)
{
	struct pragma_buf p = PRAGMA_BUF_INIT, text = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	int found = 0;

	if (is_dir(path)) {
		pragma_buf_addf(&p, "%s/task.json", path);
		json_t *t = json_load_file(p.data, 0, NULL);
		found = json_object_get(json_object_get(t, "sizes"), name) != NULL;
		json_decref(t);
	} else if (pragma_read_file(path, &text, 1 << 22, &e) == 0) {
		size_t n = strlen(name);
		for (const char *l = text.data; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
			if (strncmp(l, name, n))
				continue;
			const char *q = l + n;
			while (*q == ' ' || *q == '\t')
				q++;
			if (*q == '=' && q[1] != '=') {
				found = 1;
				break;
			}
		}
	}
	pragma_buf_release(&p);
	pragma_buf_release(&text);
	return found;
}

/* ------------------------------------------------------------ elements */

void pragma_suite_argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **a = argv; *a; a++)
		free(*a);
	free(argv);
}

struct argv_b {
	char **v;
	int n, cap;
};

static void arg_add(struct argv_b *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? 2 * a->cap : 32;
		a->v = realloc(a->v, (size_t)a->cap * sizeof(*a->v));
		if (!a->v)
			abort();
	}
	a->v[a->n++] = strdup(s ? s : "");
	a->v[a->n] = NULL;
}

char **suite_optimize_argv(const char *self, json_t *suite, json_t *task, int traj, const char *resume, const char *db,
			   const char *out, int json)
{
	json_t *cfg = json_object_get(suite, "config"), *x;
	struct argv_b a = { 0 };
	char num[32];
	size_t i;

	arg_add(&a, self);
	arg_add(&a, "optimize");
	if (resume && *resume) {
		arg_add(&a, "--resume");
		arg_add(&a, resume);
	} else {
		arg_add(&a, json_string_value(json_object_get(task, "path")));
		arg_add(&a, "--mode");
		arg_add(&a, json_string_value(json_object_get(suite, "mode")));
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(json_object_get(cfg, "attempts")));
		arg_add(&a, "--attempts");
		arg_add(&a, num);
		arg_add(&a, "--suite-run");
		arg_add(&a, json_string_value(json_object_get(suite, "id")));
		snprintf(num, sizeof(num), "%d", traj);
		arg_add(&a, "--trajectory");
		arg_add(&a, num);
		if (json_is_string(json_object_get(cfg, "llm_spec"))) {
			arg_add(&a, "--llm");
			arg_add(&a, json_string_value(json_object_get(cfg, "llm_spec")));
		}
		if (json_is_string(json_object_get(cfg, "backend"))) {
			arg_add(&a, "--backend");
			arg_add(&a, json_string_value(json_object_get(cfg, "backend")));
		}
		json_array_foreach(json_object_get(cfg, "overrides"), i, x) {
			char nm[128];
			const char *ov = json_string_value(x);
			snprintf(nm, sizeof(nm), "%.*s", (int)strcspn(ov, "="), ov);
			if (!pragma_suite_task_defines(json_string_value(json_object_get(task, "path")), nm))
				continue;
			arg_add(&a, "--set");
			arg_add(&a, ov);
		}
		if (out) {
			arg_add(&a, "--out");
			arg_add(&a, out);
		}
	}
	arg_add(&a, "--db");
	arg_add(&a, db);
	if (json)
		arg_add(&a, "--json");
	return a.v;
}

json_t *suite_find_run(struct pragma_store *s, const char *suite_id, const char *path, int traj)
{
	struct pragma_err e = PRAGMA_ERR_INIT;
	json_t *l = pragma_store_runs(s, suite_id, 0, &e), *x, *found = NULL;
	size_t i;

	/* Newest first: a task's last run in that trajectory. */
	json_array_foreach(l, i, x) {
		json_t *r = pragma_store_run_get(s, json_string_value(json_object_get(x, "id")), &e);
		if (r && !strcmp(json_string_value(json_object_get(r, "task_path")) ?: "", path) &&
		    json_integer_value(json_object_get(json_object_get(r, "config"), "trajectory")) == traj) {
			found = r;
			break;
		}
		json_decref(r);
	}
	json_decref(l);
	return found;
}

static int run_finished(json_t *r)
{
	const char *st = r ? json_string_value(json_object_get(r, "status")) : NULL;

	return st && (!strcmp(st, "done") || !strcmp(st, "stopped"));
}

/* ------------------------------------------------------------ the runner */

static double now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct runner {
	const struct pragma_suite_run_opts *o;
	struct pragma_store *store;
	json_t *suite, *tasks, *bconf, *changed;
	const char *id;
	int total, finished;
};

static void emit(struct runner *R, const struct pragma_suite_elem *el, double secs, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void emit(struct runner *R, const struct pragma_suite_elem *el, double secs, const char *fmt, ...)
{
	char what[1400];
	va_list ap;

	if (!R->o->event)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	struct pragma_suite_event ev = { el, R->finished, R->total, secs, what };
	R->o->event(R->o->event_ctx, &ev);
}

/* A baseline configuration without what its timing session measured
 * (the rounds it made and kept vary with the machine's load: outcomes,
 * not configuration). A new reference, or NULL. */
static json_t *config_only(json_t *bc)
{
	json_t *c = bc ? json_deep_copy(bc) : NULL, *p = c ? json_object_get(c, "protocol") : NULL;

	if (json_is_object(p)) {
		json_object_del(p, "rounds");
		json_object_del(p, "rounds_made");
	}
	return c;
}

/* The baseline's configuration must not change within a suite; kept per
 * baseline kind (PyTorch's and the C reference's are different things). */
static void check_baseline(struct runner *R, json_t *run, const char *task_name)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *bc = config_only(json_object_get(json_object_get(run, "baseline"), "config"));
	const char *bk = json_string_value(json_object_get(json_object_get(run, "baseline"), "kind")) ?: "?";

	if (!R->bconf)
		R->bconf = json_object();
	json_t *prev = json_object_get(R->bconf, bk);
	if (!prev && bc) {
		json_object_set(R->bconf, bk, bc);
		json_t *f = json_pack("{s:O}", "baseline_config", R->bconf);
		pragma_store_suite_update(R->store, R->id, f, &err);
		json_decref(f);
	} else if (bc && !json_equal(bc, prev)) {
		json_array_append_new(R->changed, json_string(task_name));
		pragma_warn("%s's baseline ran with another configuration", task_name);
	}
	json_decref(bc);
}

/* An element has ended: its run into the suite's store, its outcome said. */
static void finish_elem(struct runner *R, struct pragma_suite_executor *x, struct pragma_suite_elem *el, int *failed)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	double secs = el->started > 0 ? now_wall() - el->started : 0;

	if (x->collect && x->collect(x, el, &err) < 0)
		pragma_warn("%s (trajectory %d): %s", el->name, el->traj + 1, err.msg);
	json_t *r = suite_find_run(R->store, R->id, el->path, el->traj);
	R->finished++;
	if (el->state == PRAGMA_SUITE_DONE && !run_finished(r)) {
		el->state = PRAGMA_SUITE_FAILED;
		snprintf(el->detail, sizeof(el->detail), "ended without finishing its run (the run is %s)",
			 r ? json_string_value(json_object_get(r, "status")) : "not in the store");
	}
	if (el->state == PRAGMA_SUITE_DONE) {
		json_t *oc = pragma_bench_outcome(r);
		if (json_is_true(json_object_get(oc, "correct")))
			emit(R, el, secs, "%.2fx (best: attempt %lld)", json_number_value(json_object_get(oc, "speedup")),
			     (long long)json_integer_value(json_object_get(oc, "best_attempt")));
		else
			emit(R, el, secs, "no verified kernel");
		json_decref(oc);
		check_baseline(R, r, el->name);
	} else {
		(*failed)++;
		emit(R, el, secs, "FAILED: %s%s%s", el->detail[0] ? el->detail : "ended abnormally",
		     el->log[0] ? "; log: " : "", el->log);
	}
	json_decref(r);
}

static void run_dir_of(const char *db, const char *shared, const char *id, char *out, size_t n)
{
	if (shared && *shared) {
		snprintf(out, n, "%s/suites/%s", shared, id);
		return;
	}
	const char *slash = strrchr(db, '/');
	if (slash)
		snprintf(out, n, "%.*s/suites/%s", (int)(slash - db), db, id);
	else
		snprintf(out, n, "suites/%s", id);
}

/* The Slurm settings: the stored ones, each overridden by one given now. */
static json_t *slurm_settings(json_t *stored, const struct pragma_slurm_opts *now, struct pragma_slurm_opts *so,
			      const char **args_buf, int args_cap)
{
	json_t *merged = json_deep_copy(stored ? stored : json_object());
	json_t *x;
	size_t i;

	if (now) {
		json_t *given = pragma_suite_executor_config("slurm", now);
		const char *k;
		json_t *v;
		json_object_foreach(given, k, v)
			if (strcmp(k, "name") && !(json_is_array(v) && !json_array_size(v)) &&
			    !(json_is_integer(v) && !json_integer_value(v)))
				json_object_set(merged, k, v);
		json_decref(given);
	}
	memset(so, 0, sizeof(*so));
	so->partition = json_string_value(json_object_get(merged, "partition"));
	so->account = json_string_value(json_object_get(merged, "account"));
	so->time = json_string_value(json_object_get(merged, "time"));
	so->gres = json_string_value(json_object_get(merged, "gres"));
	so->max_jobs = (int)json_integer_value(json_object_get(merged, "max_jobs"));
	so->shared_dir = json_string_value(json_object_get(merged, "shared_dir"));
	json_array_foreach(json_object_get(merged, "sbatch_args"), i, x)
		if ((int)i < args_cap)
			args_buf[so->n_sbatch_args++] = json_string_value(x);
	so->sbatch_args = args_buf;
	return merged;
}

int pragma_suite_run(const struct pragma_suite_run_opts *o, struct pragma_suite_result *res, struct pragma_err *err)
{
	struct runner R = { .o = o };
	struct pragma_suite_executor *x = NULL;
	struct pragma_suite_elem *els = NULL;
	struct pragma_suite_elem **todo = NULL;
	enum pragma_suite_state *seen = NULL;
	struct pragma_err perr = PRAGMA_ERR_INIT;
	json_t *cfg, *exec_cfg = NULL;
	int n_tasks, repeat, failed = 0, ret = -1, n_todo = 0, ran = 0;
	double t0 = now_mono();

	memset(res, 0, sizeof(*res));
	if (pragma_store_open(&R.store, o->db, err) < 0)
		return -1;
	if (!(R.suite = pragma_store_suite_get(R.store, o->suite_id, err)))
		goto out;
	R.id = json_string_value(json_object_get(R.suite, "id"));
	cfg = json_object_get(R.suite, "config");
	R.tasks = json_object_get(cfg, "tasks");
	n_tasks = (int)json_array_size(R.tasks);
	repeat = (int)json_integer_value(json_object_get(cfg, "repeat"));
	if (repeat < 1)
		repeat = 1;
	R.total = n_tasks * repeat;
	res->total = R.total;
	R.bconf = json_incref(json_object_get(R.suite, "baseline_config"));
	if (json_is_null(R.bconf)) {
		json_decref(R.bconf);
		R.bconf = NULL;
	}
	R.changed = json_deep_copy(json_object_get(json_object_get(R.suite, "summary"), "baseline_config_changed"));
	if (!json_is_array(R.changed)) {
		json_decref(R.changed);
		R.changed = json_array();
	}

	/* The executor: the one the suite run was started with. */
	json_t *stored_exec = json_object_get(cfg, "executor");
	const char *exec_name = json_string_value(json_object_get(stored_exec, "name")) ?: "local";
	if (!strcmp(exec_name, "slurm")) {
		struct pragma_slurm_opts so;
		const char *args[64];
		exec_cfg = slurm_settings(stored_exec, o->slurm, &so, args, 64);
		run_dir_of(o->db, so.shared_dir, R.id, res->run_dir, sizeof(res->run_dir));
		x = suite_slurm_new(o->self, o->db, R.suite, &so, res->run_dir, err);
		if (x && !json_equal(exec_cfg, stored_exec)) {
			/* Settings changed on --resume are the suite's from now on. */
			json_object_set(cfg, "executor", exec_cfg);
			json_t *f = json_pack("{s:O}", "config", cfg);
			pragma_store_suite_update(R.store, R.id, f, &perr);
			json_decref(f);
		}
	} else if (!strcmp(exec_name, "local")) {
		if (o->slurm) {
			pragma_err_set(err, PRAGMA_E_INPUT, "suite run %s runs on this machine (--executor local): "
				       "Slurm settings do not apply to it", R.id);
			goto out;
		}
		run_dir_of(o->db, NULL, R.id, res->run_dir, sizeof(res->run_dir));
		x = suite_local_new(o->self, o->db, R.suite, o->jobs, res->run_dir, err);
	} else {
		pragma_err_set(err, PRAGMA_E_INPUT, "suite run %s has an unknown executor '%s'", R.id, exec_name);
		goto out;
	}
	if (!x)
		goto out;

	els = calloc((size_t)R.total, sizeof(*els));
	todo = calloc((size_t)R.total, sizeof(*todo));
	seen = calloc((size_t)R.total, sizeof(*seen));
	if (!els || !todo || !seen) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "out of memory");
		goto out;
	}
	for (int i = 0; i < R.total; i++) {
		json_t *t = json_array_get(R.tasks, (size_t)(i % n_tasks));
		els[i].index = i;
		els[i].task = i % n_tasks;
		els[i].traj = i / n_tasks;
		els[i].name = json_string_value(json_object_get(t, "name"));
		els[i].path = json_string_value(json_object_get(t, "path"));
		els[i].state = PRAGMA_SUITE_QUEUED;
	}
	if (x->prepare && x->prepare(x, els, R.total, err) < 0)
		goto out;

	json_t *st = json_pack("{s:s}", "status", "running");
	pragma_store_suite_update(R.store, R.id, st, &perr);
	json_decref(st);
	ran = 1;

	/* What is left to do: not finished, not in flight already. */
	for (int i = 0; i < R.total; i++) {
		struct pragma_suite_elem *el = &els[i];
		if (el->state == PRAGMA_SUITE_PENDING || el->state == PRAGMA_SUITE_RUNNING) {
			seen[i] = el->state;
			emit(&R, el, 0, "still %s from before (job %s): watching it", pragma_suite_state_name(el->state),
			     el->job);
			continue;
		}
		json_t *r = suite_find_run(R.store, R.id, el->path, el->traj);
		if (run_finished(r)) {
			el->state = PRAGMA_SUITE_DONE;
			seen[i] = el->state;
			res->done_before++;
			R.finished++;
		} else {
			if (r)
				snprintf(el->resume_run, sizeof(el->resume_run), "%s",
					 json_string_value(json_object_get(r, "id")));
			el->state = PRAGMA_SUITE_QUEUED;
			seen[i] = el->state;
			todo[n_todo++] = el;
		}
		json_decref(r);
	}
	emit(&R, NULL, 0, "%d tasks x %d trajector%s on %s: %d to run, %d done before; logs in %s", n_tasks, repeat,
	     repeat > 1 ? "ies" : "y", x->name, n_todo, res->done_before, res->run_dir);
	if (n_todo && x->start(x, todo, n_todo, err) < 0)
		goto out;

	for (;;) {
		int live = 0;
		for (int i = 0; i < R.total; i++) {
			struct pragma_suite_elem *el = &els[i];
			if (el->state != seen[i]) {
				enum pragma_suite_state was = seen[i];
				seen[i] = el->state;
				if (el->state == PRAGMA_SUITE_DONE || el->state == PRAGMA_SUITE_FAILED) {
					finish_elem(&R, x, el, &failed);
					seen[i] = el->state;
				} else if (el->state == PRAGMA_SUITE_RUNNING) {
					emit(&R, el, 0, "running%s%s%s%s (%s%s)", el->resume_run[0] ? ", resuming run " : "",
					     el->resume_run, el->node[0] ? " on " : "", el->node,
					     strchr(el->job, '_') ? "job " : "", el->job);
				} else if (el->state == PRAGMA_SUITE_PENDING) {
					emit(&R, el, 0, "pending%s (job %s)%s%s", was == PRAGMA_SUITE_QUEUED ? "" : " again",
					     el->job, el->detail[0] && was != PRAGMA_SUITE_QUEUED ? ": " : "",
					     was != PRAGMA_SUITE_QUEUED ? el->detail : "");
				}
			}
			live += el->state != PRAGMA_SUITE_DONE && el->state != PRAGMA_SUITE_FAILED;
		}
		if (!live)
			break;
		if (o->stop && *o->stop) {
			res->interrupted = 1;
			if (x->cancel(x, &perr) < 0)
				pragma_warn("cancelling: %s", perr.msg);
			break;
		}
		if (x->poll(x, 1000, err) < 0) {
			/* Cannot watch them any more: stop them rather than lose them. */
			x->cancel(x, &perr);
			goto out;
		}
	}
	for (int i = 0; i < R.total; i++) {
		res->done += els[i].state == PRAGMA_SUITE_DONE;
		res->failed += els[i].state == PRAGMA_SUITE_FAILED;
	}
	if (res->interrupted)
		res->failed = 0;
	ret = 0;
out:
	/* Only a suite that got as far as running has news for its row: one
	 * that could not even start (Slurm unreachable) keeps its status. */
	if (ran && R.changed) {
		json_t *prev = json_object_get(R.suite, "timing");
		double wall = now_mono() - t0 + (json_is_object(prev) ? json_number_value(json_object_get(prev, "wall")) : 0);
		const char *status = ret < 0 ? "interrupted" : res->interrupted ? "interrupted" :
				     res->failed ? "done_with_failures" : "done";
		json_t *f = json_pack("{s:s, s:{s:f, s:i, s:s}, s:{s:O, s:i}}", "status", status, "timing", "wall", wall,
				      "jobs", o->jobs, "executor", x ? x->name : "none", "summary",
				      "baseline_config_changed", R.changed, "failed_tasks",
				      res->failed);
		pragma_store_suite_update(R.store, R.id, f, &perr);
		json_decref(f);
	}
	if (x)
		x->free(x);
	free(els);
	free(todo);
	free(seen);
	json_decref(exec_cfg);
	json_decref(R.suite);
	json_decref(R.bconf);
	json_decref(R.changed);
	pragma_store_close(R.store);
	return ret;
}
