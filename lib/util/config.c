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
#include <sys/stat.h>
#include <unistd.h>

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
/* Set once pragma_settings_check runs: its caller reports a broken file
 * itself, so the loader need not warn about it too. */
static int config_errors_reported;
static struct pragma_config global_cfg;
static struct pragma_err global_err;
static int global_loaded;

static void global_load_locked(void)
{
	if (global_loaded)
		return;
	pragma_config_init(&global_cfg);
	pragma_err_clear(&global_err);
	if (pragma_config_load_default(&global_cfg, &global_err) < 0 && !config_errors_reported)
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

/* ---- settings (see pragma/config.h) ------------------------------------ */

static const struct pragma_setting settings[] = {
	/* Files and directories. */
	{ "PRAGMA_CONFIG", NULL, NULL, PRAGMA_SETTING_FILE, 0, 0, "none",
	  "one more config file, read after the default ones", NULL },
	{ "PRAGMA_CONFIG_NO_DEFAULTS", NULL, NULL, PRAGMA_SETTING_BOOL, 0, 0, "no",
	  "read no default config file (only $PRAGMA_CONFIG)", NULL },
	{ "PRAGMA_HOME", NULL, NULL, PRAGMA_SETTING_DIR, 0, 0, "the source tree pragma was built from",
	  "where bridge/, tasks/, prompts/, knowledge/ live", NULL },
	{ "PRAGMA_CACHE_DIR", NULL, NULL, PRAGMA_SETTING_PATH, 0, 0, "$XDG_CACHE_HOME/pragma or ~/.cache/pragma",
	  "the cache: reference data, builds, LLM replies", NULL },
	{ "PRAGMA_CACHE_MAX", "cache", "max", PRAGMA_SETTING_SIZE, 0, 0, "8G",
	  "bound on the reference data in the cache (least recently used entries go first)", NULL },
	{ "PRAGMA_DB", NULL, NULL, PRAGMA_SETTING_PATH, 0, 0, ".pragma/pragma.db", "the run store (--db)", NULL },
	{ "PRAGMA_PROMPTS", NULL, NULL, PRAGMA_SETTING_DIR, 0, 0, "prompts/ of PRAGMA_HOME",
	  "the agents' prompt templates", NULL },
	{ "PRAGMA_LOCK_LOG", NULL, NULL, PRAGMA_SETTING_PATH, 0, 0, "none",
	  "append every hold of the measurement lock to this file (tests)", NULL },
	{ "PRAGMA_LOCK_DIR", NULL, NULL, PRAGMA_SETTING_DIR, 0, 0, "/dev/shm (else /tmp)",
	  "where the per-host measurement lock lives (one per machine: all pragma runs take turns)", NULL },
	/* Compilers, the harness, the PyTorch bridge. */
	{ "PRAGMA_CC", NULL, NULL, PRAGMA_SETTING_PROGRAM, 0, 0, "gcc", "compiler for kernels and references (or clang)", NULL },
	{ "PRAGMA_HARNESS", NULL, NULL, PRAGMA_SETTING_PROGRAM, 0, 0, "pragma-harness next to pragma",
	  "the harness that runs kernels", NULL },
	{ "PRAGMA_PYTHON", NULL, NULL, PRAGMA_SETTING_PROGRAM, 0, 0, "/usr/bin/python3",
	  "interpreter with torch for the PyTorch bridge", NULL },
	{ "PRAGMA_BRIDGE_TIMEOUT", "bridge", "timeout", PRAGMA_SETTING_SECONDS, 0, 604800,
	  "600 to load a task, 1800 to make reference data or time the baseline",
	  "deadline in seconds of each run of the PyTorch bridge", NULL },
	{ "PRAGMA_NO_TCMALLOC", NULL, NULL, PRAGMA_SETTING_BOOL, 0, 0, "no",
	  "run the PyTorch baseline with glibc malloc (for comparison only)", NULL },
	/* CUDA. */
	{ "PRAGMA_NVCC", NULL, NULL, PRAGMA_SETTING_PROGRAM, 0, 0, "nvcc in PATH or /usr/local/cuda", "the CUDA compiler", NULL },
	{ "PRAGMA_CUDA_HARNESS", NULL, NULL, PRAGMA_SETTING_PROGRAM, 0, 0, "pragma-cuda-harness next to pragma",
	  "the CUDA harness", NULL },
	{ "PRAGMA_NCU", NULL, NULL, PRAGMA_SETTING_PROGRAM, 0, 0, "ncu in PATH or the CUDA toolkit", "Nsight Compute", NULL },
	{ "PRAGMA_CUDART", NULL, NULL, PRAGMA_SETTING_TEXT, 0, 0, "libcudart.so found by the loader",
	  "the CUDA runtime the device probe loads (a name or a path)", NULL },
	{ "PRAGMA_CUDA_ARCH", NULL, NULL, PRAGMA_SETTING_CUDA_ARCH, 0, 0, "the device's, else sm_80",
	  "architecture CUDA kernels are built for", NULL },
	{ "PRAGMA_CUDA_GPU", NULL, NULL, PRAGMA_SETTING_TEXT, 0, 0, "A100-SXM4-40GB",
	  "the GPU the prompts describe when there is no device (a row of lib/cuda/gpus.c)", NULL },
	{ "PRAGMA_CUDA_NO_LOCK", NULL, NULL, PRAGMA_SETTING_TEXT, 0, 0, "unset",
	  "set (to anything): the CUDA harness takes no GPU lock (tests)", NULL },
	{ "PRAGMA_TORCH_COMPILE_MODE", NULL, NULL, PRAGMA_SETTING_CHOICE, 0, 0, "default",
	  "the torch.compile baseline's mode (GPU)", "default|reduce-overhead|max-autotune|max-autotune-no-cudagraphs" },
	{ "PRAGMA_TORCH_COMPILE", NULL, NULL, PRAGMA_SETTING_CHOICE, 0, 0, "unset (measured)",
	  "0 skips the torch.compile baseline (GPU)", "0" },
	{ "PRAGMA_CUDA_PROFILER_LEARN", NULL, NULL, PRAGMA_SETTING_TEXT, 0, 0, "unset",
	  "set (to anything but 0): ncu's injection may make calls the profiler sandbox does not allow, named "
	  "(a diagnostic)", NULL },
	{ "PRAGMA_BRIDGE", NULL, NULL, PRAGMA_SETTING_FILE, 0, 0, "bridge/pragma_bridge.py of PRAGMA_HOME",
	  "the bridge script the CUDA baseline timer imports", NULL },
	/* Suites on a cluster. */
	{ "PRAGMA_SLURM_POLL_MS", NULL, NULL, PRAGMA_SETTING_INT, 100, 3600000, "5000",
	  "how often bench polls Slurm for its jobs, in ms", NULL },
	/* Profiling. */
	{ NULL, "profile", "sim_budget", PRAGMA_SETTING_SECONDS, 0, 0, "the profiler's own",
	  "seconds the valgrind (sim) collector may take", NULL },
	/* The model (docs/llm.md). */
	{ "PRAGMA_LLM", "llm", "spec", PRAGMA_SETTING_LLM_SPEC, 0, 0, "none (a recorded session for built-in tasks)",
	  "the model: openai:MODEL, anthropic:MODEL, exec:COMMAND, replay:FILE", NULL },
	{ NULL, "", "llm", PRAGMA_SETTING_LLM_SPEC, 0, 0, "none", "the model (same as llm.spec)", NULL },
	{ "PRAGMA_LLM_BASE_URL", "llm", "base_url", PRAGMA_SETTING_URL, 0, 0, "the provider's",
	  "base URL of an OpenAI-compatible or Anthropic server", NULL },
	{ "PRAGMA_LLM_API_KEY", NULL, NULL, PRAGMA_SETTING_TEXT, 0, 0, "the provider's variable (OPENAI_API_KEY, ...)",
	  "the API key", NULL },
	{ NULL, "llm", "api_key_env", PRAGMA_SETTING_TEXT, 0, 0, "PRAGMA_LLM_API_KEY, then the provider's",
	  "name of the variable that holds the key", NULL },
	{ "PRAGMA_LLM_TEMPERATURE", "llm", "temperature", PRAGMA_SETTING_NUMBER, 0, 2, "the provider's",
	  "sampling temperature", NULL },
	{ "PRAGMA_LLM_MAX_TOKENS", "llm", "max_tokens", PRAGMA_SETTING_INT, 1, 10000000, "8192 (32768 for reasoning models)",
	  "token limit of a reply", NULL },
	{ "PRAGMA_LLM_SEED", "llm", "seed", PRAGMA_SETTING_INT, -9.2e18, 9.2e18, "not sent", "sampling seed", NULL },
	{ "PRAGMA_LLM_STREAM", "llm", "stream", PRAGMA_SETTING_BOOL, 0, 0, "on", "stream replies", NULL },
	{ "PRAGMA_LLM_TIMEOUT", "llm", "timeout", PRAGMA_SETTING_SECONDS, 0, 2e6, "600", "seconds per HTTP attempt", NULL },
	{ "PRAGMA_LLM_CONNECT_TIMEOUT", "llm", "connect_timeout", PRAGMA_SETTING_SECONDS, 0, 2e6, "10",
	  "seconds to connect", NULL },
	{ "PRAGMA_LLM_STALL_TIMEOUT", "llm", "stall_timeout", PRAGMA_SETTING_SECONDS, 0, 2e6, "120",
	  "seconds without a byte while streaming", NULL },
	{ "PRAGMA_LLM_EXEC_TIMEOUT", "llm", "exec_timeout", PRAGMA_SETTING_SECONDS, 0, 2e6, "1800",
	  "seconds an exec: command may take", NULL },
	{ "PRAGMA_LLM_RETRIES", "llm", "retries", PRAGMA_SETTING_INT, 0, 100, "5", "retries of a failed request", NULL },
	{ "PRAGMA_LLM_BACKOFF_MS", "llm", "backoff_ms", PRAGMA_SETTING_NUMBER, 1e-3, 2e9, "1000",
	  "first wait before a retry, in ms (doubles each retry)", NULL },
	{ "PRAGMA_LLM_BACKOFF_MAX_MS", "llm", "backoff_max_ms", PRAGMA_SETTING_NUMBER, 1e-3, 2e9, "60000",
	  "longest wait before a retry, in ms", NULL },
	{ "PRAGMA_LLM_CACHE", "llm", "cache", PRAGMA_SETTING_BOOL, 0, 0, "on", "answer identical requests from the cache", NULL },
	{ "PRAGMA_LLM_CACHE_DIR", "llm", "cache_dir", PRAGMA_SETTING_PATH, 0, 0, "<cache>/llm", "the reply cache", NULL },
	{ "PRAGMA_LLM_PRICES", "llm", "price_file", PRAGMA_SETTING_FILE, 0, 0, "the built-in table",
	  "prices per million tokens (JSON)", NULL },
	{ "PRAGMA_LLM_RECORD", "llm", "record", PRAGMA_SETTING_PATH, 0, 0, "none",
	  "append every answered call to this recording", NULL },
	{ "PRAGMA_LLM_BUDGET_CALLS", "llm", "budget_calls", PRAGMA_SETTING_INT, 0, 9.2e18, "none (0)",
	  "stop after this many calls", NULL },
	{ "PRAGMA_LLM_BUDGET_TOKENS", "llm", "budget_tokens", PRAGMA_SETTING_INT, 0, 9.2e18, "none (0)",
	  "stop after this many tokens", NULL },
	{ "PRAGMA_LLM_BUDGET_COST", "llm", "budget_cost", PRAGMA_SETTING_NUMBER, 0, 1e12, "none (0)",
	  "stop after this many USD", NULL },
};

const struct pragma_setting *pragma_settings(size_t *n)
{
	if (n)
		*n = sizeof(settings) / sizeof(settings[0]);
	return settings;
}

const struct pragma_setting *pragma_setting_find_env(const char *env)
{
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
		if (settings[i].env && !strcmp(settings[i].env, env))
			return &settings[i];
	return NULL;
}

static const struct pragma_setting *find_key(const char *section, const char *key)
{
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
		if (settings[i].section && !strcasecmp(settings[i].section, section ? section : "") &&
		    !strcasecmp(settings[i].key, key))
			return &settings[i];
	return NULL;
}

int pragma_parse_size(const char *s, uint64_t *out)
{
	char *end;
	double x;

	if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	x = strtod(s, &end);
	if (end == s || errno || !isfinite(x))
		return -1;
	switch (*end) {
	case 'k': case 'K': x *= 1024.0; end++; break;
	case 'm': case 'M': x *= 1048576.0; end++; break;
	case 'g': case 'G': x *= 1073741824.0; end++; break;
	case 't': case 'T': x *= 1099511627776.0; end++; break;
	default: break;
	}
	/* "8G", "8GB", "8GiB", "4096B" */
	if (*end == 'i' && end[1] == 'B' && end > s && isalpha((unsigned char)end[-1]))
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || x < 1 || x > 1.8e19)
		return -1;
	*out = (uint64_t)x;
	return 0;
}

