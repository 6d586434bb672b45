/*
 * The roofline (Williams, Waterman, Patterson, CACM 2009): a kernel that
 * does F FLOPs over B bytes of unavoidable traffic cannot run faster than
 * max(F / peak FLOP/s, B / peak bandwidth). Its arithmetic intensity F/B
 * against the ridge point (peak FLOP/s / peak bandwidth) says which roof
 * binds; time at that bound over the measured time is how close it is.
 *
 * The roofs (DESIGN 3.6): the FP32 FMA peak (all usable cores, best vector
 * ISA), and the bandwidth a streaming kernel reaches under the same timing
 * protocol kernels are timed by (pragma machine's roof_gbs, bytes counted
 * as inputs read once + outputs written once). Not the highest bandwidth
 * ever measured: that one is for impossible_speed, and no kernel timed with
 * a cold cache reaches it. B is the task's minimal bytes.
 *
 * F is the task's count, not the kernel's. An algorithm that does fewer
 * FLOPs (Winograd, Strassen) runs "above" the compute peak by that count:
 * the compute roof says nothing about it then, and the roof it still has is
 * the bandwidth one, on the bytes it must move. So above the peak the
 * fraction comes from bandwidth, and roof.flops_over_peak says why.
 */
#include <math.h>
#include <string.h>

#include "pragma/profile.h"

/* Within this of the peak a kernel is either excellent or doing fewer FLOPs
 * than counted: the roofline alone cannot tell, so the note says both. */
#define NEAR_PEAK 0.9

void pragma_roofline(double flops, double bytes, double median_ms, const struct pragma_machine *m,
		     struct pragma_profile *p)
{
	double t = median_ms / 1e3, t_flops = 0, t_bytes = 0, bw, g_fl = 0;
	int fallback = 0, fewer = 0;
	const char *method = "peak";

