/* Loading the compendium, checking it against the registry, and the
 * compact form the prompts use. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/knowledge_int.h"
#include "pragma/cuda.h"
#include "pragma/fs.h"

static const char *str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static const char **list(json_t *o, const char *k)
{
	json_t *a = json_object_get(o, k), *v;
	size_t i, n = 0;
	const char **out = calloc(json_array_size(a) + 1, sizeof(*out));

	if (!out)
		abort();
	json_array_foreach(a, i, v)
		if (json_is_string(v))
			out[n++] = json_string_value(v);
	return out;
}

static void free_entry(struct pragma_kentry *e)
{
	free(e->reveals);
	free(e->remedies);
	free(e->sources);
	free(e->signs);
	free(e->pitfalls);
	free(e->metrics);
}

static int add_entry(struct pragma_knowledge *kb, enum pragma_kentry_kind kind, json_t *o, const char *file,
		     struct pragma_err *err)
{
	struct pragma_kentry *e;

	if (!json_is_object(o) || !json_string_value(json_object_get(o, "name")))
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s: an entry without a \"name\"", file);
	if (kb->n == kb->alloc) {
		kb->alloc = kb->alloc ? 2 * kb->alloc : 128;
		kb->e = realloc(kb->e, kb->alloc * sizeof(*kb->e));
		if (!kb->e)
			abort();
	}
	e = &kb->e[kb->n++];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->name = str(o, "name");
	e->title = str(o, "title");
	e->unit = str(o, "unit");
	e->collector = str(o, "collector");
	e->tool = str(o, "tool");
	e->what = str(o, "what");
	e->how = str(o, "how");
	e->formula = str(o, "formula");
	e->healthy = str(o, "healthy");
	e->caveats = str(o, "caveats");
	e->summary = str(o, "summary");
	e->maps_to = str(o, "maps_to");
	e->reveals = list(o, "reveals");
	e->remedies = list(o, "remedies");
	e->sources = list(o, "sources");
	e->signs = list(o, "signs");
	e->pitfalls = list(o, "pitfalls");
	e->metrics = list(o, "metrics");
	e->file = file;
	return 0;
}

static int load_file(struct pragma_knowledge *kb, const char *path, enum pragma_kentry_kind kind, const char *key,
		     struct pragma_err *err)
{
	json_error_t jerr;
	json_t *j = json_load_file(path, 0, &jerr), *arr, *v;
	size_t i;
	char *file;

	if (!j)
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s:%d: %s", path, jerr.line, jerr.text);
	arr = json_object_get(j, key);
	if (!json_is_array(arr)) {
		json_decref(j);
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s: expected {\"%s\": [...]}", path, key);
	}
	kb->docs = realloc(kb->docs, (kb->n_docs + 1) * sizeof(*kb->docs));
	kb->files = realloc(kb->files, (kb->n_docs + 1) * sizeof(*kb->files));
	if (!kb->docs || !kb->files || !(file = strdup(path)))
		abort();
	kb->docs[kb->n_docs] = j;
	kb->files[kb->n_docs++] = file;
	json_array_foreach(arr, i, v)
		if (add_entry(kb, kind, v, file, err) < 0)
			return -1;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.json in dir, sorted (stable order, stable ids). */
static int load_dir(struct pragma_knowledge *kb, const char *dir, enum pragma_kentry_kind kind, const char *key,
		    int must_exist, struct pragma_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;
	int ret = 0;

	if (!d)
		return must_exist ? pragma_err_set(err, PRAGMA_E_ENV, "cannot read the compendium directory %s", dir) : 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 6 || strcmp(de->d_name + l - 5, ".json") || de->d_name[0] == '.')
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		if (!names || asprintf(&names[n], "%s/%s", dir, de->d_name) < 0)
			abort();
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (!ret && load_file(kb, names[i], kind, key, err) < 0)
			ret = -1;
		free(names[i]);
	}
	free(names);
	return ret;
}