static int parse_bool_text(const char *v, int *out)
{
	static const char *const yes[] = { "1", "yes", "on", "true" };
	static const char *const no[] = { "0", "no", "off", "false" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i]))
			return *out = 1, 0;
		if (!strcasecmp(v, no[i]))
			return *out = 0, 0;
	}
	return -1;
}

static int parse_number(const char *v, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	return end != v && !*end && !errno && isfinite(*out) && !isspace((unsigned char)*v) ? 0 : -1;
}

const char *pragma_setting_accepts(const struct pragma_setting *s, char *buf, size_t len)
{
	switch (s->kind) {
	case PRAGMA_SETTING_TEXT:
		snprintf(buf, len, "any text");
		break;
	case PRAGMA_SETTING_PATH:
		snprintf(buf, len, "a path");
		break;
	case PRAGMA_SETTING_DIR:
		snprintf(buf, len, "an existing directory");
		break;
	case PRAGMA_SETTING_FILE:
		snprintf(buf, len, "an existing, readable file");
		break;
	case PRAGMA_SETTING_PROGRAM:
		snprintf(buf, len, "a program: a name found in PATH, or a path");
		break;
	case PRAGMA_SETTING_BOOL:
		snprintf(buf, len, "1/0, yes/no, on/off or true/false");
		break;
	case PRAGMA_SETTING_INT:
		snprintf(buf, len, "a whole number from %.15g to %.15g", s->min, s->max);
		break;
	case PRAGMA_SETTING_NUMBER:
		snprintf(buf, len, "a number from %g to %g", s->min, s->max);
		break;
	case PRAGMA_SETTING_SECONDS:
		if (s->max > 0)
			snprintf(buf, len, "a number of seconds above 0 and at most %g", s->max);
		else
			snprintf(buf, len, "a number of seconds above 0");
		break;
	case PRAGMA_SETTING_SIZE:
		snprintf(buf, len, "a size in bytes with an optional K, M, G or T suffix (powers of 1024), e.g. 8G or 512M");
		break;
	case PRAGMA_SETTING_LLM_SPEC:
		snprintf(buf, len, "PROVIDER:MODEL with PROVIDER one of openai, anthropic, exec, replay, deepseek, "
			 "ollama, openrouter (e.g. openai:gpt-4o)");
		break;
	case PRAGMA_SETTING_URL:
		snprintf(buf, len, "a URL starting with http:// or https://");
		break;
	case PRAGMA_SETTING_CUDA_ARCH:
		snprintf(buf, len, "a CUDA architecture: sm_NN (e.g. sm_80, sm_90a) or NN");
		break;
	case PRAGMA_SETTING_CHOICE: {
		struct pragma_buf b = PRAGMA_BUF_INIT;
		pragma_buf_adds(&b, "one of: ");
		for (const char *p = s->choices ? s->choices : ""; *p; p++) {
			if (*p == '|')
				pragma_buf_adds(&b, ", ");
			else
				pragma_buf_addch(&b, *p);
		}
		snprintf(buf, len, "%s", b.data);
		pragma_buf_release(&b);
		break;
	}
	}
	return buf;
}

