/* lib/machine: sysfs/cpuinfo parsing on fixture trees, the JSON record, and
 * the cache of measured peaks (reuse, mismatch, corruption). The real
 * benchmarks run in tests/e2e/machine.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "pragma_test.h"

#include "machine/machine_priv.h"
#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/timing.h"

static const char *fixture(const char *name)
{
	static char path[4096];
	const char *data = getenv("PRAGMA_TEST_DATA");

	snprintf(path, sizeof(path), "%s/unit/fixtures/machine/%s", data ? data : PRAGMA_SOURCE_DIR "/tests",
		 name);
	return path;
}

/* ---- parsing helpers ---- */

static void test_parse_size(void **state)
{
	(void)state;
	assert_int_equal(pragma_machine_parse_size("32K"), 32768);
	assert_int_equal(pragma_machine_parse_size("1024K\n"), 1 << 20);
	assert_int_equal(pragma_machine_parse_size("32768K"), 32u << 20);
	assert_int_equal(pragma_machine_parse_size("2M"), 2u << 20);
	assert_int_equal(pragma_machine_parse_size("512"), 512);
	assert_int_equal(pragma_machine_parse_size("1024 KB"), 1 << 20);
	assert_int_equal(pragma_machine_parse_size(""), 0);
	assert_int_equal(pragma_machine_parse_size("K"), 0);
	assert_int_equal(pragma_machine_parse_size("12Q"), 0);
}

static void test_cpulist(void **state)
{
	(void)state;
	assert_int_equal(pragma_machine_count_cpulist("0"), 1);
	assert_int_equal(pragma_machine_count_cpulist("0-1\n"), 2);
	assert_int_equal(pragma_machine_count_cpulist("0-3,8,10-11"), 7);
	assert_int_equal(pragma_machine_count_cpulist("0-55,112-167"), 112);
	assert_int_equal(pragma_machine_count_cpulist(""), 0);
	assert_int_equal(pragma_machine_count_cpulist("3-1"), -1);
	assert_int_equal(pragma_machine_count_cpulist("x"), -1);
	assert_int_equal(pragma_machine_count_cpumask("1"), 1);
	assert_int_equal(pragma_machine_count_cpumask("00000003"), 2);
	assert_int_equal(pragma_machine_count_cpumask("00000000,000000ff"), 8);
	assert_int_equal(pragma_machine_count_cpumask("ffffffff,ffffffff"), 64);
	assert_int_equal(pragma_machine_count_cpumask(""), -1);
	assert_int_equal(pragma_machine_count_cpumask("zz"), -1);
}

/* ---- detection on fixture trees ---- */

static void test_detect_zen4(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine m;

	(void)state;
	assert_int_equal(pragma_machine_detect_at(&m, fixture("zen4"), &err), 0);
	assert_string_equal(m.vendor, "AuthenticAMD");
	assert_string_equal(m.cpu_model, "AMD EPYC");
	assert_int_equal(m.family, 25);
	assert_int_equal(m.model, 17);
	assert_int_equal(m.stepping, 1);
	assert_int_equal(m.online_cpus, 2);
	assert_true(m.cores >= 1);   /* this process's affinity, not the fixture's */
	assert_string_equal(m.kernel, "6.1.0-test-zen4");
	assert_true(m.hypervisor);
	assert_true(m.has_avx2 && m.has_fma && m.has_avx512f);
	assert_non_null(strstr(m.isa, "avx512f"));
	assert_non_null(strstr(m.isa, "avx512_bf16"));
	assert_non_null(strstr(m.isa, "avx512_vnni"));
	assert_null(strstr(m.isa, "amx"));
	assert_null(strstr(m.isa, "hypervisor"));   /* not an ISA flag */
	assert_null(strstr(m.isa, "  "));
	assert_int_equal(strncmp(m.isa, "sse2 ssse3 sse4_1 sse4_2 avx avx2 fma", 37), 0);

	assert_int_equal(m.n_caches, 4);
	assert_int_equal(m.caches[0].level, 1);
	assert_string_equal(m.caches[0].type, "Data");
	assert_int_equal(m.caches[0].size, 32768);
	assert_int_equal(m.caches[0].ways, 8);
	assert_int_equal(m.caches[0].line, 64);
	assert_int_equal(m.caches[0].shared_cpus, 1);
	assert_string_equal(m.caches[1].type, "Instruction");
	assert_int_equal(m.caches[2].level, 2);
	assert_int_equal(m.caches[2].size, 1 << 20);
	assert_int_equal(m.caches[3].level, 3);
	assert_string_equal(m.caches[3].type, "Unified");
	assert_int_equal(m.caches[3].size, 32u << 20);
	assert_int_equal(m.caches[3].ways, 16);
	assert_int_equal(m.caches[3].shared_cpus, 2);
	assert_int_equal(m.l1d_bytes, 32768);
	assert_int_equal(m.l2_bytes, 1 << 20);
	assert_int_equal(m.llc_bytes, 32u << 20);
	assert_int_equal(m.measured, 0);
	assert_int_equal(m.peak_gflops, 0);
	assert_true(m.cpu_mhz > 2596.1 && m.cpu_mhz < 2596.2);
	assert_true(m.max_mhz == 0 && m.base_mhz == 0);   /* a VM: no cpufreq */
}

