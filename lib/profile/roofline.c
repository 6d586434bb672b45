/*
 * The roofline (Williams, Waterman, Patterson, CACM 2009): a kernel that
 * does F FLOPs over B bytes of unavoidable traffic cannot run faster than
 * max(F / peak FLOP/s, B / peak bandwidth). Its arithmetic intensity F/B
 * against the ridge point (peak FLOP/s / peak bandwidth) says which roof
 * binds; time at that bound over the measured time is how close it is.
 *
 * The peaks are pragma machine's measured maxima (all usable cores, best
 * vector ISA; bandwidth the best of read, triad and non-temporal copy); B is
 * the task's minimal bytes (inputs read once, outputs written once).
 */
#include <math.h>

#include "pragma/profile.h"

void pragma_roofline(double flops, double bytes, double median_ms, const struct pragma_machine *m,
		     struct pragma_profile *p)
{
	double t = median_ms / 1e3, t_flops = 0, t_bytes = 0;

	if (!m || !m->measured || m->peak_gflops <= 0 || m->peak_gbs <= 0) {
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
	pragma_profile_set(p, "roof.peak_gbs", m->peak_gbs, "roofline");
	pragma_profile_set(p, "roof.ridge_ai", m->peak_gflops / m->peak_gbs, "roofline");
	if (flops > 0) {
		double g = flops / t / 1e9;
		pragma_profile_set(p, "roof.gflops", g, "roofline");
		pragma_profile_set(p, "roof.pct_peak_flops", 100 * g / m->peak_gflops, "roofline");
		t_flops = flops / (m->peak_gflops * 1e9);
	}
	if (bytes > 0) {
		double g = bytes / t / 1e9;
		pragma_profile_set(p, "roof.gbs", g, "roofline");
		pragma_profile_set(p, "roof.pct_peak_bw", 100 * g / m->peak_gbs, "roofline");
		t_bytes = bytes / (m->peak_gbs * 1e9);
	}
	if (flops > 0 && bytes > 0)
		pragma_profile_set(p, "roof.ai", flops / bytes, "roofline");
	pragma_profile_set(p, "roof.pct_roof", 100 * fmax(t_flops, t_bytes) / t, "roofline");
	if (flops > 0 && bytes > 0)
		pragma_profile_note(p, "roofline: %s roof binds (arithmetic intensity %.3g FLOP/B %s the ridge point %.3g)",
				    t_bytes >= t_flops ? "the memory-bandwidth" : "the compute", flops / bytes,
				    t_bytes >= t_flops ? "below" : "above", m->peak_gflops / m->peak_gbs);
	else if (!(flops > 0))
		pragma_profile_note(p, "roofline: the task states no FLOP count; only the bandwidth roof applies");
}
