/* libFuzzer target for the .npy parser:
 *   bash tests/fuzz/run_npy.sh [SECONDS]
 * New inputs that reach new code land in tests/fuzz/npy-corpus, which
 * tests/unit/test_npy.c replays as regression tests. */
#include <stddef.h>
#include <stdint.h>

#include "pragma/tensor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pragma_tensor t;
	struct pragma_err err = PRAGMA_ERR_INIT;

	for (int want = -1; want <= PK_BFLOAT16; want += 4) {
		if (pragma_npy_parse(data, size, want, &t, &err) == 0)
			pragma_tensor_release(&t);
	}
	return 0;
}