/* The providers of pragma_llm_open (lib/llm/client.c parse_spec). */
static int known_provider(const char *spec, size_t k)
{
	static const char *const p[] = { "openai", "anthropic", "exec", "replay", "deepseek", "ollama", "openrouter" };

	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		if (strlen(p[i]) == k && !strncmp(spec, p[i], k))
			return 1;
	return 0;
}

int pragma_setting_check_value(const struct pragma_setting *s, const char *v, char *why, size_t len)
{
	double d;
	uint64_t u;
	int b;
	struct stat st;

	why[0] = '\0';
	switch (s->kind) {
	case PRAGMA_SETTING_TEXT:
	case PRAGMA_SETTING_PATH:
	case PRAGMA_SETTING_PROGRAM:
		return 0;
	case PRAGMA_SETTING_DIR:
		if (stat(v, &st) < 0) {
			snprintf(why, len, "does not exist (%s)", strerror(errno));
			return -1;
		}
		if (!S_ISDIR(st.st_mode)) {
			snprintf(why, len, "is not a directory");
			return -1;
		}
		return 0;
	case PRAGMA_SETTING_FILE:
		if (stat(v, &st) < 0) {
			snprintf(why, len, "does not exist (%s)", strerror(errno));
			return -1;
		}
		if (S_ISDIR(st.st_mode) || access(v, R_OK) < 0) {
			snprintf(why, len, "is not a readable file");
			return -1;
		}
		return 0;
	case PRAGMA_SETTING_BOOL:
		if (parse_bool_text(v, &b) == 0)
			return 0;
		snprintf(why, len, "is not a yes/no value");
		return -1;
	case PRAGMA_SETTING_INT: {
		char *end;
		long long l;
		errno = 0;
		l = strtoll(v, &end, 10);
		if (end == v || *end || errno || isspace((unsigned char)*v)) {
			snprintf(why, len, "is not a whole number");
			return -1;
		}
		if ((double)l < s->min || (double)l > s->max) {
			snprintf(why, len, "is out of range");
			return -1;
		}
		return 0;
	}
	case PRAGMA_SETTING_NUMBER:
		if (parse_number(v, &d) < 0) {
			snprintf(why, len, "is not a number");
			return -1;
		}
		if (d < s->min || d > s->max) {
			snprintf(why, len, "is out of range");
			return -1;
		}
		return 0;
	case PRAGMA_SETTING_SECONDS:
		if (parse_number(v, &d) < 0) {
			snprintf(why, len, "is not a number of seconds");
			return -1;
		}
		if (d <= 0 || (s->max > 0 && d > s->max)) {
			snprintf(why, len, "is out of range");
			return -1;
		}
		return 0;
	case PRAGMA_SETTING_SIZE:
		if (pragma_parse_size(v, &u) == 0)
			return 0;
		snprintf(why, len, "is not a size");
		return -1;
	case PRAGMA_SETTING_LLM_SPEC: {
		const char *colon = strchr(v, ':');
		if (!colon || !colon[1]) {
			snprintf(why, len, "is not PROVIDER:MODEL");
			return -1;
		}
		if (!known_provider(v, (size_t)(colon - v))) {
			snprintf(why, len, "names an unknown provider '%.*s'", (int)(colon - v > 40 ? 40 : colon - v), v);
			return -1;
		}
		return 0;
	}
	case PRAGMA_SETTING_URL:
		if (strncasecmp(v, "http://", 7) && strncasecmp(v, "https://", 8)) {
			snprintf(why, len, "is not an http:// or https:// URL");
			return -1;
		}
		if (!v[strncasecmp(v, "http://", 7) ? 8 : 7]) {
			snprintf(why, len, "has no host");
			return -1;
		}
		return 0;
	case PRAGMA_SETTING_CHOICE: {
		size_t n = strlen(v);
		for (const char *p = s->choices ? s->choices : ""; *p;) {
			size_t k = strcspn(p, "|");
			if (k == n && !strncmp(p, v, n))
				return 0;
			p += k + (p[k] == '|');
		}
		snprintf(why, len, "is not one of the choices");
		return -1;
	}
	case PRAGMA_SETTING_CUDA_ARCH: {
		const char *p = strncmp(v, "sm_", 3) ? v : v + 3;
		int digits = 0;
		while (isdigit((unsigned char)*p)) {
			p++;
			digits++;
		}
		if (digits < 2 || (*p && strcmp(p, "a") && strcmp(p, "f"))) {
			snprintf(why, len, "is not a CUDA architecture");
			return -1;
		}
		return 0;
	}
	}
	return 0;
}


