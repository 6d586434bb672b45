/*
 * The CUDA backend (issue 8): CUDA C candidates built with nvcc, checked,
 * run in a CUDA harness (runtime/cuda/harness.cu), timed with CUDA events
 * and profiled with Nsight Compute.
 *
 *   (the backend itself, as pragma_backend_cuda: lib/backend/cuda.c)
 *   toolkit      finding nvcc and its version
 *   flags        the nvcc allow-list
 *   build        kernel.cu -> kernel.so (nvcc -shared -cudart shared), cached
 *   ptxas        the -Xptxas -v resource report -> static.gpu_* metrics
 *   symbols      what a CUDA .so may import (libc basics + the CUDA runtime)
 *   device       is there a CUDA device? (libcudart loaded with dlopen, so
 *                pragma itself never links CUDA)
 *   gpu model    the device's properties + a table of peaks for known GPUs
 *   ncu          the Nsight Compute collector: command, CSV parser, gpu.*
 *
 * pragma never links the CUDA runtime: everything that needs a device runs
 * in the CUDA harness, and the probe loads libcudart at run time. On a
 * machine without a GPU the path stops at "no CUDA device" with a reason.
 */
#ifndef PRAGMA_CUDA_H
#define PRAGMA_CUDA_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "pragma/buf.h"
#include "pragma/build.h"
#include "pragma/diagnose.h"
#include "pragma/err.h"
#include "pragma/profile.h"
#include "pragma/refdata.h"
#include "pragma/task.h"

/* -------------------------------------------------------------- toolkit */

struct pragma_cuda_toolkit {
	char nvcc[4096];             /* absolute path of nvcc */
	char root[4096];             /* the toolkit directory (nvcc's ../) */
	char version[32];            /* "13.0" */
	int major, minor;
};

/* Find nvcc: $PRAGMA_NVCC, nvcc in PATH, $CUDA_HOME/bin, $CUDA_PATH/bin,
 * /usr/local/cuda/bin. Missing is PRAGMA_E_ENV with a hint; found once per
 * process and cached. */
int pragma_cuda_toolkit_find(struct pragma_cuda_toolkit *tk, struct pragma_err *err);
/* "release 13.0, V13.0.88" in `nvcc --version` text -> 13, 0. 0 or -1. */
int pragma_nvcc_parse_version(const char *text, int *major, int *minor);

/* ---------------------------------------------------------------- flags
 * Allowed: -O0..-O3; -arch=sm_NN[a|f] (pragma picks the device's otherwise);
 * -lineinfo; -maxrregcount=N; -D/-U for tunables; -std=c++NN; -restrict;
 * --extra-device-vectorization; --expt-relaxed-constexpr,
 * --extended-lambda; -Xptxas with optimization, cache-policy and report
 * options; -Xcompiler with flags gcc's allow-list takes; warnings. The
 * fast-math family (--use_fast_math, -ftz=true, -prec-div=false,
 * -prec-sqrt=false) only when the task's tolerance allows it
 * (pragma_cuda_fast_math_allowed). Never: output and search paths, other
 * tools (-ccbin), libraries and linker options, relocatable device code,
 * -cudart, files read or written (-include, --options-file, -keep,
 * -save-temps, -odir, -time), device debug (-G). */
int pragma_nvcc_flag_check(const char *flag, int fast_math_ok, char *why, size_t len);
/* Split on whitespace, join two-word forms ("-Xptxas -v", "-maxrregcount
 * 32"), check, append; a refused flag is PRAGMA_E_NEGATIVE naming it and
 * nothing is appended. */
int pragma_nvcc_flags_add(struct pragma_flags *f, const char *text, int fast_math_ok, struct pragma_err *err);
/* The flags of "// pragma:flags ..." lines in a CUDA source. */
int pragma_nvcc_flags_from_source(struct pragma_flags *f, const char *src, size_t len, int fast_math_ok,
				  struct pragma_err *err);
/* Fast math changes results by a few ulp (approximate division, sqrt,
 * transcendentals, flush-to-zero): allowed when rtol >= 1e-3 or atol >=
 * 1e-3. */
int pragma_cuda_fast_math_allowed(double atol, double rtol);

/* ---------------------------------------------------------------- build */

struct pragma_cuda_build_opts {
	const char *arch;            /* "sm_80"; NULL: pragma_cuda_default_arch() (an -arch flag wins) */
	const char *const *flags;    /* extra nvcc flags, already allowed; NULL-terminated or NULL */
	int timeout_ms;              /* 0: 300 s */
	int confine;                 /* compile under Landlock, as lib/build does for C */
};

