/* The GPU compendium (knowledge/gpu) against the CUDA tables (an entry for
 * every metric the CUDA backend adds, a playbook for every GPU bottleneck,
 * sources everywhere), the registry's gpu.* entries in knowledge/metrics,
 * and the GPU diagnosis rules on hand-made profiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pragma_test.h"

#include "pragma/buf.h"
#include "pragma/cuda.h"
#include "pragma/diagnose.h"
#include "pragma/knowledge.h"
#include "pragma/profile.h"

static const char *kdir(const char *sub)
{
	static char path[4096];
	const char *home = getenv("PRAGMA_HOME");

	snprintf(path, sizeof(path), "%s/knowledge%s", home ? home : PRAGMA_SOURCE_DIR, sub);
	return path;
}

static void test_entries(void **state)
{
	struct pragma_knowledge *kb;
	struct pragma_err err = PRAGMA_ERR_INIT;
	size_t n, nb;
	const struct pragma_metric_def *d = pragma_cuda_metric_defs(&n);
	const char *const *bn = pragma_gpu_bottleneck_names(&nb);

	(void)state;
	if (pragma_knowledge_open(&kb, kdir("/gpu"), &err) < 0)
		fail_msg("%s", err.msg);
	for (size_t i = 0; i < n; i++) {
		const struct pragma_kentry *e = pragma_knowledge_get(kb, PRAGMA_KENTRY_METRIC, d[i].name);
		if (!e)
			fail_msg("no entry for %s", d[i].name);
		if (strcmp(e->unit, d[i].unit))
			fail_msg("%s: unit %s, the table says %s", d[i].name, e->unit, d[i].unit);
		if (strcmp(e->collector, pragma_collector_name(d[i].collector)))
			fail_msg("%s: collector %s", d[i].name, e->collector);
		if (!e->what[0] || !e->how[0] || !e->healthy[0] || !e->sources[0] || !e->remedies[0])
			fail_msg("%s: incomplete", d[i].name);
		/* Named bottlenecks exist (GPU playbooks or the diagnosis's). */
		for (int k = 0; e->reveals[k]; k++) {
			int known = 0;
			size_t nc;
			const char *const *cn = pragma_bottleneck_names(&nc);
			for (size_t j = 0; j < nb; j++)
				known |= !strcmp(bn[j], e->reveals[k]);
			for (size_t j = 0; j < nc; j++)
				known |= !strcmp(cn[j], e->reveals[k]);
			if (!known)
				fail_msg("%s reveals unknown bottleneck %s", d[i].name, e->reveals[k]);
		}
	}
	/* No entry without a metric. */
	for (size_t i = 0; i < pragma_knowledge_count(kb); i++) {
		const struct pragma_kentry *e = pragma_knowledge_at(kb, i);
		if (e->kind == PRAGMA_KENTRY_METRIC && !pragma_cuda_metric_def(e->name))
			fail_msg("entry %s names no metric", e->name);
		if (e->kind == PRAGMA_KENTRY_PLAYBOOK) {
			int known = 0;
			for (size_t j = 0; j < nb; j++)
				known |= !strcmp(bn[j], e->name);
			if (!known)
				fail_msg("playbook %s is no GPU bottleneck", e->name);
		}
	}
	for (size_t j = 0; j < nb; j++) {
		const struct pragma_kentry *e = pragma_knowledge_get(kb, PRAGMA_KENTRY_PLAYBOOK, bn[j]);
		if (!e)
			fail_msg("no playbook for %s", bn[j]);
		if (!e->summary[0] || !e->signs[0] || !e->remedies[0] || !e->sources[0] || !e->metrics[0])
			fail_msg("playbook %s incomplete", bn[j]);
		for (int k = 0; e->metrics[k]; k++)
			if (!pragma_cuda_metric_def(e->metrics[k]))
				fail_msg("playbook %s lists unknown metric %s", bn[j], e->metrics[k]);
	}
	pragma_knowledge_free(kb);
}

/* The registry's gpu.* metrics have entries in the main compendium. */
static void test_registry_entries(void **state)
{
	struct pragma_knowledge *kb;
	struct pragma_err err = PRAGMA_ERR_INIT;
	size_t n;
	const struct pragma_metric_def *d = pragma_metric_defs(&n);

	(void)state;
	if (pragma_knowledge_open(&kb, kdir(""), &err) < 0)
		fail_msg("%s", err.msg);
	for (size_t i = 0; i < n; i++)
		if (!strncmp(d[i].name, "gpu.", 4) && !pragma_knowledge_get(kb, PRAGMA_KENTRY_METRIC, d[i].name))
			fail_msg("no compendium entry for %s", d[i].name);
	pragma_knowledge_free(kb);
}