static void test_detect_intel(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine m;

	(void)state;
	assert_int_equal(pragma_machine_detect_at(&m, fixture("intel"), &err), 0);
	assert_string_equal(m.vendor, "GenuineIntel");
	assert_string_equal(m.cpu_model, "Intel(R) Xeon(R) Platinum 8480+");   /* trailing blanks gone */
	assert_int_equal(m.family, 6);
	assert_int_equal(m.model, 143);
	assert_int_equal(m.stepping, 8);
	assert_int_equal(m.online_cpus, 4);
	assert_string_equal(m.kernel, "5.15.0-91-generic");
	assert_false(m.hypervisor);
	assert_true(m.has_avx512f);
	assert_non_null(strstr(m.isa, "amx_tile amx_bf16 amx_int8"));
	assert_non_null(strstr(m.isa, "avx512_fp16"));
	assert_non_null(strstr(m.isa, "avx_vnni"));

	assert_int_equal(m.n_caches, 4);
	assert_int_equal(m.caches[0].size, 48 * 1024);
	assert_int_equal(m.caches[0].ways, 12);
	assert_int_equal(m.caches[0].shared_cpus, 2);   /* SMT siblings */
	assert_int_equal(m.caches[1].ways, 0);          /* no ways_of_associativity file */
	assert_int_equal(m.caches[3].size, 107520ull * 1024);
	assert_int_equal(m.caches[3].ways, 15);
	assert_int_equal(m.caches[3].shared_cpus, 4);   /* from shared_cpu_map: no list file */
	assert_int_equal(m.l1d_bytes, 48 * 1024);
	assert_int_equal(m.l2_bytes, 2u << 20);
	assert_int_equal(m.llc_bytes, 107520ull * 1024);
	assert_true(m.max_mhz == 3800 && m.base_mhz == 2000);   /* cpufreq, kHz */
}

static void test_detect_minimal(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine m;

	(void)state;
	/* Only /proc/cpuinfo: no sysfs caches, no online file, no osrelease. */
	assert_int_equal(pragma_machine_detect_at(&m, fixture("minimal"), &err), 0);
	assert_string_equal(m.cpu_model, "Intel(R) Core(TM)2 CPU");
	assert_int_equal(m.online_cpus, 1);
	assert_int_equal(m.n_caches, 0);
	assert_int_equal(m.llc_bytes, 4u << 20);   /* cpuinfo's "cache size" */
	assert_int_equal(m.l1d_bytes, 0);
	assert_string_equal(m.isa, "sse2 ssse3");
	assert_false(m.has_avx2);
	assert_true(m.kernel[0] != '\0');          /* uname */
}

