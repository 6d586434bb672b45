/*
 * Bottleneck rules. Each reads a few metrics, and when they say something
 * an expert would act on, adds a finding with the numbers that made it fire.
 * Thresholds follow the vendor guidance named in the playbooks
 * (knowledge/playbooks.json); they are deliberately coarse: a finding is a
 * lead for the Conductor, not a verdict.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/diagnose.h"

static const char *const names[] = {
	"memory-bound",	     "near-roof",	"far-from-roof", "under-vectorized", "narrow-vectors",
	"no-fma",	     "low-parallelism", "cache-thrashing", "latency-bound-reduction", "register-spills",
	"calls-in-loop",     "frontend-bound",	"bad-speculation", "backend-bound", "latency-bound-loop",
	"port-bound",
};

const char *const *pragma_bottleneck_names(size_t *n)
{
	*n = sizeof(names) / sizeof(names[0]);
	return names;
}

/* A metric the rules may use. Simulated figures only when sim ran (on the
 * verified build, the only one it runs): a profile that says sim could not
 * run has no business carrying sim.* figures, and none is used. */
static int get(const struct pragma_profile *p, const char *name, double *v)
{
	if (!strncmp(name, "sim.", 4) && pragma_profile_why(p, "sim"))
		return 0;
	return pragma_profile_get(p, name, v);
}

static struct pragma_finding *add(struct pragma_diagnosis *d, const char *bottleneck, double conf,
				  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static struct pragma_finding *add(struct pragma_diagnosis *d, const char *bottleneck, double conf,
				  const char *fmt, ...)
{
	struct pragma_finding *f;
	va_list ap;

	d->f = realloc(d->f, (d->n + 1) * sizeof(*d->f));
	if (!d->f)
		abort();
	f = &d->f[d->n++];
	memset(f, 0, sizeof(*f));
	snprintf(f->bottleneck, sizeof(f->bottleneck), "%s", bottleneck);
	f->confidence = conf < 0.05 ? 0.05 : conf > 0.99 ? 0.99 : conf;
	va_start(ap, fmt);
	vsnprintf(f->evidence, sizeof(f->evidence), fmt, ap);
	va_end(ap);
	return f;
}

__attribute__((format(printf, 2, 3))) static void append(struct pragma_finding *f, const char *fmt, ...)
{
	size_t k = strlen(f->evidence);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->evidence + k, sizeof(f->evidence) - k, fmt, ap);
	va_end(ap);
}

static const char *count(double v, char *buf, size_t len)
{
	return pragma_metric_format(v, "count", buf, len);
}

static const char *where(const struct pragma_profile *p, int line, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%d", p->source_name[0] ? p->source_name : "kernel.c", line);
	return buf;
}

/* "(1 of 2 threads simulated)" when the simulated view is partial. */
/* Thread-local: diagnoses may run on several threads at once. */
static const char *sim_caveat(const struct pragma_profile *p)
{
	static _Thread_local char buf[96];
	double busy;

	/* A kernel that keeps one core busy is one thread: the simulation sees
	 * it whole. Not from a disturbed profiled run, whose idle core says
	 * nothing about the kernel (par_rules). */
	if (pragma_profile_get(p, "par.busy_cores", &busy) && busy < 1.2 && !pragma_profile_far_from_timed(p))
		snprintf(buf, sizeof(buf), " (simulated by callgrind on this build; the kernel runs on one thread)");
	else if (p->threads > 1)
		snprintf(buf, sizeof(buf), " (simulated on 1 of %d threads by callgrind on this build: a rough guide)",
			 p->threads);
	else
		snprintf(buf, sizeof(buf), " (simulated by callgrind on this build)");
	return buf;
}

/* What the bandwidth roof is, from the roofline's note: a GPU's peak
 * (datasheet or memory clocks, lib/cuda/gpus.c) is no figure a kernel timed
 * by pragma was seen to reach. */
