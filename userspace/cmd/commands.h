/* SPDX-License-Identifier: MIT */
/* Subcommands; dispatched from the table in main.c. */
#ifndef KHPROF_COMMANDS_H
#define KHPROF_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

int cmd_record(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_probes(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_features(int argc, char **argv);

/*
 * Where record and attach -p write without -o, and what report reads
 * without a PATH, as perf's perf.data: in the working directory; record
 * keeps the previous one as khprof.json.old.
 */
#define KH_DEFAULT_RECORD "khprof.json"

/*
 * A bad command line, as git and perf say it: one line, the mistake and a
 * pointer to the command's --help ("khprof: unknown option '--bogus' (see
 * 'khprof report --help')"), not the whole help.  Returns 2.
 */
int usage_error(const char *command, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Whether argv holds -h or --help before any "--". */
int wants_help(int argc, char **argv);

/*
 * After getopt_long returned an option with a required value: true (and one
 * error line) when the value was given as its own argument and is "--" or
 * looks like an option, as `record -o -- ./scanner` with the path forgotten.
 * `--output=-x` and `-o-x` still say what they mean and are accepted, and
 * so are "-" and negative numbers, which the option itself then judges.
 */
bool option_value_refused(char **argv, int optind, const char *value);

#endif