/* The architecture to build for: $PRAGMA_CUDA_ARCH, else the first
 * device's compute capability, else "sm_80" (A100, the paper's GPU). */
const char *pragma_cuda_default_arch(void);

/* nvcc -O3 -arch=ARCH -shared -Xcompiler -fPIC -cudart shared -Xptxas -v
 * -lineinfo -I<include> FLAGS src -o out_so. nvcc's output (the ptxas
 * report included) goes to log. A failed compile is PRAGMA_E_NEGATIVE with
 * the first error line; a missing nvcc is PRAGMA_E_ENV. */
int pragma_cuda_build_so(const char *src, const char *out_so, const struct pragma_cuda_build_opts *o,
			 struct pragma_buf *log, struct pragma_err *err);
/* Cached by source + nvcc version + arch + flags under
 * <cache>/build/cuda-<hash>.so, the log kept beside it (also on hits). */
int pragma_cuda_build_cached(const char *src, const struct pragma_cuda_build_opts *o, struct pragma_buf *so_path,
			     struct pragma_buf *log, struct pragma_err *err);
/* "nvcc 13.0" (or "nvcc unknown"). */
const char *pragma_cuda_compiler_version(void);

/* ---------------------------------------------------------------- ptxas */

struct pragma_ptxas_kernel {
	char name[256];              /* mangled, as ptxas prints it */
	char arch[16];               /* "sm_80" */
	int registers;
	int barriers;
	long smem_bytes;             /* static shared memory */
	long cmem_bytes;             /* constant bank 0 (kernel parameters) */
	long stack_bytes;            /* stack frame per thread */
	long spill_stores, spill_loads; /* bytes per thread */
	long gmem_bytes;             /* module globals (per compilation) */
};

struct pragma_ptxas_report {
	struct pragma_ptxas_kernel *k;
	int n;
	char **warnings;             /* "Registers are spilled to local memory in function ..." */
	int n_warnings;
};

#define PRAGMA_PTXAS_REPORT_INIT { 0 }

/* Parse nvcc/ptxas -v output (entry functions only; device functions with
 * their own frames are folded into nothing). Unknown lines are skipped. */
int pragma_ptxas_parse(const char *text, struct pragma_ptxas_report *r);
void pragma_ptxas_release(struct pragma_ptxas_report *r);
/* static.gpu_* metrics (max over kernels: registers, shared memory, stack,
 * spill bytes; the number of kernels) and a note per kernel. */
void pragma_ptxas_metrics(const struct pragma_ptxas_report *r, struct pragma_profile *p);

/* The report of nvcc's output as JSON ({"kernels": [{kernel, arch,
 * registers, smem_bytes, stack_bytes, spill_stores, spill_loads,
 * barriers}], "warnings": [...]}) and as one line per kernel (lines after
 * the first start with indent). */
json_t *pragma_ptxas_json(const char *log);
void pragma_ptxas_text(const char *log, const char *indent, struct pragma_buf *out);

/* -------------------------------------------------------------- symbols */

/* The CUDA runtime functions a kernel may import (launch and
 * registration, errors, device attributes, scratch memory, streams and
 * events, occupancy). Not: other CUDA libraries (cuBLAS, cuDNN, ...),
 * cudaDeviceReset, IPC, the profiler API, peer access, host registration. */
int pragma_cuda_symbol_allowed(const char *name, const char **why);
/* The C++ runtime pieces nvcc's host code uses (guards, personality,
 * operator new/delete, exceptions); iostreams and files are not. */
int pragma_cxx_symbol_allowed(const char *name);
/* libcudart.so.N, libstdc++.so.6 and the C libraries lib/build allows. */
int pragma_cuda_library_allowed(const char *soname);
/* Read and check a compiled CUDA .so; 0 when allowed, -1 with
 * PRAGMA_E_NEGATIVE naming the first forbidden import. */
int pragma_cuda_symbols_check(const char *so_path, struct pragma_err *err);

/* --------------------------------------------------------------- device */

struct pragma_gpu_device {
	int index;
	char name[256];              /* "NVIDIA A100-SXM4-40GB" */
	int cc_major, cc_minor;
	int sms;
	int clock_khz, mem_clock_khz, mem_bus_bits;
	long l2_bytes;
	long smem_per_block, smem_per_block_optin, smem_per_sm;
	int regs_per_block, regs_per_sm;
	int max_threads_per_sm, max_threads_per_block, max_blocks_per_sm, warp_size;
	uint64_t total_mem;          /* bytes; 0 unknown */
};

