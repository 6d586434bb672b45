#include "cli.h"

int cmd_tasks(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "pragma: 'tasks' is not built yet\n");
	return 3;
}
