#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "pragma/fs.h"
#include "pragma/task.h"
#include "pragma/tensor.h"
#include "pragma/verify.h"

static const char usage[] =
	"usage: pragma tasks list [SUITE|DIR] [--check] [--json]\n"
	"       pragma tasks show TASK [--set NAME=VALUE]... [--no-check] [--json]\n"
	"\n"
	"list: the tasks in DIR or a built-in SUITE (cpu-l1, c, gpu-l1; default: all\n"
	"      of them), with kind, category and description; nothing is run.\n"
	"      --check audits each task's correctness check instead: per output, the\n"
	"      tolerance on input set 0 and whether it refuses trivial answers (zeros,\n"
	"      the constant mean, the reference permuted, the reference x (1 + 10 rtol)).\n"
	"      Exit 1 when an output's check does not and its task states no reason\n"
	"      (tolerance.weak_reason). Makes reference data for one input set per task.\n"
	"show: one task: category, inputs and outputs with shapes, FLOPs, minimal bytes,\n"
	"      source, and per output the tolerance and whether the check discriminates\n"
	"      (reference data for input set 0, cached; --no-check skips that).\n"
	"      KernelBench problems run through the PyTorch bridge once (cached). TASK\n"
	"      is a path or a built-in task's name. docs/tasks.md: the task.json format.\n";

struct tasks_flags {
	int check, no_check;
};

static int tasks_flag(int argc, char **argv, int i, void *ctx)
{
	struct tasks_flags *f = ctx;

	(void)argc;
	if (!strcmp(argv[i], "--check"))
		return f->check = 1;
	if (!strcmp(argv[i], "--no-check"))
		return f->no_check = 1;
	return 0;
}

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

/* The built-in suites, in order; gpu-l1 only where it is installed. */
static const char *const suites[] = { "cpu-l1", "c", "gpu-l1" };

/* DIR or SUITE (or all built-in suites) into dirs[]. */
static int suite_dirs(struct cli_opts *o, struct pragma_buf *bufs, const char **dirs, int *nd, struct pragma_err *err)
{
	*nd = 0;
	if (o->n_positional > 2)
		return pragma_err_set(err, PRAGMA_E_INPUT, "tasks list takes one SUITE or DIR");
	if (o->n_positional > 1) {
		const char *a = o->positional[1];
		struct pragma_buf rel = PRAGMA_BUF_INIT;
		if (pragma_is_dir(a)) {
			dirs[(*nd)++] = a;
			return 0;
		}
		pragma_buf_addf(&rel, "tasks/%s", a);
		if (!strchr(a, '/') && pragma_data_path(rel.data, &bufs[0], NULL) == 0 && pragma_is_dir(bufs[0].data))
			dirs[(*nd)++] = bufs[0].data;
		pragma_buf_release(&rel);
		if (*nd)
			return 0;
		pragma_err_set(err, PRAGMA_E_INPUT, "no task folder or built-in suite '%s'", a);
		pragma_err_hint(err, "the built-in suites are cpu-l1, c (and gpu-l1 where installed)");
		return -1;
	}
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++) {
		struct pragma_buf rel = PRAGMA_BUF_INIT;
		pragma_buf_addf(&rel, "tasks/%s", suites[i]);
		if (pragma_data_path(rel.data, &bufs[i], NULL) == 0 && pragma_is_dir(bufs[i].data))
			dirs[(*nd)++] = bufs[i].data;
		pragma_buf_release(&rel);
	}
	if (!*nd)
		return pragma_err_set(err, PRAGMA_E_ENV, "the built-in tasks are not installed (no tasks/ folder found)");
	return 0;
}

/* "an all-zero output, the constant mean" for the answers in mask. */
static void trivial_list(unsigned mask, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < PRAGMA_TRIVIAL__COUNT && at < len; i++)
		if (mask & (1u << i))
			at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "",
					       pragma_trivial_name((enum pragma_trivial)i));
}

