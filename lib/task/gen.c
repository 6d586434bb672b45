/* Seeded inputs for native C tasks, from task.json's distributions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/hash.h"
#include "pragma/refdata.h"
#include "pragma/tensor.h"

struct rng {
	uint64_t s[4];
};

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed, const char *stream)
{
	uint64_t x = seed ^ pragma_hash64(stream, strlen(stream), 0x7a5c);

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&x);
}

/* xoshiro256** */
static uint64_t next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = ((s[1] * 5) << 7 | (s[1] * 5) >> 57) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = s[3] << 45 | s[3] >> 19;
	return res;
}

static double uniform01(struct rng *r)
{
	return (double)(next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static double normal(struct rng *r)
{
	double u = uniform01(r), v = uniform01(r);

	if (u < 1e-300)
		u = 1e-300;
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static int num(json_t *init, const char *key, json_t *sizes, double def, double *out, struct pragma_err *err)
{
	json_t *v = json_object_get(init, key);
	int64_t x;

	if (!v) {
		*out = def;
		return 0;
	}
	if (json_is_number(v)) {
		*out = json_number_value(v);
		return 0;
	}
	if (json_is_string(v) && pragma_size_expr(json_string_value(v), sizes, &x, err) == 0) {
		*out = (double)x;
		return 0;
	}
	if (!json_is_string(v))
		pragma_err_set(err, PRAGMA_E_INPUT, "init.%s must be a number or a size expression", key);
	return -1;
}

static int fill(const struct pragma_task *t, const struct pragma_tensor_spec *s, struct pragma_tensor *x,
		struct rng *r, struct pragma_err *err)
{
	json_t *sizes = json_object_get(t->meta, "sizes");
	const char *dist = json_string_value(json_object_get(s->init, "dist"));
	int64_t n = pragma_tensor_numel(x);
	double a, b;

	if (!strcmp(dist, "uniform")) {
		if (num(s->init, "low", sizes, 0, &a, err) < 0 || num(s->init, "high", sizes, 1, &b, err) < 0)
			return -1;
		for (int64_t i = 0; i < n; i++)
			pragma_tensor_set(x, i, a + (b - a) * uniform01(r));
	} else if (!strcmp(dist, "normal")) {
		if (num(s->init, "mean", sizes, 0, &a, err) < 0 || num(s->init, "std", sizes, 1, &b, err) < 0)
			return -1;
		for (int64_t i = 0; i < n; i++)
			pragma_tensor_set(x, i, a + b * normal(r));
	} else if (!strcmp(dist, "randint")) {
		if (num(s->init, "low", sizes, 0, &a, err) < 0 || num(s->init, "high", sizes, 2, &b, err) < 0)
			return -1;
		if (b <= a)
			return pragma_err_set(err, PRAGMA_E_INPUT, "randint needs low < high");
		uint64_t span = (uint64_t)(b - a);
		for (int64_t i = 0; i < n; i++)
			pragma_tensor_set(x, i, a + (double)(next(r) % span));
	} else if (!strcmp(dist, "constant")) {
		if (num(s->init, "value", sizes, 0, &a, err) < 0)
			return -1;
		for (int64_t i = 0; i < n; i++)
			pragma_tensor_set(x, i, a);
	} else if (!strcmp(dist, "arange")) {
		for (int64_t i = 0; i < n; i++)
			pragma_tensor_set(x, i, (double)i);
	} else if (!strcmp(dist, "csr_row_ptr")) {
		/* Row pointers for R = n-1 rows and nnz entries: each entry lands in
		 * a random row, so row lengths vary with the seed. */
		if (num(s->init, "nnz", sizes, -1, &a, err) < 0)
			return -1;
		if (a < 0 || s->ndim != 1 || n < 2)
			return pragma_err_set(err, PRAGMA_E_INPUT, "csr_row_ptr needs nnz and a 1-d shape [rows+1]");
		int64_t rows = n - 1, nnz = (int64_t)a;
		int64_t *cnt = calloc((size_t)rows, sizeof(int64_t));
		if (!cnt)
			return pragma_err_set(err, PRAGMA_E_INTERNAL, "out of memory");
		for (int64_t k = 0; k < nnz; k++)
			cnt[next(r) % (uint64_t)rows]++;
		int64_t acc = 0;
		pragma_tensor_set(x, 0, 0);
		for (int64_t i = 0; i < rows; i++) {
			acc += cnt[i];
			pragma_tensor_set(x, i + 1, (double)acc);
		}
		free(cnt);
	}
	return 0;
}

int pragma_gen_inputs(const struct pragma_task *t, uint64_t seed, const char *dir, struct pragma_err *err)
{
	for (int i = 0; i < t->n_inputs; i++) {
		const struct pragma_tensor_spec *s = &t->inputs[i];
		struct pragma_tensor x;
		struct rng r;
		char path[4200];
		int rc;

		if (pragma_tensor_alloc(&x, s->dtype, s->ndim, s->shape, err) < 0) {
			char hint[768];
			pragma_err_prefix(err, "input '%s'", s->name);
			pragma_task_size_hint(t, hint, sizeof(hint));
			pragma_err_hint(err, "%s", hint);
			return -1;
		}
		rng_seed(&r, seed, s->name);
		rc = fill(t, s, &x, &r, err);
		if (rc == 0) {
			snprintf(path, sizeof(path), "%s/in_%03d.npy", dir, i);
			rc = pragma_npy_write(path, &x, err);
		} else {
			pragma_err_prefix(err, "input '%s'", s->name);
		}
		pragma_tensor_release(&x);
		if (rc < 0)
			return -1;
	}
	return 0;
}
