/* pragma eval: verify, then time against the baseline (cmd_verify.c does both). */
#include "cli.h"

int verify_command(int argc, char **argv, int eval);

int cmd_eval(int argc, char **argv)
{
	return verify_command(argc, argv, 1);
}
