/* lib/cuda internals shared between its files. */
#ifndef PRAGMA_CUDA_INT_H
#define PRAGMA_CUDA_INT_H

#include "pragma/buf.h"
#include "pragma/err.h"

/* Run the CUDA harness with a request written by lib/cuda (profile mode,
 * under ncu); see profile.c. */

#endif
