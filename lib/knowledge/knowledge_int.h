/* The compendium's internals, shared by knowledge.c, search.c, build.c. */
#ifndef PRAGMA_KNOWLEDGE_INT_H
#define PRAGMA_KNOWLEDGE_INT_H

#include <jansson.h>
#include <sqlite3.h>

#include "pragma/knowledge.h"

struct pragma_knowledge {
	char *dir;
	struct pragma_kentry *e;
	size_t n, alloc;
	json_t **docs;           /* the loaded files: entries borrow their strings */
	char **files;
	size_t n_docs;
	sqlite3 *db;             /* the FTS5 index, made on the first search */
};

#endif
