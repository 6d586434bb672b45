#include "cli.h"

int cmd_baseline(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "pragma: 'baseline' is not built yet\n");
	return 3;
}