static const char *bw_roof_kind(const struct pragma_profile *p)
{
	for (size_t i = 0; i < p->n_notes; i++)
		if (!strncmp(p->notes[i], "roofline: bandwidth roof", 24) &&
		    strstr(p->notes[i], "not a figure measured under the timing protocol"))
			return "the device's peak, not measured under the timing protocol";
	return "the best a streaming kernel reaches under the same timing protocol";
}

/* Roofline rules. The bandwidth roof is what a streaming kernel reaches
 * under the timing protocol (roof.peak_gbs), not the highest peak ever
 * measured. A task FLOP rate above the FP32 peak means fewer FLOPs done than
 * counted (Winograd, Strassen): the compute roof says nothing then, so only
 * the bandwidth fraction is judged, and "near the roof" is never said of an
 * impossible compute fraction (older profiles stored one in roof.pct_roof). */
static void roofline_rules(const struct pragma_profile *p, struct pragma_diagnosis *d)
{
	double pct_roof, ai = NAN, ridge = NAN, gbs, pct_bw, gfl, pct_fl, v, w, over = 0;
	char a[96];
	int have_ai = get(p, "roof.ai", &ai) && get(p, "roof.ridge_ai", &ridge);
	int fewer = get(p, "roof.flops_over_peak", &over) ||
		    (get(p, "roof.pct_peak_flops", &pct_fl) && pct_fl > 100 && (over = pct_fl / 100) > 0);
	int memory_side = fewer || (have_ai ? ai < ridge : !get(p, "roof.gflops", &v));

	if (!get(p, "roof.pct_roof", &pct_roof))
		return;
	if (fewer) {
		/* The only roof left is bandwidth; without a byte count, none. */
		if (!get(p, "roof.pct_peak_bw", &pct_roof))
			return;
	}
	if (memory_side && get(p, "roof.gbs", &gbs) && get(p, "roof.pct_peak_bw", &pct_bw) &&
	    get(p, "roof.peak_gbs", &v)) {
		if (pct_bw >= 40) {
			struct pragma_finding *f =
				add(d, "memory-bound", 0.4 + 0.6 * fmin(pct_bw, 100) / 100,
				    "memory-bound: %.1f GB/s = %.0f%% of the bandwidth roof (%.1f GB/s, %s)", gbs, pct_bw,
				    v, bw_roof_kind(p));
			if (fewer)
				append(f, "; the task's FLOP count runs at %.2fx the FP32 peak, so the kernel does fewer "
					  "FLOPs than counted (Winograd/Strassen-like) and bandwidth is its roof",
				       over);
			else if (have_ai)
				append(f, "; arithmetic intensity %.3g FLOP/B is below the ridge point %.3g", ai, ridge);
			if (get(p, "sim.ll_miss_rate", &v) && get(p, "sim.ll_misses", &w))
				append(f, "; LL miss rate %.0f%% (%s misses per call)%s", v, count(w, a, sizeof(a)),
				       sim_caveat(p));
			if (pct_bw >= 70)
				append(f, "; at the bandwidth roof: only moving fewer bytes helps now (fuse passes, "
					  "streaming stores, narrower types)");
			if (get(p, "static.nt_stores", &v) && v == 0 && p->bytes > 0)
				append(f, "; no streaming stores in the code");
		} else if (!fewer) {
			/* A cheaper algorithm is compute-bound on FLOPs nobody
			 * counted: a low bandwidth share is no sign of waste. */
			add(d, "far-from-roof", 0.6,
			    "far from the roof: %.1f GB/s is %.0f%% of the bandwidth roof (%.1f GB/s, %s) although the "
			    "memory roof binds (%s); the kernel leaves bandwidth unused: too little parallelism, strided "
			    "or dependent accesses, or scalar code",
			    gbs, pct_bw, v, bw_roof_kind(p),
			    have_ai ? (snprintf(a, sizeof(a), "intensity %.3g < ridge %.3g", ai, ridge), a)
				    : "no FLOP count");
		}
	} else if (!memory_side && get(p, "roof.gflops", &gfl) && get(p, "roof.pct_peak_flops", &pct_fl) &&
		   get(p, "roof.peak_gflops", &v)) {
		if (pct_roof < 25) {
			struct pragma_finding *f =
				add(d, "far-from-roof", 0.55 + 0.4 * (25 - pct_roof) / 25,
				    "far from the roof: %.1f GFLOP/s = %.1f%% of the measured FP32 peak (%.0f GFLOP/s); the "
				    "compute roof binds (arithmetic intensity %.3g >= ridge %.3g), so %.0fx of headroom is "
				    "left",
				    gfl, pct_fl, v, ai, ridge, 100 / fmax(pct_roof, 0.01));
			if (get(p, "sim.insn_per_flop", &w))
				append(f, "; %.2f instructions per FLOP (16-wide FMA code needs about 0.05)", w);
			append(f, "; if tuning stalls, change the algorithm or the blocking");
		}
	}
	if (pct_roof >= 70) {
		struct pragma_finding *f =
			add(d, "near-roof", fmin(pct_roof, 100) / 100,
			    "near the roof: %.0f%% of what the %s roof allows; further gains need less work or fewer "
			    "bytes, not tuning",
			    pct_roof, memory_side ? "bandwidth" : "compute");
		if (pct_roof > 100)
			append(f, "; above 100%% because this kernel beat the roof's streaming kernels (the roof was "
				  "measured on a busier machine, or the data stayed in cache): treat it as at the roof");
		else if (!memory_side && get(p, "roof.pct_peak_flops", &pct_fl) && pct_fl >= 90)
			append(f, "; at %.0f%% of the FP32 peak it may also be doing fewer FLOPs than the task counts "
				  "(Winograd, Strassen)",
			       pct_fl);
	}
}

