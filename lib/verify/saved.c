/*
 * Outputs a harness run saved (a timed run's timed_NNN.npy) checked against
 * the reference: the one check the timing layer, the profiler and the CUDA
 * profile all use, with the Verifier's comparison.
 */
#include <stdio.h>
#include <string.h>

#include "pragma/fs.h"
#include "pragma/tensor.h"
#include "pragma/verify.h"

int pragma_verify_saved(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets, const char *dir,
			const char *name, json_t *calls, double atol, double rtol, char *why, size_t why_len,
			struct pragma_err *err)
{
	for (int s = 0; s < n_sets; s++)
		for (int k = 0; k < t->n_outputs; k++) {
			struct pragma_tensor got = PRAGMA_TENSOR_INIT, want = PRAGMA_TENSOR_INIT;
			struct pragma_tolerance tol;
			struct pragma_cmp c;
			char p[4400], idx[128];
			int rc;

			snprintf(p, sizeof(p), "%s/set%d/%s_%03d.npy", dir, s, name, k);
			if (json_is_array(calls) ? json_integer_value(json_array_get(calls, (size_t)s)) <= 0
						 : !pragma_path_exists(p))
				continue; /* no such call on this set */
			if (pragma_npy_read(p, (int)t->outputs[k].dtype, &got, err) < 0)
				return -1;
			pragma_ref_output_path(&sets[s], k, p, sizeof(p));
			if (pragma_npy_read(p, (int)t->outputs[k].dtype, &want, err) < 0) {
				pragma_tensor_release(&got);
				return -1;
			}
			pragma_tolerance_resolve(t, k, atol, rtol, &tol);
			rc = pragma_compare(&got, &want, &tol, &c);
			if (rc < 0)
				snprintf(why, why_len, "output[%d] on input set %d has the wrong shape or type", k, s);
			else if (rc)
				snprintf(why, why_len,
					 "output[%d] %s on input set %d at %s (got %.6g, expected %.6g; %lld of %lld "
					 "elements off, norm-wise error %.3g)",
					 k, c.unwritten && c.unwritten == c.bad ? "not written" : c.nonfinite ? "has NaN/Inf" : "wrong",
					 s,
					 pragma_index_str(c.first_bad >= 0 ? c.first_bad : c.worst, want.shape, want.ndim, idx,
							  sizeof(idx)),
					 c.first_bad >= 0 ? c.got : c.worst_got, c.first_bad >= 0 ? c.want : c.worst_want,
					 (long long)c.bad, (long long)c.n, c.norm_err);
			pragma_tensor_release(&got);
			pragma_tensor_release(&want);
			if (rc)
				return 1;
		}
	return 0;
}
