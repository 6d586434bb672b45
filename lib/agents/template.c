#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/fs.h"
#include "pragma/template.h"

static void var_text(json_t *vars, const char *name, size_t len, struct pragma_buf *out)
{
	char key[128];
	json_t *v;

	if (len >= sizeof(key))
		return;
	memcpy(key, name, len);
	key[len] = '\0';
	v = json_object_get(vars, key);
	if (json_is_string(v))
		pragma_buf_add(out, json_string_value(v), json_string_length(v));
	else if (json_is_integer(v))
		pragma_buf_addf(out, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		pragma_buf_addf(out, "%g", json_real_value(v));
}

static int var_set(json_t *vars, const char *name, size_t len)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;
	char key[128];
	int set;

	if (len < sizeof(key)) {
		memcpy(key, name, len);
		key[len] = '\0';
		if (json_is_boolean(json_object_get(vars, key)))
			return json_is_true(json_object_get(vars, key));
	}
	var_text(vars, name, len, &b);
	set = b.len > 0;
	pragma_buf_release(&b);
	return set;
}

/* Whether AT starts a line of the template that begins at BASE. */
static int at_line_start(const char *base, const char *at)
{
	return at == base || at[-1] == '\n';
}

/* num: the number the last {{+}} printed. Sections are numbered as they
 * are rendered, so a request that leaves one out still counts 1, 2, 3 (the
 * Conductor's first request began at "## 2." when it had no best yet). */
static int render(const char *base, const char *p, const char *end, json_t *vars, struct pragma_buf *out,
		  struct pragma_err *err, int depth, int *num)
{
	if (depth > 16)
		return pragma_err_set(err, PRAGMA_E_INPUT, "template sections nested too deep");
	while (p < end) {
		const char *open = strstr(p, "{{");
		if (!open || open >= end) {
			pragma_buf_add(out, p, (size_t)(end - p));
			break;
		}
		pragma_buf_add(out, p, (size_t)(open - p));
		const char *close = strstr(open, "}}");
		if (!close || close >= end)
			return pragma_err_set(err, PRAGMA_E_INPUT, "template: unclosed '{{'");
		const char *name = open + 2;
		size_t len = (size_t)(close - name);
		if (*name == '#' || *name == '^') {
			char endtag[140];
			snprintf(endtag, sizeof(endtag), "{{/%.*s}}", (int)(len - 1), name + 1);
			const char *body = close + 2, *stop = strstr(body, endtag);
			if (!stop || stop >= end)
				return pragma_err_set(err, PRAGMA_E_INPUT, "template: no %s", endtag);
			/* A section's own line breaks go with it: a tag that starts
			 * its line takes the line break after it, and a skipped
			 * section that started its line takes the line's break;
			 * a section inside a line of text leaves the text's
			 * break alone ("... counts.{{/profiled}}\n3." keeps it). */
			int shown = var_set(vars, name + 1, len - 1) == (*name == '#');
			int open_bol = at_line_start(base, open);
			if (open_bol && *body == '\n')
				body++;
			if (shown && render(base, body, stop, vars, out, err, depth + 1, num) < 0)
				return -1;
			p = stop + strlen(endtag);
			if (*p == '\n' && (at_line_start(base, stop) || (open_bol && !shown)))
				p++;
		} else if (len == 1 && *name == '+') {
			pragma_buf_addf(out, "%d", ++*num);
			p = close + 2;
		} else if (*name == '/') {
			return pragma_err_set(err, PRAGMA_E_INPUT, "template: stray '{{%.*s}}'", (int)len, name);
		} else {
			var_text(vars, name, len, out);
			p = close + 2;
		}
	}
	return 0;
}

int pragma_template_render(const char *tmpl, json_t *vars, struct pragma_buf *out, struct pragma_err *err)
{
	int num = 0;

	return render(tmpl, tmpl, tmpl + strlen(tmpl), vars, out, err, 0, &num);
}

int pragma_template_render_file(const char *name, json_t *vars, struct pragma_buf *out, struct pragma_err *err)
{
	struct pragma_buf path = PRAGMA_BUF_INIT, text = PRAGMA_BUF_INIT;
	const char *dir = getenv("PRAGMA_PROMPTS");
	int ret = -1;

	if (dir && *dir) {
		pragma_buf_addf(&path, "%s/%s", dir, name);
	} else {
		struct pragma_buf d = PRAGMA_BUF_INIT;
		if (pragma_data_path("prompts", &d, err) < 0)
			return -1;
		pragma_buf_addf(&path, "%s/%s", d.data, name);
		pragma_buf_release(&d);
	}
	if (pragma_read_file(path.data, &text, 1 << 20, err) < 0)
		goto out;
	if (pragma_template_render(text.data, vars, out, err) < 0) {
		pragma_err_prefix(err, "%s", path.data);
		goto out;
	}
	ret = 0;
out:
	pragma_buf_release(&path);
	pragma_buf_release(&text);
	return ret;
}
