/* Reply parsers for the Coder and the Conductor (see pragma/reply.h). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pragma/reply.h"

#define MAX_BLOCKS 64

struct block {
	size_t start, end;  /* content byte range in text */
	char lang[16];
	int closed;
};

void pragma_code_reply_init(struct pragma_code_reply *r)
{
	memset(r, 0, sizeof(*r));
	pragma_buf_init(&r->code);
	pragma_buf_init(&r->notes);
	r->chosen = -1;
}

void pragma_code_reply_release(struct pragma_code_reply *r)
{
	pragma_buf_release(&r->code);
	pragma_buf_release(&r->notes);
	for (int i = 0; i < r->n_flags; i++)
		free(r->flags[i]);
	pragma_code_reply_init(r);
}

__attribute__((format(printf, 2, 3)))
static void note(struct pragma_code_reply *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pragma_buf_vaddf(&r->notes, fmt, ap);
	va_end(ap);
	pragma_buf_addch(&r->notes, '\n');
}

/* A fence line: optional indentation, 3+ backticks or tildes. Returns the
 * fence length and char, and where the info string starts. */
static int fence_at(const char *line, size_t n, char *ch, size_t *info)
{
	size_t i = 0, k;

	while (i < n && (line[i] == ' ' || line[i] == '\t') && i < 8)
		i++;
	if (i >= n || (line[i] != '`' && line[i] != '~'))
		return 0;
	*ch = line[i];
	for (k = 0; i + k < n && line[i + k] == *ch; k++)
		;
	if (k < 3)
		return 0;
	*info = i + k;
	return (int)k;
}

static void normalize_lang(const char *s, size_t n, char out[16])
{
	size_t k = 0;

	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (k < n && k < 15 && (isalnum((unsigned char)s[k]) || s[k] == '+' || s[k] == '#'))
		k++;
	char tag[16];
	for (size_t i = 0; i < k; i++)
		tag[i] = (char)tolower((unsigned char)s[i]);
	tag[k] = '\0';
	if (!strcmp(tag, "c") || !strcmp(tag, "h"))
		strcpy(out, "c");
	else if (!strcmp(tag, "cuda") || !strcmp(tag, "cu"))
		strcpy(out, "cuda");
	else if (!strcmp(tag, "cpp") || !strcmp(tag, "c++") || !strcmp(tag, "cxx") || !strcmp(tag, "cc"))
		strcpy(out, "cpp");
	else
		snprintf(out, 16, "%s", tag);
}

static int is_code_lang(const char *lang)
{
	return !*lang || !strcmp(lang, "c") || !strcmp(lang, "cuda") || !strcmp(lang, "cpp");
}

static int find_blocks(const char *text, size_t len, struct block *b, int max)
{
	size_t pos = 0;
	int n = 0;

	while (pos < len && n < max) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t lend = nl ? (size_t)(nl - text) : len;
		char ch;
		size_t info;
		int k = fence_at(text + pos, lend - pos, &ch, &info);

		if (!k) {
			pos = nl ? lend + 1 : len;
			continue;
		}
		/* An opening fence. */
		struct block *bl = &b[n++];
		memset(bl, 0, sizeof(*bl));
		normalize_lang(text + pos + info, lend - pos - info, bl->lang);
		bl->start = nl ? lend + 1 : len;
		pos = bl->start;
		bl->end = len;
		while (pos < len) {
			const char *nl2 = memchr(text + pos, '\n', len - pos);
			size_t lend2 = nl2 ? (size_t)(nl2 - text) : len;
			char ch2;
			size_t info2;
			int k2 = fence_at(text + pos, lend2 - pos, &ch2, &info2);
			int rest_blank = 1;
			for (size_t j = pos + info2; k2 && j < lend2; j++)
				if (!isspace((unsigned char)text[j]))
					rest_blank = 0;
			if (k2 >= k && ch2 == ch && rest_blank) {
				bl->end = pos;
				bl->closed = 1;
				pos = nl2 ? lend2 + 1 : len;
				break;
			}
			pos = nl2 ? lend2 + 1 : len;
		}
	}
	return n;
}

