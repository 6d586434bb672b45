#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/store.h"

struct pragma_store {
	sqlite3 *db;
	char *path;
};

enum coltype { C_TEXT, C_JSON, C_INT, C_REAL };

struct col {
	const char *name;
	enum coltype type;
};

static const struct col run_cols[] = {
	{ "task_path", C_TEXT }, { "task_name", C_TEXT }, { "category", C_TEXT }, { "task_kind", C_TEXT },
	{ "task_hash", C_TEXT }, { "mode", C_TEXT }, { "llm", C_TEXT }, { "status", C_TEXT },
	{ "config", C_JSON }, { "machine", C_JSON }, { "baseline", C_JSON }, { "best_attempt", C_INT },
	{ "best_speedup", C_REAL }, { "best_time_ms", C_REAL }, { "suite_id", C_TEXT }, { "usage", C_JSON },
	{ "summary", C_JSON }, { "owner_pid", C_INT }, { "owner_host", C_TEXT }, { "owner_start", C_TEXT },
	{ NULL, 0 },
};

static const struct col attempt_cols[] = {
	{ "status", C_TEXT }, { "stage", C_TEXT }, { "message", C_TEXT }, { "code", C_TEXT }, { "flags", C_JSON },
	{ "tunables", C_JSON }, { "compile_log", C_TEXT }, { "time_ms", C_REAL }, { "time_stats", C_JSON },
	{ "speedup", C_REAL }, { "speedup_spread", C_JSON }, { "metrics", C_JSON }, { "diagnosis", C_JSON },
	{ "conductor", C_JSON }, { "coder_reply", C_TEXT }, { "is_best", C_INT }, { "durations", C_JSON },
	{ "round", C_JSON }, { "baseline_ms", C_REAL }, { "vs_best", C_JSON }, { "timing", C_JSON }, { NULL, 0 },
};

static const struct col suite_cols[] = {
	{ "suite_path", C_TEXT }, { "mode", C_TEXT }, { "llm", C_TEXT }, { "status", C_TEXT },
	{ "config", C_JSON }, { "machine", C_JSON }, { "baseline_config", C_JSON }, { "timing", C_JSON },
	{ "summary", C_JSON }, { "owner_pid", C_INT }, { "owner_host", C_TEXT }, { "owner_start", C_TEXT },
	{ NULL, 0 },
};

static const struct col call_cols[] = {
	{ "attempt", C_INT }, { "role", C_TEXT }, { "provider", C_TEXT }, { "model", C_TEXT },
	{ "prompt_tokens", C_INT }, { "completion_tokens", C_INT }, { "reasoning_tokens", C_INT },
	{ "estimated", C_INT }, { "cost", C_REAL }, { "latency_ms", C_REAL }, { "request_hash", C_TEXT },
	{ "cached", C_INT }, { "status", C_TEXT }, { "prompt", C_TEXT }, { "reply", C_TEXT },
	{ "reasoning", C_TEXT }, { "retries", C_INT }, { NULL, 0 },
};

/* A store on a local disk: WAL, so readers (a report, bench) never wait for
 * the writer. A shard (pragma_store_open_shard) says in its meta table that
 * it keeps the rollback journal instead: WAL needs shared memory between
 * all processes using the file, which a network filesystem cannot give. */
static const char journal_wal[] = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;";
static const char journal_delete[] = "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;";

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
	"CREATE TABLE IF NOT EXISTS runs(id TEXT PRIMARY KEY, created REAL, updated REAL, pragma_version TEXT,"
	" task_path TEXT, task_name TEXT, category TEXT, task_kind TEXT, task_hash TEXT, mode TEXT, llm TEXT,"
	" status TEXT, config TEXT, machine TEXT, baseline TEXT, best_attempt INTEGER, best_speedup REAL,"
	" best_time_ms REAL, suite_id TEXT, usage TEXT, summary TEXT);"
	"CREATE TABLE IF NOT EXISTS attempts(run_id TEXT NOT NULL, n INTEGER NOT NULL, candidate INTEGER NOT NULL,"
	" created REAL, updated REAL, status TEXT, stage TEXT, message TEXT, code TEXT, flags TEXT, tunables TEXT,"
	" compile_log TEXT, time_ms REAL, time_stats TEXT, speedup REAL, speedup_spread TEXT, metrics TEXT,"
	" diagnosis TEXT, conductor TEXT, coder_reply TEXT, is_best INTEGER DEFAULT 0,"
	" PRIMARY KEY(run_id, n, candidate));"
	"CREATE TABLE IF NOT EXISTS llm_calls(id INTEGER PRIMARY KEY, run_id TEXT, created REAL, attempt INTEGER,"
	" role TEXT, provider TEXT, model TEXT, prompt_tokens INTEGER, completion_tokens INTEGER,"
	" reasoning_tokens INTEGER, estimated INTEGER, cost REAL, latency_ms REAL, request_hash TEXT,"
	" cached INTEGER, status TEXT, prompt TEXT, reply TEXT, reasoning TEXT, retries INTEGER);"
	"CREATE INDEX IF NOT EXISTS llm_calls_run ON llm_calls(run_id, id);"
	"CREATE INDEX IF NOT EXISTS runs_suite ON runs(suite_id);"
	"CREATE TABLE IF NOT EXISTS suites(id TEXT PRIMARY KEY, created REAL, updated REAL, pragma_version TEXT,"
	" suite_path TEXT, mode TEXT, llm TEXT, status TEXT, config TEXT, machine TEXT, baseline_config TEXT,"
	" timing TEXT, summary TEXT);"
	"INSERT OR IGNORE INTO meta VALUES('schema', '1');";