struct pragma_gpu_probe {
	int n_devices;
	struct pragma_gpu_device dev[8];
	int driver_version, runtime_version;   /* 13000 = 13.0; 0 unknown */
	char cudart[4096];           /* the libcudart that answered */
	char reason[512];            /* when n_devices == 0: why */
	char hint[512];
};

/* Ask the CUDA runtime (dlopen'ed: $PRAGMA_CUDART, libcudart.so,
 * libcudart.so.13/12, <toolkit>/lib64) how many devices there are and what
 * they are. Always returns 0; n_devices == 0 with reason and hint when
 * there is none ("no CUDA device: no NVIDIA driver is loaded ..."). The
 * answer is cached for the process. */
int pragma_gpu_probe(struct pragma_gpu_probe *p);
/* 0 when a device is present; else -1, PRAGMA_E_ENV, "no CUDA device: ...". */
int pragma_cuda_require_device(struct pragma_err *err);

/* ---------------------------------------------------------- gpu model */

/* Peaks of a known GPU, dense (no sparsity), at boost clock. 0 = none. */
struct pragma_gpu_spec {
	const char *name;            /* "A100 SXM4 40GB" */
	const char *match;           /* substrings of the device name, '|'-separated ("A100-SXM4-40GB|A100-SXM4-40") */
	int cc_major, cc_minor;
	int sms;
	double fp32_tflops, fp64_tflops;
	double tf32_tflops, fp16_tflops, bf16_tflops, fp8_tflops, int8_tops; /* tensor cores, dense */
	double mem_gbs;              /* DRAM bandwidth, GB/s */
	double l2_mb;
	const char *memory;          /* "HBM2e 40 GB" */
	const char *source;          /* where the numbers come from */
};

const struct pragma_gpu_spec *pragma_gpu_specs(size_t *n);
/* The table row for a device name ("NVIDIA A100-SXM4-40GB"), or NULL. */
const struct pragma_gpu_spec *pragma_gpu_spec_find(const char *device_name);

struct pragma_gpu_model {
	int have_device;
	struct pragma_gpu_device dev;
	const struct pragma_gpu_spec *spec;  /* NULL: not in the table */
	double peak_fp32_gflops;     /* from the table, else 2 x FP32 lanes x SMs x clock */
	double peak_tensor_gflops;   /* best dense tensor rate for fp16/bf16; 0 unknown */
	double peak_gbs;             /* table, else 2 x mem clock x bus width (DDR) */
	char peak_source[256];       /* "table: NVIDIA A100 datasheet" or "derived from clocks" */
};

/* The model of device `index` (probe + table); -1 and PRAGMA_E_ENV when
 * there is no such device. */
int pragma_gpu_model_load(int index, struct pragma_gpu_model *m, struct pragma_err *err);
/* From a device's properties (the table row found by its name). */
void pragma_gpu_model_from_device(const struct pragma_gpu_device *d, struct pragma_gpu_model *m);
/* From a table row alone (no device; for prompts on a build machine). */
void pragma_gpu_model_from_spec(const struct pragma_gpu_spec *s, struct pragma_gpu_model *m);
/* FP32 lanes per SM for a compute capability (64 or 128); 0 unknown. */
int pragma_gpu_fp32_lanes(int cc_major, int cc_minor);
json_t *pragma_gpu_model_json(const struct pragma_gpu_model *m);
/* The GPU section of a Coder/Conductor prompt: device, SMs, limits, peaks,
 * ridge point. */
void pragma_gpu_model_text(const struct pragma_gpu_model *m, struct pragma_buf *out);
/* The CUDA ABI section of the Coder prompt (kernel.h with device pointers,
 * what the harness does, what is allowed). */
void pragma_cuda_abi_text(struct pragma_buf *out);
/* The GPU a prompt describes: device 0 when there is one (returns 1),
 * else pragma's table entry for $PRAGMA_CUDA_GPU or the A100 SXM4 40GB
 * (returns 0, note says so). */
int pragma_cuda_target_model(struct pragma_gpu_model *m, char *note, size_t len);
/* The variables prompts/coder_system_cuda.md uses, set in vars: gpu_model
 * (also as machine), cuda_abi, kernel_h, compile_cmd, fast_math and
 * fast_math_note (from the task's tolerance), backend, and work (the
 * task's FLOPs and bytes against the GPU's roofs; with baseline_ms > 0,
 * how close the baseline gets). */