/* Skip comments, strings and character literals; find "pk_forward(...)"
 * followed by "{". */
static int defines_forward(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
			while (i < n && s[i] != '\n')
				i++;
			continue;
		}
		if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
			i += 2;
			while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
				i++;
			i++;
			continue;
		}
		if (s[i] == '"' || s[i] == '\'') {
			char q = s[i++];
			while (i < n && s[i] != q && s[i] != '\n') {
				if (s[i] == '\\')
					i++;
				i++;
			}
			continue;
		}
		if (n - i > 10 && !memcmp(s + i, "pk_forward", 10) &&
		    (i == 0 || !(isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_')) &&
		    !(isalnum((unsigned char)s[i + 10]) || s[i + 10] == '_')) {
			size_t j = i + 10;
			int depth = 0;
			while (j < n && isspace((unsigned char)s[j]))
				j++;
			if (j >= n || s[j] != '(')
				continue;
			for (; j < n; j++) {
				if (s[j] == '(')
					depth++;
				else if (s[j] == ')' && --depth == 0)
					break;
			}
			if (j >= n)
				return 0;
			j++;
			while (j < n && isspace((unsigned char)s[j]))
				j++;
			if (j < n && s[j] == '{')
				return 1;
		}
	}
	return 0;
}

/* Braces balance outside comments and literals: a cut-off body does not. */
static int braces_balanced(const char *s, size_t n)
{
	long depth = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
			while (i < n && s[i] != '\n')
				i++;
		} else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
			i += 2;
			while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
				i++;
			if (i + 1 >= n)
				return 0; /* unterminated comment */
			i++;
		} else if (s[i] == '"' || s[i] == '\'') {
			char q = s[i++];
			while (i < n && s[i] != q && s[i] != '\n') {
				if (s[i] == '\\')
					i++;
				i++;
			}
		} else if (s[i] == '{') {
			depth++;
		} else if (s[i] == '}') {
			depth--;
		}
	}
	return depth == 0;
}

