#include "cli.h"

int cmd_cache(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "pragma: 'cache' is not built yet\n");
	return 3;
}
