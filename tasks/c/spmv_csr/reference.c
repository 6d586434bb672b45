/* spmv_csr reference: y = A x, A in CSR (int64 row_ptr, int32 col_idx,
 * float64 vals). One row at a time, terms summed left to right. */
#include <pragma/kernel.h>
#include <stdint.h>

int pk_forward(const struct pk_tensor *inputs, int n_inputs,
               struct pk_tensor *outputs, int n_outputs)
{
    if (n_inputs != 4 || n_outputs != 1) return 1;
    const struct pk_tensor *rp = &inputs[0], *ci = &inputs[1],
                           *va = &inputs[2], *xv = &inputs[3];
    struct pk_tensor *yv = &outputs[0];
    if (rp->dtype != PK_INT64 || ci->dtype != PK_INT32 ||
        va->dtype != PK_FLOAT64 || xv->dtype != PK_FLOAT64 ||
        yv->dtype != PK_FLOAT64) return 2;
    if (rp->ndim != 1 || ci->ndim != 1 || va->ndim != 1 || xv->ndim != 1 ||
        yv->ndim != 1) return 3;
    int64_t R = yv->shape[0];
    int64_t NNZ = ci->shape[0];
    if (rp->shape[0] != R + 1 || va->shape[0] != NNZ) return 4;

    const int64_t *row_ptr = (const int64_t *)rp->data;
    const int32_t *col_idx = (const int32_t *)ci->data;
    const double *vals = (const double *)va->data;
    const double *x = (const double *)xv->data;
    double *y = (double *)yv->data;

    for (int64_t r = 0; r < R; r++) {
        double sum = 0.0;
        for (int64_t k = row_ptr[r]; k < row_ptr[r + 1]; k++)
            sum += vals[k] * x[col_idx[k]];
        y[r] = sum;
    }
    return 0;
}
