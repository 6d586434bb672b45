/* The harness's sandbox: entered after inputs are loaded and the kernel is
 * mapped, before the first call (issue 3 fills in seccomp and Landlock). */
#ifndef PRAGMA_HARNESS_H
#define PRAGMA_HARNESS_H

#include <jansson.h>

#include "pragma/err.h"

struct harness_sandbox {
	int enabled;
	char note[256];
};

int harness_sandbox_parse(json_t *req, struct harness_sandbox *sb);
int harness_sandbox_enter(struct harness_sandbox *sb, struct pragma_err *err);
void harness_sandbox_report(const struct harness_sandbox *sb, json_t *result);

#endif