/* One compendium directory: metrics/, playbooks.json, reference/. */
static int load_tree(struct pragma_knowledge *kb, const char *dir, int must_exist, struct pragma_err *err)
{
	struct pragma_buf sub = PRAGMA_BUF_INIT;
	int ret = -1;

	pragma_buf_addf(&sub, "%s/metrics", dir);
	if (load_dir(kb, sub.data, PRAGMA_KENTRY_METRIC, "entries", must_exist, err) < 0)
		goto out;
	pragma_buf_reset(&sub);
	pragma_buf_addf(&sub, "%s/playbooks.json", dir);
	if (pragma_path_exists(sub.data) && load_file(kb, sub.data, PRAGMA_KENTRY_PLAYBOOK, "playbooks", err) < 0)
		goto out;
	pragma_buf_reset(&sub);
	pragma_buf_addf(&sub, "%s/reference", dir);
	if (load_dir(kb, sub.data, PRAGMA_KENTRY_REFERENCE, "entries", 0, err) < 0)
		goto out;
	ret = 0;
out:
	pragma_buf_release(&sub);
	return ret;
}

int pragma_knowledge_open(struct pragma_knowledge **out, const char *dir, struct pragma_err *err)
{
	struct pragma_knowledge *kb = calloc(1, sizeof(*kb));
	struct pragma_buf d = PRAGMA_BUF_INIT;
	char **subs = NULL;
	size_t n_subs = 0;
	DIR *dd;
	struct dirent *de;

	*out = NULL;
	if (!kb)
		abort();
	if (dir)
		pragma_buf_adds(&d, dir);
	else if (pragma_data_path("knowledge", &d, err) < 0)
		goto fail;
	kb->dir = strdup(d.data);
	if (load_tree(kb, d.data, 1, err) < 0)
		goto fail;
	/* A backend's own compendium in a subdirectory (knowledge/gpu: the
	 * CUDA backend's metrics and playbooks) joins this one. */
	if ((dd = opendir(d.data))) {
		while ((de = readdir(dd))) {
			char *p;
			if (de->d_name[0] == '.' || !strcmp(de->d_name, "metrics") || !strcmp(de->d_name, "reference"))
				continue;
			if (asprintf(&p, "%s/%s", d.data, de->d_name) < 0)
				abort();
			if (!pragma_is_dir(p)) {
				free(p);
				continue;
			}
			subs = realloc(subs, (n_subs + 1) * sizeof(*subs));
			if (!subs)
				abort();
			subs[n_subs++] = p;
		}
		closedir(dd);
	}
	if (n_subs)
		qsort(subs, n_subs, sizeof(*subs), cmp_str);
	for (size_t i = 0; i < n_subs; i++) {
		int rc = load_tree(kb, subs[i], 0, err);
		free(subs[i]);
		if (rc < 0) {
			for (size_t k = i + 1; k < n_subs; k++)
				free(subs[k]);
			free(subs);
			goto fail;
		}
	}
	free(subs);
	pragma_buf_release(&d);
	*out = kb;
	return 0;
fail:
	pragma_buf_release(&d);
	pragma_knowledge_free(kb);
	return -1;
}

void pragma_knowledge_free(struct pragma_knowledge *kb)
{
	if (!kb)
		return;
	for (size_t i = 0; i < kb->n; i++)
		free_entry(&kb->e[i]);
	free(kb->e);
	for (size_t i = 0; i < kb->n_docs; i++) {
		json_decref(kb->docs[i]);
		free(kb->files[i]);
	}
	free(kb->docs);
	free(kb->files);
	if (kb->db)
		sqlite3_close(kb->db);
	free(kb->dir);
	free(kb);
}

const char *pragma_knowledge_dir(const struct pragma_knowledge *kb)
{
	return kb->dir;
}

size_t pragma_knowledge_count(const struct pragma_knowledge *kb)
{
	return kb->n;
}

const struct pragma_kentry *pragma_knowledge_at(const struct pragma_knowledge *kb, size_t i)
{
	return i < kb->n ? &kb->e[i] : NULL;
}

const struct pragma_kentry *pragma_knowledge_get(const struct pragma_knowledge *kb, enum pragma_kentry_kind kind,
						 const char *name)
{
	for (size_t i = 0; i < kb->n; i++)
		if (kb->e[i].kind == kind && !strcmp(kb->e[i].name, name))
			return &kb->e[i];
	return NULL;
}

