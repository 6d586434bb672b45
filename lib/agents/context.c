/* Text blocks the prompts share: the task's tensors, the machine, the
 * baseline, the work to do. Built once per run. */
#include <stdio.h>
#include <string.h>

#include "agents_priv.h"
#include "pragma/tensor.h"

void agents_io_table(const struct pragma_task *t, struct pragma_buf *out)
{
	pragma_buf_adds(out, "| # | name | role | dtype | shape |\n|---|---|---|---|---|\n");
	for (int i = 0; i < t->n_inputs; i++) {
		char sh[160];
		pragma_buf_addf(out, "| inputs[%d] | %s | %s | %s | %s |\n", i, t->inputs[i].name, t->inputs[i].role,
				pragma_dtype_name(t->inputs[i].dtype),
				pragma_shape_str(t->inputs[i].shape, t->inputs[i].ndim, sh, sizeof(sh)));
	}
	for (int i = 0; i < t->n_outputs; i++) {
		char sh[160];
		pragma_buf_addf(out, "| outputs[%d] | %s | output | %s | %s |\n", i, t->outputs[i].name,
				pragma_dtype_name(t->outputs[i].dtype),
				pragma_shape_str(t->outputs[i].shape, t->outputs[i].ndim, sh, sizeof(sh)));
	}
	/* What the forward pass depends on beyond the tensors: dim, kernel
	 * size, stride, padding, eps, sizes. */
	if (t->n_facts) {
		pragma_buf_adds(out, "\nSettings the forward pass depends on (not inputs; fixed for this task):\n");
		pragma_task_facts_text(t, out);
	}
}

void agents_machine_text(const struct pragma_machine *m, struct pragma_buf *out)
{
	pragma_buf_addf(out, "- CPU: %s (%s family %d model %d), %d cores usable%s\n", m->cpu_model, m->vendor,
			m->family, m->model, m->cores, m->hypervisor ? ", virtual machine" : "");
	/* What family/model means: unit widths, FMA latency, cache latencies. */
	pragma_machine_uarch_text(m, out);
	pragma_buf_addf(out, "- ISA: %s\n", m->isa);
	int shared_ll = 0, shown = 0;
	for (int i = 0; i < m->n_caches; i++)
		if (strcmp(m->caches[i].type, "Instruction")) {
			const struct pragma_cache_level *c = &m->caches[i];
			pragma_buf_adds(out, shown++ ? "" : "- Caches:");
			pragma_buf_addf(out, " L%d%s %llu KiB (%d-way, ", c->level, c->level == 1 ? "d" : "",
					(unsigned long long)(c->size / 1024), c->ways);
			if (c->shared_cpus > 1)
				pragma_buf_addf(out, "shared by %d CPUs)", c->shared_cpus);
			else
				pragma_buf_adds(out, "per core)");
			pragma_buf_adds(out, i + 1 < m->n_caches ? ";" : "");
			shared_ll |= c->shared_cpus > 1;
		}
	/* Players planned on re-reading 4 MiB rows from the L3 and asked
	 * whether a VM's L3 is its own. */
	if (m->hypervisor && shared_ll)
		pragma_buf_adds(out, ". The sizes are what the virtual machine reports: the host's other guests may use "
				     "the shared cache too, so data you expect to find in it may have left");
	if (shown)
		pragma_buf_addch(out, '\n');
	if (!m->measured)
		return;
	pragma_buf_addf(out, "- Compute roof: %.0f GFLOP/s FP32 (%s FMA, all cores; %.0f on one core)\n", m->peak_gflops,
			m->peak_isa, m->peak_gflops_1core);
	pragma_buf_adds(out, "- Memory bandwidth roof: ");
	pragma_machine_roof_text(m, out);
	if (m->roof_gbs > 0)
		pragma_buf_addf(out, ". Streaming kernels timed like yours (cold cache, all cores) reach this, not the "
				     "%.1f GB/s that warm microbenchmarks show",
				m->peak_gbs);
	pragma_buf_adds(out, "\n");
}

void agents_baseline_text(const struct pragma_task *t, const struct pragma_baseline *b, double seen_ms, int seen_n,
			  struct pragma_buf *out)
{
	const char *torch = json_string_value(json_object_get(b->config, "torch"));

