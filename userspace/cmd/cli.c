// SPDX-License-Identifier: MIT
/* Command-line helpers shared by the subcommands. */
#include <string.h>

#include "commands.h"

int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return 0;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return 1;
	}
	return 0;
}