static void test_detect_missing(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine m;

	(void)state;
	assert_int_equal(pragma_machine_detect_at(&m, fixture("no-such-root"), &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_ENV);
	assert_non_null(strstr(err.msg, "cpuinfo"));
	assert_true(err.hint[0] != '\0');
}

static void test_detect_real(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine m;

	(void)state;
	assert_int_equal(pragma_machine_detect(&m, &err), 0);
	assert_true(m.cores >= 1);
	assert_true(m.online_cpus >= 1);
	assert_true(m.vendor[0] && m.kernel[0]);
}

/* ---- JSON record ---- */

/* Whether the host's measurement lock was held exclusively while measuring:
 * a second open file description of the lock cannot take it shared. */
static int lock_was_held = -1;

static int lock_probing_measure(struct pragma_machine *m, struct pragma_err *err);

static int n_measured;

static int fake_measure(struct pragma_machine *m, struct pragma_err *err)
{
	(void)err;
	n_measured++;
	m->measured = 1;
	snprintf(m->measured_at, sizeof(m->measured_at), "2026-11-22T10:00:%02dZ", n_measured % 60);
	m->peak_gflops = 230.125 + n_measured;
	snprintf(m->peak_isa, sizeof(m->peak_isa), "avx512");
	m->peak_gflops_1core = 115.0625;
	m->bw_read_gbs = 57.3;
	m->bw_triad_gbs = 25.1;
	m->bw_ntcopy_gbs = 0.1 + 74.2;   /* not exactly representable: round trip must keep every bit */
	m->peak_gbs = m->bw_ntcopy_gbs;
	snprintf(m->peak_gbs_how, sizeof(m->peak_gbs_how), "the non-temporal copy microbenchmark");
	static const char *const names[] = { "read", "copy", "ntcopy", "triad", "scale" };
	m->n_roofs = 5;
	for (int i = 0; i < 5; i++) {
		struct pragma_roof_method *r = &m->roofs[i];
		snprintf(r->name, sizeof(r->name), "%s", names[i]);
		snprintf(r->what, sizeof(r->what), "method %d", i);
		r->bytes = 268435456.0 * (i ? 2 : 1);
		r->median_ms = 10.0 + 0.3 * i;
		r->min_ms = 9.1 + 0.1 * i;
		r->gbs = r->bytes / (r->median_ms * 1e6);
		r->calls = 10;
		if (r->gbs > m->roof_gbs) {
			m->roof_gbs = r->gbs;
			snprintf(m->roof_method, sizeof(m->roof_method), "%s", r->name);
		}
	}
	snprintf(m->roof_protocol, sizeof(m->roof_protocol), "cold cache, 2 threads");
	return 0;
}

static int failing_measure(struct pragma_machine *m, struct pragma_err *err)
{
	(void)m;
	n_measured++;
	return pragma_err_set(err, PRAGMA_E_ENV, "cannot allocate 3 x 256 MiB for the bandwidth benchmark");
}

static void test_json_round_trip(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine m, back;
	json_error_t je;
	json_t *j, *j2;
	char *s;

	(void)state;
	assert_int_equal(pragma_machine_detect_at(&m, fixture("intel"), &err), 0);
	fake_measure(&m, &err);
	j = pragma_machine_json(&m);
	assert_true(json_is_true(json_object_get(j, "has_avx512f")));
	assert_int_equal(json_array_size(json_object_get(j, "caches")), 4);
	assert_true(json_is_real(json_object_get(j, "peak_gbs")));
	s = json_dumps(j, 0);
	json_decref(j);
	j2 = json_loads(s, 0, &je);
	free(s);
	assert_non_null(j2);
	assert_int_equal(pragma_machine_from_json(&back, j2, &err), 0);
	json_decref(j2);
	/* Both start memset to 0 and strings are snprintf'ed: the bytes match. */
	assert_memory_equal(&m, &back, sizeof(m));
	assert_true(back.bw_ntcopy_gbs == m.bw_ntcopy_gbs);
	assert_int_equal(back.n_roofs, 5);
	assert_string_equal(back.roof_method, "copy");
}

static void test_json_rejects(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine m, back;
	json_t *j;

	(void)state;
	assert_int_equal(pragma_machine_detect_at(&m, fixture("zen4"), &err), 0);
	fake_measure(&m, &err);

	j = pragma_machine_json(&m);
	json_object_del(j, "kernel");
	assert_int_equal(pragma_machine_from_json(&back, j, &err), -1);
	assert_non_null(strstr(err.msg, "\"kernel\""));
	json_decref(j);

	j = pragma_machine_json(&m);
	json_object_set_new(j, "peak_gflops", json_string("fast"));
	assert_int_equal(pragma_machine_from_json(&back, j, &err), -1);
	assert_non_null(strstr(err.msg, "peak_gflops"));
	json_decref(j);

	j = pragma_machine_json(&m);
	json_object_set_new(j, "cores", json_integer(-2));
	assert_int_equal(pragma_machine_from_json(&back, j, &err), -1);
	json_decref(j);

	j = pragma_machine_json(&m);
	json_array_append_new(json_object_get(j, "caches"), json_integer(7));
	assert_int_equal(pragma_machine_from_json(&back, j, &err), -1);
	json_decref(j);

	j = json_array();
	assert_int_equal(pragma_machine_from_json(&back, j, &err), -1);
	json_decref(j);
}

static void test_same(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine a, b;
	char why[256];

	(void)state;
	assert_int_equal(pragma_machine_detect_at(&a, fixture("zen4"), &err), 0);
	b = a;
	assert_true(pragma_machine_same(&a, &b, why, sizeof(why)));
	b.peak_gflops = 5;         /* measured fields do not matter */
	b.online_cpus = 64;        /* nor the online count: cores does */
	assert_true(pragma_machine_same(&a, &b, why, sizeof(why)));
	b.cores = a.cores + 1;
	assert_false(pragma_machine_same(&a, &b, why, sizeof(why)));
	assert_non_null(strstr(why, "cores"));
	b = a;
	snprintf(b.kernel, sizeof(b.kernel), "6.2.0");
	assert_false(pragma_machine_same(&a, &b, why, sizeof(why)));
	assert_non_null(strstr(why, "kernel"));
	b = a;
	b.stepping = 2;
	assert_false(pragma_machine_same(&a, &b, why, sizeof(why)));
	b = a;
	snprintf(b.isa, sizeof(b.isa), "sse2");
	assert_false(pragma_machine_same(&a, &b, why, sizeof(why)));
}

/* ---- the cache file ---- */

struct cache_fixture {
	struct pragma_buf dir, file;
};

static int cache_setup(void **state)
{
	struct cache_fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	pragma_buf_init(&f->dir);
	pragma_buf_init(&f->file);
	if (pragma_mkdtemp(tmp && *tmp ? tmp : "/tmp", "pragma-test-machine.", &f->dir, NULL) < 0)
		return -1;
	pragma_buf_addf(&f->file, "%s/machine.json", f->dir.data);
	n_measured = 0;
	*state = f;
	return 0;
}

static int cache_teardown(void **state)
{
	struct cache_fixture *f = *state;

	pragma_rm_rf(f->dir.data, NULL);
	pragma_buf_release(&f->dir);
	pragma_buf_release(&f->file);
	free(f);
	return 0;
}

static void write_text(const char *path, const char *text)
{
	assert_int_equal(pragma_write_file_atomic(path, text, strlen(text), NULL), 0);
}

/* Load the cache file, apply edit to its JSON, write it back. */
static void edit_cache(const char *path, void (*edit)(json_t *j))
{
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	char *s;

	assert_non_null(j);
	edit(j);
	s = json_dumps(j, 0);
	write_text(path, s);
	free(s);
	json_decref(j);
}

static void load(struct cache_fixture *f, int remeasure, struct pragma_machine *m)
{
	struct pragma_err err = PRAGMA_ERR_INIT;

	assert_int_equal(pragma_machine_load_at(m, fixture("zen4"), f->file.data, remeasure, fake_measure, &err), 0);
	assert_true(m->measured);
}

static void assert_cache_valid(const char *path)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine m;
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);

	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "format")), PRAGMA_MACHINE_CACHE_FORMAT);
	assert_int_equal(pragma_machine_from_json(&m, j, &err), 0);
	assert_true(m.measured && m.peak_gflops > 0);
	json_decref(j);
}