const char *pragma_setting_value(const struct pragma_setting *s, char *from, size_t fromlen)
{
	const char *v;

	if (from && fromlen)
		from[0] = '\0';
	if (s->env && (v = getenv(s->env)) && *v) {
		if (from)
			snprintf(from, fromlen, "$%s", s->env);
		return v;
	}
	if (s->section && (v = pragma_config_get(s->section, s->key))) {
		if (from)
			snprintf(from, fromlen, "%s", global_origin(s->section, s->key));
		return v;
	}
	return NULL;
}

/* "PRAGMA_CACHE_MAX" or "cache.max" (the config file's name for it). */
static void setting_name(const struct pragma_setting *s, int from_env, char *out, size_t len)
{
	if (from_env && s->env)
		snprintf(out, len, "%s", s->env);
	else if (s->section && *s->section)
		snprintf(out, len, "%s.%s", s->section, s->key);
	else
		snprintf(out, len, "%s", s->key ? s->key : s->env);
}

static void bad_value(const struct pragma_setting *s, const char *value, const char *from, const char *why,
		      struct pragma_err *err)
{
	char name[96], acc[256], shown[128];
	int from_env = from[0] == '$';

	setting_name(s, from_env, name, sizeof(name));
	/* A key is never echoed. */
	if (strstr(name, "API_KEY"))
		snprintf(shown, sizeof(shown), "(hidden)");
	else
		snprintf(shown, sizeof(shown), "'%.100s%s'", value, strlen(value) > 100 ? "..." : "");
	if (from_env)
		pragma_err_set(err, PRAGMA_E_INPUT, "%s=%s %s; it accepts %s", name, shown, why,
			       pragma_setting_accepts(s, acc, sizeof(acc)));
	else
		pragma_err_set(err, PRAGMA_E_INPUT, "%s: %s = %s %s; it accepts %s", from, name, shown, why,
			       pragma_setting_accepts(s, acc, sizeof(acc)));
	pragma_err_hint(err, "%s %s (default: %s); 'pragma doctor' checks every setting, README's Configuration "
			"section lists them", from_env ? "fix or unset" : "fix or remove", name, s->def);
}