/* A call the simulation saw run so rarely that it cannot matter: its
 * calls, at a generous 50 instructions each, are under 1% of the kernel's
 * executed instructions (a tail loop, the last tile, an error path). */
static int rarely_run(const struct pragma_profile *p, const struct pragma_remark *r)
{
	double insns;

	return r->runs >= 0 && get(p, "sim.instructions", &insns) && insns > 0 && 50 * r->runs < 0.01 * insns;
}

static void vector_rules(const struct pragma_profile *p, const struct pragma_machine *m, struct pragma_diagnosis *d)
{
	double packed, fp_ops, bits, fma, mul, add_, v;
	char w[128];
	int remarks = 0;

	/* What executed (sim) beats what is in the binary (static): a scalar
	 * remainder loop is in the code, but runs a handful of times. */
	int dyn = get(p, "sim.fp_ops", &fp_ops) && fp_ops > 0 && get(p, "sim.fp_packed_pct", &packed);
	char cnt[32];
	/* The static share counts scalar prologues and remainders as much as
	 * the main loop: only an almost all-scalar binary says much. */
	if (!dyn && !(get(p, "static.fp_ops", &fp_ops) && fp_ops > 0 && get(p, "static.fp_packed_pct", &packed) &&
		      packed < 20))
		packed = 100;
	if (packed < 50) {
		struct pragma_finding *f =
			dyn ? add(d, "under-vectorized", packed < 10 ? 0.85 : 0.65,
				  "under-vectorized: %.0f%% of the FP instructions executed are packed (%s FP instructions "
				  "per call, simulated by callgrind on this build)",
				  packed, count(fp_ops, cnt, sizeof(cnt)))
			    : add(d, "under-vectorized", packed < 10 ? 0.7 : 0.5,
				  "under-vectorized: %.0f%% of the FP instructions in the code are packed (%.0f of %.0f; "
				  "static, from this build's disassembly)",
				  packed, packed * fp_ops / 100, fp_ops);
		for (size_t i = 0; i < p->n_remarks && remarks < 3; i++)
			if (p->remarks[i].kind == PRAGMA_REMARK_NOT_VECTORIZED && p->remarks[i].line > 0) {
				append(f, "; loop at %s not vectorized%s%s", where(p, p->remarks[i].line, w, sizeof(w)),
				       p->remarks[i].text[0] ? ": " : "", p->remarks[i].text);
				remarks++;
			}
		if (get(p, "sim.insn_per_flop", &v))
			append(f, "; %.2f instructions per FLOP", v);
		if (get(p, "roof.pct_roof", &v) && v < 50)
			append(f, "; %.0f%% of the roofline", v);
	} else if (get(p, "static.vector_bits", &bits) && bits == 0 && get(p, "static.loops_not_vectorized", &v) &&
		   v > 0) {
		struct pragma_finding *f = add(d, "under-vectorized", 0.5,
					       "under-vectorized: no vector instructions in the kernel (static, from this "
					       "build's disassembly)");
		for (size_t i = 0; i < p->n_remarks && remarks < 3; i++)
			if (p->remarks[i].kind == PRAGMA_REMARK_NOT_VECTORIZED && p->remarks[i].line > 0) {
				append(f, "; loop at %s not vectorized%s%s", where(p, p->remarks[i].line, w, sizeof(w)),
				       p->remarks[i].text[0] ? ": " : "", p->remarks[i].text);
				remarks++;
			}
	}
	int dyn_bits = get(p, "sim.vector_bits", &bits);
	if (m && (dyn_bits || get(p, "static.vector_bits", &bits)) && bits > 0 && bits < 256 && m->has_avx2 &&
	    packed >= 50)
		add(d, "narrow-vectors", 0.5,
		    "narrow vectors: the widest packed instructions %s use %.0f-bit registers; this CPU has %s",
		    dyn_bits ? "executed (callgrind on this build)" : "in this build's code", bits,
		    m->has_avx512f ? "256-bit AVX2 and 512-bit AVX-512" : "256-bit AVX2");
	if (m && m->has_fma && get(p, "static.fma", &fma) && fma == 0 && get(p, "static.fp_mul", &mul) && mul > 0 &&
	    get(p, "static.fp_add", &add_) && add_ > 0)
		add(d, "no-fma", 0.45,
		    "no FMA: %.0f multiplies and %.0f adds, no fused multiply-add although the CPU has FMA (one "
		    "instruction and one rounding instead of two; static, from this build's disassembly)",
		    mul, add_);
	if (get(p, "static.stack_spills", &v) && v > 0) {
		struct pragma_finding *f =
			add(d, "register-spills", v >= 4 ? 0.55 : 0.4,
			    "register spills: %.0f vector-register moves to or from the stack inside innermost loops "
			    "(registers stored to fixed stack slots and loaded back: more live values, an accumulator "
			    "or tile, than the %d vector registers hold; static, from this build's disassembly)",
			    v, m && m->has_avx512f ? 32 : 16);
		/* where: the static note names the first */
		for (size_t i = 0; i < p->n_notes; i++) {
			const char *at = strstr(p->notes[i], "(the first at ");
			if (strncmp(p->notes[i], "static: ", 8) || !at)
				continue;
			at += 14;
			const char *end = strstr(at, "),");
			append(f, "; the first at %.*s", (int)(end ? end - at : 0), at);
			break;
		}
	}
	for (size_t i = 0; i < p->n_remarks; i++)
		/* A call in an outer loop (a memset per row tile) is cheap; in an
		 * innermost loop it is paid per element. */
		/* "expf (inside an innermost loop: depth 3 of pk_forward)": only
		 * a call the loop analysis put there; "not in a loop" and "in a
		 * loop, not the innermost" are cheap. */
		if (p->remarks[i].kind == PRAGMA_REMARK_CALL && strstr(p->remarks[i].text, " (inside an innermost loop") &&
		    !rarely_run(p, &p->remarks[i])) {
			char name[96];
			snprintf(name, sizeof(name), "%.95s", p->remarks[i].text);
			char *cut = strstr(name, " (inside");
			if (cut)
				*cut = 0;
			const char *depth = strstr(p->remarks[i].text, "loop: ");
			struct pragma_finding *f =
				add(d, "calls-in-loop", 0.55,
				    "calls %s inside an innermost loop%s%s%s%.*s: the call blocks vectorization and costs a "
				    "call per iteration (static, from this build's disassembly)",
				    name, p->remarks[i].line > 0 ? " at " : "",
				    p->remarks[i].line > 0 ? where(p, p->remarks[i].line, w, sizeof(w)) : "",
				    depth ? ", " : "", depth ? (int)strcspn(depth + 6, ")") : 0, depth ? depth + 6 : "");
			if (p->remarks[i].runs >= 0)
				append(f, "; it ran %s times per pk_forward call (simulated on this build)",
				       count(p->remarks[i].runs, w, sizeof(w)));
			break;
		}
	for (size_t i = 0; i < p->n_remarks; i++) {
		const struct pragma_remark *r = &p->remarks[i];
		char w2[128];
		if (r->kind == PRAGMA_REMARK_NOT_VECTORIZED &&
		    (strstr(r->text, "reduction") || strstr(r->text, "reorder floating-point"))) {
			struct pragma_finding *f =
				add(d, "latency-bound-reduction", 0.55,
				    "latency-bound reduction: the loop at %s accumulates into one FP variable in order (%s): "
				    "each add waits for the previous one (3-4 cycles), so the loop runs at one element "
				    "per add latency (the compiler's vectorization remarks)",
				    where(p, r->line, w2, sizeof(w2)), r->text);
			if (get(p, "cpu.ipc", &v))
				append(f, "; IPC %.2f", v);
			break;
		}
	}
}

