/*
 * The backend registry: every target pragma can build and run candidates
 * for. A new backend is one file in this directory and one line here.
 */
#include <string.h>
#include <strings.h>

#include "pragma/backend.h"

static const struct pragma_backend *const all[] = {
	&pragma_backend_cpu,
	&pragma_backend_cuda,
	NULL,
};

/* Other names users type for a backend. */
static const struct {
	const char *alias, *name;
} aliases[] = {
	{ "c", "cpu" },
	{ "gpu", "cuda" },
	{ "cu", "cuda" },
};

const struct pragma_backend *const *pragma_backends(void)
{
	return all;
}

const struct pragma_backend *pragma_backend_find(const char *name, struct pragma_err *err)
{
	char known[256] = "";

	if (name) {
		for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
			if (!strcasecmp(name, aliases[i].alias))
				name = aliases[i].name;
		for (int i = 0; all[i]; i++)
			if (!strcasecmp(name, all[i]->name))
				return all[i];
	}
	for (int i = 0; all[i]; i++) {
		strncat(known, i ? ", " : "", sizeof(known) - strlen(known) - 1);
		strncat(known, all[i]->name, sizeof(known) - strlen(known) - 1);
	}
	pragma_err_set(err, PRAGMA_E_INPUT, "unknown backend '%s' (known: %s)", name ? name : "", known);
	pragma_err_hint(err, "cpu builds C with gcc/clang and runs it on this CPU; cuda builds CUDA C with nvcc and "
			     "runs it on the GPU");
	return NULL;
}

const struct pragma_backend *pragma_backend_for_path(const char *path)
{
	size_t n = path ? strlen(path) : 0;

	for (int i = 0; all[i]; i++) {
		size_t e = strlen(all[i]->ext);
		if (n > e && !strcmp(path + n - e, all[i]->ext))
			return all[i];
	}
	return &pragma_backend_cpu;
}

const struct pragma_backend *pragma_backend_or_default(const struct pragma_backend *b)
{
	return b ? b : &pragma_backend_cpu;
}