static void test_prompt(void **state)
{
	struct pragma_knowledge *kb;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf out = PRAGMA_BUF_INIT;
	const char *metrics[] = { "static.gpu_spill_bytes", "gpu.sectors_per_request" };
	const char *bns[] = { "uncoalesced-access" };

	(void)state;
	if (pragma_knowledge_open(&kb, kdir("/gpu"), &err) < 0)
		fail_msg("%s", err.msg);
	pragma_knowledge_prompt(kb, metrics, 2, bns, 1, 0, &out);
	assert_non_null(strstr(out.data, "static.gpu_spill_bytes"));
	assert_non_null(strstr(out.data, "threadIdx.x"));
	pragma_buf_release(&out);
	pragma_knowledge_free(kb);
}

static int has(const struct pragma_diagnosis *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->f[i].bottleneck, name))
			return 1;
	return 0;
}

static void test_diagnose(void **state)
{
	struct pragma_profile p;
	struct pragma_diagnosis d = PRAGMA_DIAGNOSIS_INIT;
	struct pragma_gpu_model m;

	(void)state;
	pragma_gpu_model_from_spec(pragma_gpu_spec_find("NVIDIA A100-SXM4-40GB"), &m);

	/* A healthy memory-bound kernel: nothing GPU-specific to say. */
	pragma_profile_init(&p);
	pragma_profile_set(&p, "gpu.achieved_occupancy", 85, "ncu");
	pragma_profile_set(&p, "gpu.dram_throughput_pct", 91, "ncu");
	pragma_profile_set(&p, "gpu.sectors_per_request", 4, "ncu");
	pragma_profile_set(&p, "gpu.launch_gap_pct", 3, "ncu");
	pragma_profile_set(&p, "static.gpu_spill_bytes", 0, "static");
	pragma_gpu_diagnose(&p, &m, &d);
	assert_int_equal(d.n, 0);
	pragma_profile_release(&p);

	/* Register-starved, uncoalesced, low occupancy. */
	pragma_profile_init(&p);
	pragma_profile_set(&p, "gpu.achieved_occupancy", 12, "ncu");
	pragma_profile_set(&p, "gpu.theoretical_occupancy", 18.75, "ncu");
	pragma_profile_set(&p, "gpu.registers_per_thread", 168, "ncu");
	pragma_profile_set(&p, "gpu.dram_throughput_pct", 20, "ncu");
	pragma_profile_set(&p, "gpu.sm_throughput_pct", 15, "ncu");
	pragma_profile_set(&p, "gpu.sectors_per_request", 28, "ncu");
	pragma_profile_set(&p, "static.gpu_spill_bytes", 280, "static");
	pragma_profile_set(&p, "static.gpu_registers", 168, "static");
	pragma_gpu_diagnose(&p, &m, &d);
	assert_true(has(&d, "low-occupancy"));
	assert_true(has(&d, "uncoalesced-access"));
	assert_true(has(&d, "local-memory-spills"));
	assert_false(has(&d, "launch-bound"));
	for (size_t i = 0; i < d.n; i++) {
		if (!strcmp(d.f[i].bottleneck, "low-occupancy"))
			assert_non_null(strstr(d.f[i].evidence, "168 registers"));
		if (i)
			assert_true(d.f[i - 1].confidence >= d.f[i].confidence);
	}
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);

	/* Compute-bound matmul on CUDA cores, bank conflicts, tiny launches. */
	pragma_profile_init(&p);
	pragma_profile_set(&p, "roof.ai", 120, "roofline");
	pragma_profile_set(&p, "roof.ridge_ai", 12.5, "roofline");
	pragma_profile_set(&p, "gpu.tensor_pipe_pct", 0, "ncu");
	pragma_profile_set(&p, "gpu.smem_bank_conflicts", 2e6, "ncu");
	pragma_profile_set(&p, "gpu.stall_mio_throttle_pct", 31, "ncu");
	pragma_profile_set(&p, "gpu.launch_gap_pct", 64, "ncu");
	pragma_profile_set(&p, "gpu.kernels", 6, "ncu");
	pragma_profile_set(&p, "gpu.duration_us", 9.5, "ncu");
	pragma_gpu_diagnose(&p, &m, &d);
	assert_true(has(&d, "tensor-cores-unused"));
	assert_true(has(&d, "bank-conflicts"));
	assert_true(has(&d, "launch-bound"));
	assert_false(has(&d, "low-occupancy"));
	pragma_diagnosis_release(&d);
	/* Without a model, no tensor-core rule. */
	pragma_gpu_diagnose(&p, NULL, &d);
	assert_false(has(&d, "tensor-cores-unused"));
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);

	/* DRAM traffic far above the task's minimal bytes. */
	pragma_profile_init(&p);
	p.bytes = 1e6;
	pragma_profile_set(&p, "gpu.dram_bytes", 8e6, "ncu");
	pragma_gpu_diagnose(&p, &m, &d);
	assert_true(has(&d, "uncoalesced-access"));
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entries),
		cmocka_unit_test(test_registry_entries),
		cmocka_unit_test(test_prompt),
		cmocka_unit_test(test_diagnose),
	};
	return pragma_run_tests(tests, NULL, NULL);
}
