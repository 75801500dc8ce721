// SPDX-License-Identifier: MIT
/* Command-line helpers shared by the subcommands. */
#include <string.h>

#include "commands.h"
#include "log.h"

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

bool option_value_refused(char **argv, int optind, const char *value)
{
	const char *option;

	/* Attached (-o-x, --output=-x): the value cannot be a forgotten one. */
	if (optind < 2 || value != argv[optind - 1] || value[0] != '-' || value[1] == '\0')
		return false;
	option = argv[optind - 2];
	if (strcmp(value, "--") == 0)
		log__error("option '%s' needs a value, not '--' (was the value forgotten?)", option);
	else if (option[1] == '-')
		log__error("option '%s' needs a value, not '%s' (write %s=%s if that is meant)",
			   option, value, option, value);
	else
		log__error("option '%s' needs a value, not '%s' (write %s%s if that is meant)",
			   option, value, option, value);
	return true;
}