void pragma_cuda_prompt_vars(json_t *vars, const struct pragma_task *t, double baseline_ms);
/* gpu.*-based roofline: roof.* from the task's counts and a GPU time. */
void pragma_gpu_roofline(double flops, double bytes, double median_ms, const struct pragma_gpu_model *m,
			 struct pragma_profile *p);

/* ------------------------------------------------------------------ ncu */

struct pragma_ncu_value {
	char name[128];              /* raw ncu metric name */
	char unit[32];               /* as printed */
	double value;                /* in base units (ns, bytes, %, count); NaN when not a number */
	char text[64];               /* the cell, for non-numbers ("n/a") */
};

struct pragma_ncu_launch {
	int id;
	int pid;
	char kernel[512];
	char block[48], grid[48];
	int device;
	char cc[8];
	struct pragma_ncu_value *v;
	int n;
};

struct pragma_ncu_result {
	struct pragma_ncu_launch *l;
	int n;
	int passes;                  /* max "N passes" in the log; 0 unknown */
	char error[512];             /* ==ERROR== line(s), first */
	int perm_error;              /* ERR_NVGPUCTRPERM */
	int no_kernels;              /* "No kernels were profiled" */
	char **warnings;             /* ==WARNING== lines */
	int n_warnings;
};

#define PRAGMA_NCU_RESULT_INIT { 0 }

/* Parse `ncu --csv --page raw` output as it lands in a log file: ==PROF==,
 * ==WARNING== and ==ERROR== lines, the program's own output, then the CSV
 * (header row of identity columns + metric names, a units row, one row per
 * profiled launch). Values with thousands separators are read; scaled
 * units (usecond, Kbyte, ...) are converted to base units. Returns 0 with
 * r filled (r->error set when ncu reported one); -1 with PRAGMA_E_INPUT
 * when the text has CSV that cannot be read. */
int pragma_ncu_parse(const char *text, struct pragma_ncu_result *r, struct pragma_err *err);
void pragma_ncu_release(struct pragma_ncu_result *r);
/* A value of a launch by raw name; 1 and *v when present and numeric. */
int pragma_ncu_get(const struct pragma_ncu_launch *l, const char *name, double *v);

/* The raw metric names pragma collects by default (NULL-terminated). */
const char *const *pragma_ncu_default_metrics(void);
/* The raw ncu metrics behind a registry name (gpu.l2_hit_rate ->
 * lts__t_sector_hit_rate.pct), NULL-terminated, or NULL when it has none. */
const char *const *pragma_ncu_metrics_for(const char *registry_name);
/* Build the --metrics list: defaults, plus the raw names behind extra
 * registry names, plus extra "ncu:RAW" names, deduplicated, comma-joined. */
void pragma_ncu_metric_list(const char *const *extra, size_t n_extra, struct pragma_buf *out);
/* Turn the launches of one pk_forward call into gpu.* metrics: durations
 * summed; rates and percentages weighted by duration; registers and shared
 * memory the maximum; stall reasons as shares of all stalls (the top few
 * named in a note); extra "ncu:RAW" values as given. */
void pragma_ncu_metrics(const struct pragma_ncu_result *r, const char *const *extra, size_t n_extra,
			struct pragma_profile *p);
/* Why ncu could not profile, as an unavailable reason + hint
 * (ERR_NVGPUCTRPERM -> NVreg_RestrictProfilingToAdminUsers=0). */
void pragma_ncu_explain(const struct pragma_ncu_result *r, char *why, size_t len);
/* Find ncu: $PRAGMA_NCU, PATH, <toolkit>/bin, /usr/local/cuda/bin. 1 when found. */
int pragma_ncu_find(struct pragma_buf *path);
/* ncu's installation directory, symlinks resolved, for the profiler
 * sandbox to grant: the directory of ncu's real path when it holds
 * target/; two levels up from target/<platform>/ncu; for a launcher in
 * <toolkit>/bin, the newest <toolkit>/nsight-compute-* with a target/. */
void pragma_ncu_tool_dir(const char *ncu, struct pragma_buf *out);

/* Metrics the CUDA backend produces beyond the profiler's registry
 * (static.gpu_* from ptxas, more gpu.* from ncu), in the registry's form;
 * the registry should list them (or fall back to this table). */
const struct pragma_metric_def *pragma_cuda_metric_defs(size_t *n);
/* The registry's definition, else this table's; NULL when neither has it. */
const struct pragma_metric_def *pragma_cuda_metric_def(const char *name);