static void test_cache_reuse(void **state)
{
	struct cache_fixture *f = *state;
	struct pragma_machine a, b, c;

	load(f, 0, &a);
	assert_int_equal(n_measured, 1);
	assert_cache_valid(f->file.data);
	load(f, 0, &b);
	assert_int_equal(n_measured, 1);   /* from the cache */
	assert_memory_equal(&a, &b, sizeof(a));
	load(f, 1, &c);                    /* --measure */
	assert_int_equal(n_measured, 2);
	assert_true(c.peak_gflops != a.peak_gflops);
	load(f, 0, &b);
	assert_int_equal(n_measured, 2);
	assert_true(b.peak_gflops == c.peak_gflops);
}

static void set_kernel(json_t *j) { json_object_set_new(j, "kernel", json_string("4.19.0-old")); }
static void set_cores(json_t *j) { json_object_set_new(j, "cores", json_integer(json_integer_value(json_object_get(j, "cores")) + 8)); }
static void set_isa(json_t *j) { json_object_set_new(j, "isa", json_string("sse2 avx avx2")); }
static void set_model(json_t *j) { json_object_set_new(j, "cpu_model", json_string("AMD EPYC 9654")); }
static void set_format(json_t *j) { json_object_set_new(j, "format", json_integer(PRAGMA_MACHINE_CACHE_FORMAT + 1)); }
static void set_online(json_t *j) { json_object_set_new(j, "online_cpus", json_integer(96)); }

static void test_cache_mismatch(void **state)
{
	struct cache_fixture *f = *state;
	void (*const edits[])(json_t *) = { set_kernel, set_cores, set_isa, set_model, set_format };
	struct pragma_machine m;

	load(f, 0, &m);
	assert_int_equal(n_measured, 1);
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		edit_cache(f->file.data, edits[i]);
		load(f, 0, &m);
		assert_int_equal(n_measured, (int)i + 2);
		assert_cache_valid(f->file.data);   /* rewritten for this machine */
		load(f, 0, &m);
		assert_int_equal(n_measured, (int)i + 2);
	}
	/* Not part of the identity: still reused. */
	edit_cache(f->file.data, set_online);
	load(f, 0, &m);
	assert_int_equal(n_measured, 6);
}

static void drop_measured(json_t *j) { json_object_set_new(j, "measured", json_false()); }
static void zero_peak(json_t *j) { json_object_set_new(j, "peak_gbs", json_real(0)); }
static void wrong_type(json_t *j) { json_object_set_new(j, "bw_read_gbs", json_string("57")); }
static void no_format(json_t *j) { json_object_del(j, "format"); }
static void raise_peak(json_t *j) { json_object_set_new(j, "peak_gbs", json_real(90.5)); }
static void no_roofs(json_t *j) { json_object_del(j, "roofs"); }

static void test_cache_corrupt(void **state)
{
	struct cache_fixture *f = *state;
	const char *texts[] = { "", "{not json", "{\"vendor\": \"AuthenticAMD\",", "[1, 2, 3]", "null",
				"{\"format\": 1}", "\x7f" "ELF\x01\x01" };
	void (*const edits[])(json_t *) = { drop_measured, zero_peak, wrong_type, no_format, no_roofs };
	struct pragma_machine m;
	int expect = 0;

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		write_text(f->file.data, texts[i]);
		load(f, 0, &m);
		assert_int_equal(n_measured, ++expect);
		assert_cache_valid(f->file.data);
	}
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		edit_cache(f->file.data, edits[i]);
		load(f, 0, &m);
		assert_int_equal(n_measured, ++expect);
		assert_cache_valid(f->file.data);
	}
	/* A directory where the file should be: measured, not saved, no crash. */
	pragma_rm_rf(f->file.data, NULL);
	assert_int_equal(pragma_mkdir_p(f->file.data, 0755, NULL), 0);
	load(f, 0, &m);
	assert_int_equal(n_measured, ++expect);
}

static int lock_probing_measure(struct pragma_machine *m, struct pragma_err *err)
{
	int fd = open(pragma_measure_lock_path(), O_RDWR | O_CLOEXEC);

	lock_was_held = fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	if (fd >= 0)
		close(fd);
	return fake_measure(m, err);
}

/* The peaks are measured holding the measurement lock, like every timed
 * kernel: a roof measured beside another process's timing reads low. */
