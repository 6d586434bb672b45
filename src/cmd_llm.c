#include "cli.h"

int cmd_llm(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "pragma: 'llm' is not built yet\n");
	return 3;
}
