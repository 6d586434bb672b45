/* Full-text search over the compendium: an in-memory SQLite FTS5 index,
 * made on the first search (a few hundred short entries: milliseconds). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/knowledge_int.h"

static void join(struct pragma_buf *b, const char **l)
{
	for (int k = 0; l[k]; k++)
		pragma_buf_addf(b, "%s\n", l[k]);
}

static int build_index(struct pragma_knowledge *kb, struct pragma_err *err)
{
	sqlite3_stmt *st = NULL;
	char *msg = NULL;

	if (sqlite3_open(":memory:", &kb->db) != SQLITE_OK)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "sqlite: cannot open an in-memory database");
	if (sqlite3_exec(kb->db,
			 "CREATE VIRTUAL TABLE doc USING fts5(name, title, body, tokenize = 'porter unicode61')",
			 NULL, NULL, &msg) != SQLITE_OK) {
		pragma_err_set(err, PRAGMA_E_ENV, "sqlite FTS5: %s", msg ? msg : "?");
		pragma_err_hint(err, "pragma needs SQLite built with FTS5 (Debian's libsqlite3 has it)");
		sqlite3_free(msg);
		sqlite3_close(kb->db);
		kb->db = NULL;
		return -1;
	}
	sqlite3_prepare_v2(kb->db, "INSERT INTO doc(rowid, name, title, body) VALUES (?, ?, ?, ?)", -1, &st, NULL);
	sqlite3_exec(kb->db, "BEGIN", NULL, NULL, NULL);
	for (size_t i = 0; i < kb->n; i++) {
		const struct pragma_kentry *e = &kb->e[i];
		struct pragma_buf body = PRAGMA_BUF_INIT;
		pragma_buf_addf(&body, "%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n", e->summary, e->what, e->how, e->formula,
				e->healthy, e->caveats, e->tool, e->maps_to);
		join(&body, e->signs);
		join(&body, e->reveals);
		join(&body, e->remedies);
		join(&body, e->pitfalls);
		/* names with dots and underscores split into words too */
		struct pragma_buf name = PRAGMA_BUF_INIT;
		pragma_buf_addf(&name, "%s ", e->name);
		for (const char *s = e->name; *s; s++)
			pragma_buf_addch(&name, *s == '_' || *s == '-' || *s == '.' ? ' ' : *s);
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sqlite3_bind_text(st, 2, name.data, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 3, e->title, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, body.data, -1, SQLITE_TRANSIENT);
		sqlite3_step(st);
		pragma_buf_release(&body);
		pragma_buf_release(&name);
	}
	sqlite3_exec(kb->db, "COMMIT", NULL, NULL, NULL);
	sqlite3_finalize(st);
	return 0;
}

/* Words only, each quoted: no FTS5 syntax reaches the engine. */
static void fts_query(const char *q, const char *op, struct pragma_buf *out)
{
	int n = 0;

	for (const char *s = q; *s;) {
		while (*s && !isalnum((unsigned char)*s) && !((unsigned char)*s & 0x80))
			s++;
		const char *w = s;
		while (*s && (isalnum((unsigned char)*s) || ((unsigned char)*s & 0x80)))
			s++;
		if (s > w)
			pragma_buf_addf(out, "%s\"%.*s\"", n++ ? op : "", (int)(s - w), w);
	}
}

int pragma_knowledge_search(const struct pragma_knowledge *kbc, const char *query, struct pragma_khit *hits,
			    size_t max, size_t *n, struct pragma_err *err)
{
	struct pragma_knowledge *kb = (struct pragma_knowledge *)kbc; /* the index is a cache */
	sqlite3_stmt *st = NULL;

	*n = 0;
	if (!kb->db && build_index(kb, err) < 0)
		return -1;
	if (sqlite3_prepare_v2(kb->db,
			       "SELECT rowid, snippet(doc, 2, '[', ']', '...', 16), bm25(doc, 10.0, 5.0, 1.0) "
			       "FROM doc WHERE doc MATCH ? ORDER BY bm25(doc, 10.0, 5.0, 1.0) LIMIT ?",
			       -1, &st, NULL) != SQLITE_OK)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "sqlite: %s", sqlite3_errmsg(kb->db));
	for (int pass = 0; pass < 2 && !*n; pass++) {
		struct pragma_buf q = PRAGMA_BUF_INIT;
		fts_query(query, pass ? " OR " : " ", &q);
		if (!q.len) {
			pragma_buf_release(&q);
			break;
		}
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, q.data, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 2, (int)max);
		while (sqlite3_step(st) == SQLITE_ROW && *n < max) {
			sqlite3_int64 id = sqlite3_column_int64(st, 0);
			const char *snip = (const char *)sqlite3_column_text(st, 1);
			if (id < 0 || (size_t)id >= kb->n)
				continue;
			hits[*n].entry = &kb->e[id];
			snprintf(hits[*n].snippet, sizeof(hits[*n].snippet), "%s", snip ? snip : "");
			for (char *c = hits[*n].snippet; *c; c++)
				if (*c == '\n')
					*c = ' ';
			hits[*n].score = sqlite3_column_double(st, 2);
			(*n)++;
		}
		pragma_buf_release(&q);
	}
	sqlite3_finalize(st);
	return 0;
}