static void test_measure_holds_lock(void **state)
{
	struct cache_fixture *f = *state;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine m;

	lock_was_held = -1;
	assert_int_equal(pragma_machine_load_at(&m, fixture("zen4"), f->file.data, 1, lock_probing_measure, &err), 0);
	assert_int_equal(lock_was_held, 1);
	/* and released afterwards */
	int fd = open(pragma_measure_lock_path(), O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	close(fd);
}

static void test_cache_unwritable(void **state)
{
	struct cache_fixture *f = *state;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf path = PRAGMA_BUF_INIT;
	struct pragma_machine m;

	pragma_buf_addf(&path, "%s/missing-dir/machine.json", f->dir.data);
	assert_int_equal(pragma_machine_load_at(&m, fixture("zen4"), path.data, 0, fake_measure, &err), 0);
	assert_true(m.measured);
	assert_int_equal(n_measured, 1);
	/* No cache at all (no cache directory): measures every time. */
	assert_int_equal(pragma_machine_load_at(&m, fixture("zen4"), NULL, 0, fake_measure, &err), 0);
	assert_int_equal(n_measured, 2);
	pragma_buf_release(&path);
}

static void test_cache_measure_fails(void **state)
{
	struct cache_fixture *f = *state;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine m;

	assert_int_equal(pragma_machine_load_at(&m, fixture("zen4"), f->file.data, 0, failing_measure, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_ENV);
	assert_non_null(strstr(err.msg, "bandwidth"));
	assert_false(pragma_path_exists(f->file.data));
	/* A good cache is used without measuring at all. */
	load(f, 0, &m);
	n_measured = 0;
	assert_int_equal(pragma_machine_load_at(&m, fixture("zen4"), f->file.data, 0, failing_measure, &err), 0);
	assert_int_equal(n_measured, 0);
	/* --measure that fails reports it and leaves the old cache alone. */
	assert_int_equal(pragma_machine_load_at(&m, fixture("zen4"), f->file.data, 1, failing_measure, &err), -1);
	assert_cache_valid(f->file.data);
}

static void test_load_env_cache_dir(void **state)
{
	struct cache_fixture *f = *state;
	struct pragma_buf path = PRAGMA_BUF_INIT;

	/* pragma_machine_load() puts machine.json under PRAGMA_CACHE_DIR. A
	 * cached record for this machine avoids the real benchmarks here. */
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine m, got;

	setenv("PRAGMA_CACHE_DIR", f->dir.data, 1);
	/* Nothing cached: the display-only load says so and measures nothing. */
	assert_int_equal(pragma_machine_cached(&got, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_ENV);
	assert_non_null(strstr(err.msg, "not measured yet"));
	assert_int_equal(pragma_machine_detect(&m, &err), 0);
	fake_measure(&m, &err);
	json_t *j = pragma_machine_json(&m);
	json_object_set_new(j, "format", json_integer(PRAGMA_MACHINE_CACHE_FORMAT));
	pragma_buf_addf(&path, "%s/machine.json", f->dir.data);
	char *s = json_dumps(j, 0);
	write_text(path.data, s);
	free(s);
	json_decref(j);
	memset(&got, 0, sizeof(got));
	assert_int_equal(pragma_machine_cached(&got, &err), 0);
	assert_true(got.measured && got.roof_gbs == m.roof_gbs);
	assert_int_equal(pragma_machine_load(&got, 0, &err), 0);
	assert_true(got.measured);
	assert_true(got.peak_gflops == m.peak_gflops);
	assert_string_equal(got.measured_at, m.measured_at);
	unsetenv("PRAGMA_CACHE_DIR");
	pragma_buf_release(&path);
}

/* ---- the format change: old files re-measured, the highest peak kept ---- */

/* A format-1 record (before the protocol roofs): no roof fields. */
static void write_format1(const char *path, const struct pragma_machine *m, double peak_gbs)
{
	json_t *j = pragma_machine_json(m);
	char *s;

	for (const char *const *k = (const char *const[]){ "roof_gbs", "roof_method", "roof_protocol", "roof_why",
							      "roofs", "peak_gbs_how", "cpu_mhz", "max_mhz",
							      "base_mhz", "uarch", NULL };
	     *k; k++)
		json_object_del(j, *k);
	json_object_set_new(j, "format", json_integer(1));
	json_object_set_new(j, "measured", json_true());
	json_object_set_new(j, "measured_at", json_string("2026-11-20T09:00:00Z"));
	json_object_set_new(j, "peak_gbs", json_real(peak_gbs));
	json_object_set_new(j, "peak_gflops", json_real(230));
	json_object_set_new(j, "peak_gflops_1core", json_real(115));
	s = json_dumps(j, 0);
	write_text(path, s);
	free(s);
	json_decref(j);
}

static void test_cache_format_migration(void **state)
{
	struct cache_fixture *f = *state;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_machine det, m;
	json_error_t je;
	json_t *j;

	assert_int_equal(pragma_machine_detect_at(&det, fixture("zen4"), &err), 0);

	/* Same machine, format 1, a higher bandwidth peak than the new
	 * measurement (74.3): re-measured, rewritten as format 2, and the old
	 * peak kept for impossible_speed (a peak never goes down). */
	write_format1(f->file.data, &det, 85.1);
	load(f, 0, &m);
	assert_int_equal(n_measured, 1);
	assert_true(m.peak_gbs == 85.1);
	assert_non_null(strstr(m.peak_gbs_how, "earlier measurement"));
	assert_non_null(strstr(m.peak_gbs_how, "2026-11-20T09:00:00Z"));
	assert_true(m.roof_gbs > 0 && m.n_roofs == 5);   /* the new fields came with the re-measurement */
	j = json_load_file(f->file.data, 0, &je);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "format")), PRAGMA_MACHINE_CACHE_FORMAT);
	assert_int_equal(PRAGMA_MACHINE_CACHE_FORMAT, 2);
	assert_true(json_number_value(json_object_get(j, "peak_gbs")) == 85.1);
	assert_true(json_is_array(json_object_get(j, "roofs")));
	json_decref(j);
	load(f, 0, &m);                      /* now from the cache */
	assert_int_equal(n_measured, 1);
	assert_true(m.peak_gbs == 85.1);

	/* A lower old peak is not kept: the new measurement wins. */
	write_format1(f->file.data, &det, 20.0);
	load(f, 0, &m);
	assert_int_equal(n_measured, 2);
	assert_true(m.peak_gbs > 74.2 && m.peak_gbs < 74.4);
	assert_null(strstr(m.peak_gbs_how, "earlier"));

	/* Another machine's old record lends nothing. */
	struct pragma_machine other = det;
	snprintf(other.kernel, sizeof(other.kernel), "4.19.0-old");
	write_format1(f->file.data, &other, 999.0);
	load(f, 0, &m);
	assert_int_equal(n_measured, 3);
	assert_true(m.peak_gbs < 75);

	/* --measure on a format-2 cache keeps the higher peak too. */
	edit_cache(f->file.data, raise_peak);
	load(f, 1, &m);
	assert_int_equal(n_measured, 4);
	assert_true(m.peak_gbs == 90.5);
}