static double now_s(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

static int db_error(struct pragma_store *s, struct pragma_err *err, const char *what)
{
	return pragma_err_set(err, PRAGMA_E_ENV, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
}

/* Does the file say it is a shard (meta journal_mode = delete)? A new or
 * older file has no such row, or no meta table yet: not a shard. */
static int is_shard(struct pragma_store *s)
{
	sqlite3_stmt *st;
	int shard = 0;

	if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key = 'journal_mode'", -1, &st, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		shard = !strcmp((const char *)sqlite3_column_text(st, 0), "delete");
	sqlite3_finalize(st);
	return shard;
}

/* shard: a Slurm job's own file (rollback journal); create: make the file
 * and its folders when missing (readers pass 0 and create nothing). */
static int store_open(struct pragma_store **out, const char *path, int shard, int create, struct pragma_err *err)
{
	struct pragma_store *s = calloc(1, sizeof(*s));
	char *dir = strdup(path), *slash = strrchr(dir, '/');
	char *msg = NULL;

	*out = NULL;
	s->path = strdup(path);
	if (!create && !pragma_path_exists(path)) {
		pragma_err_set(err, PRAGMA_E_INPUT, "there is no run store at %s", path);
		pragma_err_hint(err, "runs are stored where they ran (./.pragma/pragma.db); point --db or PRAGMA_DB at "
				"that file");
		free(dir);
		pragma_store_close(s);
		return -1;
	}
	if (create && slash && slash != dir) {
		*slash = '\0';
		if (pragma_mkdir_p(dir, 0755, err) < 0) {
			free(dir);
			pragma_store_close(s);
			return -1;
		}
	}
	free(dir);
	if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_FULLMUTEX,
			    NULL) != SQLITE_OK) {
		pragma_err_set(err, PRAGMA_E_ENV, "cannot open the run store %s: %s", path,
			       s->db ? sqlite3_errmsg(s->db) : "out of memory");
		pragma_err_hint(err, "check the path and permissions, or choose another with --db");
		pragma_store_close(s);
		return -1;
	}
	/* Several pragma processes (bench jobs, a report) may share the file. */
	sqlite3_busy_timeout(s->db, 30000);
	if (!shard)
		shard = is_shard(s);
	if (sqlite3_exec(s->db, shard ? journal_delete : journal_wal, NULL, NULL, &msg) != SQLITE_OK ||
	    sqlite3_exec(s->db, schema, NULL, NULL, &msg) != SQLITE_OK ||
	    (shard && sqlite3_exec(s->db, "INSERT OR REPLACE INTO meta VALUES('journal_mode', 'delete')", NULL, NULL,
				   &msg) != SQLITE_OK)) {
		pragma_err_set(err, PRAGMA_E_ENV, "%s is not a usable pragma store: %s", path, msg ? msg : "?");
		sqlite3_free(msg);
		pragma_store_close(s);
		return -1;
	}
	/* Columns added after schema 1: added to older files in place (an
	 * error here only means the column is there already). */
	sqlite3_exec(s->db, "ALTER TABLE attempts ADD COLUMN durations TEXT", NULL, NULL, NULL);
	sqlite3_exec(s->db, "ALTER TABLE attempts ADD COLUMN round TEXT", NULL, NULL, NULL);
	for (int t = 0; t < 2; t++) {
		static const char *const cols[] = { "owner_pid INTEGER", "owner_host TEXT", "owner_start TEXT" };
		for (int c = 0; c < 3; c++) {
			char sql[128];
			snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s", t ? "suites" : "runs", cols[c]);
			sqlite3_exec(s->db, sql, NULL, NULL, NULL);
		}
	}
	/* One timing story per attempt: the baseline and the best in its session. */
	sqlite3_exec(s->db, "ALTER TABLE attempts ADD COLUMN baseline_ms REAL", NULL, NULL, NULL);
	sqlite3_exec(s->db, "ALTER TABLE attempts ADD COLUMN vs_best TEXT", NULL, NULL, NULL);
	sqlite3_exec(s->db, "ALTER TABLE attempts ADD COLUMN timing TEXT", NULL, NULL, NULL);
	*out = s;
	return 0;
}

int pragma_store_open(struct pragma_store **out, const char *path, struct pragma_err *err)
{
	return store_open(out, path, 0, 1, err);
}

int pragma_store_open_shard(struct pragma_store **out, const char *path, struct pragma_err *err)
{
	return store_open(out, path, 1, 1, err);
}

int pragma_store_open_existing(struct pragma_store **out, const char *path, struct pragma_err *err)
{
	return store_open(out, path, 0, 0, err);
}

void pragma_store_close(struct pragma_store *s)
{
	if (!s)
		return;
	if (s->db)
		sqlite3_close(s->db);
	free(s->path);
	free(s);
}

const char *pragma_store_path(const struct pragma_store *s)
{
	return s->path;
}