/* The hottest loop's model (llvm-mca on this build): what sets its pace.
 * The model assumes L1 hits, so on a kernel the roofline calls
 * memory-bound a port finding is a second opinion at best. */
static void mca_rules(const struct pragma_profile *p, struct pragma_diagnosis *d)
{
	double cyc, ports, lat, press, share = -1, fl, bw = 0;
	const struct pragma_remark *hot = NULL;
	char w[128], model[64] = "llvm-mca";

	if (!get(p, "mca.cycles_per_iter", &cyc) || !get(p, "mca.port_cycles_per_iter", &ports) || cyc <= 0)
		return;
	for (size_t i = 0; i < p->n_remarks && !hot; i++)
		if (p->remarks[i].kind == PRAGMA_REMARK_LOOP)
			hot = &p->remarks[i];
	for (size_t i = 0; i < p->n_notes; i++) {
		/* "mca: llvm-mca 19's znver4 model of this build's ..." */
		const char *s = strstr(p->notes[i], "llvm-mca"), *e = s ? strstr(s, " model") : NULL;
		if (!strncmp(p->notes[i], "mca: ", 5) && s && e) {
			snprintf(model, sizeof(model), "%.*s", (int)(e - s + 6), s);
			break;
		}
	}
	/* a loop that calls out: the model counts the call as one instruction,
	 * so its cycles say nothing of the callee (calls-in-loop speaks) */
	if (hot && strstr(hot->text, "calls inside"))
		return;
	get(p, "mca.hot_loop_pct", &share);
	int memory = get(p, "roof.pct_peak_bw", &bw) && bw >= 40;
	char at[160] = "";
	if (hot && hot->line > 0)
		snprintf(at, sizeof(at), " at %s", where(p, hot->line, w, sizeof(w)));
	char weight[96] = "";
	if (share >= 0)
		snprintf(weight, sizeof(weight), " (%.0f%% of the executed instructions)", share);
	/* the same threshold the loop remark uses: cycles a third beyond the ports' need */
	if (get(p, "mca.latency_pct", &lat) && lat >= 25) {
		struct pragma_finding *f =
			add(d, "latency-bound-loop", share >= 50 || share < 0 ? 0.55 : 0.4,
			    "latency-bound loop: the hottest loop%s%s takes %.2f cycles per iteration where its ports "
			    "need %.2f: %.0f%% of the time waits on a loop-carried dependency",
			    at, weight, cyc, ports, lat);
		const char *chain = hot ? strstr(hot->text, "dependency (") : NULL;
		if (chain)
			append(f, " (%.*s)", (int)strcspn(chain + 12, ")"), chain + 12);
		append(f, "; independent accumulators (or interleaved iterations) let the ports work (%s of this build)",
		       model);
		if (memory)
			append(f, "; the model assumes L1 hits and the kernel is at %.0f%% of the bandwidth peak", bw);
	} else if (get(p, "mca.port_pressure_pct", &press) && press >= 80) {
		const char *port = hot ? strstr(hot->text, "bound by port ") : NULL;
		const char *disp = hot ? strstr(hot->text, "bound by dispatch") : NULL;
		char what[160] = "", advice[200];
		if (port) {
			port += 14;
			const char *busy = strstr(port, ", busy");
			snprintf(what, sizeof(what), "port %.*s", (int)(busy ? busy - port : (long)strcspn(port, ",")), port);
		} else if (disp) {
			snprintf(what, sizeof(what), "the dispatch width");
		} else {
			snprintf(what, sizeof(what), "its busiest port");
		}
		if (strstr(what, "load"))
			snprintf(advice, sizeof(advice), "loads are the limit: reuse each loaded value for more work "
							 "(register blocking: more accumulators per load)");
		else if (strstr(what, "store"))
			snprintf(advice, sizeof(advice), "stores are the limit: keep partial results in registers and "
							 "write each output once");
		else if (disp)
			snprintf(advice, sizeof(advice), "too many micro-ops per iteration: fewer, wider instructions");
		else
			snprintf(advice, sizeof(advice), "the execution ports are the limit: fewer instructions per result "
							 "(FMA, wider vectors, no redundant shuffles or conversions), or a "
							 "cheaper algorithm");
		struct pragma_finding *f =
			add(d, "port-bound", memory ? 0.3 : share >= 50 || share < 0 ? 0.5 : 0.35,
			    "port-bound loop: the hottest loop%s%s is bound by %s, busy %.0f%% of its %.2f cycles per "
			    "iteration; %s (%s of this build)",
			    at, weight, what, press, cyc, advice, model);
		double peak;
		if (get(p, "mca.flops_per_cycle", &fl) && get(p, "mca.peak_flops_per_cycle", &peak) && peak > 0 &&
		    fl >= 0.8 * peak && !strstr(what, "load") && !strstr(what, "store") && !disp)
			append(f, "; %.1f FP operations per cycle, %.0f%% of the modeled core's FP32 peak (%.0f): the loop "
				  "itself is done; more cores, or fewer operations (a cheaper algorithm), are what is left",
			       fl, 100 * fl / peak, peak);
		else if (get(p, "mca.flops_per_cycle", &fl))
			append(f, "; %.1f FP operations per cycle", fl);
		if (memory)
			append(f, "; but the kernel is at %.0f%% of the bandwidth peak and the model assumes L1 hits: "
				  "memory comes first",
			       bw);
	}
}