	bw = pragma_machine_bw_roof_for(m, bytes, p->out_bytes, &method, &fallback);
	if (!m || !m->measured || m->peak_gflops <= 0 || bw <= 0) {
		pragma_profile_unavailable(p, "roofline", "the machine's peaks are not measured (run 'pragma machine')");
		return;
	}
	if (!(median_ms > 0)) {
		pragma_profile_unavailable(p, "roofline", "no timed calls");
		return;
	}
	if (!(bytes > 0) && !(flops > 0)) {
		pragma_profile_unavailable(p, "roofline", "the task states neither FLOPs nor bytes");
		return;
	}
	pragma_profile_set(p, "roof.peak_gflops", m->peak_gflops, "roofline");
	pragma_profile_set(p, "roof.peak_gbs", bw, "roofline");
	pragma_profile_set(p, "roof.ridge_ai", m->peak_gflops / bw, "roofline");
	/* roof_why is set only where the protocol roof was tried (a CPU): the
	 * GPU backend passes datasheet peaks with no protocol roof at all. */
	if (fallback && m->roof_why[0])
		pragma_profile_note(p, "roofline: bandwidth roof %.1f GB/s is the microbenchmark peak, because the roof "
				       "under the timing protocol was not measured (%s); kernels timed by pragma reach "
				       "less, so %% of roof reads low ('pragma machine --measure'); bytes = inputs read "
				       "once + outputs written once",
				    bw, m->roof_why);
	else if (m->roof_gbs > 0 && strcmp(method, m->roof_method))
		pragma_profile_note(p, "roofline: bandwidth roof %.1f GB/s = the %s kernel timed like this one (cold cache, "
				       "pragma-harness): the task writes %.1f%% of its bytes, a read-only stream, which "
				       "streaming stores cannot speed up and which reaches less than the best kernel's "
				       "%.1f GB/s (%s); bytes = inputs read once + outputs written once, write-allocate "
				       "not counted",
				    bw, method, 100 * p->out_bytes / bytes, m->roof_gbs, m->roof_method);
	else if (m->roof_gbs > 0)
		pragma_profile_note(p, "roofline: bandwidth roof %.1f GB/s = the best streaming kernel (%s) timed like "
				       "this one (cold cache, pragma-harness), bytes = inputs read once + outputs written "
				       "once, write-allocate not counted; the highest bandwidth ever measured here "
				       "(%.1f GB/s) is only the "
				       "impossible-speed limit",
				    bw, m->roof_method, m->peak_gbs);
	if (flops > 0) {
		g_fl = flops / t / 1e9;
		pragma_profile_set(p, "roof.gflops", g_fl, "roofline");
		if (g_fl > m->peak_gflops) {
			/* Not a fraction above 100%: a different amount of work. */
			fewer = 1;
			pragma_profile_set(p, "roof.flops_over_peak", g_fl / m->peak_gflops, "roofline");
		} else {
			pragma_profile_set(p, "roof.pct_peak_flops", 100 * g_fl / m->peak_gflops, "roofline");
			t_flops = flops / (m->peak_gflops * 1e9);
		}
	}
	if (bytes > 0) {
		double g = bytes / t / 1e9;
		pragma_profile_set(p, "roof.gbs", g, "roofline");
		pragma_profile_set(p, "roof.pct_peak_bw", 100 * g / bw, "roofline");
		t_bytes = bytes / (bw * 1e9);
		if (g > bw) {
			if (m->llc_bytes && bytes < (double)m->llc_bytes)
				pragma_profile_note(p, "roofline: %.1f GB/s is above the bandwidth roof (%.1f GB/s) because the "
						       "task's %.1f MiB fit in the last-level cache (%.0f MiB): with warm or "
						       "cache-resident data the DRAM roof does not bind",
						    g, bw, bytes / 1048576.0, (double)m->llc_bytes / 1048576.0);
			else
				pragma_profile_note(p, "roofline: %.1f GB/s is above the bandwidth roof (%.1f GB/s): this "
						       "kernel beat pragma's own streaming kernels under the same protocol, "
						       "so the roof was measured low (on a busy machine?): treat the kernel "
						       "as at the roof, and re-measure with 'pragma machine --measure'",
						    g, bw);
		}
	}
	if (flops > 0 && bytes > 0)
		pragma_profile_set(p, "roof.ai", flops / bytes, "roofline");
	if (fewer) {
		if (bytes > 0) {
			pragma_profile_set(p, "roof.pct_roof", 100 * t_bytes / t, "roofline");
			pragma_profile_note(p, "roofline: %.1f GFLOP/s by the task's FLOP count is %.2fx the measured FP32 "
					       "peak (%.0f GFLOP/s): the kernel does fewer FLOPs than the task counts "
					       "(Winograd, Strassen, FFT). The compute roof does not apply to it; its roof is "
					       "the bandwidth it still needs for the minimal bytes: %.0f%% of that roof",
					    g_fl, g_fl / m->peak_gflops, m->peak_gflops, 100 * t_bytes / t);
		} else {
			pragma_profile_note(p, "roofline: %.1f GFLOP/s by the task's FLOP count is %.2fx the FP32 peak: the "
					       "kernel does fewer FLOPs than counted, and with no byte count there is no roof "
					       "left to compare with",
					    g_fl, g_fl / m->peak_gflops);
		}
		return;
	}
	pragma_profile_set(p, "roof.pct_roof", 100 * fmax(t_flops, t_bytes) / t, "roofline");
	if (flops > 0 && bytes > 0)
		pragma_profile_note(p, "roofline: %s roof binds (arithmetic intensity %.3g FLOP/B %s the ridge point %.3g)",
				    t_bytes >= t_flops ? "the memory-bandwidth" : "the compute", flops / bytes,
				    t_bytes >= t_flops ? "below" : "above", m->peak_gflops / bw);
	else if (!(flops > 0))
		pragma_profile_note(p, "roofline: the task states no FLOP count; only the bandwidth roof applies");
	if (g_fl >= NEAR_PEAK * m->peak_gflops)
		pragma_profile_note(p, "roofline: %.0f%% of the FP32 peak: a near-perfect kernel, or one doing fewer "
				       "FLOPs than the task counts (Winograd, Strassen); the roofline cannot tell them apart",
				    100 * g_fl / m->peak_gflops);
}