/* The CPU diagnosis's names and the CUDA backend's (lib/cuda/diagnose.c). */
static int is_bottleneck(const char *name)
{
	size_t n;
	const char *const *b = pragma_bottleneck_names(&n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(b[i], name))
			return 1;
	b = pragma_gpu_bottleneck_names(&n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(b[i], name))
			return 1;
	return 0;
}

int pragma_knowledge_check(const struct pragma_knowledge *kb, struct pragma_buf *problems)
{
	size_t nd, nb;
	const struct pragma_metric_def *defs = pragma_metric_defs(&nd);
	const char *const *bn = pragma_bottleneck_names(&nb);
	int bad = 0;

#define PROBLEM(...) (pragma_buf_addf(problems, __VA_ARGS__), pragma_buf_addch(problems, '\n'), bad++)
	for (size_t i = 0; i < nd; i++)
		if (!pragma_knowledge_get(kb, PRAGMA_KENTRY_METRIC, defs[i].name))
			PROBLEM("metric %s (registry) has no compendium entry", defs[i].name);
	for (size_t i = 0; i < nb; i++)
		if (!pragma_knowledge_get(kb, PRAGMA_KENTRY_PLAYBOOK, bn[i]))
			PROBLEM("bottleneck %s (diagnosis) has no playbook", bn[i]);
	bn = pragma_gpu_bottleneck_names(&nb);
	for (size_t i = 0; i < nb; i++)
		if (!pragma_knowledge_get(kb, PRAGMA_KENTRY_PLAYBOOK, bn[i]))
			PROBLEM("bottleneck %s (GPU diagnosis) has no playbook", bn[i]);
	for (size_t i = 0; i < kb->n; i++) {
		const struct pragma_kentry *e = &kb->e[i];
		const struct pragma_metric_def *d;
		for (size_t k = 0; k < i; k++)
			if (kb->e[k].kind == e->kind && !strcmp(kb->e[k].name, e->name))
				PROBLEM("%s: %s appears twice", e->file, e->name);
		if (!e->sources[0])
			PROBLEM("%s: %s names no sources", e->file, e->name);
		if (e->kind == PRAGMA_KENTRY_METRIC) {
			d = pragma_metric_find(e->name);
			if (!d) {
				PROBLEM("%s: %s is not a registry metric", e->file, e->name);
				continue;
			}
			if (strcmp(e->unit, d->unit))
				PROBLEM("%s: %s has unit '%s', the registry says '%s'", e->file, e->name, e->unit, d->unit);
			if (strcmp(e->collector, pragma_collector_name(d->collector)))
				PROBLEM("%s: %s has collector '%s', the registry says '%s'", e->file, e->name, e->collector,
					pragma_collector_name(d->collector));
			if (!*e->what || !*e->how || !*e->healthy || !e->remedies[0])
				PROBLEM("%s: %s lacks what, how, healthy or remedies", e->file, e->name);
			for (int k = 0; e->reveals[k]; k++)
				if (!is_bottleneck(e->reveals[k]))
					PROBLEM("%s: %s reveals '%s', which is no bottleneck name", e->file, e->name,
						e->reveals[k]);
		} else if (e->kind == PRAGMA_KENTRY_PLAYBOOK) {
			if (!is_bottleneck(e->name))
				PROBLEM("%s: playbook %s is no bottleneck name the diagnosis produces", e->file, e->name);
			if (!*e->summary || !e->remedies[0] || !e->signs[0])
				PROBLEM("%s: playbook %s lacks summary, signs or remedies", e->file, e->name);
			for (int k = 0; e->metrics[k]; k++)
				if (!pragma_metric_find(e->metrics[k]))
					PROBLEM("%s: playbook %s lists unknown metric %s", e->file, e->name, e->metrics[k]);
		} else if (*e->maps_to && !pragma_metric_find(e->maps_to)) {
			PROBLEM("%s: reference %s maps to unknown metric %s", e->file, e->name, e->maps_to);
		}
	}
#undef PROBLEM
	return bad;
}

/* ---- the compact form ---- */

