/* The .npy codec: round trips for every ABI dtype, and clear errors (never
 * crashes) on malformed files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/tensor.h"

static char tmpdir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/pragma-test-npy-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	pragma_rm_rf(tmpdir, NULL);
	return 0;
}

static void roundtrip_all_dtypes(void **state)
{
	(void)state;
	for (int d = PK_FLOAT32; d <= PK_BOOL; d++) {
		struct pragma_tensor t, r;
		struct pragma_err err = PRAGMA_ERR_INIT;
		int64_t shape[3] = { 3, 1, 5 };
		char path[512];

		assert_int_equal(pragma_tensor_alloc(&t, (enum pk_dtype)d, 3, shape, &err), 0);
		for (int64_t i = 0; i < 15; i++)
			pragma_tensor_set(&t, i, d == PK_BOOL ? (i & 1) : (double)(i - 7));
		snprintf(path, sizeof(path), "%s/t%d.npy", tmpdir, d);
		assert_int_equal(pragma_npy_write(path, &t, &err), 0);
		assert_int_equal(pragma_npy_read(path, d, &r, &err), 0);
		assert_int_equal(r.dtype, d);
		assert_int_equal(r.ndim, 3);
		assert_int_equal(r.shape[2], 5);
		assert_int_equal(r.nbytes, t.nbytes);
		assert_memory_equal(r.data, t.data, t.nbytes);
		assert_int_equal((uintptr_t)r.data % 64, 0);
		pragma_tensor_release(&t);
		pragma_tensor_release(&r);
	}
}

static void scalar_and_empty(void **state)
{
	struct pragma_tensor t, r;
	struct pragma_err err = PRAGMA_ERR_INIT;
	int64_t zero[1] = { 0 };
	char path[512];

	(void)state;
	assert_int_equal(pragma_tensor_alloc(&t, PK_FLOAT64, 0, NULL, &err), 0);
	pragma_tensor_set(&t, 0, 2.5);
	snprintf(path, sizeof(path), "%s/scalar.npy", tmpdir);
	assert_int_equal(pragma_npy_write(path, &t, &err), 0);
	assert_int_equal(pragma_npy_read(path, -1, &r, &err), 0);
	assert_int_equal(r.ndim, 0);
	assert_true(pragma_tensor_get(&r, 0) == 2.5);
	pragma_tensor_release(&t);
	pragma_tensor_release(&r);

	assert_int_equal(pragma_tensor_alloc(&t, PK_FLOAT32, 1, zero, &err), 0);
	snprintf(path, sizeof(path), "%s/empty.npy", tmpdir);
	assert_int_equal(pragma_npy_write(path, &t, &err), 0);
	assert_int_equal(pragma_npy_read(path, -1, &r, &err), 0);
	assert_int_equal(r.nbytes, 0);
	pragma_tensor_release(&t);
	pragma_tensor_release(&r);
}

/* An .npy image with the given header text (padded like numpy does). */
static size_t image(unsigned char *buf, size_t cap, int version, const char *hdr, size_t data_len)
{
	size_t pre = version == 1 ? 10 : 12, hl = strlen(hdr);
	size_t total = (pre + hl + 1 + 63) & ~(size_t)63;
	size_t padded = total - pre;

	assert_true(total + data_len <= cap);
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (unsigned char)version;
	buf[7] = 0;
	if (version == 1) {
		buf[8] = (unsigned char)(padded & 255);
		buf[9] = (unsigned char)(padded >> 8);
	} else {
		buf[8] = (unsigned char)(padded & 255);
		buf[9] = (unsigned char)(padded >> 8);
		buf[10] = buf[11] = 0;
	}
	memcpy(buf + pre, hdr, hl);
	memset(buf + pre + hl, ' ', padded - hl - 1);
	buf[total - 1] = '\n';
	memset(buf + total, 0, data_len);
	return total + data_len;
}

static void expect_error(const void *buf, size_t len, int want, const char *needle)
{
	struct pragma_tensor t;
	struct pragma_err err = PRAGMA_ERR_INIT;

	assert_int_equal(pragma_npy_parse(buf, len, want, &t, &err), -1);
	if (!strstr(err.msg, needle))
		fail_msg("error '%s' does not mention '%s'", err.msg, needle);
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	assert_null(t.data);
}