static int check_one(const struct pragma_setting *s, const char *v, const char *from, struct pragma_err *err)
{
	char why[256];

	if (pragma_setting_check_value(s, v, why, sizeof(why)) == 0)
		return 0;
	bad_value(s, v, from, why, err);
	return -1;
}

int pragma_settings_check_each(void (*bad)(void *ctx, const char *name, const struct pragma_err *e), void *ctx)
{
	struct pragma_err e = PRAGMA_ERR_INIT;
	char name[96], from[PATH_MAX + 64];
	int n = 0;

	pthread_mutex_lock(&global_lock);
	config_errors_reported = 1;
	pthread_mutex_unlock(&global_lock);
	if (pragma_config_check(&e) < 0) {
		pragma_err_hint(&e, "fix the file (format: docs in pragma/config.h and README's Configuration section)");
		bad(ctx, "config file", &e);
		n++;
	}
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		const struct pragma_setting *s = &settings[i];
		const char *v;
		if (!s->env || !(v = getenv(s->env)) || !*v)
			continue;
		snprintf(from, sizeof(from), "$%s", s->env);
		if (check_one(s, v, from, &e) < 0) {
			bad(ctx, s->env, &e);
			n++;
		}
	}
	/* The config files: every key known, every value good. */
	pthread_mutex_lock(&global_lock);
	global_load_locked();
	struct pragma_config copy = PRAGMA_CONFIG_INIT;
	for (size_t i = 0; i < global_cfg.n; i++)
		pragma_config_set(&copy, global_cfg.entries[i].section, global_cfg.entries[i].key,
				  global_cfg.entries[i].value, global_cfg.entries[i].origin);
	pthread_mutex_unlock(&global_lock);
	for (size_t i = 0; i < copy.n; i++) {
		const struct pragma_config_entry *ce = &copy.entries[i];
		const struct pragma_setting *s = find_key(ce->section, ce->key);
		if (*ce->section)
			snprintf(name, sizeof(name), "%s.%s", ce->section, ce->key);
		else
			snprintf(name, sizeof(name), "%s", ce->key);
		if (!s) {
			struct pragma_buf known = PRAGMA_BUF_INIT;
			for (size_t k = 0; k < sizeof(settings) / sizeof(settings[0]); k++)
				if (settings[k].section && !strcasecmp(settings[k].section, ce->section))
					pragma_buf_addf(&known, "%s%s", known.len ? ", " : "", settings[k].key);
			pragma_err_set(&e, PRAGMA_E_INPUT, "%s: unknown setting '%s'", ce->origin, name);
			if (known.len)
				pragma_err_hint(&e, "the settings of [%s] are: %s", ce->section, known.data);
			else {
				pragma_buf_reset(&known);
				for (size_t k = 0; k < sizeof(settings) / sizeof(settings[0]); k++) {
					const char *sec = settings[k].section;
					if (!sec || !*sec || strstr(known.data ? known.data : "", sec))
						continue;
					pragma_buf_addf(&known, "%s[%s]", known.len ? ", " : "", sec);
				}
				pragma_err_hint(&e, "the sections are %s, and 'llm' before any section", known.data);
			}
			pragma_buf_release(&known);
			bad(ctx, name, &e);
			n++;
			continue;
		}
		/* The environment wins over the file, but a bad value in the
		 * file is still a bad file. */
		if (check_one(s, ce->value, ce->origin, &e) < 0) {
			bad(ctx, name, &e);
			n++;
		}
	}
	pragma_config_release(&copy);
	return n;
}

