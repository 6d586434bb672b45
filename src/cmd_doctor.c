#include "cli.h"

int cmd_doctor(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "pragma: 'doctor' is not built yet\n");
	return 3;
}