static void new_id(char out[48], char prefix)
{
	time_t t = time(NULL);
	struct tm tm;
	unsigned r = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, &r, sizeof(r)) != sizeof(r))
		r = (unsigned)getpid() ^ (unsigned)t;
	if (fd >= 0)
		close(fd);
	gmtime_r(&t, &tm);
	snprintf(out, 48, "%c%04d%02d%02d-%02d%02d%02d-%04x", prefix, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, r & 0xffff);
}

void pragma_store_new_run_id(char out[48])
{
	new_id(out, 'r');
}

void pragma_store_new_suite_id(char out[48])
{
	new_id(out, 's');
}

static const struct col *find_col(const struct col *cols, const char *name)
{
	for (int i = 0; cols[i].name; i++)
		if (!strcmp(cols[i].name, name))
			return &cols[i];
	return NULL;
}

/* Bind a JSON value to a column of the given type. */
static void bind_value(sqlite3_stmt *st, int idx, enum coltype type, json_t *v)
{
	if (!v || json_is_null(v)) {
		sqlite3_bind_null(st, idx);
		return;
	}
	switch (type) {
	case C_TEXT:
		if (json_is_string(v))
			sqlite3_bind_text(st, idx, json_string_value(v), (int)json_string_length(v), SQLITE_TRANSIENT);
		else
			sqlite3_bind_null(st, idx);
		break;
	case C_JSON: {
		char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
		sqlite3_bind_text(st, idx, d ? d : "null", -1, SQLITE_TRANSIENT);
		free(d);
		break;
	}
	case C_INT:
		if (json_is_boolean(v))
			sqlite3_bind_int64(st, idx, json_is_true(v));
		else
			sqlite3_bind_int64(st, idx, (sqlite3_int64)json_number_value(v));
		break;
	case C_REAL:
		sqlite3_bind_double(st, idx, json_number_value(v));
		break;
	}
}

/* ---- who runs a run: liveness ------------------------------------------ */

/* Field 22 of /proc/PID/stat, the start time in clock ticks since boot:
 * with the pid it names one process, even after the pid is reused. */
static int proc_start(pid_t pid, char *out, size_t len)
{
	char path[64], buf[1024];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name may hold spaces and ')': fields count from the last ')'. */
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	p++;
	for (int field = 2; field < 22 && p; field++) {
		p = strchr(p + 1, ' ');
	}
	if (!p)
		return -1;
	p++;
	snprintf(out, len, "%.*s", (int)strcspn(p, " "), p);
	return 0;
}

static void this_host(char *out, size_t len)
{
	if (gethostname(out, len) < 0)
		snprintf(out, len, "?");
	out[len - 1] = '\0';
}

/* A row about to say "running" records who runs it. */
static json_t *with_owner(json_t *fields)
{
	const char *st = json_string_value(json_object_get(fields, "status"));
	char host[256], start[32];
	json_t *f;

	if (!st || strcmp(st, "running"))
		return json_incref(fields);
	f = json_copy(fields);
	this_host(host, sizeof(host));
	json_object_set_new(f, "owner_pid", json_integer(getpid()));
	json_object_set_new(f, "owner_host", json_string(host));
	json_object_set_new(f, "owner_start", proc_start(getpid(), start, sizeof(start)) == 0 ? json_string(start) :
											       json_null());
	return f;
}

/* 1: the process that runs it is alive; 0: it is gone; -1: cannot tell
 * (another host, or a row from before owners were recorded). */
static int owner_alive(json_t *row)
{
	json_t *jp = json_object_get(row, "owner_pid");
	const char *host = json_string_value(json_object_get(row, "owner_host"));
	const char *start = json_string_value(json_object_get(row, "owner_start"));
	char me[256], now[32];
	pid_t pid;

	if (!json_is_integer(jp) || !host)
		return -1;
	this_host(me, sizeof(me));
	if (strcmp(host, me))
		return -1;
	pid = (pid_t)json_integer_value(jp);
	if (pid <= 0)
		return -1;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 0;
	/* A pid in use again by another process. */
	if (start && proc_start(pid, now, sizeof(now)) == 0 && strcmp(now, start))
		return 0;
	return 1;
}

/* A row "running" whose process is gone says "interrupted", in the answer
 * and in the store (only if it still names that process: a resume may have
 * taken it over meanwhile). */
static void check_liveness(struct pragma_store *s, const char *table, json_t *row)
{
	const char *st = json_string_value(json_object_get(row, "status"));
	const char *id = json_string_value(json_object_get(row, "id"));
	sqlite3_stmt *q;
	char sql[200];

	if (!st || !id || (strcmp(st, "running") && strcmp(st, "interrupted")) || owner_alive(row) != 0)
		return;
	json_object_set_new(row, "interrupted_because",
			    json_pack("{s:s, s:I, s:s}", "reason",
				      "its process is gone (killed, stopped by a signal or an error, or the machine restarted)",
				      "pid", json_integer_value(json_object_get(row, "owner_pid")), "host",
				      json_string_value(json_object_get(row, "owner_host"))));
	if (!strcmp(st, "interrupted"))
		return;
	json_object_set_new(row, "status", json_string("interrupted"));
	snprintf(sql, sizeof(sql),
		 "UPDATE %s SET status = 'interrupted', updated = ? WHERE id = ? AND status = 'running' AND owner_pid = ?",
		 table);
	if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) == SQLITE_OK) {
		sqlite3_bind_double(q, 1, now_s());
		sqlite3_bind_text(q, 2, id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(q, 3, json_integer_value(json_object_get(row, "owner_pid")));
		sqlite3_step(q); /* a read-only file: shown, not stored */
		sqlite3_finalize(q);
	}
}

