/* INI-like configuration files; see pragma/config.h for the format. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pragma/buf.h"
#include "pragma/config.h"
#include "pragma/fs.h"
#include "pragma/log.h"

#define CONFIG_FILE_CAP ((size_t)1 << 20)
#define CONFIG_LINE_CAP 8192

static char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");

	if (!p)
		abort();
	return p;
}

static char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (!p)
		abort();
	return p;
}

void pragma_config_init(struct pragma_config *c)
{
	c->entries = NULL;
	c->n = c->alloc = 0;
}

static void entry_free(struct pragma_config_entry *e)
{
	free(e->section);
	free(e->key);
	free(e->value);
	free(e->origin);
}

void pragma_config_release(struct pragma_config *c)
{
	for (size_t i = 0; i < c->n; i++)
		entry_free(&c->entries[i]);
	free(c->entries);
	pragma_config_init(c);
}

static struct pragma_config_entry *find(const struct pragma_config *c, const char *section, const char *key)
{
	if (!section)
		section = "";
	for (size_t i = 0; i < c->n; i++)
		if (!strcasecmp(c->entries[i].section, section) && !strcasecmp(c->entries[i].key, key))
			return &c->entries[i];
	return NULL;
}

void pragma_config_set(struct pragma_config *c, const char *section, const char *key, const char *value,
		       const char *origin)
{
	struct pragma_config_entry *e = find(c, section, key);

	if (e) {
		free(e->value);
		free(e->origin);
		e->value = xstrdup(value);
		e->origin = xstrdup(origin);
		return;
	}
	if (c->n == c->alloc) {
		size_t n = c->alloc ? c->alloc * 2 : 16;
		void *p = realloc(c->entries, n * sizeof(*c->entries));
		if (!p)
			abort();
		c->entries = p;
		c->alloc = n;
	}
	e = &c->entries[c->n++];
	e->section = xstrdup(section ? section : "");
	e->key = xstrdup(key);
	e->value = xstrdup(value);
	e->origin = xstrdup(origin);
}

const char *pragma_config_lookup(const struct pragma_config *c, const char *section, const char *key)
{
	const struct pragma_config_entry *e = find(c, section, key);

	return e ? e->value : NULL;
}

const char *pragma_config_origin(const struct pragma_config *c, const char *section, const char *key)
{
	const struct pragma_config_entry *e = find(c, section, key);

	return e ? e->origin : NULL;
}

static int valid_name(const char *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_-.", s[i]))
			return 0;
	return 1;
}

static void trim(const char **s, size_t *n)
{
	while (*n && isspace((unsigned char)**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && isspace((unsigned char)(*s)[*n - 1]))
		(*n)--;
}

int pragma_config_load_string(struct pragma_config *c, const char *text, const char *origin,
			      struct pragma_err *err)
{
	struct pragma_config tmp = PRAGMA_CONFIG_INIT;
	char *section = xstrdup("");
	const char *p = text;
	int lineno = 0, ret = -1;

	if (!origin)
		origin = "config";
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);
		const char *line = p;
		char where[PATH_MAX + 32];

		p += n + (eol ? 1 : 0);
		lineno++;
		snprintf(where, sizeof(where), "%s:%d", origin, lineno);
		if (n > CONFIG_LINE_CAP) {
			pragma_err_set(err, PRAGMA_E_INPUT, "%s: line too long", where);
			goto out;
		}
		trim(&line, &n);
		if (!n || line[0] == '#' || line[0] == ';')
			continue;
		if (line[0] == '[') {
			const char *name = line + 1;
			size_t m;
			if (line[n - 1] != ']') {
				pragma_err_set(err, PRAGMA_E_INPUT, "%s: a section header needs a closing ']'", where);
				pragma_err_hint(err, "write it as [name]");
				goto out;
			}
			m = n - 2;
			trim(&name, &m);
			if (!valid_name(name, m)) {
				pragma_err_set(err, PRAGMA_E_INPUT, "%s: bad section name '%.*s'", where, (int)(n - 2),
					       line + 1);
				goto out;
			}
			free(section);
			section = xstrndup(name, m);
			continue;
		}
		const char *eq = memchr(line, '=', n);
		if (!eq) {
			pragma_err_set(err, PRAGMA_E_INPUT, "%s: expected 'key = value', found '%.*s'", where,
				       (int)(n > 80 ? 80 : n), line);
			goto out;
		}
		const char *k = line, *v = eq + 1;
		size_t kn = (size_t)(eq - line), vn = n - kn - 1;
		trim(&k, &kn);
		trim(&v, &vn);
		if (!valid_name(k, kn)) {
			pragma_err_set(err, PRAGMA_E_INPUT, "%s: bad key '%.*s'", where, (int)kn, k);
			goto out;
		}
		if (vn >= 2 && ((v[0] == '"' && v[vn - 1] == '"') || (v[0] == '\'' && v[vn - 1] == '\''))) {
			v++;
			vn -= 2;
		}
		char *key = xstrndup(k, kn), *val = xstrndup(v, vn);
		pragma_config_set(&tmp, section, key, val, where);
		free(key);
		free(val);
	}
	for (size_t i = 0; i < tmp.n; i++)
		pragma_config_set(c, tmp.entries[i].section, tmp.entries[i].key, tmp.entries[i].value,
				  tmp.entries[i].origin);
	ret = 0;
out:
	free(section);
	pragma_config_release(&tmp);
	return ret;
}

int pragma_config_load_file(struct pragma_config *c, const char *path, int must_exist, struct pragma_err *err)
{
	struct pragma_buf text = PRAGMA_BUF_INIT;
	int ret;

	if (!pragma_path_exists(path)) {
		if (!must_exist)
			return 0;
		pragma_err_set(err, PRAGMA_E_INPUT, "config file %s does not exist", path);
		return -1;
	}
	if (pragma_read_file(path, &text, CONFIG_FILE_CAP, err) < 0) {
		pragma_buf_release(&text);
		return -1;
	}
	if (memchr(text.data, '\0', text.len)) {
		pragma_buf_release(&text);
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s is not a text file", path);
	}
	ret = pragma_config_load_string(c, text.data, path, err);
	pragma_buf_release(&text);
	return ret;
}

int pragma_config_load_default(struct pragma_config *c, struct pragma_err *err)
{
	struct pragma_buf path = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	const char *extra = getenv("PRAGMA_CONFIG");
	const char *nodef = getenv("PRAGMA_CONFIG_NO_DEFAULTS");
	int ret = 0;

	/* Each file on its own: a broken one is skipped (and reported), the
	 * others still count. */
	if (!(nodef && *nodef && strcmp(nodef, "0"))) {
		if (xdg && *xdg)
			pragma_buf_addf(&path, "%s/pragma/config", xdg);
		else if (home && *home)
			pragma_buf_addf(&path, "%s/.config/pragma/config", home);
		if (path.len && pragma_config_load_file(c, path.data, 0, &e) < 0 && !ret) {
			if (err)
				*err = e;
			ret = -1;
		}
		if (pragma_config_load_file(c, ".pragma/config", 0, &e) < 0 && !ret) {
			if (err)
				*err = e;
			ret = -1;
		}
	}
	if (extra && *extra && pragma_config_load_file(c, extra, 1, &e) < 0 && !ret) {
		if (err)
			*err = e;
		ret = -1;
	}
	pragma_buf_release(&path);
	return ret;
}