static void keep_first(void *ctx, const char *name, const struct pragma_err *e)
{
	struct pragma_err *first = ctx;

	(void)name;
	if (first->kind == PRAGMA_OK)
		*first = *e;
}

int pragma_settings_check(struct pragma_err *err)
{
	struct pragma_err first = PRAGMA_ERR_INIT;

	if (pragma_settings_check_each(keep_first, &first) == 0)
		return 0;
	if (err)
		*err = first;
	return -1;
}

static int typed_value(const char *env, const struct pragma_setting **s, const char **v, char *from, size_t fromlen,
		       struct pragma_err *err)
{
	*s = pragma_setting_find_env(env);
	if (!*s)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "setting %s is not in the settings table", env);
	*v = pragma_setting_value(*s, from, fromlen);
	if (!*v)
		return 0;
	return check_one(*s, *v, from, err) < 0 ? -1 : 1;
}

int pragma_setting_size(const char *env, uint64_t *out, struct pragma_err *err)
{
	const struct pragma_setting *s;
	const char *v;
	char from[PATH_MAX + 64];
	int r = typed_value(env, &s, &v, from, sizeof(from), err);

	if (r == 1)
		pragma_parse_size(v, out);
	return r;
}

int pragma_setting_seconds(const char *env, double *out, struct pragma_err *err)
{
	const struct pragma_setting *s;
	const char *v;
	char from[PATH_MAX + 64];
	int r = typed_value(env, &s, &v, from, sizeof(from), err);

	if (r == 1)
		parse_number(v, out);
	return r;
}

int pragma_setting_bool(const char *env, int *out, struct pragma_err *err)
{
	const struct pragma_setting *s;
	const char *v;
	char from[PATH_MAX + 64];
	int r = typed_value(env, &s, &v, from, sizeof(from), err);

	if (r == 1)
		parse_bool_text(v, out);
	return r;
}