/*
 * INSERT ... ON CONFLICT(key) DO UPDATE SET for the fields given. keys are
 * bound first (text or int), then created/updated, then the fields.
 */
static int upsert(struct pragma_store *s, const char *table, const struct col *cols, const char *const *keys,
		  const json_t *const *keyvals, int n_keys, json_t *fields, int update_only, struct pragma_err *err)
{
	struct pragma_buf sql = PRAGMA_BUF_INIT, names = PRAGMA_BUF_INIT, qs = PRAGMA_BUF_INIT, set = PRAGMA_BUF_INIT;
	const char *k;
	json_t *v;
	sqlite3_stmt *st = NULL;
	int ret = -1, idx = 1;

	json_object_foreach(fields, k, v)
		if (!find_col(cols, k))
			return pragma_err_set(err, PRAGMA_E_INTERNAL, "store: %s has no column '%s'", table, k);
	for (int i = 0; i < n_keys; i++) {
		pragma_buf_addf(&names, "%s%s", i ? ", " : "", keys[i]);
		pragma_buf_adds(&qs, i ? ", ?" : "?");
	}
	if (strcmp(table, "llm_calls")) {
		pragma_buf_adds(&names, ", created, updated");
		pragma_buf_adds(&qs, ", ?, ?");
		pragma_buf_adds(&set, "updated = excluded.updated");
	} else {
		pragma_buf_adds(&names, ", created");
		pragma_buf_adds(&qs, ", ?");
	}
	json_object_foreach(fields, k, v) {
		pragma_buf_addf(&names, ", %s", k);
		pragma_buf_adds(&qs, ", ?");
		pragma_buf_addf(&set, "%s%s = excluded.%s", set.len ? ", " : "", k, k);
	}
	if (update_only) {
		pragma_buf_addf(&sql, "UPDATE %s SET ", table);
		int first = 1;
		json_object_foreach(fields, k, v) {
			pragma_buf_addf(&sql, "%s%s = ?", first ? "" : ", ", k);
			first = 0;
		}
		pragma_buf_addf(&sql, "%supdated = ? WHERE %s = ?", first ? "" : ", ", keys[0]);
	} else if (!strcmp(table, "llm_calls")) {
		pragma_buf_addf(&sql, "INSERT INTO %s(%s) VALUES(%s)", table, names.data, qs.data);
	} else {
		pragma_buf_addf(&sql, "INSERT INTO %s(%s) VALUES(%s) ON CONFLICT DO UPDATE SET %s", table, names.data,
				qs.data, set.data);
	}
	if (sqlite3_prepare_v2(s->db, sql.data, -1, &st, NULL) != SQLITE_OK) {
		db_error(s, err, "prepare");
		goto out;
	}
	if (update_only) {
		json_object_foreach(fields, k, v)
			bind_value(st, idx++, find_col(cols, k)->type, v);
		sqlite3_bind_double(st, idx++, now_s());
		bind_value(st, idx++, C_TEXT, (json_t *)keyvals[0]);
	} else {
		for (int i = 0; i < n_keys; i++)
			bind_value(st, idx++, json_is_integer(keyvals[i]) ? C_INT : C_TEXT, (json_t *)keyvals[i]);
		sqlite3_bind_double(st, idx++, now_s());
		if (strcmp(table, "llm_calls"))
			sqlite3_bind_double(st, idx++, now_s());
		json_object_foreach(fields, k, v)
			bind_value(st, idx++, find_col(cols, k)->type, v);
	}
	if (sqlite3_step(st) != SQLITE_DONE) {
		db_error(s, err, table);
		goto out;
	}
	if (update_only && sqlite3_changes(s->db) == 0) {
		pragma_err_set(err, PRAGMA_E_INPUT, "no %s '%s' in %s", strcmp(table, "suites") ? "run" : "suite run",
			       json_string_value(keyvals[0]), s->path);
		goto out;
	}
	ret = 0;
out:
	sqlite3_finalize(st);
	pragma_buf_release(&sql);
	pragma_buf_release(&names);
	pragma_buf_release(&qs);
	pragma_buf_release(&set);
	return ret;
}

int pragma_store_run_create(struct pragma_store *s, const char *run_id, json_t *fields, struct pragma_err *err)
{
	json_t *id = json_string(run_id);
	const char *keys[] = { "id" };
	const json_t *vals[] = { id };
	json_t *f = with_owner(fields);
	int r = upsert(s, "runs", run_cols, keys, vals, 1, f, 0, err);
	char sql[256];

	json_decref(f);
	json_decref(id);
	if (r == 0) {
		sqlite3_stmt *st;
		snprintf(sql, sizeof(sql), "UPDATE runs SET pragma_version = ? WHERE id = ?");
		if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_text(st, 1, PRAGMA_VERSION, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, run_id, -1, SQLITE_TRANSIENT);
			sqlite3_step(st);
			sqlite3_finalize(st);
		}
	}
	return r;
}

