/*
 * Configuration files (DESIGN 3.9: flags over environment over a config
 * file). The format is INI-like:
 *
 *     # comment            ; also a comment
 *     llm = openai:gpt-4o   (keys before any section belong to section "")
 *     [llm]
 *     base_url = http://127.0.0.1:8000/v1
 *     temperature = 0.2
 *
 * Values run to the end of the line, trimmed; a value may be quoted with
 * "..." to keep surrounding spaces. Keys and sections are case-insensitive.
 * The default files are read in order, later ones winning:
 *     $XDG_CONFIG_HOME/pragma/config (else ~/.config/pragma/config)
 *     ./.pragma/config
 * $PRAGMA_CONFIG, when set, names one more file read last (tests use it;
 * "/dev/null" with PRAGMA_CONFIG_NO_DEFAULTS=1 reads nothing at all).
 */
#ifndef PRAGMA_CONFIG_H
#define PRAGMA_CONFIG_H

#include "pragma/err.h"

struct pragma_config_entry {
	char *section; /* "" for keys before any [section] */
	char *key;
	char *value;
	char *origin;  /* "file:line", for messages */
};

struct pragma_config {
	struct pragma_config_entry *entries;
	size_t n, alloc;
};

#define PRAGMA_CONFIG_INIT { 0 }

void pragma_config_init(struct pragma_config *c);
void pragma_config_release(struct pragma_config *c);
/* Parse one file and merge it (its keys override earlier ones). A missing
 * file is not an error unless must_exist. A syntax error fails with
 * PRAGMA_E_INPUT naming file and line; nothing of that file is merged. */
int pragma_config_load_file(struct pragma_config *c, const char *path, int must_exist,
			    struct pragma_err *err);
/* Parse text (origin names it in messages). */
int pragma_config_load_string(struct pragma_config *c, const char *text, const char *origin,
			      struct pragma_err *err);
/* Read the default files listed above. */
int pragma_config_load_default(struct pragma_config *c, struct pragma_err *err);
/* The value, or NULL. section NULL means "". Borrowed from c. */
const char *pragma_config_lookup(const struct pragma_config *c, const char *section, const char *key);
/* Where a value came from ("path:line"), or NULL. */
const char *pragma_config_origin(const struct pragma_config *c, const char *section, const char *key);
void pragma_config_set(struct pragma_config *c, const char *section, const char *key, const char *value,
		       const char *origin);

/*
 * The process-wide configuration: the default files, read once on first use
 * (thread-safe). A broken file is reported once through the logger and then
 * ignored; pragma_config_check() returns that error to callers that want to
 * fail on it. The returned strings live until pragma_config_reload().
 */
const char *pragma_config_get(const char *section, const char *key);
int pragma_config_check(struct pragma_err *err);
/* Forget the loaded files and read them again on the next lookup (tests). */
void pragma_config_reload(void);

/* Typed lookups: 1 and *out filled when set, 0 when not set (out untouched),
 * -1 when the value does not parse (err names the key and where it is). */
int pragma_config_get_double(const char *section, const char *key, double *out, struct pragma_err *err);
int pragma_config_get_long(const char *section, const char *key, long long *out, struct pragma_err *err);
/* "1/0", "yes/no", "on/off", "true/false". */
int pragma_config_get_bool(const char *section, const char *key, int *out, struct pragma_err *err);

#endif
