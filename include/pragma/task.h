/*
 * Tasks: what a kernel must compute (DESIGN 3.2).
 *  - a KernelBench problem: a .py file run through the PyTorch bridge;
 *  - a native C task: a folder with task.json and reference.c.
 * Loading reads metadata only; reference data (inputs and expected outputs
 * per seed) comes from pragma_ref_ensure() in refdata.h.
 */
#ifndef PRAGMA_TASK_H
#define PRAGMA_TASK_H

#include <jansson.h>
#include <stdint.h>

#include "pragma/buf.h"
#include "pragma/err.h"
#include "pragma/kernel.h"

enum pragma_task_kind { PRAGMA_TASK_KERNELBENCH, PRAGMA_TASK_NATIVE };

struct pragma_tensor_spec {
	char name[128];
	char role[8];            /* input, param, buffer, output */
	enum pk_dtype dtype;
	int ndim;
	int64_t shape[PK_MAX_DIMS];
	json_t *init;            /* native tasks: the init distribution (borrowed from meta) */
};

/* Something the forward pass depends on that no tensor shows (cumsum's dim,
 * pooling's kernel/stride/padding, layer norm's eps, a native task's sizes):
 * the model writing the kernel must be told it (pragma_task_facts_text). */
struct pragma_task_fact {
	char kind[12];           /* "init_arg", "attribute", "module", "constant", "size" */
	char name[64];           /* "dim", "pool (MaxPool2d)", "SCAN_DIM", "N" */
	char value[256];         /* "1", "kernel_size=3, stride=2, padding=1, ...", "(64, 128, 128)" */
};

struct pragma_task {
	enum pragma_task_kind kind;
	char *path;              /* the .py file or the task folder, as given */
	char *name, *category, *description;
	char *source;            /* what the user wrote: the problem .py or reference.c */
	char *source_name;       /* "model.py", "reference.c" */
	struct pragma_tensor_spec *inputs, *outputs;
	int n_inputs, n_outputs;
	double flops;            /* < 0: unknown */
	char flops_method[32];
	double flops_transcendental; /* of flops, exp/log/tanh-like evaluations (1 FLOP each); 0: none or unknown */
	double bytes;            /* minimal bytes: inputs read once, outputs written once */
	double atol, rtol;       /* tolerance for float outputs: as stated, else the loosest output dtype's
	                          * default; per output and in full: pragma_tolerance_resolve() */
	int rtol_stated;         /* the task states rtol */
	int atol_stated;         /* the task states atol (absolute) or atol_rms (times RMS(ref)) */
	int atol_abs;            /* what it stated is absolute ("atol") */
	double norm_tol;         /* stated bound on ||out - ref|| / ||ref||; <= 0: rtol */
	char *weak_reason;       /* stated reason why the check may pass a trivial answer, or NULL */
	char **overrides;        /* "NAME=VALUE", as given to --set */
	int n_overrides;
	char content_hash[65];   /* files + overrides + runtime versions */
	char runtime[128];       /* reference runtime: "torch 1.13.0a0 python 3.11.2" or "gcc 12.2.0" */
	int has_baseline_c;      /* native: ships baseline.c */
	json_t *meta;            /* bridge info or task.json (owned) */
	/* From the bridge's info (KernelBench: constructor arguments by name,
	 * the model's settings, submodules' settings, module constants) or
	 * task.json's sizes after --set (native); malloc'ed. */
	struct pragma_task_fact *facts;
	int n_facts;
};

/* Fill t->facts from t->meta (pragma_task_load does; lib/task/bridge.c). */
void pragma_task_facts_fill(struct pragma_task *t);
/* The facts in a few Markdown lines ("- " bullets), for prompts and
 * `tasks show`; nothing when there are none. */
void pragma_task_facts_text(const struct pragma_task *t, struct pragma_buf *out);
/* The task's source as a model should read it: a KernelBench problem run
 * with --set has its top-level assignments of those names show the values
 * the bridge runs with (the file's own text kept in a comment). */
void pragma_task_source_text(const struct pragma_task *t, struct pragma_buf *out);

/* Load a task from a path: a .py file (KernelBench) or a folder with
 * task.json. overrides are "NAME=VALUE" strings (--set). For KernelBench
 * problems this runs the bridge's `info` once and caches the answer.
 * Errors: PRAGMA_E_INPUT with what is wrong and where (file:line) for a
 * malformed task; PRAGMA_E_ENV when python/torch or a compiler is missing. */
int pragma_task_load(const char *path, const char *const *overrides, int n_overrides,
		     struct pragma_task *t, struct pragma_err *err);
void pragma_task_release(struct pragma_task *t);

/* Cheap facts for listing, without running anything: name, category,
 * description. */
struct pragma_task_brief {
	char path[4096];
	char name[128];
	char category[32];
	char kind[16];           /* "kernelbench" or "native" */
	char description[256];
};
/* All tasks directly under dir (*.py files and folders with task.json),
 * sorted by path. *out is malloc'ed. */
int pragma_task_scan(const char *dir, struct pragma_task_brief **out, int *n, struct pragma_err *err);
int pragma_task_brief(const char *path, struct pragma_task_brief *b, struct pragma_err *err);

/* Resolve a task argument: a path, or a name found in the built-in suites
 * (tasks/cpu-l1/<name>.py, tasks/c/<name>). */
int pragma_task_resolve(const char *arg, char **path, struct pragma_err *err);

/* The paper's six categories. */
int pragma_category_valid(const char *c);

/* The verifier's tolerance rule for every output of t (lib/verify), for
 * prompts and listings, without the data-dependent values: "rtol 0.0001,
 * atol 0.0001 x RMS(ref), norm-wise 0.0001"; "output[1] y: ..." per output
 * where they differ. */
const char *pragma_task_tolerance_str(const struct pragma_task *t, char *buf, size_t len);

/* Bytes of the task's outputs (part of t->bytes): a task that writes
 * little is a read-only stream for the roofline. */
double pragma_task_output_bytes(const struct pragma_task *t);

/* The task's FLOP count as a request states it ("3.22e+09 FLOP (method), "),
 * saying how many are transcendental evaluations counted as 1 FLOP each;
 * nothing when the count is unknown. */
void pragma_task_flops_text(const struct pragma_task *t, struct pragma_buf *out);

/* JSON view (for `tasks show --json` and results). */
json_t *pragma_task_json(const struct pragma_task *t);

/* Integer expression over a task's sizes ("N*M+1"); 0 or -1 with err. */
int pragma_size_expr(const char *expr, json_t *sizes, int64_t *out, struct pragma_err *err);

#endif