static void par_rules(const struct pragma_profile *p, struct pragma_diagnosis *d)
{
	double util, busy, th;
	static const char *const words[] = { "zero", "one", "two", "three", "four", "five", "six", "seven", "eight" };

	if (!get(p, "par.utilization", &util) || !get(p, "par.busy_cores", &busy) || !get(p, "par.threads", &th) ||
	    th < 2 || util >= 60)
		return;
	/* Busy cores are the profiled run's: when that run took far longer
	 * (or shorter) than the timing session's, it was disturbed, and its
	 * idle core says nothing about the timed kernel (model players were
	 * told "low parallelism" of statically split two-thread kernels whose
	 * profiled run took 2-4x the timed one). The profile's note says so. */
	if (pragma_profile_far_from_timed(p))
		return;
	long rb = lround(busy), rt = lround(th);
	if (rb >= 0 && rb <= 8 && rt <= 8 && rb < rt)
		add(d, "low-parallelism", busy < 1.25 ? 0.85 : 0.6,
		    "low parallelism: %s core%s busy of %s (%.2f busy cores, %.0f%% utilization of %.0f threads)",
		    words[rb < 1 ? 1 : rb], rb <= 1 ? "" : "s", words[rt], busy, util, th);
	else
		add(d, "low-parallelism", 0.6, "low parallelism: %.2f busy cores of %.0f threads (%.0f%% utilization)",
		    busy, th, util);
}