/* ------------------------------------------------------- running kernels */

/* The CUDA harness ($PRAGMA_CUDA_HARNESS, next to the executable, or the
 * build tree); PRAGMA_E_ENV with a hint when it was not built (no nvcc at
 * build time). */
int pragma_cuda_harness_path(struct pragma_buf *out, struct pragma_err *err);

/* Libraries a CUDA kernel may need that the harness loads before its
 * sandbox (NULL-terminated). */
const char *const *pragma_cuda_preload(void);

struct pragma_run_opts;
struct pragma_rlimits;
/* pragma_run_default_limits() without the address-space limit (the CUDA
 * runtime reserves terabytes of virtual addresses) and with room for the
 * driver's file descriptors. For pragma_run_opts.limits. */
void pragma_cuda_run_limits(const struct pragma_run_opts *o, struct pragma_rlimits *l);

/* ------------------------------------------------------------ diagnosis */

/* GPU bottleneck names (each has a playbook in knowledge/gpu/playbooks.json):
 * low-occupancy, uncoalesced-access, bank-conflicts, local-memory-spills,
 * tensor-cores-unused, launch-bound. */
const char *const *pragma_gpu_bottleneck_names(size_t *n);
/* Add GPU findings to d (m may be NULL: model-dependent rules are skipped);
 * findings are re-sorted most confident first. lib/diagnose's roofline
 * rules apply to the GPU's roof.* metrics as they are. */
void pragma_gpu_diagnose(const struct pragma_profile *p, const struct pragma_gpu_model *m, struct pragma_diagnosis *d);

/* pragma_gpu_diagnose() with the target GPU's model (the device, or the
 * table's target GPU when there is none). */
void pragma_cuda_diagnose(const struct pragma_profile *p, struct pragma_diagnosis *d);

/* ------------------------------------------------------------ profiling */

struct pragma_cuda_profile_opts {
	const struct pragma_task *task;
	const char *kernel_src;      /* the candidate's .cu file */
	const char *const *flags;    /* extra nvcc flags (allowed) */
	const struct pragma_refset *sets;
	int n_sets;
	const char *const *extra;    /* registry names and ncu:RAW */
	size_t n_extra;
	unsigned collectors;         /* PRAGMA_COL_*; 0: timing, static, roofline, ncu */
	int warmup, reps;            /* 0: 3 and 20 */
	int warm;                    /* no L2 flush between calls */
	int timeout_ms;              /* harness deadline; 0: 120 s */
	int no_sandbox;
	double time_ms;              /* the kernel's time in its timing session (0: unknown): the roofline uses it */
};

/* Build, static resource analysis (ptxas), then — with a device — time in
 * the CUDA harness, check the timed outputs, ncu, and the roofline against
 * the GPU model. Without a device: p holds the static metrics and every
 * device collector is unavailable with "no CUDA device: ..."; returns -1
 * with PRAGMA_E_ENV saying the same, so callers can stop there (exit 3).
 * A kernel that does not build is PRAGMA_E_NEGATIVE. */
int pragma_cuda_profile_run(const struct pragma_cuda_profile_opts *o, struct pragma_profile *p,
			    struct pragma_err *err);

/* --------------------------------------------------------------- doctor */

struct pragma_cuda_check {
	char name[32];               /* "cuda nvcc", "cuda device", ... */
	char level[8];               /* "ok" or "warn" (the GPU path is optional) */
	char detail[640];
	char hint[512];
};

/* What the GPU path needs and whether this machine has it: nvcc, the CUDA
 * harness, the runtime, a device (or why not), ncu and counter permission,
 * and (with_torch: slow, imports torch) a CUDA torch. Fills up to cap
 * checks; returns how many. */
int pragma_cuda_doctor(struct pragma_cuda_check *c, int cap, int with_torch);

/* ------------------------------------------------------------ baseline */

/* Time the PyTorch baseline on the GPU (runtime/cuda/torch_cuda_time.py
 * with $PRAGMA_PYTHON): CUDA events around forward(), L2 flushed between
 * calls, same warm-up/reps protocol and JSON as the bridge's `time`.
 * PRAGMA_E_ENV when that Python has no CUDA torch. *out is the answer
 * {"ok", "times_ms", "config"}. */
int pragma_cuda_torch_time(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets, int warmup,
			   int reps, int cold, json_t **out, struct pragma_err *err);