static void raise_ntcopy_roof(json_t *j)
{
	json_t *r = json_array_get(json_object_get(j, "roofs"), 2);
	assert_string_equal(json_string_value(json_object_get(r, "name")), "ntcopy");
	json_object_set_new(r, "gbs", json_real(99.0));
	json_object_set_new(r, "median_ms", json_real(5.4));
}

static void lower_all_roofs(json_t *j)
{
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(j, "roofs"), i, r)
		json_object_set_new(r, "gbs", json_real(1.0));
}

/* Each protocol roof is the best over measurements of this machine: a
 * re-measurement on a busy moment does not lower it, a quiet one raises it. */
static void test_cache_roofs_best_ever(void **state)
{
	struct cache_fixture *f = *state;
	struct pragma_machine m;

	load(f, 0, &m);
	assert_int_equal(n_measured, 1);
	double fresh = m.roof_gbs;
	edit_cache(f->file.data, raise_ntcopy_roof);
	load(f, 1, &m);
	assert_int_equal(n_measured, 2);
	assert_true(m.roof_gbs == 99.0);
	assert_string_equal(m.roof_method, "ntcopy");
	assert_true(m.roofs[2].median_ms == 5.4);   /* the whole record of that run */
	assert_non_null(strstr(m.roof_protocol, "earlier measurements"));
	assert_true(m.peak_gbs >= 99.0);             /* the highest ever is never below a roof */
	assert_non_null(strstr(m.peak_gbs_how, "roof kernel"));
	/* Lower earlier figures lend nothing. */
	edit_cache(f->file.data, lower_all_roofs);
	load(f, 1, &m);
	assert_int_equal(n_measured, 3);
	assert_true(m.roof_gbs == fresh);
	assert_null(strstr(m.roof_protocol, "earlier"));
}

/* ---- micro-architecture table ---- */

static void expect_uarch(const char *vendor, int family, int model, int stepping, const char *name, int vbits,
			 int dbits)
{
	const struct pragma_uarch *u = pragma_uarch_lookup(vendor, family, model, stepping);

	if (!u)
		fail_msg("%s family %d model %d stepping %d: no table row (wanted %s)", vendor, family, model, stepping,
			 name);
	assert_string_equal(u->name, name);
	assert_int_equal(u->vector_bits, vbits);
	assert_int_equal(u->datapath_bits, dbits);
	assert_true(u->fma_units >= 1 && u->fma_latency >= 3 && u->fma_latency <= 6);
	assert_true(u->l1_latency && u->l2_latency && u->l3_latency && u->vector_note);
	assert_true(u->source && strlen(u->source) > 20);   /* every row cites */
}