int pragma_store_run_update(struct pragma_store *s, const char *run_id, json_t *fields, struct pragma_err *err)
{
	json_t *id = json_string(run_id);
	const char *keys[] = { "id" };
	const json_t *vals[] = { id };
	json_t *f = with_owner(fields);
	int r = upsert(s, "runs", run_cols, keys, vals, 1, f, 1, err);

	json_decref(f);
	json_decref(id);
	return r;
}

int pragma_store_attempt_put(struct pragma_store *s, const char *run_id, int n, int candidate, json_t *fields,
			     struct pragma_err *err)
{
	json_t *id = json_string(run_id), *jn = json_integer(n), *jc = json_integer(candidate);
	const char *keys[] = { "run_id", "n", "candidate" };
	const json_t *vals[] = { id, jn, jc };
	int r = upsert(s, "attempts", attempt_cols, keys, vals, 3, fields, 0, err);

	json_decref(id);
	json_decref(jn);
	json_decref(jc);
	return r;
}

int pragma_store_llm_call(struct pragma_store *s, const char *run_id, json_t *fields, struct pragma_err *err)
{
	json_t *id = json_string(run_id);
	const char *keys[] = { "run_id" };
	const json_t *vals[] = { id };
	int r = upsert(s, "llm_calls", call_cols, keys, vals, 1, fields, 0, err);

	json_decref(id);
	return r;
}

/* A row as a JSON object; JSON columns parsed back. */
static json_t *row_json(sqlite3_stmt *st, const struct col *cols)
{
	json_t *o = json_object();
	int n = sqlite3_column_count(st);

	for (int i = 0; i < n; i++) {
		const char *name = sqlite3_column_name(st, i);
		const struct col *c = find_col(cols, name);
		json_t *v;

		switch (sqlite3_column_type(st, i)) {
		case SQLITE_NULL:
			v = json_null();
			break;
		case SQLITE_INTEGER:
			v = json_integer(sqlite3_column_int64(st, i));
			break;
		case SQLITE_FLOAT:
			v = json_real(sqlite3_column_double(st, i));
			break;
		default: {
			const char *t = (const char *)sqlite3_column_text(st, i);
			v = NULL;
			if (c && c->type == C_JSON)
				v = json_loads(t, JSON_DECODE_ANY, NULL);
			if (!v)
				v = json_string(t ? t : "");
			if (!v)
				v = json_stringn_nocheck(t, strlen(t));
		}
		}
		json_object_set_new(o, name, v);
	}
	return o;
}

/* The full id of a run (table "runs") or suite run ("suites") from a unique
 * prefix. */
static char *resolve_id(struct pragma_store *s, const char *table, const char *prefix, struct pragma_err *err)
{
	sqlite3_stmt *st;
	char *found = NULL, sql[200];
	int n = 0, exact = 0;
	struct pragma_buf pat = PRAGMA_BUF_INIT, cands = PRAGMA_BUF_INIT;
	const char *noun = strcmp(table, "suites") ? "run" : "suite run";

	/* LIKE with the prefix's own % and _ taken literally. */
	for (const char *p = prefix; *p; p++) {
		if (*p == '%' || *p == '_' || *p == '\\')
			pragma_buf_addch(&pat, '\\');
		pragma_buf_addch(&pat, *p);
	}
	pragma_buf_addch(&pat, '%');
	snprintf(sql, sizeof(sql),
		 "SELECT id FROM %s WHERE id = ?1 OR id LIKE ?2 ESCAPE '\\' ORDER BY id = ?1 DESC, id", table);
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
		db_error(s, err, table);
		pragma_buf_release(&pat);
		return NULL;
	}
	sqlite3_bind_text(st, 1, prefix, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, pat.data, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *id = (const char *)sqlite3_column_text(st, 0);
		if (n == 0) {
			found = strdup(id);
			if (!strcmp(id, prefix)) {
				exact = 1;
				break;
			}
		}
		if (n < 10)
			pragma_buf_addf(&cands, "%s%s", n ? ", " : "", id);
		n++;
	}
	sqlite3_finalize(st);
	pragma_buf_release(&pat);
	if (!found) {
		pragma_err_set(err, PRAGMA_E_INPUT, "no %s '%s' in %s", noun, prefix, s->path);
	} else if (!exact && n > 1) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s '%s' is ambiguous in %s: it begins %d ids: %s%s", noun, prefix, s->path,
			       n, cands.data, n > 10 ? ", ..." : "");
		free(found);
		found = NULL;
		pragma_err_hint(err, "give more of the id (a unique beginning is enough)");
		pragma_buf_release(&cands);
		return NULL;
	}
	pragma_buf_release(&cands);
	if (!found)
		pragma_err_hint(err, strcmp(table, "suites") ? "'pragma runs' lists the runs" :
							       "'pragma bench --list' lists the suite runs");
	return found;
}

