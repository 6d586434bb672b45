/* The compiler-flag allow-list and "// pragma:flags" parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <stdio.h>
#include <string.h>

#include "pragma/build.h"

static int allowed(const char *flag)
{
	char why[256];

	return pragma_flag_check(flag, why, sizeof(why)) == 0;
}

static void test_allowed(void **state)
{
	static const char *const ok[] = {
		"-O2", "-O3", "-Ofast", "-Os", "-O0", "-funroll-loops", "-fno-math-errno", "-ffast-math",
		"-ftree-vectorize", "-fopenmp-simd", "-march=znver3", "-mtune=native", "-mavx2", "-mfma", "-mno-avx512f",
		"-mprefer-vector-width=512", "-DTILE=64", "-DUSE_AVX", "-D_GNU_SOURCE", "-UNDEBUG", "-Wall", "-Wno-unused",
		"-Werror=vla", "-g", "-g3", "-ggdb", "-std=c11", "-std=gnu17", "--param=max-unroll-times=8", "-pthread",
		"-fopt-info-vec-optimized", "-ffp-contract=fast", "-falign-loops=32", "-w", NULL,
	};

	(void)state;
	for (int i = 0; ok[i]; i++) {
		char why[256] = "";
		int rc = pragma_flag_check(ok[i], why, sizeof(why));
		if (rc != 0)
			fail_msg("%s refused: %s", ok[i], why);
	}
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"-o", "-o/tmp/x.so", "-B/tmp", "-B", "-specs=/tmp/s", "--specs=x", "-wrapper", "-fplugin=/tmp/p.so",
		"-fplugin-arg-x", "-Wl,-rpath,/tmp", "-Wa,--defsym", "-Wp,-MD", "-Xlinker", "-lopenblas", "-L/usr/lib",
		"-l", "-static", "-nostdlib", "-I/root/.cache/pragma/ref", "-include/etc/passwd", "-imacros", "-isystem",
		"-MD", "-MF", "-save-temps", "-fdump-tree-all", "-fprofile-use=/tmp", "-fprofile-generate", "-c", "-S",
		"-E", "-xc", "-m32", "-mx32", "@/tmp/flags", "-T/tmp/script.ld", "--sysroot=/", "-fuse-ld=gold",
		"-fsanitize=address", "-fstack-usage", "-flto", "-fdebug-prefix-map=/a=/b", "-fopt-info-vec=/tmp/log",
		"-pg", "-DX Y", "-D", "-D1X", "-march=/tmp/x", "-gsplit-dwarf", "kernel.c", "", "-v", "-shared",
		"-fno-pic", "-fpie", NULL,
	};

	(void)state;
	for (int i = 0; bad[i]; i++)
		if (allowed(bad[i]))
			fail_msg("%s allowed", bad[i]);
}

static void test_why(void **state)
{
	char why[256];

	(void)state;
	assert_int_equal(pragma_flag_check("-o", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "output"));
	assert_int_equal(pragma_flag_check("-lblas", why, sizeof(why)), -1);
	assert_non_null(strstr(why, "libraries"));
}

static void test_add(void **state)
{
	struct pragma_flags f = PRAGMA_FLAGS_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	assert_int_equal(pragma_flags_add(&f, "  -O2\t-funroll-loops  --param max-unroll-times=4 ", &err), 0);
	assert_int_equal(f.n, 3);
	assert_string_equal(f.v[0], "-O2");
	assert_string_equal(f.v[2], "--param=max-unroll-times=4");
	assert_null(pragma_flags_argv(&f)[3]);
	/* A refused flag adds nothing from that call. */
	assert_int_equal(pragma_flags_add(&f, "-mavx2 -o x.so", &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_NEGATIVE);
	assert_non_null(strstr(err.msg, "'-o'"));
	assert_int_equal(f.n, 3);
	pragma_flags_release(&f);
	assert_int_equal(f.n, 0);
	assert_null(pragma_flags_argv(&f));
}

static void test_from_source(void **state)
{
	static const char src[] = "#include <x.h>\n"
				  "// pragma:flags -O3 -mavx2\n"
				  "   //pragma:flags -DTILE=32\n"
				  "/* pragma:flags -o nope */\n"
				  "int x; // pragma:flags -lm (not at line start: ignored)\n"
				  "// pragma:flagsfoo -o (not the keyword)\n"
				  "// pragma:tune TILE=16,32\n";
	static const char evil[] = "// pragma:flags -O2\n// pragma:flags -B/tmp/evil\n";
	struct pragma_flags f = PRAGMA_FLAGS_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	assert_int_equal(pragma_flags_from_source(&f, src, strlen(src), &err), 0);
	assert_int_equal(f.n, 3);
	assert_string_equal(f.v[0], "-O3");
	assert_string_equal(f.v[2], "-DTILE=32");
	pragma_flags_release(&f);
	assert_int_equal(pragma_flags_from_source(&f, evil, strlen(evil), &err), -1);
	assert_non_null(strstr(err.msg, "-B/tmp/evil"));
	pragma_flags_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowed),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_why),
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_from_source),
	};

	return pragma_run_tests(tests, NULL, NULL);
}
