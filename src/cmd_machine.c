#include "cli.h"

int cmd_machine(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "pragma: 'machine' is not built yet\n");
	return 3;
}