static json_t *check_json(const struct pragma_task *t, const struct pragma_vout *outs)
{
	json_t *a = json_array();

	for (int k = 0; k < t->n_outputs; k++) {
		const struct pragma_vout *vo = &outs[k];
		char rule[200];
		json_t *e = json_pack("{s:i, s:s, s:s, s:s, s:b}", "output", k, "name", t->outputs[k].name, "dtype",
				      pragma_dtype_name(t->outputs[k].dtype), "tolerance",
				      pragma_tolerance_str(&vo->tol, vo->audited ? vo->rms : -1, rule, sizeof(rule)), "exact",
				      vo->tol.exact);
		if (!vo->tol.exact) {
			json_object_set_new(e, "rtol", json_real(vo->tol.rtol));
			json_object_set_new(e, "atol", json_real(vo->tol.atol));
			json_object_set_new(e, "atol_scales_with", json_string(vo->tol.atol_rms ? "rms" : "none"));
			json_object_set_new(e, "norm_bound", vo->tol.norm >= 0 ? json_real(vo->tol.norm) : json_null());
		}
		if (vo->audited) {
			json_object_set_new(e, "rms", json_real(vo->rms));
			if (!vo->tol.exact)
				json_object_set_new(e, "atol_effective", json_real(vo->atol_eff));
			json_t *refuses = json_array(), *na = json_array();
			for (int i = 0; i < PRAGMA_TRIVIAL__COUNT; i++) {
				const char *name = pragma_trivial_name((enum pragma_trivial)i);
				if (vo->refused & (1u << i))
					json_array_append_new(refuses, json_string(name));
				if (!(vo->applicable & (1u << i)))
					json_array_append_new(na, json_string(name));
			}
			json_object_set_new(e, "refuses", refuses);
			json_object_set_new(e, "not_applicable", na);
			json_object_set_new(e, "discriminating", json_boolean(vo->discriminating));
			json_object_set_new(e, "why", vo->discriminating ? json_null() : json_string(vo->why));
			json_object_set_new(e, "weak_reason", t->weak_reason ? json_string(t->weak_reason) : json_null());
		}
		json_array_append_new(a, e);
	}
	return a;
}

/* One line per output: task, output, dtype, tolerance, verdict. */
static void check_rows(const struct pragma_task *t, const struct pragma_vout *outs)
{
	for (int k = 0; k < t->n_outputs; k++) {
		const struct pragma_vout *vo = &outs[k];
		char rule[200], out[160];
		snprintf(out, sizeof(out), "%d %.120s", k, t->outputs[k].name);
		printf("%-28s %-12s %-8s %-66s %s%s%s%s\n", t->name, out, pragma_dtype_name(t->outputs[k].dtype),
		       pragma_tolerance_str(&vo->tol, vo->rms, rule, sizeof(rule)),
		       vo->discriminating ? "discriminating" : t->weak_reason ? "weak, as the task says: " : "NOT discriminating: ",
		       vo->discriminating ? "" : t->weak_reason ? t->weak_reason : vo->why,
		       !vo->discriminating && t->weak_reason ? "; " : "", !vo->discriminating && t->weak_reason ? vo->why : "");
	}
}

/* `tasks list --check`: every task's check audited; exit 1 for a check
 * that is not discriminating without a stated reason, 2/3 when a task
 * could not be loaded or its reference made. */
