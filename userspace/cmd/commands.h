/* SPDX-License-Identifier: MIT */
/* Subcommands; dispatched from the table in main.c. */
#ifndef KHPROF_COMMANDS_H
#define KHPROF_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_probes(int argc, char **argv);

/* Whether argv holds -h or --help before any "--". */
int wants_help(int argc, char **argv);

#endif
