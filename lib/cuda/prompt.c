/*
 * What the Coder's prompt says about the GPU path: the GPU model (the
 * device, or pragma's table entry for the target GPU when this machine has
 * none), the CUDA ABI, the nvcc command, and whether fast math is allowed
 * (prompts/coder_system_cuda.md uses these variables).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/cuda.h"
#include "pragma/fs.h"

int pragma_cuda_target_model(struct pragma_gpu_model *m, char *note, size_t len)
{
	const char *want = getenv("PRAGMA_CUDA_GPU");
	const struct pragma_gpu_spec *s;
	struct pragma_err e = PRAGMA_ERR_INIT;

	if (note && len)
		note[0] = '\0';
	if (pragma_gpu_model_load(0, m, &e) == 0)
		return 1;
	s = pragma_gpu_spec_find(want && *want ? want : "A100-SXM4-40GB");
	if (!s)
		s = pragma_gpu_spec_find("A100-SXM4-40GB");
	pragma_gpu_model_from_spec(s, m);
	if (note && len)
		snprintf(note, len,
			 "(No CUDA device on this machine: the model above is pragma's table entry for the %s%s.)", s->name,
			 want && *want ? " ($PRAGMA_CUDA_GPU)" : ", the paper's GPU; PRAGMA_CUDA_GPU names another");
	return 0;
}

/* The CPU loop's "work" line, with the GPU's roofs. */
static void work_text(const struct pragma_task *t, const struct pragma_gpu_model *m, double ms, struct pragma_buf *out)
{
	double t_bw = 0, t_fl = 0;

	pragma_task_flops_text(t, out);
	pragma_buf_addf(out, "%.1f MiB minimal memory traffic (inputs read once, outputs written once)",
			t->bytes / 1048576.0);
	if (t->flops > 0 && t->bytes > 0)
		pragma_buf_addf(out, ", arithmetic intensity %.2f FLOP/byte", t->flops / t->bytes);
	pragma_buf_adds(out, ".");
	if (m->peak_gbs > 0 && t->bytes > 0) {
		t_bw = t->bytes / (m->peak_gbs * 1e6);
		t_fl = t->flops > 0 && m->peak_fp32_gflops > 0 ? t->flops / (m->peak_fp32_gflops * 1e6) : 0;
		pragma_buf_addf(out, " Lower bounds on this GPU: %.4f ms from DRAM bandwidth", t_bw);
		if (t_fl > 0)
			pragma_buf_addf(out, ", %.4f ms from FP32 compute (tensor cores go lower)", t_fl);
		pragma_buf_addf(out, " — the %s roof binds.", t_fl > t_bw ? "compute" : "bandwidth");
		if (ms > 0)
			pragma_buf_addf(out, " The baseline runs at %.0f%% of the %s roof (%.4f ms at the roof / its %.4f ms).",
					100 * (t_fl > t_bw ? t_fl : t_bw) / ms, t_fl > t_bw ? "compute" : "bandwidth",
					t_fl > t_bw ? t_fl : t_bw, ms);
		pragma_buf_adds(out, " A kernel launch costs a few microseconds whatever it does.");
	}
}

void pragma_cuda_prompt_vars(json_t *vars, const struct pragma_task *t, double baseline_ms)
{
	struct pragma_buf work = PRAGMA_BUF_INIT;
	struct pragma_gpu_model m;
	struct pragma_buf gpu = PRAGMA_BUF_INIT, abi = PRAGMA_BUF_INIT, hdr = PRAGMA_BUF_INIT, kh = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	char note[512], cmd[256], arch[16];
	int fast = pragma_cuda_fast_math_allowed(t->atol, t->rtol);

	pragma_cuda_target_model(&m, note, sizeof(note));
	pragma_gpu_model_text(&m, &gpu);
	if (note[0])
		pragma_buf_addf(&gpu, "%s\n", note);
	pragma_cuda_abi_text(&abi);
	if (pragma_data_path("include/pragma/kernel.h", &hdr, &e) == 0)
		pragma_read_file(hdr.data, &kh, 1 << 20, &e);
	snprintf(arch, sizeof(arch), "sm_%d%d", m.dev.cc_major, m.dev.cc_minor);
	snprintf(cmd, sizeof(cmd), "nvcc -O3 -arch=%s -shared -Xcompiler -fPIC -cudart shared -Xptxas -v -lineinfo kernel.cu", getenv("PRAGMA_CUDA_ARCH") && *getenv("PRAGMA_CUDA_ARCH") ?
		 pragma_cuda_default_arch() : arch);
	json_object_set_new(vars, "gpu_model", json_string(gpu.data));
	/* The CPU templates' {{machine}} gets the GPU too. */
	json_object_set_new(vars, "machine", json_string(gpu.data));
	json_object_set_new(vars, "cuda_abi", json_string(abi.data));
	if (kh.len)
		json_object_set_new(vars, "kernel_h", json_string(kh.data));
	json_object_set_new(vars, "compile_cmd", json_string(cmd));
	json_object_set_new(vars, "fast_math", json_string(fast ? "yes" : ""));
	json_object_set_new(vars, "fast_math_note",
			    json_string(fast ? "Fast math (--use_fast_math: approximate division, sqrt, exp; flush-to-zero) "
					       "is allowed: the task's tolerance is 1e-3 or looser."
					     : "No fast math: the task's tolerance is tighter than 1e-3, so --use_fast_math, "
					       "-ftz=true and -prec-div/-prec-sqrt=false are refused; the __expf-style "
					       "intrinsics are yours to use only if the error stays within the tolerance."));
	json_object_set_new(vars, "backend", json_string("cuda"));
	work_text(t, &m, baseline_ms, &work);
	json_object_set_new(vars, "work", json_string(work.data));
	pragma_buf_release(&work);
	json_object_set_new(vars, "source_lang_out", json_string("cuda"));
	pragma_buf_release(&gpu);
	pragma_buf_release(&abi);
	pragma_buf_release(&hdr);
	pragma_buf_release(&kh);
}