static int check_suite(struct cli_opts *o, const char **dirs, int nd)
{
	json_t *rows = json_array();
	int n_tasks = 0, n_outs = 0, n_good = 0, n_weak = 0, n_bad = 0, n_err = 0, worst_err = 0;

	if (!o->json)
		printf("%-28s %-12s %-8s %-66s %s\n", "TASK", "OUTPUT", "DTYPE", "TOLERANCE (on input set 0)", "CHECK");
	for (int d = 0; d < nd; d++) {
		struct pragma_task_brief *b;
		struct pragma_err err = PRAGMA_ERR_INIT;
		int n;

		if (pragma_task_scan(dirs[d], &b, &n, &err) < 0) {
			json_decref(rows);
			return o->json ? cli_error_json(&err) : cli_error(&err);
		}
		for (int i = 0; i < n; i++) {
			struct pragma_task t;
			struct pragma_vout *outs = NULL;
			n_tasks++;
			pragma_err_clear(&err);
			if (pragma_task_load(b[i].path, NULL, 0, &t, &err) < 0) {
				memset(&t, 0, sizeof(t));
			} else {
				outs = calloc((size_t)t.n_outputs + 1, sizeof(*outs));
				if (pragma_task_audit(&t, -1, -1, outs, &err) == 0) {
					for (int k = 0; k < t.n_outputs; k++) {
						n_outs++;
						n_good += outs[k].discriminating;
						n_weak += !outs[k].discriminating && t.weak_reason;
						n_bad += !outs[k].discriminating && !t.weak_reason;
					}
					if (o->json)
						json_array_append_new(rows, json_pack("{s:s, s:s, s:o}", "task", t.name, "path",
										      b[i].path, "outputs", check_json(&t, outs)));
					else
						check_rows(&t, outs);
					fflush(stdout);
					free(outs);
					pragma_task_release(&t);
					continue;
				}
			}
			/* Not loaded or no reference: the row says why. */
			n_err++;
			if (pragma_err_exit_code(&err) > worst_err)
				worst_err = pragma_err_exit_code(&err);
			if (o->json)
				json_array_append_new(rows, json_pack("{s:s, s:s, s:s}", "task", b[i].name, "path", b[i].path,
								      "error", err.msg));
			else
				printf("%-28s %-12s %-8s %-66s ERROR: %s\n", b[i].name, "-", "-", "-", err.msg);
			fflush(stdout);
			free(outs);
			if (t.name)
				pragma_task_release(&t);
		}
		free(b);
	}
	if (o->json)
		cli_print_json(json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:o}", "tasks", n_tasks, "outputs", n_outs,
					 "discriminating", n_good, "weak_with_reason", n_weak, "not_discriminating", n_bad,
					 "errors", n_err, "checked", rows));
	else {
		json_decref(rows);
		printf("\n%d tasks, %d outputs: %d discriminating, %d weak with a stated reason, %d NOT discriminating, "
		       "%d tasks not checked (errors)\n", n_tasks, n_outs, n_good, n_weak, n_bad, n_err);
	}
	if (n_err)
		return worst_err > 1 ? worst_err : 2;
	return n_bad ? 1 : 0;
}