static void cache_rules(const struct pragma_profile *p, struct pragma_diagnosis *d)
{
	double rate, misses, refs, insn, traffic, v;
	char a[32], b[32];
	int fired = 0;
	struct pragma_finding *f = NULL;

	/* A streaming kernel misses D1 once per line and can do no better
	 * (compulsory misses); reuse is poor when lines come back many times. */
	double lines = p->bytes > 0 ? p->bytes / 64 : 0;
	if (get(p, "sim.d1_miss_rate", &rate) && get(p, "sim.d1_misses", &misses) && get(p, "sim.data_refs", &refs) &&
	    get(p, "sim.instructions", &insn) && rate >= 10 &&
	    (lines > 0 ? misses >= 4 * lines : misses >= insn / 50)) {
		f = add(d, "cache-thrashing", rate >= 30 ? 0.75 : 0.55,
			"poor data reuse: D1 miss rate %.0f%% (%s misses of %s data references per call)%s", rate,
			count(misses, a, sizeof(a)), count(refs, b, sizeof(b)), sim_caveat(p));
		if (lines > 0)
			append(f, "; each 64-byte line of the task's data misses D1 %.0f times on average", misses / lines);
		fired = 1;
	}
	if (get(p, "sim.traffic_ratio", &traffic) && traffic >= 3) {
		if (!f)
			f = add(d, "cache-thrashing", 0.65, "poor data reuse: ");
		else
			append(f, "; ");
		append(f, "memory traffic %.1fx the minimal bytes (each byte fetched %.1f times from beyond the LL)",
		       traffic, traffic);
		if (get(p, "sim.ll_miss_rate", &v))
			append(f, ", LL miss rate %.0f%%", v);
		fired = 1;
	}
	if (!fired && get(p, "cpu.l1d_mpki", &v) && v >= 40)
		f = add(d, "cache-thrashing", 0.5, "poor data reuse: %.0f L1D misses per 1000 instructions (counted)", v);
	if (f && get(p, "roof.ai", &v) && get(p, "roof.ridge_ai", &rate) && v >= rate)
		append(f, "; the algorithm has reuse to exploit (intensity %.3g FLOP/B): block or tile for the caches", v);
}

