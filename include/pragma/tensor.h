/*
 * Tensors in pragma's own memory, and the NumPy .npy codec (format v1/v2/v3
 * headers, little-endian, C order, the dtypes of the kernel ABI).
 * .npy has no bfloat16: such tensors are stored as '<u2' and read back as
 * PK_BFLOAT16 only when the caller says that is what it expects.
 */
#ifndef PRAGMA_TENSOR_H
#define PRAGMA_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "pragma/err.h"
#include "pragma/kernel.h"

struct pragma_tensor {
	enum pk_dtype dtype;
	int ndim;
	int64_t shape[PK_MAX_DIMS];
	void *data;      /* 64-byte aligned, owned; NULL when nbytes == 0 */
	size_t nbytes;
};

#define PRAGMA_TENSOR_INIT { .dtype = PK_FLOAT32 }

size_t pragma_dtype_size(enum pk_dtype t);
const char *pragma_dtype_name(enum pk_dtype t);          /* "float32" */
int pragma_dtype_from_name(const char *name, enum pk_dtype *out); /* 0 or -1 */
int pragma_dtype_is_float(enum pk_dtype t);

/* Product of the shape; 1 for 0-d. Returns -1 on overflow or negative dims. */
int64_t pragma_shape_numel(const int64_t *shape, int ndim);
/* "[4096, 4096]" */
const char *pragma_shape_str(const int64_t *shape, int ndim, char *buf, size_t len);

/* Allocate (64-byte aligned, zeroed) for dtype/shape. */
int pragma_tensor_alloc(struct pragma_tensor *t, enum pk_dtype dtype, int ndim,
			const int64_t *shape, struct pragma_err *err);
void pragma_tensor_release(struct pragma_tensor *t);
int64_t pragma_tensor_numel(const struct pragma_tensor *t);
/* Element i as a double (bool/int types converted; fp16/bf16 widened). */
double pragma_tensor_get(const struct pragma_tensor *t, int64_t i);
void pragma_tensor_set(struct pragma_tensor *t, int64_t i, double v);

/* Largest .npy header we accept. */
#define PRAGMA_NPY_MAX_HEADER (1u << 16)

/* Parse an in-memory .npy image (the fuzz entry point). want: the dtype the
 * caller expects, or -1 for whatever the file says. Data is copied. */
int pragma_npy_parse(const void *buf, size_t len, int want, struct pragma_tensor *t,
		     struct pragma_err *err);
int pragma_npy_read(const char *path, int want, struct pragma_tensor *t, struct pragma_err *err);
/* Header only: dtype and shape, no data. */
int pragma_npy_read_header(const char *path, int want, struct pragma_tensor *t,
			   struct pragma_err *err);
/* Write v1 (v2 when the header needs it); atomic (temp + rename). */
int pragma_npy_write(const char *path, const struct pragma_tensor *t, struct pragma_err *err);

#endif