	if (!strcmp(b->kind, "pytorch"))
		pragma_buf_addf(out, "PyTorch %s eager on the same cores: median %.3f ms (min %.3f, stdev %.1f%%, %d calls, "
				"cold cache).", torch ? torch : "", b->stats.median, b->stats.min,
				b->stats.mean > 0 ? 100 * b->stats.stdev / b->stats.mean : 0, b->stats.count);
	else
		pragma_buf_addf(out, "The task's %s built with -O3 -march=native -fopenmp: median %.3f ms (min %.3f, "
				"stdev %.1f%%, %d calls, cold cache).",
				json_string_value(json_object_get(b->config, "source")), b->stats.median, b->stats.min,
				b->stats.mean > 0 ? 100 * b->stats.stdev / b->stats.mean : 0, b->stats.count);
	/* Players asked what "cold" means: whether a second pass can hit L3.
	 * The protocol the baseline was timed under says. */
	json_t *pr = json_object_get(b->config, "protocol");
	double flush = json_number_value(json_object_get(pr, "flush_bytes"));
	if (json_is_true(json_object_get(pr, "cold")) && flush > 0)
		pragma_buf_addf(out, " Cold cache: before every call (yours and the baseline's alike) pragma writes a %.0f "
				     "MiB buffer, more than the last-level cache, so each call's inputs start in memory; "
				     "what the kernel re-reads within one call can still hit the caches.",
				flush / 1048576.0);
	/* Every comparison in a request is with the baseline timed again in
	 * the same rounds: a player compared 76 ms here with 35-39 ms there. */
	if (seen_ms > 0)
		pragma_buf_addf(out, " That was measured when the run began; each attempt's timing session times the "
				     "baseline again beside the kernel (%d so far, the latest: %.3f ms), and every "
				     "speedup is against those rounds.",
				seen_n, seen_ms);
	(void)t;
}

void agents_work_text(const struct pragma_task *t, const struct pragma_machine *m, const struct pragma_baseline *b,
		      double seen_ms, struct pragma_buf *out)
{
	/* The baseline as the comparisons see it: the latest session's. */
	double ms = seen_ms > 0 ? seen_ms : b->stats.median;
	const char *when = seen_ms > 0 ? "in the latest timing session" : "when the run began";

	pragma_task_flops_text(t, out);
	pragma_buf_addf(out, "%.1f MiB minimal memory traffic (inputs read once, outputs written once)", t->bytes / 1048576.0);
	if (t->flops > 0 && t->bytes > 0)
		pragma_buf_addf(out, ", arithmetic intensity %.2f FLOP/byte", t->flops / t->bytes);
	pragma_buf_adds(out, ".");
	const char *method = "";
	double bw = pragma_machine_bw_roof_for(m, t->bytes, pragma_task_output_bytes(t), &method, NULL);
	if (m->measured && bw > 0) {
		double t_bw = t->bytes / (bw * 1e6);
		double t_fl = t->flops > 0 && m->peak_gflops > 0 ? t->flops / (m->peak_gflops * 1e6) : 0;
		/* Name the roof's kernel: the model cannot judge "% of roof" without
		 * knowing what reached it (DESIGN 3.6). */
		if (!strcmp(method, "peak"))
			pragma_buf_addf(out, " Lower bounds on this machine: %.3f ms from bandwidth (%.1f GB/s roof, the "
					     "microbenchmark peak: no kernel timed like yours reaches it)", t_bw, bw);
		else if (!strcmp(method, "read") && m->roof_gbs > bw)
			pragma_buf_addf(out, " Lower bounds on this machine: %.3f ms from bandwidth (%.1f GB/s roof, the read "
					     "kernel's: this task writes almost nothing, so it is a read-only stream, and "
					     "streaming stores cannot help it)", t_bw, bw);
		else
			pragma_buf_addf(out, " Lower bounds on this machine: %.3f ms from bandwidth (%.1f GB/s roof, the %s "
					     "kernel's under the timing protocol)", t_bw, bw, method);
		if (t_fl > 0)
			pragma_buf_addf(out, ", %.3f ms from compute", t_fl);
		pragma_buf_addf(out, " — the %s roof binds.", t_fl > t_bw ? "compute" : "bandwidth");
		if (t_fl <= t_bw && strcmp(method, "peak"))
			/* A kernel can beat a measured roof by its noise: say so where the bound is given. */
			pragma_buf_adds(out, " That roof is measured, not proven: a kernel a few percent under its time "
					     "is at the roof, not past it.");
		if (ms > 0 && t_fl > ms)
			/* Never a fraction above 100%: a different amount of work. */
			pragma_buf_addf(out, " The baseline (%s) runs the task's FLOP count at %.2fx the FP32 peak, so it "
					     "does fewer FLOPs than counted (a Winograd or FFT algorithm); against the "
					     "bandwidth roof it reaches %.0f%%, and a kernel doing the same is judged by that "
					     "roof.",
					when, t_fl / ms, 100 * t_bw / ms);
		else if (ms > 0)
			pragma_buf_addf(out, " The baseline runs at %.0f%% of the %s roof (%.3f ms at the roof / its %.3f ms "
					     "%s).",
					100 * (t_fl > t_bw ? t_fl : t_bw) / ms, t_fl > t_bw ? "compute" : "bandwidth",
					t_fl > t_bw ? t_fl : t_bw, ms, when);
	}
}