static int valid_ident(const char *s, size_t n)
{
	if (!n || n >= 64 || isdigit((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

static int valid_value(const char *s, size_t n)
{
	if (!n || n >= 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.+-", s[i]))
			return 0;
	return 1;
}

static void parse_flags(struct pragma_code_reply *r, const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		while (i < n && isspace((unsigned char)s[i]))
			i++;
		size_t st = i;
		while (i < n && !isspace((unsigned char)s[i]))
			i++;
		if (i == st)
			break;
		if (r->n_flags >= PRAGMA_REPLY_MAX_FLAGS) {
			note(r, "more than %d flags; the rest are ignored", PRAGMA_REPLY_MAX_FLAGS);
			return;
		}
		if (i - st > 256) {
			note(r, "a flag longer than 256 characters is ignored");
			continue;
		}
		r->flags[r->n_flags] = strndup(s + st, i - st);
		if (!r->flags[r->n_flags])
			abort();
		r->n_flags++;
	}
}

static void parse_tune(struct pragma_code_reply *r, const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		while (i < n && isspace((unsigned char)s[i]))
			i++;
		size_t st = i;
		while (i < n && !isspace((unsigned char)s[i]))
			i++;
		if (i == st)
			break;
		const char *tok = s + st;
		size_t tn = i - st;
		const char *eq = memchr(tok, '=', tn);
		if (!eq || !valid_ident(tok, (size_t)(eq - tok))) {
			note(r, "pragma:tune: '%.*s' is not NAME=v1,v2,...; ignored", (int)(tn > 80 ? 80 : tn), tok);
			continue;
		}
		if (r->n_tunables >= PRAGMA_REPLY_MAX_TUNABLES) {
			note(r, "more than %d tunables; the rest are ignored", PRAGMA_REPLY_MAX_TUNABLES);
			return;
		}
		struct pragma_tunable *t = &r->tunables[r->n_tunables];
		int dup = 0;
		memset(t, 0, sizeof(*t));
		memcpy(t->name, tok, (size_t)(eq - tok));
		for (int k = 0; k < r->n_tunables; k++)
			if (!strcmp(r->tunables[k].name, t->name))
				dup = 1;
		if (dup) {
			note(r, "pragma:tune: %s given twice; the first is kept", t->name);
			continue;
		}
		const char *v = eq + 1, *end = tok + tn;
		while (v < end) {
			const char *comma = memchr(v, ',', (size_t)(end - v));
			size_t vn = comma ? (size_t)(comma - v) : (size_t)(end - v);
			if (!vn) {
				/* "a,,b" or a trailing comma: nothing to take */
			} else if (!valid_value(v, vn)) {
				note(r, "pragma:tune: %s value '%.*s' is not a plain value; ignored", t->name,
				     (int)(vn > 64 ? 64 : vn), v);
			} else if (t->n_values >= PRAGMA_REPLY_MAX_VALUES) {
				note(r, "pragma:tune: %s has more than %d values; the rest are ignored", t->name,
				     PRAGMA_REPLY_MAX_VALUES);
				break;
			} else {
				memcpy(t->values[t->n_values++], v, vn);
			}
			v += vn + (comma ? 1 : 0);
		}
		if (!t->n_values) {
			note(r, "pragma:tune: %s has no values; ignored", t->name);
			continue;
		}
		r->n_tunables++;
	}
}

/* "// pragma:flags ..." and "// pragma:tune ..." lines (block comments too). */
static void parse_directives(struct pragma_code_reply *r)
{
	const char *s = r->code.data;
	size_t n = r->code.len, pos = 0;

	while (pos < n) {
		const char *nl = memchr(s + pos, '\n', n - pos);
		size_t lend = nl ? (size_t)(nl - s) : n;
		const char *l = s + pos;
		size_t ln = lend - pos;

		pos = nl ? lend + 1 : n;
		while (ln && isspace((unsigned char)*l))
			l++, ln--;
		if (ln >= 2 && (!strncmp(l, "//", 2) || !strncmp(l, "/*", 2)))
			l += 2, ln -= 2;
		else
			continue;
		while (ln && isspace((unsigned char)l[ln - 1]))
			ln--;
		if (ln >= 2 && !strncmp(l + ln - 2, "*/", 2))
			ln -= 2;
		while (ln && isspace((unsigned char)*l))
			l++, ln--;
		if (ln >= 12 && !strncasecmp(l, "pragma:flags", 12) && (ln == 12 || isspace((unsigned char)l[12])))
			parse_flags(r, l + 12, ln - 12);
		else if (ln >= 11 && !strncasecmp(l, "pragma:tune", 11) && (ln == 11 || isspace((unsigned char)l[11])))
			parse_tune(r, l + 11, ln - 11);
		else if (ln >= 7 && !strncasecmp(l, "pragma:", 7))
			note(r, "unknown directive '%.*s' ignored", (int)(ln > 60 ? 60 : ln), l);
	}
}

/* A reply with no fences that is plainly C: it defines pk_forward and
 * starts with a preprocessor line, a comment or a declaration. */
static int looks_like_c(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && isspace((unsigned char)s[i]))
		i++;
	return defines_forward(s, n) &&
	       (s[i] == '#' || !strncmp(s + i, "//", 2) || !strncmp(s + i, "/*", 2) || !strncmp(s + i, "int", 3) ||
		!strncmp(s + i, "static", 6) || !strncmp(s + i, "typedef", 7) || !strncmp(s + i, "extern", 6));
}

/* A request shows code numbered ("  7 | x = 1;", lines 1, 2, 3, ...); a
 * reply that copied the numbers into its block gets them taken off. Only
 * when every line carries the next number: no C file reads like that. */
static void strip_listing_numbers(struct pragma_code_reply *out)
{
	struct pragma_buf plain = PRAGMA_BUF_INIT;
	const char *p = out->code.data, *end = p + out->code.len;
	long want = 1;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *q = p;
		long n = 0;
		if (!eol)
			eol = end;
		while (q < eol && *q == ' ')
			q++;
		if (q == eol && eol == end)
			break; /* a last line of spaces only */
		while (q < eol && *q >= '0' && *q <= '9' && n < 1000000)
			n = n * 10 + (*q++ - '0');
		if (n != want || eol - q < 2 || q[0] != ' ' || q[1] != '|')
			goto out;
		q += 2;
		if (q < eol && *q == ' ')
			q++;
		pragma_buf_add(&plain, q, (size_t)(eol - q));
		if (eol < end)
			pragma_buf_addch(&plain, '\n');
		want++;
		p = eol + 1;
	}
	if (want < 3)
		goto out;
	pragma_buf_reset(&out->code);
	pragma_buf_add(&out->code, plain.data, plain.len);
	note(out, "the code block carried the request's line numbers (\"N | \"); they were taken off");
out:
	pragma_buf_release(&plain);
}

int pragma_reply_parse_code(const char *text, size_t len, int cut_by_limit, struct pragma_code_reply *out,
			    struct pragma_err *err)
{
	struct block b[MAX_BLOCKS];
	int nb, pick = -1, n_def = 0;

	pragma_code_reply_release(out);
	if (!text)
		text = "", len = 0;
	nb = find_blocks(text, len, b, MAX_BLOCKS);
	out->n_blocks = nb;
	if (!nb) {
		if (looks_like_c(text, len)) {
			pragma_buf_add(&out->code, text, len);
			out->defines_forward = 1;
			note(out, "the reply had no fenced code block; took the whole reply as the kernel");
			if (cut_by_limit || !braces_balanced(text, len)) {
				out->truncated = 1;
				return pragma_err_set(err, PRAGMA_E_NEGATIVE,
						      "the kernel was cut off%s", cut_by_limit ? " by the token limit" : "");
			}
			parse_directives(out);
			return 0;
		}
		if (cut_by_limit)
			return pragma_err_set(err, PRAGMA_E_NEGATIVE, "the reply was cut off by the token limit before "
					      "any code block began");
		return pragma_err_set(err, PRAGMA_E_NEGATIVE, "the reply holds no code block (expected one ```c "
				      "block with the whole kernel)");
	}
	for (int i = 0; i < nb; i++) {
		if (defines_forward(text + b[i].start, b[i].end - b[i].start)) {
			n_def++;
			pick = i; /* the last definition is the final answer */
		}
	}
	if (n_def > 1)
		note(out, "%d code blocks define pk_forward; took the last one", n_def);
	if (pick < 0) {
		/* No definition anywhere: the largest code-like block, flagged. */
		size_t best = 0;
		for (int i = 0; i < nb; i++)
			if (is_code_lang(b[i].lang) && b[i].end - b[i].start >= best) {
				best = b[i].end - b[i].start;
				pick = i;
			}
		if (pick < 0)
			pick = nb - 1;
		note(out, "no code block defines pk_forward");
	}
	out->chosen = pick;
	snprintf(out->lang, sizeof(out->lang), "%s", b[pick].lang);
	if (!is_code_lang(b[pick].lang))
		note(out, "the code block is tagged '%s', not c or cuda", b[pick].lang);
	pragma_buf_add(&out->code, text + b[pick].start, b[pick].end - b[pick].start);
	strip_listing_numbers(out);
	out->defines_forward = pick >= 0 && defines_forward(out->code.data, out->code.len);
	if (!b[pick].closed) {
		/* No closing fence: cut off, unless the code is visibly whole. */
		if (cut_by_limit || !braces_balanced(out->code.data, out->code.len) || !out->defines_forward) {
			out->truncated = 1;
			return pragma_err_set(err, PRAGMA_E_NEGATIVE, "the code block was cut off%s (no closing fence, "
					      "%zu characters arrived)", cut_by_limit ? " by the token limit" : "",
					      out->code.len);
		}
		note(out, "the code block has no closing fence");
	} else if (cut_by_limit && pick == nb - 1 && !braces_balanced(out->code.data, out->code.len)) {
		out->truncated = 1;
		return pragma_err_set(err, PRAGMA_E_NEGATIVE, "the code block was cut off by the token limit");
	}
	parse_directives(out);
	return 0;
}

/* ---- Conductor --------------------------------------------------------- */

void pragma_conductor_reply_init(struct pragma_conductor_reply *r)
{
	memset(r, 0, sizeof(*r));
	pragma_buf_init(&r->verdict_text);
	pragma_buf_init(&r->bottleneck);
	pragma_buf_init(&r->actions);
	pragma_buf_init(&r->algorithm);
	pragma_buf_init(&r->summary);
	pragma_buf_init(&r->missing);
}

void pragma_conductor_reply_release(struct pragma_conductor_reply *r)
{
	pragma_buf_release(&r->verdict_text);
	pragma_buf_release(&r->bottleneck);
	pragma_buf_release(&r->actions);
	pragma_buf_release(&r->algorithm);
	pragma_buf_release(&r->summary);
	pragma_buf_release(&r->missing);
	for (int i = 0; i < r->n_metrics; i++)
		free(r->metrics[i]);
	pragma_conductor_reply_init(r);
}

const char *pragma_verdict_name(enum pragma_verdict v)
{
	switch (v) {
	case PRAGMA_VERDICT_IMPROVEMENT:
		return "improvement";
	case PRAGMA_VERDICT_REGRESSION:
		return "regression";
	case PRAGMA_VERDICT_FAILURE:
		return "failure";
	case PRAGMA_VERDICT_NO_CHANGE:
		return "no measurable change";
	case PRAGMA_VERDICT_UNKNOWN:
		break;
	}
	return "unknown";
}

static const struct {
	const char *name;
	unsigned bit;
} headings[] = {
	{ "verdict", PRAGMA_SECTION_VERDICT },     { "bottleneck", PRAGMA_SECTION_BOTTLENECK },
	{ "bottlenecks", PRAGMA_SECTION_BOTTLENECK }, { "actions", PRAGMA_SECTION_ACTIONS },
	{ "action", PRAGMA_SECTION_ACTIONS },      { "instructions", PRAGMA_SECTION_ACTIONS },
	{ "algorithm", PRAGMA_SECTION_ALGORITHM }, { "metrics", PRAGMA_SECTION_METRICS },
	{ "summary", PRAGMA_SECTION_SUMMARY },
};

/* A heading line: [#]* [-*+ ]? [**|__]? NAME [**|__]? (":"|" -"|"—")? [**|__]? rest.
 * Returns the section bit and where the rest of the line starts, or 0. */
static unsigned heading(const char *l, size_t n, size_t *rest)
{
	size_t i = 0;
	int hashes = 0, emph = 0;

	while (i < n && (l[i] == ' ' || l[i] == '\t'))
		i++;
	while (i < n && l[i] == '#')
		i++, hashes++;
	while (i < n && l[i] == ' ')
		i++;
	if (!hashes && i + 1 < n && strchr("-*+", l[i]) && l[i + 1] == ' ')
		i += 2;
	while (i < n && (l[i] == '*' || l[i] == '_'))
		i++, emph++;
	for (size_t h = 0; h < sizeof(headings) / sizeof(headings[0]); h++) {
		size_t k = strlen(headings[h].name), j = i + k;
		int colon = 0;
		if (n - i < k || strncasecmp(l + i, headings[h].name, k))
			continue;
		if (j < n && isalnum((unsigned char)l[j]))
			continue;
		while (j < n && (l[j] == '*' || l[j] == '_' || l[j] == ' '))
			j++;
		if (j < n && l[j] == ':') {
			colon = 1;
			j++;
		} else if (j + 1 < n && l[j] == '-' && l[j - 1] == ' ') {
			colon = 1;
			j++;
		}
		/* Without a colon only a Markdown heading or a bold line counts
		 * ("Actions are..." in prose does not). */
		if (!colon && !hashes && !emph)
			continue;
		if (!colon && j < n && !hashes)
			continue;
		while (j < n && (l[j] == '*' || l[j] == '_' || l[j] == ' '))
			j++;
		*rest = j;
		return headings[h].bit;
	}
	return 0;
}

static struct pragma_buf *section_buf(struct pragma_conductor_reply *r, unsigned bit, struct pragma_buf *metrics)
{
	switch (bit) {
	case PRAGMA_SECTION_VERDICT:
		return &r->verdict_text;
	case PRAGMA_SECTION_BOTTLENECK:
		return &r->bottleneck;
	case PRAGMA_SECTION_ACTIONS:
		return &r->actions;
	case PRAGMA_SECTION_ALGORITHM:
		return &r->algorithm;
	case PRAGMA_SECTION_SUMMARY:
		return &r->summary;
	default:
		return metrics;
	}
}

static void trim_buf(struct pragma_buf *b)
{
	size_t i = 0;

	pragma_buf_rtrim(b);
	while (i < b->len && isspace((unsigned char)b->data[i]))
		i++;
	if (i) {
		memmove(b->data, b->data + i, b->len - i);
		pragma_buf_setlen(b, b->len - i);
	}
}

static enum pragma_verdict classify(const char *s)
{
	static const struct {
		const char *word;
		enum pragma_verdict v;
	} words[] = {
		{ "improv", PRAGMA_VERDICT_IMPROVEMENT }, { "faster", PRAGMA_VERDICT_IMPROVEMENT },
		{ "better", PRAGMA_VERDICT_IMPROVEMENT }, { "regress", PRAGMA_VERDICT_REGRESSION },
		{ "slower", PRAGMA_VERDICT_REGRESSION },  { "worse", PRAGMA_VERDICT_REGRESSION },
		{ "fail", PRAGMA_VERDICT_FAILURE },       { "error", PRAGMA_VERDICT_FAILURE },
		{ "incorrect", PRAGMA_VERDICT_FAILURE },  { "wrong", PRAGMA_VERDICT_FAILURE },
		{ "crash", PRAGMA_VERDICT_FAILURE },      { "no measurable", PRAGMA_VERDICT_NO_CHANGE },
		{ "no significant", PRAGMA_VERDICT_NO_CHANGE }, { "no change", PRAGMA_VERDICT_NO_CHANGE },
		{ "unchanged", PRAGMA_VERDICT_NO_CHANGE }, { "not distinguishable", PRAGMA_VERDICT_NO_CHANGE },
		{ "indistinguishable", PRAGMA_VERDICT_NO_CHANGE }, { "neutral", PRAGMA_VERDICT_NO_CHANGE },
	};
	const char *best = NULL;
	enum pragma_verdict v = PRAGMA_VERDICT_UNKNOWN;

	/* The first keyword written wins: "Improvement (not a regression)". */
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		const char *p = strcasestr(s, words[i].word);
		if (p && (!best || p < best)) {
			best = p;
			v = words[i].v;
		}
	}
	return v;
}

