/*
 * The ptxas resource report (nvcc -Xptxas -v), per entry function:
 *
 *   ptxas info    : Compiling entry function '_Z5scalePffl' for 'sm_80'
 *   ptxas info    : Function properties for _Z5scalePffl
 *       8 bytes stack frame, 12 bytes spill stores, 12 bytes spill loads
 *   ptxas info    : Used 24 registers, used 1 barriers, 8320 bytes smem, 380 bytes cmem[0]
 *
 * Older toolkits omit "used N barriers"; newer ones add "cumulative stack
 * size" and "Compile time" lines. Device (non-entry) functions have their
 * own "Function properties" block, which belongs to no kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_int.h"
#include "pragma/cuda.h"

static const char *after(const char *s, const char *prefix)
{
	const char *p = strstr(s, prefix);

	return p ? p + strlen(prefix) : NULL;
}

/* Copy the quoted name after `prefix` ('name' or a bare word). */
static int quoted(const char *line, const char *prefix, char *out, size_t len)
{
	const char *p = after(line, prefix);
	size_t n;

	if (!p)
		return 0;
	while (*p == ' ')
		p++;
	if (*p == '\'') {
		p++;
		n = strcspn(p, "'");
	} else {
		n = strcspn(p, " \t\r\n");
	}
	if (!n)
		return 0;
	snprintf(out, len, "%.*s", (int)(n < len - 1 ? n : len - 1), p);
	return 1;
}

/* "8 bytes stack frame, 12 bytes spill stores, 12 bytes spill loads" */
static void frame_line(const char *line, struct pragma_ptxas_kernel *k)
{
	long st = 0, ss = 0, sl = 0;

	if (sscanf(line, " %ld bytes stack frame, %ld bytes spill stores, %ld bytes spill loads", &st, &ss, &sl) >= 1) {
		k->stack_bytes = st;
		k->spill_stores = ss;
		k->spill_loads = sl;
	}
}

/* "Used 24 registers, used 1 barriers, 8320 bytes smem, 380 bytes cmem[0]" */
static void used_line(const char *line, struct pragma_ptxas_kernel *k)
{
	char buf[512], *save = NULL;
	const char *p = after(line, "Used ");

	if (!p)
		return;
	snprintf(buf, sizeof(buf), "Used %s", p);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		long v;
		char what[64] = "";
		while (*t == ' ')
			t++;
		if (sscanf(t, "Used %ld registers", &v) == 1)
			k->registers = (int)v;
		else if (sscanf(t, "used %ld barriers", &v) == 1)
			k->barriers = (int)v;
		else if (sscanf(t, "%ld bytes %63s", &v, what) == 2) {
			if (!strcmp(what, "smem"))
				k->smem_bytes = v;
			else if (!strcmp(what, "cmem[0]"))
				k->cmem_bytes = v;
		}
	}
}

int pragma_ptxas_parse(const char *text, struct pragma_ptxas_report *r)
{
	const char *p = text;
	int cur = -1, frame_for = -2; /* -2: no properties block open; -1: one for a device function */
	long gmem = 0;

	memset(r, 0, sizeof(*r));
	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);
		char line[1024], name[256];

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) - 1 ? n : sizeof(line) - 1), p);
		p = eol ? eol + 1 : NULL;
		if (strstr(line, "ptxas warning")) {
			const char *w = after(line, ": ");
			r->warnings = realloc(r->warnings, sizeof(char *) * (size_t)(r->n_warnings + 1));
			if (!r->warnings)
				abort();
			r->warnings[r->n_warnings++] = strdup(w ? w : line);
			continue;
		}
		if (!strstr(line, "ptxas") && frame_for > -2 && strstr(line, "bytes stack frame")) {
			if (frame_for >= 0)
				frame_line(line, &r->k[frame_for]);
			frame_for = -2;
			continue;
		}
		if (!strstr(line, "ptxas info"))
			continue;
		if (quoted(line, "Compiling entry function", name, sizeof(name))) {
			char arch[16] = "";
			const char *a = after(line, "' for ");
			if (a)
				quoted(a - 1, " ", arch, sizeof(arch));
			r->k = realloc(r->k, sizeof(*r->k) * (size_t)(r->n + 1));
			if (!r->k)
				abort();
			cur = r->n++;
			memset(&r->k[cur], 0, sizeof(r->k[cur]));
			snprintf(r->k[cur].name, sizeof(r->k[cur].name), "%s", name);
			snprintf(r->k[cur].arch, sizeof(r->k[cur].arch), "%s", arch);
			r->k[cur].gmem_bytes = gmem;
			frame_for = -2;
		} else if (quoted(line, "Function properties for", name, sizeof(name))) {
			frame_for = cur >= 0 && !strcmp(name, r->k[cur].name) ? cur : -1;
		} else if (strstr(line, "Used ") && strstr(line, "registers")) {
			if (cur >= 0)
				used_line(line, &r->k[cur]);
		} else if (strstr(line, "bytes gmem")) {
			const char *g = after(line, ": ");
			gmem = g ? strtol(g, NULL, 10) : 0;
		}
	}
	return 0;
}