static void malformed(void **state)
{
	unsigned char b[4096];
	size_t n;
	struct pragma_tensor t;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	expect_error("hello", 5, -1, "magic");
	n = image(b, sizeof(b), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 16);
	assert_int_equal(pragma_npy_parse(b, n, -1, &t, &err), 0);
	pragma_tensor_release(&t);
	expect_error(b, n - 1, -1, "truncated");
	expect_error(b, 20, -1, "truncated");
	n = image(b, sizeof(b), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 17);
	expect_error(b, n, -1, "trailing");
	n = image(b, sizeof(b), 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", 16);
	expect_error(b, n, -1, "big-endian");
	n = image(b, sizeof(b), 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16);
	expect_error(b, n, -1, "Fortran");
	n = image(b, sizeof(b), 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16);
	expect_error(b, n, -1, "unsupported dtype");
	n = image(b, sizeof(b), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4);
	expect_error(b, n, -1, "shape");
	n = image(b, sizeof(b), 1,
		  "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", 0);
	expect_error(b, n, -1, "shape");
	n = image(b, sizeof(b), 1, "{'descr': '<f4', 'shape': (4,), }", 16);
	expect_error(b, n, -1, "fortran_order");
	n = image(b, sizeof(b), 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", 16);
	expect_error(b, n, -1, "descr");
	n = image(b, sizeof(b), 1, "not a dict at all", 0);
	expect_error(b, n, -1, "dict");
	n = image(b, sizeof(b), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 16);
	expect_error(b, n, PK_FLOAT64, "expected float64");
	b[6] = 9;
	expect_error(b, n, -1, "version");
	/* A header length pointing past the end. */
	n = image(b, sizeof(b), 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 16);
	b[10] = 0x7f;
	expect_error(b, n, -1, "header");
}

static void bfloat16_needs_metadata(void **state)
{
	unsigned char b[4096];
	size_t n;
	struct pragma_tensor t;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	n = image(b, sizeof(b), 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", 4);
	expect_error(b, n, -1, "bfloat16");
	b[n - 4] = 0x80; /* 1.0 in bfloat16 is 0x3f80 */
	b[n - 3] = 0x3f;
	assert_int_equal(pragma_npy_parse(b, n, PK_BFLOAT16, &t, &err), 0);
	assert_int_equal(t.dtype, PK_BFLOAT16);
	assert_true(pragma_tensor_get(&t, 0) == 1.0);
	pragma_tensor_release(&t);
}

static void numpy_written_file(void **state)
{
	/* A file numpy itself wrote (v1 header, 2-d float32 ones). */
	char path[512], cmd[1024];
	struct pragma_tensor t;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	snprintf(path, sizeof(path), "%s/np.npy", tmpdir);
	snprintf(cmd, sizeof(cmd),
		 "/usr/bin/python3 -c \"import numpy as n; n.save('%s', n.arange(6, dtype=n.int64).reshape(2,3))\" 2>/dev/null",
		 path);
	if (system(cmd) != 0)
		skip_because("/usr/bin/python3 with numpy is not available to write the reference .npy");
	assert_int_equal(pragma_npy_read(path, -1, &t, &err), 0);
	assert_int_equal(t.dtype, PK_INT64);
	assert_int_equal(t.shape[1], 3);
	assert_true(pragma_tensor_get(&t, 5) == 5);
	pragma_tensor_release(&t);
}

static void fuzz_corpus_regressions(void **state)
{
	/* Every file under tests/fuzz/npy-corpus parses or fails cleanly. */
	const char *root = getenv("PRAGMA_TEST_DATA");
	char cmd[1024];
	FILE *ls;
	char line[1024];
	int count = 0;

	(void)state;
	if (!root)
		skip_because("no fuzz corpus directory (PRAGMA_TEST_DATA unset)");
	snprintf(cmd, sizeof(cmd), "ls %s/fuzz/npy-corpus/* 2>/dev/null", root);
	ls = popen(cmd, "r");
	while (ls && fgets(line, sizeof(line), ls)) {
		struct pragma_buf b = PRAGMA_BUF_INIT;
		struct pragma_tensor t;
		struct pragma_err err = PRAGMA_ERR_INIT;
		line[strcspn(line, "\n")] = '\0';
		if (pragma_read_file(line, &b, 1 << 24, &err) == 0) {
			if (pragma_npy_parse(b.data, b.len, -1, &t, &err) == 0)
				pragma_tensor_release(&t);
			else
				assert_true(err.msg[0] != '\0');
			count++;
		}
		pragma_buf_release(&b);
	}
	if (ls)
		pclose(ls);
	assert_true(count > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(roundtrip_all_dtypes),
		cmocka_unit_test(scalar_and_empty),
		cmocka_unit_test(malformed),
		cmocka_unit_test(bfloat16_needs_metadata),
		cmocka_unit_test(numpy_written_file),
		cmocka_unit_test(fuzz_corpus_regressions),
	};
	return pragma_run_tests(tests, setup, teardown);
}