static void test_uarch_table(void **state)
{
	(void)state;
	/* The machine: "AMD EPYC family 25 model 17". */
	expect_uarch("AuthenticAMD", 25, 17, 1, "Zen 4", 512, 256);
	assert_non_null(strstr(pragma_uarch_lookup("AuthenticAMD", 25, 17, 1)->vector_note, "double-pumped"));
	assert_int_equal(pragma_uarch_lookup("AuthenticAMD", 25, 17, 1)->fma_latency, 4);
	assert_string_equal(pragma_uarch_lookup("AuthenticAMD", 25, 17, 1)->l2_latency, "14");
	expect_uarch("AuthenticAMD", 25, 0x61, 2, "Zen 4", 512, 256);    /* Raphael */
	expect_uarch("AuthenticAMD", 25, 1, 1, "Zen 3", 256, 256);       /* Milan (this VM) */
	expect_uarch("AuthenticAMD", 25, 0x21, 0, "Zen 3", 256, 256);    /* Vermeer */
	expect_uarch("AuthenticAMD", 23, 0x31, 0, "Zen 2", 256, 256);    /* Rome */
	expect_uarch("AuthenticAMD", 23, 0x01, 0, "Zen / Zen+", 256, 128);
	expect_uarch("AuthenticAMD", 26, 0x02, 0, "Zen 5", 512, 512);    /* Turin: full width */
	expect_uarch("AuthenticAMD", 26, 0x24, 0, "Zen 5 (mobile)", 512, 256);   /* Strix Point */
	expect_uarch("GenuineIntel", 6, 0x55, 4, "Skylake-SP", 512, 512);
	expect_uarch("GenuineIntel", 6, 0x55, 7, "Cascade Lake", 512, 512);
	expect_uarch("GenuineIntel", 6, 0x6a, 6, "Ice Lake-SP", 512, 512);
	expect_uarch("GenuineIntel", 6, 0x8f, 8, "Sapphire Rapids", 512, 512);   /* the intel fixture */
	expect_uarch("GenuineIntel", 6, 0x9e, 10, "Skylake (client)", 256, 256);
	expect_uarch("GenuineIntel", 6, 0x97, 2, "Alder Lake (hybrid)", 256, 256);
	/* Unknown CPUs are unknown, not guessed from a neighbour. */
	assert_null(pragma_uarch_lookup("AuthenticAMD", 25, 0xf0, 0));
	assert_null(pragma_uarch_lookup("AuthenticAMD", 0x1b, 0, 0));
	assert_null(pragma_uarch_lookup("GenuineIntel", 6, 0x01, 0));
	assert_null(pragma_uarch_lookup("GenuineIntel", 6, 0x55, 9));      /* no such stepping */
	assert_null(pragma_uarch_lookup("CentaurHauls", 7, 0x3b, 0));
	assert_null(pragma_uarch_lookup("unknown", 0, 0, 0));
	assert_null(pragma_uarch_lookup(NULL, 25, 17, 1));
}

static void test_uarch_text(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf b = PRAGMA_BUF_INIT;
	struct pragma_machine m;

	(void)state;
	assert_int_equal(pragma_machine_detect_at(&m, fixture("zen4"), &err), 0);
	pragma_machine_uarch_text(&m, &b);
	assert_non_null(strstr(b.data, "Micro-architecture: Zen 4"));
	assert_non_null(strstr(b.data, "512-bit ISA on 256-bit units"));
	assert_non_null(strstr(b.data, "double-pumped"));
	assert_non_null(strstr(b.data, "latency 4 cycles"));
	assert_non_null(strstr(b.data, "L1 4-5, L2 14, L3 ~50"));
	assert_non_null(strstr(b.data, "2596 MHz"));
	assert_non_null(strstr(b.data, "virtual machine without cpufreq"));
	assert_non_null(strstr(b.data, "Sources: AMD Software Optimization Guide"));
	assert_null(strstr(b.data, "Sustained clock")); /* no peak measured yet */
	/* Zen 4: two 256-bit FMA pipes, 32 FP32 FLOP per cycle; a measured
	 * 96 GFLOP/s on one core is a 3.00 GHz clock, whatever cpuinfo says. */
	m.peak_gflops_1core = 96.0;
	pragma_buf_reset(&b);
	pragma_machine_uarch_text(&m, &b);
	assert_non_null(strstr(b.data, "Sustained clock: about 3.00 GHz, from the measured one-core FP32 peak "
				       "(96.0 GFLOP/s at 32 FLOP per cycle)"));

	pragma_buf_reset(&b);
	assert_int_equal(pragma_machine_detect_at(&m, fixture("intel"), &err), 0);
	pragma_machine_uarch_text(&m, &b);
	assert_non_null(strstr(b.data, "Sapphire Rapids"));
	assert_non_null(strstr(b.data, "up to 3800 MHz (cpufreq), base 2000 MHz"));

	pragma_buf_reset(&b);
	assert_int_equal(pragma_machine_detect_at(&m, fixture("minimal"), &err), 0);
	pragma_machine_uarch_text(&m, &b);
	assert_non_null(strstr(b.data, "unknown to pragma"));
	assert_null(strstr(b.data, "FMA:"));
	pragma_buf_release(&b);
}