/* The process-wide configuration. */
static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pragma_config global_cfg;
static struct pragma_err global_err;
static int global_loaded;

static void global_load_locked(void)
{
	if (global_loaded)
		return;
	pragma_config_init(&global_cfg);
	pragma_err_clear(&global_err);
	if (pragma_config_load_default(&global_cfg, &global_err) < 0)
		pragma_warn("%s (that file is ignored)", global_err.msg);
	global_loaded = 1;
}

const char *pragma_config_get(const char *section, const char *key)
{
	const char *v;

	pthread_mutex_lock(&global_lock);
	global_load_locked();
	v = pragma_config_lookup(&global_cfg, section, key);
	pthread_mutex_unlock(&global_lock);
	return v;
}

static const char *global_origin(const char *section, const char *key)
{
	const char *o;

	pthread_mutex_lock(&global_lock);
	global_load_locked();
	o = pragma_config_origin(&global_cfg, section, key);
	pthread_mutex_unlock(&global_lock);
	return o ? o : "config";
}

int pragma_config_check(struct pragma_err *err)
{
	int ret = 0;

	pthread_mutex_lock(&global_lock);
	global_load_locked();
	if (global_err.kind != PRAGMA_OK) {
		if (err)
			*err = global_err;
		ret = -1;
	}
	pthread_mutex_unlock(&global_lock);
	return ret;
}

void pragma_config_reload(void)
{
	pthread_mutex_lock(&global_lock);
	if (global_loaded)
		pragma_config_release(&global_cfg);
	global_loaded = 0;
	pthread_mutex_unlock(&global_lock);
}

int pragma_config_get_double(const char *section, const char *key, double *out, struct pragma_err *err)
{
	const char *v = pragma_config_get(section, key);
	char *end;
	double d;

	if (!v)
		return 0;
	errno = 0;
	d = strtod(v, &end);
	if (end == v || *end || errno || !isfinite(d))
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s: %s%s%s = '%s' is not a number", global_origin(section, key),
				      section && *section ? section : "", section && *section ? "." : "", key, v);
	*out = d;
	return 1;
}

int pragma_config_get_long(const char *section, const char *key, long long *out, struct pragma_err *err)
{
	const char *v = pragma_config_get(section, key);
	char *end;
	long long l;

	if (!v)
		return 0;
	errno = 0;
	l = strtoll(v, &end, 10);
	if (end == v || *end || errno)
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s: %s%s%s = '%s' is not an integer",
				      global_origin(section, key), section && *section ? section : "",
				      section && *section ? "." : "", key, v);
	*out = l;
	return 1;
}

int pragma_config_get_bool(const char *section, const char *key, int *out, struct pragma_err *err)
{
	static const char *const yes[] = { "1", "yes", "on", "true" };
	static const char *const no[] = { "0", "no", "off", "false" };
	const char *v = pragma_config_get(section, key);

	if (!v)
		return 0;
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i])) {
			*out = 1;
			return 1;
		}
		if (!strcasecmp(v, no[i])) {
			*out = 0;
			return 1;
		}
	}
	return pragma_err_set(err, PRAGMA_E_INPUT, "%s: %s%s%s = '%s' is not a yes/no value", global_origin(section, key),
			      section && *section ? section : "", section && *section ? "." : "", key, v);
}
