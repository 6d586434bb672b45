#include <stdio.h>
#include <string.h>

#include "harness.h"

int harness_sandbox_parse(json_t *req, struct harness_sandbox *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->enabled = json_is_true(json_object_get(json_object_get(req, "sandbox"), "enabled"));
	return 0;
}

int harness_sandbox_enter(struct harness_sandbox *sb, struct pragma_err *err)
{
	(void)err;
	if (sb->enabled)
		snprintf(sb->note, sizeof(sb->note), "sandbox requested but not built yet");
	return 0;
}

void harness_sandbox_report(const struct harness_sandbox *sb, json_t *result)
{
	json_object_set_new(result, "sandbox", json_pack("{s:b, s:s}", "enabled", sb->enabled, "note", sb->note));
}