void pragma_ptxas_release(struct pragma_ptxas_report *r)
{
	for (int i = 0; i < r->n_warnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	free(r->k);
	memset(r, 0, sizeof(*r));
}

void pragma_ptxas_metrics(const struct pragma_ptxas_report *r, struct pragma_profile *p)
{
	const char *arch = r->n ? r->k[r->n - 1].arch : "";
	long regs = 0, smem = 0, stack = 0, spills = 0;
	int kernels = 0;

	if (!r->n) {
		pragma_profile_unavailable(p, "static", "the ptxas report names no kernel (no __global__ function?)");
		return;
	}
	/* One architecture: the one built last (the device's). */
	for (int i = 0; i < r->n; i++) {
		const struct pragma_ptxas_kernel *k = &r->k[i];
		if (strcmp(k->arch, arch))
			continue;
		kernels++;
		if (k->registers > regs)
			regs = k->registers;
		if (k->smem_bytes > smem)
			smem = k->smem_bytes;
		if (k->stack_bytes > stack)
			stack = k->stack_bytes;
		if (k->spill_stores + k->spill_loads > spills)
			spills = k->spill_stores + k->spill_loads;
		pragma_profile_note(p,
				    "ptxas (%s): %s uses %d registers/thread, %ld B static shared memory, %ld B stack, "
				    "%ld B spill stores and %ld B spill loads per thread",
				    k->arch, k->name, k->registers, k->smem_bytes, k->stack_bytes, k->spill_stores,
				    k->spill_loads);
	}
	pragma_profile_set(p, "static.gpu_kernels", kernels, "static");
	pragma_profile_set(p, "static.gpu_registers", (double)regs, "static");
	pragma_profile_set(p, "static.gpu_smem_bytes", (double)smem, "static");
	pragma_profile_set(p, "static.gpu_stack_bytes", (double)stack, "static");
	pragma_profile_set(p, "static.gpu_spill_bytes", (double)spills, "static");
}

json_t *pragma_ptxas_json(const char *log)
{
	struct pragma_ptxas_report r;
	json_t *a = json_array(), *o;

	pragma_ptxas_parse(log ? log : "", &r);
	for (int i = 0; i < r.n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:i}", "kernel", r.k[i].name,
						   "arch", r.k[i].arch, "registers", r.k[i].registers, "smem_bytes",
						   (json_int_t)r.k[i].smem_bytes, "stack_bytes", (json_int_t)r.k[i].stack_bytes,
						   "spill_stores", (json_int_t)r.k[i].spill_stores, "spill_loads",
						   (json_int_t)r.k[i].spill_loads, "barriers", r.k[i].barriers));
	o = json_pack("{s:o}", "kernels", a);
	if (r.n_warnings) {
		json_t *w = json_array();
		for (int i = 0; i < r.n_warnings; i++)
			json_array_append_new(w, json_string(r.warnings[i]));
		json_object_set_new(o, "warnings", w);
	}
	pragma_ptxas_release(&r);
	return o;
}

void pragma_ptxas_text(const char *log, const char *indent, struct pragma_buf *out)
{
	struct pragma_ptxas_report r;

	pragma_ptxas_parse(log ? log : "", &r);
	for (int i = 0; i < r.n; i++)
		pragma_buf_addf(out, "%s%s (%s): %d registers, %ld B shared, %ld B stack, %ld/%ld B spill stores/loads\n",
				i && indent ? indent : "", r.k[i].name, r.k[i].arch, r.k[i].registers, r.k[i].smem_bytes, r.k[i].stack_bytes,
				r.k[i].spill_stores, r.k[i].spill_loads);
	pragma_ptxas_release(&r);
}