static void test_roof_choice(void **state)
{
	struct pragma_machine m;
	struct pragma_buf b = PRAGMA_BUF_INIT;
	int fb;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.measured = 1;
	m.peak_gbs = 85.1;
	/* Not measured under the protocol: the peak, flagged as a fallback. */
	snprintf(m.roof_why, sizeof(m.roof_why), "cannot find pragma-harness");
	assert_true(pragma_machine_bw_roof(&m, &fb) == 85.1 && fb == 1);
	pragma_machine_roof_text(&m, &b);
	assert_non_null(strstr(b.data, "microbenchmark peak"));
	assert_non_null(strstr(b.data, "cannot find pragma-harness"));
	/* Measured: the protocol roof, never the higher peak. */
	m.roof_gbs = 33.4;
	m.n_roofs = 1;
	snprintf(m.roofs[0].name, sizeof(m.roofs[0].name), "ntcopy");
	m.roofs[0].gbs = 33.4;
	assert_true(pragma_machine_bw_roof(&m, &fb) == 33.4 && fb == 0);
	pragma_buf_reset(&b);
	pragma_machine_roof_text(&m, &b);
	assert_non_null(strstr(b.data, "33.4 GB/s"));
	assert_non_null(strstr(b.data, "inputs read once + outputs written once"));
	assert_non_null(strstr(b.data, "write-allocate not counted"));
	/* each kernel with what it does (players asked whether a roof kernel
	 * used streaming stores) */
	snprintf(m.roofs[0].what, sizeof(m.roofs[0].what), "y = x, non-temporal (streaming) stores");
	pragma_buf_reset(&b);
	pragma_machine_roof_text(&m, &b);
	assert_non_null(strstr(b.data, "(best of ntcopy 33.4 (y = x, non-temporal (streaming) stores); bytes ="));
	pragma_buf_release(&b);
	/* By traffic shape: a read-only stream (a reduction) gets the read
	 * kernel's roof, anything writing an eighth of its bytes or more the
	 * best kernel's; unknown outputs, the best. */
	m.n_roofs = 2;
	snprintf(m.roofs[1].name, sizeof(m.roofs[1].name), "read");
	m.roofs[1].gbs = 16.7;
	snprintf(m.roof_method, sizeof(m.roof_method), "ntcopy");
	const char *method = NULL;
	assert_true(pragma_machine_bw_roof_for(&m, 100e6, 0.1e6, &method, &fb) == 16.7 && fb == 0);
	assert_string_equal(method, "read");
	assert_true(pragma_machine_bw_roof_for(&m, 100e6, 50e6, &method, &fb) == 33.4);
	assert_string_equal(method, "ntcopy");
	assert_true(pragma_machine_bw_roof_for(&m, 100e6, 12.5e6, &method, &fb) == 33.4);   /* exactly 1/8 */
	assert_true(pragma_machine_bw_roof_for(&m, 100e6, 0, &method, &fb) == 33.4);
	m.n_roofs = 1;                                   /* no read kernel measured */
	assert_true(pragma_machine_bw_roof_for(&m, 100e6, 0.1e6, &method, &fb) == 33.4);
	m.roof_gbs = 0;                                  /* not measured: the peak, whatever the shape */
	assert_true(pragma_machine_bw_roof_for(&m, 100e6, 0.1e6, &method, &fb) == 85.1 && fb == 1);
	assert_string_equal(method, "peak");
	/* The roof kernels' arrays: 4x the LLC within 64-256 MiB. */
	assert_int_equal(pragma_machine_roof_array_bytes(32u << 20), 128u << 20);
	assert_int_equal(pragma_machine_roof_array_bytes(1u << 20), 64u << 20);
	assert_int_equal(pragma_machine_roof_array_bytes(256u << 20), 256u << 20);
	assert_int_equal(pragma_machine_roof_array_bytes(0), 128u << 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_cpulist),
		cmocka_unit_test(test_detect_zen4),
		cmocka_unit_test(test_detect_intel),
		cmocka_unit_test(test_detect_minimal),
		cmocka_unit_test(test_detect_missing),
		cmocka_unit_test(test_detect_real),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_json_rejects),
		cmocka_unit_test(test_same),
		cmocka_unit_test_setup_teardown(test_cache_reuse, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(test_cache_mismatch, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(test_cache_corrupt, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(test_cache_unwritable, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(test_measure_holds_lock, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(test_cache_measure_fails, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(test_load_env_cache_dir, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(test_cache_format_migration, cache_setup, cache_teardown),
		cmocka_unit_test_setup_teardown(test_cache_roofs_best_ever, cache_setup, cache_teardown),
		cmocka_unit_test(test_uarch_table),
		cmocka_unit_test(test_uarch_text),
		cmocka_unit_test(test_roof_choice),
	};

	/* The corrupt-cache cases warn by design; keep the test log readable. */
	pragma_log_set_level(getenv("PRAGMA_TEST_VERBOSE") ? PRAGMA_LOG_DEBUG : PRAGMA_LOG_ERROR);
	/* Measuring takes the host's measurement lock: a private one, so the
	 * fake measurements never wait for real ones on this host. */
	struct pragma_buf lockdir = PRAGMA_BUF_INIT;
	const char *tmp = getenv("TMPDIR");
	if (pragma_mkdtemp(tmp && *tmp ? tmp : "/tmp", "pragma-test-machine-lock.", &lockdir, NULL) < 0)
		return 1;
	setenv("PRAGMA_LOCK_DIR", lockdir.data, 1);
	int rc = pragma_run_tests(tests, NULL, NULL);
	pragma_rm_rf(lockdir.data, NULL);
	pragma_buf_release(&lockdir);
	return rc;
}