static void parse_metrics(struct pragma_conductor_reply *r, const char *s)
{
	const char *p = s;

	while (*p) {
		while (*p && (isspace((unsigned char)*p) || strchr(",;`*-", *p)))
			p++;
		const char *st = p;
		while (*p && (isalnum((unsigned char)*p) || strchr("._:-/", *p)))
			p++;
		size_t n = (size_t)(p - st);
		if (!n) {
			if (*p)
				p++; /* a character outside names: skip it */
			continue;
		}
		if (n == 4 && !strncasecmp(st, "none", 4))
			continue;
		/* Metric names carry a namespace ("cpu.ipc") or are perf:EVENT;
		 * plain words are prose around the list. */
		if (!memchr(st, '.', n) && !memchr(st, ':', n))
			continue;
		if (r->n_metrics >= PRAGMA_REPLY_MAX_METRICS || n > 128)
			continue;
		int dup = 0;
		for (int i = 0; i < r->n_metrics; i++)
			if (strlen(r->metrics[i]) == n && !strncmp(r->metrics[i], st, n))
				dup = 1;
		if (dup)
			continue;
		while (n && (st[n - 1] == '.' || st[n - 1] == ':'))
			n--;
		if (!n)
			continue;
		r->metrics[r->n_metrics] = strndup(st, n);
		if (!r->metrics[r->n_metrics])
			abort();
		r->n_metrics++;
	}
}