static void topdown_rules(const struct pragma_profile *p, struct pragma_diagnosis *d)
{
	double fe, bad, be, ret, v, w, insn;
	char a[32];

	if (get(p, "topdown.frontend_bound", &fe) && fe >= 25)
		add(d, "frontend-bound", fe >= 40 ? 0.7 : 0.5,
		    "frontend-bound: %.0f%% of issue slots empty because instructions were not delivered (code too "
		    "large for the op cache, or unpredictable jumps)",
		    fe);
	if (get(p, "topdown.bad_speculation", &bad) && bad >= 15) {
		struct pragma_finding *f =
			add(d, "bad-speculation", bad >= 25 ? 0.75 : 0.55,
			    "bad speculation: %.0f%% of issue slots spent on work that was thrown away", bad);
		if (get(p, "cpu.branch_miss_rate", &v) && get(p, "cpu.branch_misses", &w))
			append(f, "; branch miss rate %.1f%% (%s misses per call)", v, count(w, a, sizeof(a)));
	} else if (get(p, "cpu.branch_miss_rate", &v) && get(p, "cpu.branch_misses", &w) &&
		   get(p, "cpu.instructions", &insn) && v >= 5 && w >= insn / 200) {
		add(d, "bad-speculation", 0.55, "bad speculation: branch miss rate %.1f%% (%s misses per call, %.1f per 1000 instructions)",
		    v, count(w, a, sizeof(a)), 1000 * w / insn);
	} else if (get(p, "sim.branch_mispredict_rate", &v) && get(p, "sim.branch_mispredicts", &w) &&
		   get(p, "sim.instructions", &insn) && v >= 10 && w >= insn / 100) {
		/* Only when mispredicts are a real share of the work: a loop
		 * exit mispredicted once per loop is a tiny absolute count, and
		 * valgrind's two-bit predictor misses the exits of short loops
		 * that a real CPU predicts. */
		add(d, "bad-speculation", 0.35,
		    "bad speculation (simulated): mispredict rate %.1f%% (%s per call, %.1f per 1000 "
		    "instructions)%s; valgrind's predictor is simpler than the CPU's, so confirm with counters or "
		    "by removing the branch",
		    v, count(w, a, sizeof(a)), 1000 * w / insn, sim_caveat(p));
	}
	if (get(p, "topdown.backend_bound", &be) && be >= 50) {
		int mem = 0;
		for (size_t i = 0; i < d->n; i++)
			if (!strcmp(d->f[i].bottleneck, "memory-bound") || !strcmp(d->f[i].bottleneck, "cache-thrashing"))
				mem = 1;
		struct pragma_finding *f =
			add(d, "backend-bound", be >= 70 ? 0.65 : 0.5,
			    "backend-bound: %.0f%% of issue slots stalled waiting for %s", be,
			    mem ? "memory (see the memory findings)" : "execution units or data");
		if (get(p, "cpu.ipc", &v))
			append(f, "; IPC %.2f", v);
		if (get(p, "cpu.llc_mpki", &v))
			append(f, "; %.1f LLC misses per 1000 instructions", v);
	}
	if (get(p, "topdown.retiring", &ret) && ret >= 60 && get(p, "roof.pct_roof", &v) && v < 30) {
		for (size_t i = 0; i < d->n; i++)
			if (!strcmp(d->f[i].bottleneck, "under-vectorized") || !strcmp(d->f[i].bottleneck, "far-from-roof")) {
				append(&d->f[i], "; %.0f%% of slots retire useful work, yet the roof is far: too many "
						 "instructions for the job",
				       ret);
				break;
			}
	}
}