static void metric_compact(const struct pragma_kentry *e, struct pragma_buf *out)
{
	pragma_buf_addf(out, "- %s (%s): %s", e->name, e->unit, e->what);
	if (*e->healthy)
		pragma_buf_addf(out, " Healthy: %s", e->healthy);
	if (e->reveals[0]) {
		pragma_buf_adds(out, " Reveals:");
		for (int k = 0; e->reveals[k] && k < 3; k++)
			pragma_buf_addf(out, "%s %s", k ? "," : "", e->reveals[k]);
		pragma_buf_addch(out, '.');
	}
	if (*e->caveats)
		pragma_buf_addf(out, " Caveat: %s", e->caveats);
	pragma_buf_addch(out, '\n');
}

static void playbook_compact(const struct pragma_kentry *e, struct pragma_buf *out)
{
	pragma_buf_addf(out, "- %s: %s\n", e->title[0] ? e->title : e->name, e->summary);
	for (int k = 0; e->remedies[k] && k < 4; k++)
		pragma_buf_addf(out, "  * %s\n", e->remedies[k]);
	if (e->pitfalls[0])
		pragma_buf_addf(out, "  ! %s\n", e->pitfalls[0]);
}

#define KP_PLAYBOOKS "Bottlenecks found, and what helps:\n"
#define KP_METRICS "Metrics shown:\n"

/* One entry of the compact form, with the name the line of left-out
 * entries gives it. */
struct kp_entry {
	int playbook;
	const char *name;
	struct pragma_buf text;
};

/* The kept entries under their headers, then the line naming the others. */
static void kp_render(const struct kp_entry *e, size_t n, const int *keep, struct pragma_buf *out)
{
	size_t n_left[2] = { 0, 0 };

	for (int pass = 0; pass < 2; pass++) {
		int header = 0;
		for (size_t i = 0; i < n; i++) {
			if (e[i].playbook != !pass)
				continue;
			if (!keep[i]) {
				n_left[pass]++;
				continue;
			}
			if (!header++)
				pragma_buf_adds(out, pass ? KP_METRICS : KP_PLAYBOOKS);
			pragma_buf_add(out, e[i].text.data, e[i].text.len);
		}
	}
	if (!n_left[0] && !n_left[1])
		return;
	/* By name: the reader can still ask for an entry, or weigh what it
	 * does not see; never a line cut in the middle. */
	pragma_buf_adds(out, "(Left out for length:");
	for (int pass = 0; pass < 2; pass++) {
		size_t k = 0;
		if (!n_left[pass])
			continue;
		pragma_buf_addf(out, "%s %s ", pass && n_left[0] ? ";" : "",
				pass ? (n_left[1] > 1 ? "the metrics" : "the metric") :
				       (n_left[0] > 1 ? "the playbooks for" : "the playbook for"));
		for (size_t i = 0; i < n; i++)
			if (e[i].playbook == !pass && !keep[i])
				pragma_buf_addf(out, "%s%s", k++ ? ", " : "", e[i].name);
	}
	pragma_buf_adds(out, ".)\n");
}

void pragma_knowledge_prompt(const struct pragma_knowledge *kb, const char *const *metrics, size_t n_metrics,
			     const char *const *bottlenecks, size_t n_bottlenecks, size_t max_bytes,
			     struct pragma_buf *out)
{
	struct kp_entry *e = calloc(n_metrics + n_bottlenecks + 1, sizeof(*e));
	int *keep = calloc(n_metrics + n_bottlenecks + 1, sizeof(*keep));
	struct pragma_buf try = PRAGMA_BUF_INIT;
	size_t n = 0;