json_t *pragma_store_run_get(struct pragma_store *s, const char *run_id, struct pragma_err *err)
{
	sqlite3_stmt *st;
	json_t *run = NULL, *att;
	char *id = resolve_id(s, "runs", run_id, err);

	if (!id)
		return NULL;
	if (sqlite3_prepare_v2(s->db, "SELECT * FROM runs WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW)
		run = row_json(st, run_cols);
	sqlite3_finalize(st);
	if (!run)
		goto fail;
	check_liveness(s, "runs", run);
	att = json_array();
	if (sqlite3_prepare_v2(s->db, "SELECT * FROM attempts WHERE run_id = ? ORDER BY n, candidate", -1, &st,
			       NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(att, row_json(st, attempt_cols));
	sqlite3_finalize(st);
	json_object_set_new(run, "attempts", att);
	if (sqlite3_prepare_v2(s->db,
			       "SELECT COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost), SUM(cached),"
			       " SUM(estimated) FROM llm_calls WHERE run_id = ?",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(st) == SQLITE_ROW)
			json_object_set_new(run, "llm_calls",
					    json_pack("{s:I, s:I, s:I, s:f, s:I, s:I}", "count",
						      (json_int_t)sqlite3_column_int64(st, 0), "prompt_tokens",
						      (json_int_t)sqlite3_column_int64(st, 1), "completion_tokens",
						      (json_int_t)sqlite3_column_int64(st, 2), "cost",
						      sqlite3_column_double(st, 3), "cached",
						      (json_int_t)sqlite3_column_int64(st, 4), "estimated",
						      (json_int_t)sqlite3_column_int64(st, 5)));
		sqlite3_finalize(st);
	}
	free(id);
	return run;
fail:
	db_error(s, err, "reading the run");
	json_decref(run);
	free(id);
	return NULL;
}

json_t *pragma_store_runs(struct pragma_store *s, const char *suite_id, int limit, struct pragma_err *err)
{
	sqlite3_stmt *st;
	json_t *a = json_array();
	char sql[512];

	snprintf(sql, sizeof(sql),
		 "SELECT id, created, updated, task_name, category, task_kind, mode, llm, status, best_attempt,"
		 " best_speedup, best_time_ms, suite_id, owner_pid, owner_host, owner_start,"
		 " (SELECT COUNT(DISTINCT n) FROM attempts WHERE run_id = runs.id)"
		 " AS attempts FROM runs %s ORDER BY created DESC, id DESC %s",
		 suite_id ? "WHERE suite_id = ?" : "", limit > 0 ? "LIMIT ?" : "");
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
		db_error(s, err, "runs");
		json_decref(a);
		return NULL;
	}
	int idx = 1;
	if (suite_id)
		sqlite3_bind_text(st, idx++, suite_id, -1, SQLITE_TRANSIENT);
	if (limit > 0)
		sqlite3_bind_int(st, idx++, limit);
	while (sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(a, row_json(st, run_cols));
	sqlite3_finalize(st);
	size_t i;
	json_t *r;
	json_array_foreach(a, i, r)
		check_liveness(s, "runs", r);
	return a;
}

json_t *pragma_store_calls_by_role(struct pragma_store *s, const char *run_id, struct pragma_err *err)
{
	sqlite3_stmt *st;
	json_t *out;

	if (sqlite3_prepare_v2(s->db,
			       "SELECT role, COUNT(*) FROM llm_calls WHERE run_id = ?1 AND status = 'ok'"
			       " AND COALESCE(cached, 0) = 0 GROUP BY role",
			       -1, &st, NULL) != SQLITE_OK) {
		db_error(s, err, "llm_calls");
		return NULL;
	}
	sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
	out = json_object();
	while (sqlite3_step(st) == SQLITE_ROW)
		json_object_set_new(out, (const char *)sqlite3_column_text(st, 0), json_integer(sqlite3_column_int(st, 1)));
	sqlite3_finalize(st);
	return out;
}

int pragma_store_export_replay(struct pragma_store *s, const char *run_id, const char *path, struct pragma_err *err)
{
	sqlite3_stmt *st;
	struct pragma_buf out = PRAGMA_BUF_INIT;
	char *id = resolve_id(s, "runs", run_id, err);
	int n = 0, ret = -1;

	if (!id)
		return -1;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT role, attempt, provider, model, request_hash, reply, reasoning, prompt_tokens,"
			       " completion_tokens, reasoning_tokens, estimated, cost, latency_ms FROM llm_calls"
			       " WHERE id IN (SELECT MAX(id) FROM llm_calls WHERE run_id = ?1 AND status = 'ok'"
			       " GROUP BY attempt, role) ORDER BY attempt, role = 'conductor', id",
			       -1, &st, NULL) != SQLITE_OK) {
		db_error(s, err, "llm_calls");
		goto out;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *txt = (const char *)sqlite3_column_text(st, 5);
		const char *rsn = (const char *)sqlite3_column_text(st, 6);
		json_t *o = json_pack("{s:i, s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:I, s:I, s:I, s:b}, s:f, s:f}",
				      "v", 1, "agent", (const char *)sqlite3_column_text(st, 0), "attempt",
				      sqlite3_column_int(st, 1), "provider",
				      sqlite3_column_text(st, 2) ? (const char *)sqlite3_column_text(st, 2) : "",
				      "model", sqlite3_column_text(st, 3) ? (const char *)sqlite3_column_text(st, 3) : "",
				      "request_hash",
				      sqlite3_column_text(st, 4) ? (const char *)sqlite3_column_text(st, 4) : "",
				      "text", txt ? txt : "", "reasoning", rsn ? rsn : "", "finish_reason", "stop",
				      "usage", "prompt_tokens", (json_int_t)sqlite3_column_int64(st, 7),
				      "completion_tokens", (json_int_t)sqlite3_column_int64(st, 8), "reasoning_tokens",
				      (json_int_t)sqlite3_column_int64(st, 9), "estimated", sqlite3_column_int(st, 10),
				      "cost", sqlite3_column_double(st, 11), "latency_ms", sqlite3_column_double(st, 12));
		char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (line) {
			pragma_buf_adds(&out, line);
			pragma_buf_addch(&out, '\n');
			n++;
		}
		free(line);
		json_decref(o);
	}
	sqlite3_finalize(st);
	if (pragma_write_file_atomic(path, out.data, out.len, err) < 0)
		goto out;
	ret = n;
out:
	free(id);
	pragma_buf_release(&out);
	return ret;
}

int pragma_store_suite_create(struct pragma_store *s, const char *suite_id, json_t *fields, struct pragma_err *err)
{
	json_t *id = json_string(suite_id);
	const char *keys[] = { "id" };
	const json_t *vals[] = { id };
	json_t *f = with_owner(fields);
	int r = upsert(s, "suites", suite_cols, keys, vals, 1, f, 0, err);
	sqlite3_stmt *st;

	json_decref(f);
	json_decref(id);
	if (r == 0 && sqlite3_prepare_v2(s->db, "UPDATE suites SET pragma_version = ? WHERE id = ?", -1, &st, NULL) ==
			      SQLITE_OK) {
		sqlite3_bind_text(st, 1, PRAGMA_VERSION, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, suite_id, -1, SQLITE_TRANSIENT);
		sqlite3_step(st);
		sqlite3_finalize(st);
	}
	return r;
}

int pragma_store_suite_update(struct pragma_store *s, const char *suite_id, json_t *fields, struct pragma_err *err)
{
	json_t *id = json_string(suite_id);
	const char *keys[] = { "id" };
	const json_t *vals[] = { id };
	json_t *f = with_owner(fields);
	int r = upsert(s, "suites", suite_cols, keys, vals, 1, f, 1, err);

	json_decref(f);
	json_decref(id);
	return r;
}

json_t *pragma_store_suite_get(struct pragma_store *s, const char *suite_id, struct pragma_err *err)
{
	sqlite3_stmt *st;
	json_t *suite = NULL, *runs, *list, *r;
	char *id = resolve_id(s, "suites", suite_id, err);
	size_t i;

	if (!id)
		return NULL;
	if (sqlite3_prepare_v2(s->db, "SELECT * FROM suites WHERE id = ?", -1, &st, NULL) != SQLITE_OK) {
		db_error(s, err, "reading the suite run");
		free(id);
		return NULL;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW)
		suite = row_json(st, suite_cols);
	sqlite3_finalize(st);
	if (!suite) {
		db_error(s, err, "reading the suite run");
		free(id);
		return NULL;
	}
	check_liveness(s, "suites", suite);
	list = pragma_store_runs(s, id, 0, err);
	runs = json_array();
	/* Oldest first: the order the suite started them. */
	for (i = json_array_size(list); list && i-- > 0;) {
		r = pragma_store_run_get(s, json_string_value(json_object_get(json_array_get(list, i), "id")), err);
		if (r)
			json_array_append_new(runs, r);
	}
	json_decref(list);
	json_object_set_new(suite, "runs", runs);
	free(id);
	return suite;
}

json_t *pragma_store_suites(struct pragma_store *s, int limit, struct pragma_err *err)
{
	sqlite3_stmt *st;
	json_t *a = json_array();
	char sql[400];

	snprintf(sql, sizeof(sql),
		 "SELECT id, created, updated, suite_path, mode, llm, status, config, owner_pid, owner_host, owner_start,"
		 " (SELECT COUNT(*) FROM runs WHERE"
		 " suite_id = suites.id) AS runs FROM suites ORDER BY created DESC, id DESC %s",
		 limit > 0 ? "LIMIT ?" : "");
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
		db_error(s, err, "suites");
		json_decref(a);
		return NULL;
	}
	if (limit > 0)
		sqlite3_bind_int(st, 1, limit);
	while (sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(a, row_json(st, suite_cols));
	sqlite3_finalize(st);
	size_t i;
	json_t *r;
	json_array_foreach(a, i, r)
		check_liveness(s, "suites", r);
	return a;
}

/* ------------------------------------------------------------ shards */

/* "col, col, ..." of a table's columns as this store writes them. */
static void col_list(struct pragma_buf *b, const char *lead, const struct col *cols)
{
	pragma_buf_adds(b, lead);
	for (int i = 0; cols[i].name; i++)
		pragma_buf_addf(b, ", %s", cols[i].name);
}

/* What a run looks like in one database (schema "main" or "shard"): its
 * row's update time, and count and latest time of its attempts and calls.
 * Equal fingerprints: nothing new to copy. */
static char *run_fingerprint(struct pragma_store *s, const char *db, const char *run_id)
{
	sqlite3_stmt *st;
	char sql[600], *fp = NULL;

	snprintf(sql, sizeof(sql),
		 "SELECT (SELECT updated FROM %s.runs WHERE id = ?1) || '/' ||"
		 " (SELECT COUNT(*) || ':' || IFNULL(MAX(updated), '') FROM %s.attempts WHERE run_id = ?1) || '/' ||"
		 " (SELECT COUNT(*) || ':' || IFNULL(MAX(created), '') FROM %s.llm_calls WHERE run_id = ?1)",
		 db, db, db);
	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		fp = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return fp;
}

static int exec_run(struct pragma_store *s, const char *sql, const char *run_id)
{
	sqlite3_stmt *st;
	int r;

	if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, run_id, -1, SQLITE_TRANSIENT);
	r = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
	sqlite3_finalize(st);
	return r;
}

int pragma_store_merge(struct pragma_store *s, const char *shard, int *copied, struct pragma_err *err)
{
	struct pragma_buf runs = PRAGMA_BUF_INIT, att = PRAGMA_BUF_INIT, calls = PRAGMA_BUF_INIT, sql = PRAGMA_BUF_INIT;
	sqlite3_stmt *st = NULL;
	json_t *ids = json_array(), *x;
	int ret = -1, attached = 0, n = 0, in_tx = 0;
	size_t i;

	if (copied)
		*copied = 0;
	if (!pragma_path_exists(shard)) {
		ret = 0; /* the job never got as far as creating it */
		goto out;
	}
	if (sqlite3_prepare_v2(s->db, "ATTACH DATABASE ? AS shard", -1, &st, NULL) != SQLITE_OK) {
		db_error(s, err, "attaching a shard");
		goto out;
	}
	sqlite3_bind_text(st, 1, shard, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) != SQLITE_DONE) {
		pragma_err_set(err, PRAGMA_E_ENV, "cannot read the store shard %s: %s", shard, sqlite3_errmsg(s->db));
		goto out;
	}
	attached = 1;
	sqlite3_finalize(st);
	/* A shard that never got its schema (killed at once) holds nothing. */
	if (sqlite3_prepare_v2(s->db,
			       "SELECT COUNT(*) FROM shard.sqlite_master WHERE type = 'table' AND name IN ('runs',"
			       " 'attempts', 'llm_calls')",
			       -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
		pragma_err_set(err, PRAGMA_E_ENV, "%s is not a pragma store shard: %s", shard, sqlite3_errmsg(s->db));
		goto out;
	}
	int tables = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (tables != 3) {
		ret = 0;
		goto out;
	}
	if (sqlite3_prepare_v2(s->db, "SELECT id FROM shard.runs ORDER BY created, id", -1, &st, NULL) != SQLITE_OK) {
		db_error(s, err, "reading a shard");
		goto out;
	}
	while (sqlite3_step(st) == SQLITE_ROW)
		json_array_append_new(ids, json_string((const char *)sqlite3_column_text(st, 0)));
	sqlite3_finalize(st);
	st = NULL;

	col_list(&runs, "id, created, updated, pragma_version", run_cols);
	col_list(&att, "run_id, n, candidate, created, updated", attempt_cols);
	col_list(&calls, "run_id, created", call_cols);
	json_array_foreach(ids, i, x) {
		const char *id = json_string_value(x);
		char *a = run_fingerprint(s, "shard", id), *b = run_fingerprint(s, "main", id);
		int same = a && b && !strcmp(a, b);
		free(a);
		free(b);
		if (same)
			continue;
		/* The shard's copy replaces ours whole: it is the only writer of
		 * its runs, so what it holds is the newest of all of it. */
		if (sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
			db_error(s, err, "merging a shard");
			goto out;
		}
		in_tx = 1;
		pragma_buf_reset(&sql);
		pragma_buf_addf(&sql, "INSERT OR REPLACE INTO main.runs(%s) SELECT %s FROM shard.runs WHERE id = ?1",
				runs.data, runs.data);
		if (exec_run(s, "DELETE FROM main.attempts WHERE run_id = ?1", id) < 0 ||
		    exec_run(s, "DELETE FROM main.llm_calls WHERE run_id = ?1", id) < 0 || exec_run(s, sql.data, id) < 0)
			goto db_fail;
		pragma_buf_reset(&sql);
		pragma_buf_addf(&sql, "INSERT INTO main.attempts(%s) SELECT %s FROM shard.attempts WHERE run_id = ?1",
				att.data, att.data);
		if (exec_run(s, sql.data, id) < 0)
			goto db_fail;
		pragma_buf_reset(&sql);
		/* New ids here, in the shard's order (which replay export and
		 * "the last call of an attempt" rely on). */
		pragma_buf_addf(&sql,
				"INSERT INTO main.llm_calls(%s) SELECT %s FROM shard.llm_calls WHERE run_id = ?1 ORDER BY id",
				calls.data, calls.data);
		if (exec_run(s, sql.data, id) < 0)
			goto db_fail;
		if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
			goto db_fail;
		in_tx = 0;
		n++;
	}
	if (copied)
		*copied = n;
	ret = 0;
	goto out;
db_fail:
	pragma_err_set(err, PRAGMA_E_ENV, "merging the shard %s into %s: %s", shard, s->path, sqlite3_errmsg(s->db));
out:
	if (in_tx)
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_finalize(st);
	if (attached)
		sqlite3_exec(s->db, "DETACH DATABASE shard", NULL, NULL, NULL);
	json_decref(ids);
	pragma_buf_release(&runs);
	pragma_buf_release(&att);
	pragma_buf_release(&calls);
	pragma_buf_release(&sql);
	return ret;
}