static int by_confidence(const void *a, const void *b)
{
	const struct pragma_finding *x = a, *y = b;

	return x->confidence < y->confidence ? 1 : x->confidence > y->confidence ? -1 : 0;
}

void pragma_diagnose(const struct pragma_profile *p, const struct pragma_machine *m, struct pragma_diagnosis *d)
{
	memset(d, 0, sizeof(*d));
	roofline_rules(p, d);
	vector_rules(p, m, d);
	mca_rules(p, d);
	par_rules(p, d);
	cache_rules(p, d);
	topdown_rules(p, d);
	if (d->n > 1)
		qsort(d->f, d->n, sizeof(*d->f), by_confidence);
}

void pragma_diagnosis_release(struct pragma_diagnosis *d)
{
	free(d->f);
	memset(d, 0, sizeof(*d));
}

json_t *pragma_diagnosis_json(const struct pragma_diagnosis *d)
{
	json_t *a = json_array();

	for (size_t i = 0; i < d->n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:f}", "bottleneck", d->f[i].bottleneck, "evidence",
						   d->f[i].evidence, "confidence", round(d->f[i].confidence * 100) / 100));
	return a;
}

void pragma_diagnosis_text(const struct pragma_diagnosis *d, struct pragma_buf *out)
{
	for (size_t i = 0; i < d->n; i++)
		pragma_buf_addf(out, "  %-24s %.2f  %s\n", d->f[i].bottleneck, d->f[i].confidence, d->f[i].evidence);
}
