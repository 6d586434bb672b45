#include <stdarg.h>
#include <string.h>

#include "cli.h"
#include "pragma/log.h"

int cli_error(const struct pragma_err *err)
{
	pragma_progress_clear(); /* a live status line would run into the message */
	fprintf(stderr, "pragma: %s\n", err->msg[0] ? err->msg : "unknown error");
	if (err->hint[0])
		fprintf(stderr, "Hint: %s\n", err->hint);
	return pragma_err_exit_code(err) ? pragma_err_exit_code(err) : 3;
}

int cli_error_json(const struct pragma_err *err)
{
	json_t *o = json_pack("{s:s, s:s, s:s}", "status", "error", "kind", pragma_err_kind_name(err->kind),
			      "message", err->msg);
	if (err->hint[0])
		json_object_set_new(o, "hint", json_string(err->hint));
	cli_print_json(o);
	return cli_error(err);
}

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	pragma_progress_clear();
	fputs("pragma: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

void cli_print_json(json_t *v)
{
	pragma_progress_clear();
	json_dumpf(v, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
	fputc('\n', stdout);
	fflush(stdout);
	json_decref(v);
}

int cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	return 0;
}