	if (!e || !keep)
		abort();
	/* Playbooks first: they carry the remedies, and a budget cut should
	 * drop the least important metric definitions (the last ones: callers
	 * list the most relevant first), not the advice. */
	for (int pass = 0; pass < 2; pass++) {
		size_t m = pass ? n_metrics : n_bottlenecks;
		for (size_t i = 0; i < m; i++) {
			const char *name = pass ? metrics[i] : bottlenecks[i];
			const struct pragma_kentry *k =
				pragma_knowledge_get(kb, pass ? PRAGMA_KENTRY_METRIC : PRAGMA_KENTRY_PLAYBOOK, name);
			int dup = 0;
			if (!k)
				continue;
			for (size_t j = 0; j < n; j++)
				dup |= e[j].playbook == !pass && !strcmp(e[j].name, k->name);
			if (dup)
				continue;
			e[n].playbook = !pass;
			e[n].name = k->name;
			pragma_buf_init(&e[n].text);
			if (pass)
				metric_compact(k, &e[n].text);
			else
				playbook_compact(k, &e[n].text);
			n++;
		}
	}
	/* Keep the entries in order while they fit (a smaller one further on
	 * does not jump a more relevant one); then give back the last kept
	 * ones until the line naming the left-out entries fits too. */
	size_t used = 0;
	int headed[2] = { 0, 0 };
	for (size_t i = 0; i < n; i++) {
		size_t header = headed[e[i].playbook] ? 0 : strlen(e[i].playbook ? KP_PLAYBOOKS : KP_METRICS);
		if (max_bytes && used + header + e[i].text.len > max_bytes)
			break;
		keep[i] = 1;
		headed[e[i].playbook] = 1;
		used += e[i].text.len + header;
	}
	for (;;) {
		pragma_buf_reset(&try);
		kp_render(e, n, keep, &try);
		if (!max_bytes || try.len <= max_bytes)
			break;
		size_t last = n;
		for (size_t i = n; i-- > 0;)
			if (keep[i]) {
				last = i;
				break;
			}
		if (last == n) {
			/* Not even the names fit: say how many, if that fits. */
			pragma_buf_reset(&try);
			pragma_buf_addf(&try, "(%zu compendium entries left out for length.)\n", n);
			if (try.len > max_bytes)
				pragma_buf_reset(&try);
			break;
		}
		keep[last] = 0;
	}
	pragma_buf_add(out, try.data, try.len);
	for (size_t i = 0; i < n; i++)
		pragma_buf_release(&e[i].text);
	pragma_buf_release(&try);
	free(e);
	free(keep);
}

void pragma_knowledge_for_profile(const struct pragma_knowledge *kb, const struct pragma_profile *p,
				  const char *const *extra, size_t n_extra, const struct pragma_diagnosis *d,
				  size_t max_bytes, struct pragma_buf *out)
{
	const char **m = calloc(p->n + 1, sizeof(*m)), **b = calloc((d ? d->n : 0) + 1, sizeof(*b));
	size_t nm = 0, nb = 0, nd;
	const struct pragma_metric_def *defs = pragma_metric_defs(&nd);

	if (!m || !b)
		abort();
	/* registry order, as the table shows them */
	for (size_t i = 0; i < nd; i++)
		if (pragma_profile_find(p, defs[i].name) && pragma_profile_shown(defs[i].name, extra, n_extra))
			m[nm++] = defs[i].name;
	for (size_t i = 0; d && i < d->n; i++)
		b[nb++] = d->f[i].bottleneck;
	pragma_knowledge_prompt(kb, m, nm, b, nb, max_bytes, out);
	free(m);
	free(b);
}

static void add_list(struct pragma_buf *out, const char *label, const char **l)
{
	if (!l[0])
		return;
	pragma_buf_addf(out, "%s:\n", label);
	for (int k = 0; l[k]; k++)
		pragma_buf_addf(out, "  - %s\n", l[k]);
}

void pragma_knowledge_format(const struct pragma_kentry *e, struct pragma_buf *out)
{
	static const char *const kinds[] = { "metric", "playbook", "reference" };

	pragma_buf_addf(out, "%s  [%s%s%s%s%s]\n", e->name, kinds[e->kind], *e->unit ? ", " : "", e->unit,
			*e->collector || *e->tool ? ", " : "", *e->collector ? e->collector : e->tool);
	if (*e->title)
		pragma_buf_addf(out, "%s\n", e->title);
	pragma_buf_adds(out, "\n");
#define FIELD(label, s)                                          \
	if (*(s))                                                \
		pragma_buf_addf(out, "%s: %s\n", label, s);
	FIELD("summary", e->summary);
	FIELD("what", e->what);
	FIELD("how measured", e->how);
	FIELD("formula", e->formula);
	FIELD("healthy", e->healthy);
	FIELD("caveats", e->caveats);
	FIELD("maps to", e->maps_to);
#undef FIELD
	add_list(out, "signs", e->signs);
	add_list(out, "reveals", e->reveals);
	add_list(out, "remedies", e->remedies);
	add_list(out, "pitfalls", e->pitfalls);
	add_list(out, "metrics", e->metrics);
	add_list(out, "sources", e->sources);
}
