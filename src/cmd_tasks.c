#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "pragma/fs.h"
#include "pragma/task.h"
#include "pragma/tensor.h"

static const char usage[] =
	"usage: pragma tasks list [DIR] [--json]\n"
	"       pragma tasks show TASK [--set NAME=VALUE]... [--json]\n"
	"\n"
	"list: the tasks in DIR (default: the built-in suites tasks/cpu-l1 and tasks/c),\n"
	"      with kind, category and description; nothing is run.\n"
	"show: one task: category, inputs and outputs with shapes, FLOPs, minimal bytes,\n"
	"      tolerance and source. KernelBench problems run through the PyTorch bridge\n"
	"      once (cached). TASK is a path or a built-in task's name.\n";

static void human_size(double b, char *out, size_t len)
{
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;

	while (b >= 1024 && i < 4) {
		b /= 1024;
		i++;
	}
	snprintf(out, len, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

static void human_count(double x, char *out, size_t len)
{
	if (x < 0)
		snprintf(out, len, "unknown");
	else if (x >= 1e9)
		snprintf(out, len, "%.2f G", x / 1e9);
	else if (x >= 1e6)
		snprintf(out, len, "%.2f M", x / 1e6);
	else
		snprintf(out, len, "%.0f", x);
}

static int list(struct cli_opts *o)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *dirs[2];
	struct pragma_buf d1 = PRAGMA_BUF_INIT, d2 = PRAGMA_BUF_INIT;
	json_t *arr = json_array();
	int nd = 0, total = 0;

	if (o->n_positional > 1) {
		dirs[nd++] = o->positional[1];
	} else {
		if (pragma_data_path("tasks/cpu-l1", &d1, &err) == 0)
			dirs[nd++] = d1.data;
		if (pragma_data_path("tasks/c", &d2, &err) == 0)
			dirs[nd++] = d2.data;
		if (!nd)
			return o->json ? cli_error_json(&err) : cli_error(&err);
	}
	if (!o->json)
		printf("%-36s %-12s %-18s %s\n", "TASK", "KIND", "CATEGORY", "DESCRIPTION");
	for (int k = 0; k < nd; k++) {
		struct pragma_task_brief *b;
		int n;

		if (pragma_task_scan(dirs[k], &b, &n, &err) < 0) {
			json_decref(arr);
			return o->json ? cli_error_json(&err) : cli_error(&err);
		}
		for (int i = 0; i < n; i++) {
			if (o->json)
				json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", b[i].name, "path",
								     b[i].path, "kind", b[i].kind, "category",
								     b[i].category[0] ? b[i].category : "unknown",
								     "description", b[i].description));
			else
				printf("%-36s %-12s %-18s %.70s\n", b[i].name, b[i].kind,
				       b[i].category[0] ? b[i].category : "(inferred)", b[i].description);
		}
		total += n;
		free(b);
	}
	if (o->json)
		cli_print_json(json_pack("{s:i, s:o}", "count", total, "tasks", arr));
	else {
		json_decref(arr);
		printf("\n%d tasks\n", total);
	}
	pragma_buf_release(&d1);
	pragma_buf_release(&d2);
	return 0;
}

static void print_specs(const char *title, const struct pragma_tensor_spec *s, int n)
{
	printf("%s:\n", title);
	for (int i = 0; i < n; i++) {
		char shape[160], size[32];
		double bytes = (double)pragma_shape_numel(s[i].shape, s[i].ndim) * (double)pragma_dtype_size(s[i].dtype);
		human_size(bytes, size, sizeof(size));
		printf("  %2d  %-28s %-7s %-9s %-24s %s\n", i, s[i].name, s[i].role, pragma_dtype_name(s[i].dtype),
		       pragma_shape_str(s[i].shape, s[i].ndim, shape, sizeof(shape)), size);
	}
}

static int show(struct cli_opts *o)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_task t;
	char *path;
	char fl[32], by[32];

	if (o->n_positional != 2)
		return cli_usage_error("tasks show needs one TASK\n%s", usage);
	if (pragma_task_resolve(o->positional[1], &path, &err) < 0)
		return o->json ? cli_error_json(&err) : cli_error(&err);
	if (pragma_task_load(path, o->sets, o->n_sets, &t, &err) < 0) {
		free(path);
		return o->json ? cli_error_json(&err) : cli_error(&err);
	}
	free(path);
	if (o->json) {
		cli_print_json(pragma_task_json(&t));
	} else {
		human_count(t.flops, fl, sizeof(fl));
		human_size(t.bytes, by, sizeof(by));
		printf("task:        %s (%s)\n", t.name, t.kind == PRAGMA_TASK_NATIVE ? "native C" : "KernelBench");
		printf("path:        %s\n", t.path);
		printf("category:    %s\n", t.category);
		if (t.description && *t.description)
			printf("description: %s\n", t.description);
		printf("FLOPs:       %s (%s)\n", fl, t.flops_method);
		printf("min bytes:   %s (inputs read once, outputs written once)\n", by);
		if (t.flops > 0 && t.bytes > 0)
			printf("intensity:   %.3f FLOP/byte\n", t.flops / t.bytes);
		printf("tolerance:   atol %g, rtol %g (float outputs; integers exact)\n", t.atol, t.rtol);
		printf("runtime:     %s\n", t.runtime);
		if (t.kind == PRAGMA_TASK_NATIVE)
			printf("baseline:    %s\n", t.has_baseline_c ? "baseline.c" : "reference.c as written");
		for (int i = 0; i < t.n_overrides; i++)
			printf("override:    %s\n", t.overrides[i]);
		print_specs("inputs", t.inputs, t.n_inputs);
		print_specs("outputs", t.outputs, t.n_outputs);
		if (t.n_facts) {
			struct pragma_buf f = PRAGMA_BUF_INIT;
			pragma_task_facts_text(&t, &f);
			printf("\nsettings (not inputs; what the forward pass depends on)\n%s", f.data);
			pragma_buf_release(&f);
		}
		printf("\n--- %s ---\n%s%s", t.source_name, t.source,
		       t.source[0] && t.source[strlen(t.source) - 1] != '\n' ? "\n" : "");
	}
	pragma_task_release(&t);
	return 0;
}

int cmd_tasks(int argc, char **argv)
{
	struct cli_opts o;
	int rc;

	if (cli_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	if ((rc = cli_parse(argc, argv, &o, NULL, NULL)))
		return rc;
	if (!o.n_positional || !strcmp(o.positional[0], "list"))
		return list(&o);
	if (!strcmp(o.positional[0], "show"))
		return show(&o);
	return cli_usage_error("tasks: unknown subcommand '%s'\n%s", o.positional[0], usage);
}
