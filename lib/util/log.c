#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "pragma/log.h"

static enum pragma_log_level log_level = PRAGMA_LOG_WARN;

void pragma_log_set_level(enum pragma_log_level level)
{
	log_level = level;
}

enum pragma_log_level pragma_log_get_level(void)
{
	return log_level;
}

void pragma_log(enum pragma_log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char line[4096];
	va_list ap;
	int n;

	if (level > log_level)
		return;
	n = snprintf(line, sizeof(line), "pragma: %s: ", names[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write per line, so lines of concurrent processes do not interleave. */
	fprintf(stderr, "%s\n", line);
}
