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

#include <stddef.h>
#include <stdint.h>

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

/*
 * Settings: every environment variable and config-file key pragma reads is
 * listed in one table (lib/util/config.c), with what it accepts and its
 * default. A bad value is never replaced by the default in silence: the
 * CLI checks them all before a command runs (pragma_settings_check: exit 2
 * naming the variable, the value and what it accepts), and `pragma doctor`
 * gives a fail line per bad one. A config-file key that is not in the table
 * is an error too (a misspelled key would otherwise do nothing). Code that
 * reads a new setting adds it to the table; README's configuration section
 * lists the table (a unit test keeps the two in step).
 */
enum pragma_setting_kind {
	PRAGMA_SETTING_TEXT,     /* any text */
	PRAGMA_SETTING_PATH,     /* a path; need not exist (created when needed) */
	PRAGMA_SETTING_DIR,      /* an existing directory */
	PRAGMA_SETTING_FILE,     /* an existing, readable file */
	PRAGMA_SETTING_PROGRAM,  /* a program name in PATH or a path (checked by doctor, exit 3 at use) */
	PRAGMA_SETTING_BOOL,     /* 1/0, yes/no, on/off, true/false */
	PRAGMA_SETTING_INT,      /* a whole number in [min, max] */
	PRAGMA_SETTING_NUMBER,   /* a number in [min, max] */
	PRAGMA_SETTING_SECONDS,  /* a number of seconds > 0 (and <= max when max > 0) */
	PRAGMA_SETTING_SIZE,     /* bytes, > 0, with an optional K, M, G or T suffix (powers of 1024) */
	PRAGMA_SETTING_LLM_SPEC, /* PROVIDER:MODEL with a known provider */
	PRAGMA_SETTING_URL,      /* http://... or https://... */
	PRAGMA_SETTING_CUDA_ARCH,/* sm_NN (or NN) */
	PRAGMA_SETTING_CHOICE,   /* one of the '|'-separated words in choices */
};

struct pragma_setting {
	const char *env;         /* "PRAGMA_CACHE_MAX", or NULL: config file only */
	const char *section;     /* config-file section ("" before any [section]), or NULL: environment only */
	const char *key;
	enum pragma_setting_kind kind;
	double min, max;         /* INT, NUMBER, SECONDS */
	const char *def;         /* the default, in words */
	const char *doc;         /* what it does, one line */
	const char *choices;     /* CHOICE: "a|b|c" */
};

/* The table; *n its length. */
const struct pragma_setting *pragma_settings(size_t *n);
/* The entry for an environment variable, or NULL. */
const struct pragma_setting *pragma_setting_find_env(const char *env);
/* What a kind accepts, in words ("a size: bytes with an optional K, M, G or T suffix, e.g. 8G"). */
const char *pragma_setting_accepts(const struct pragma_setting *s, char *buf, size_t len);
/* Check one value: 0, or -1 with why filled ("is not a number"). */
int pragma_setting_check_value(const struct pragma_setting *s, const char *value, char *why, size_t len);
/* The value in effect (environment over config file; an empty variable
 * counts as unset) and where it came from ("$PRAGMA_CACHE_MAX",
 * "/home/u/.config/pragma/config:3"); NULL when unset. Borrowed. */
const char *pragma_setting_value(const struct pragma_setting *s, char *from, size_t fromlen);

/* Every setting in effect, the config files' syntax, and that they hold no
 * unknown key. pragma_settings_check stops at the first problem
 * (PRAGMA_E_INPUT, message naming the setting, value and what it accepts,
 * and a hint). pragma_settings_check_each calls bad() for every problem
 * (name: the variable or section.key) and returns how many there were. */
int pragma_settings_check(struct pragma_err *err);
int pragma_settings_check_each(void (*bad)(void *ctx, const char *name, const struct pragma_err *e), void *ctx);

/* Typed, validated reads of a setting by its environment name (the table
 * gives its config key too): 1 and *out set, 0 when unset (*out untouched),
 * -1 when the value is bad (err as pragma_settings_check says it). */
int pragma_setting_size(const char *env, uint64_t *out, struct pragma_err *err);
int pragma_setting_seconds(const char *env, double *out, struct pragma_err *err);
int pragma_setting_bool(const char *env, int *out, struct pragma_err *err);
/* A size "8G", "512M", "1.5G", "4096" (bytes); -1 when it is not one. */
int pragma_parse_size(const char *s, uint64_t *out);

#endif
