// SPDX-License-Identifier: MIT
/* Command-line helpers shared by the subcommands. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "exit_codes.h"
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

	/*
	 * Attached (-o-x, --output=-x): the value cannot be a forgotten one.
	 * "-" alone (stdin's usual name) and negative numbers ("-1") are no
	 * option of khprof's; the option itself judges them.
	 */
	if (optind < 2 || value != argv[optind - 1] || value[0] != '-' || value[1] == '\0' ||
	    isdigit((unsigned char)value[1]) || value[1] == '.')
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

int usage_error(const char *command, const char *fmt, ...)
{
	char message[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	log__error("%s (see 'khprof %s --help')", message, command);
	return KHPROF_EXIT_USAGE;
}