int pragma_reply_parse_conductor(const char *text, size_t len, struct pragma_conductor_reply *out,
				 struct pragma_err *err)
{
	struct pragma_buf metrics = PRAGMA_BUF_INIT;
	struct pragma_buf *cur = NULL;
	size_t pos = 0;
	int in_fence = 0;

	pragma_conductor_reply_release(out);
	if (!text)
		text = "", len = 0;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t lend = nl ? (size_t)(nl - text) : len, rest, n = lend - pos;
		const char *l = text + pos;
		char ch;
		size_t info;
		unsigned bit;

		pos = nl ? lend + 1 : len;
		if (fence_at(l, n, &ch, &info))
			in_fence = !in_fence;
		bit = in_fence ? 0 : heading(l, n, &rest);
		if (bit && !(out->found & bit)) {
			out->found |= bit;
			cur = section_buf(out, bit, &metrics);
			pragma_buf_add(cur, l + rest, n - rest);
			pragma_buf_addch(cur, '\n');
			continue;
		}
		if (bit) {
			/* A repeated heading: keep appending to the first. */
			cur = section_buf(out, bit, &metrics);
			pragma_buf_add(cur, l + rest, n - rest);
			pragma_buf_addch(cur, '\n');
			continue;
		}
		if (cur) {
			pragma_buf_add(cur, l, n);
			pragma_buf_addch(cur, '\n');
		}
	}
	trim_buf(&out->verdict_text);
	trim_buf(&out->bottleneck);
	trim_buf(&out->actions);
	trim_buf(&out->algorithm);
	trim_buf(&out->summary);
	parse_metrics(out, metrics.data);
	pragma_buf_release(&metrics);
	/* "Algorithm: none" means no different approach. */
	if (!strcasecmp(out->algorithm.data, "none") || !strcasecmp(out->algorithm.data, "none.") ||
	    !strcasecmp(out->algorithm.data, "n/a"))
		pragma_buf_reset(&out->algorithm);
	out->verdict = classify(out->verdict_text.data);

	static const struct {
		unsigned bit;
		const char *name;
	} required[] = { { PRAGMA_SECTION_VERDICT, "Verdict" },
			 { PRAGMA_SECTION_BOTTLENECK, "Bottleneck" },
			 { PRAGMA_SECTION_ACTIONS, "Actions" } };
	for (size_t i = 0; i < 3; i++) {
		if (out->found & required[i].bit)
			continue;
		if (out->missing.len)
			pragma_buf_adds(&out->missing, ", ");
		pragma_buf_adds(&out->missing, required[i].name);
	}
	if ((out->found & PRAGMA_SECTION_VERDICT) && out->verdict == PRAGMA_VERDICT_UNKNOWN) {
		if (out->missing.len)
			pragma_buf_adds(&out->missing, ", ");
		pragma_buf_adds(&out->missing, "a verdict word (improvement, regression, no measurable change or failure)");
	}
	if (!out->found)
		return pragma_err_set(err, PRAGMA_E_NEGATIVE, "the Conductor reply has none of the sections Verdict:, "
				      "Bottleneck:, Actions:");
	return 0;
}