/* The same with all options: compile = 1 times torch.compile(model)
 * (compile_mode NULL: pragma_cuda_compile_mode()) instead of eager; the
 * answer's config then has "baseline": "torch.compile" and "compile":
 * {mode, backend, triton, compile_seconds (excluded from timing),
 * graph_breaks}. PRAGMA_E_ENV "unavailable: ..." where the Python has no
 * torch.compile (torch < 2.0) or no triton. */
struct pragma_cuda_torch_opts {
	const struct pragma_task *task;
	const struct pragma_refset *sets;
	int n_sets;
	int warmup, reps, cold;
	int compile;
	const char *compile_mode;    /* default, reduce-overhead, max-autotune, max-autotune-no-cudagraphs */
};
int pragma_cuda_torch_time_ex(const struct pragma_cuda_torch_opts *o, json_t **out, struct pragma_err *err);
/* $PRAGMA_TORCH_COMPILE_MODE when it names a mode, else "default". */
const char *pragma_cuda_compile_mode(void);
/* Can $PRAGMA_PYTHON run torch.compile on a GPU (torch >= 2.0 and triton)?
 * 1 yes (why: versions), 0 no (why: "unavailable: torch 1.13 has no
 * torch.compile ..."). Needs no GPU; imports torch (a second or two). */
int pragma_torch_compile_available(char *why, size_t len);
/* torch.compile as a second, named baseline: kind "torch.compile", times
 * by the eager baseline's protocol on the GPU. PRAGMA_E_ENV "unavailable:
 * ..." when it cannot run; PRAGMA_E_INPUT for a native task. */
struct pragma_timing_opts;
struct pragma_baseline;
int pragma_cuda_compile_baseline_measure(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets,
					 const struct pragma_timing_opts *o, struct pragma_baseline *b,
					 struct pragma_err *err);
/* For commands (baseline, eval): the torch.compile baseline on the task's
 * first n_sets default input sets, as {"name": "torch.compile", "kind",
 * "times_ms", "stats", "config", "median_ms", "speedup" (its median /
 * cand_ms, when cand_ms > 0), "protocol_note"} or {"name":
 * "torch.compile", "unavailable": why}. Never fails: unavailability is the
 * answer; PRAGMA_TORCH_COMPILE=0 skips it (compiling can take minutes).
 * New reference. */
json_t *pragma_cuda_compile_baseline_json(const struct pragma_task *t, int n_sets, const struct pragma_timing_opts *o,
					  double cand_ms);
/* The CPU side's answer: {"name": "torch.compile", "unavailable": why},
 * e.g. "unavailable: torch 1.13 has no torch.compile (it needs torch >=
 * 2.0)" with Debian's torch. */
json_t *pragma_torch_compile_cpu_json(const struct pragma_task *t);
/* One line for it: "vs PyTorch eager 3.10x, vs torch.compile 1.40x;
 * torch.compile median 0.8 ms (mode default, backend inductor, triton
 * 3.5, compiled in 14.2 s, not timed)" (the speedups when eager_speedup >
 * 0 and the JSON has one), or "torch.compile: unavailable: ...". */
void pragma_cuda_compile_baseline_text(const json_t *j, double eager_speedup, struct pragma_buf *out);

/* runtime/cuda/torch_cuda_time.py: it takes the bridge's `time` command
 * line (--serve included), so a caller that drives the bridge can swap the
 * script. */
int pragma_cuda_torch_script(struct pragma_buf *path, struct pragma_err *err);
/* For `pragma profile --baseline` on the GPU: time.baseline_ms and
 * time.speedup from PyTorch on the GPU (KernelBench tasks; a native task
 * gets a note instead). PRAGMA_E_ENV when there is no CUDA torch. */
int pragma_cuda_profile_baseline(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets, int warm,
				 struct pragma_profile *p, struct pragma_err *err);
/* The baseline a CUDA optimization run measures: PyTorch on the GPU for
 * KernelBench tasks when there is a CUDA torch (kind "pytorch", config
 * "device": "cuda"), else pragma_baseline_measure() on the CPU (config
 * "device": "cpu", with a note for KernelBench tasks). */
struct pragma_timing_opts;
struct pragma_baseline;
int pragma_cuda_baseline_measure(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets,
				 const struct pragma_timing_opts *o, struct pragma_baseline *b, struct pragma_err *err);
/* Does $PRAGMA_PYTHON's torch see a GPU? 1 yes, 0 no (why says so). */
int pragma_cuda_torch_available(char *why, size_t len);

#endif