static int list(struct cli_opts *o, const struct tasks_flags *fl)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *dirs[3];
	struct pragma_buf bufs[3] = { PRAGMA_BUF_INIT, PRAGMA_BUF_INIT, PRAGMA_BUF_INIT };
	json_t *arr = json_array();
	int nd = 0, total = 0, rc = 0;

	if (fl->no_check || o->n_sets) {
		json_decref(arr);
		return cli_usage_error("tasks list takes neither --no-check nor --set\n%s", usage);
	}
	if (suite_dirs(o, bufs, dirs, &nd, &err) < 0) {
		rc = o->json ? cli_error_json(&err) : cli_error(&err);
		goto out;
	}
	if (fl->check) {
		rc = check_suite(o, dirs, nd);
		goto out;
	}
	if (!o->json)
		printf("%-36s %-12s %-18s %s\n", "TASK", "KIND", "CATEGORY", "DESCRIPTION");
	for (int k = 0; k < nd; k++) {
		struct pragma_task_brief *b;
		int n;

		if (pragma_task_scan(dirs[k], &b, &n, &err) < 0) {
			rc = o->json ? cli_error_json(&err) : cli_error(&err);
			goto out;
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
	if (o->json) {
		cli_print_json(json_pack("{s:i, s:O}", "count", total, "tasks", arr));
	} else {
		printf("\n%d tasks\n", total);
	}
out:
	json_decref(arr);
	for (int i = 0; i < 3; i++)
		pragma_buf_release(&bufs[i]);
	return rc;
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

static int show(struct cli_opts *o, const struct tasks_flags *fl)
{
	struct pragma_err err = PRAGMA_ERR_INIT, cerr = PRAGMA_ERR_INIT;
	struct pragma_vout *outs;
	struct pragma_task t;
	char *path;
	char fl_s[32], by[32];
	int checked = 0;

	if (o->n_positional != 2)
		return cli_usage_error("tasks show needs one TASK\n%s", usage);
	if (fl->check)
		return cli_usage_error("tasks show checks by default (--no-check skips it)\n%s", usage);
	if (pragma_task_resolve(o->positional[1], &path, &err) < 0)
		return o->json ? cli_error_json(&err) : cli_error(&err);
	if (pragma_task_load(path, o->sets, o->n_sets, &t, &err) < 0) {
		free(path);
		return o->json ? cli_error_json(&err) : cli_error(&err);
	}
	free(path);
	outs = calloc((size_t)t.n_outputs + 1, sizeof(*outs));
	if (fl->no_check) {
		for (int k = 0; k < t.n_outputs; k++)
			pragma_tolerance_resolve(&t, k, -1, -1, &outs[k].tol);
	} else if (pragma_task_audit(&t, -1, -1, outs, &cerr) == 0) {
		checked = 1;
	}
	if (o->json) {
		json_t *j = pragma_task_json(&t), *c = json_object();
		json_object_set_new(c, "outputs", check_json(&t, outs));
		json_object_set_new(c, "input_set", checked ? json_integer(0) : json_null());
		if (!fl->no_check && !checked)
			json_object_set_new(c, "error", json_string(cerr.msg));
		json_object_set_new(j, "check", c);
		cli_print_json(j);
	} else {
		human_count(t.flops, fl_s, sizeof(fl_s));
		human_size(t.bytes, by, sizeof(by));
		printf("task:        %s (%s)\n", t.name, t.kind == PRAGMA_TASK_NATIVE ? "native C" : "KernelBench");
		printf("path:        %s\n", t.path);
		printf("category:    %s\n", t.category);
		if (t.description && *t.description)
			printf("description: %s\n", t.description);
		printf("FLOPs:       %s (%s)\n", fl_s, t.flops_method);
		printf("min bytes:   %s (inputs read once, outputs written once)\n", by);
		if (t.flops > 0 && t.bytes > 0)
			printf("intensity:   %.3f FLOP/byte\n", t.flops / t.bytes);
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
		printf("\ntolerance%s:\n", checked ? " (values on input set 0)" : "");
		for (int k = 0; k < t.n_outputs; k++) {
			char rule[200];
			printf("  %2d  %-28s %s (%s)\n", k, t.outputs[k].name,
			       pragma_tolerance_str(&outs[k].tol, checked ? outs[k].rms : -1, rule, sizeof(rule)),
			       outs[k].tol.source);
			if (!checked)
				continue;
			if (outs[k].discriminating) {
				char ref[256], na[256];
				trivial_list(outs[k].refused, ref, sizeof(ref));
				trivial_list(outs[k].applicable ^ ((1u << PRAGMA_TRIVIAL__COUNT) - 1), na, sizeof(na));
				printf("      discriminating: refuses %s%s%s%s\n", ref, *na ? " (" : "", na,
				       *na ? ": equal to the reference here, so no test)" : "");
			} else
				printf("      NOT discriminating: %s%s%s\n", outs[k].why, t.weak_reason ? "; the task says: " : "",
				       t.weak_reason ? t.weak_reason : "");
		}
		if (!fl->no_check && !checked)
			printf("  not checked: %s\n", cerr.msg);
		printf("\n--- %s ---\n%s%s", t.source_name, t.source,
		       t.source[0] && t.source[strlen(t.source) - 1] != '\n' ? "\n" : "");
	}
	free(outs);
	pragma_task_release(&t);
	return 0;
}

int cmd_tasks(int argc, char **argv)
{
	struct cli_opts o;
	struct tasks_flags fl = { 0 };
	int rc;

	if (cli_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	if ((rc = cli_parse(argc, argv, &o, tasks_flag, &fl)))
		return rc;
	if (!o.n_positional || !strcmp(o.positional[0], "list"))
		return list(&o, &fl);
	if (!strcmp(o.positional[0], "show"))
		return show(&o, &fl);
	return cli_usage_error("tasks: unknown subcommand '%s'\n%s", o.positional[0], usage);
}
