// SPDX-License-Identifier: MIT
/*
 * khprof: profiles programs instrumented with keyhog USDT probes from
 * outside the process and writes keyhog-profile-v1 records.
 */
#include <linux/capability.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "commands.h"
#include "log.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	bool needs_privilege; /* loads BPF programs */
	const char *summary;
};

static const struct command commands[] = {
	{ "record", cmd_record, true, "run a command and profile it" },
	{ "attach", cmd_attach, true, "profile a running process" },
	{ "report", cmd_report, false, "print a record as the seed's text report or JSON" },
	{ "diff", cmd_diff, false, "compare records or series of runs and flag regressions" },
	{ "probes", cmd_probes, false, "list the USDT probes of an ELF file" },
	{ "export", cmd_export, false, "write records as OpenMetrics for Prometheus" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: khprof [-v] <command> [<args>]\n\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "   %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'khprof <command> --help' describes a command.\n"
		     "Exit codes: 0 ok, 1 tracing failed (diff: a regression), 2 bad command\n"
		     "line or bad input file, 3 records not comparable (diff); record returns\n"
		     "the command's status.\n");
}

static bool has_capability(int cap)
{
	struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &header, data) != 0)
		return false;
	return data[cap / 32].effective & (1u << (cap % 32));
}

static bool privileged(void)
{
	return geteuid() == 0 || has_capability(CAP_SYS_ADMIN) ||
	       (has_capability(CAP_BPF) && has_capability(CAP_PERFMON));
}

int main(int argc, char **argv)
{
	int first = 1;

	while (first < argc && argv[first][0] == '-') {
		if (!strcmp(argv[first], "-v") || !strcmp(argv[first], "--verbose")) {
			khprof_verbose = true;
		} else if (!strcmp(argv[first], "-h") || !strcmp(argv[first], "--help")) {
			usage(stdout);
			return KHPROF_EXIT_OK;
		} else {
			log__error("unknown option '%s'", argv[first]);
			usage(stderr);
			return KHPROF_EXIT_USAGE;
		}
		first++;
	}
	if (first >= argc) {
		usage(stderr);
		return KHPROF_EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *cmd = &commands[i];
		int sub_argc = argc - first;
		char **sub_argv = argv + first;

		if (strcmp(argv[first], cmd->name) != 0)
			continue;
		if (cmd->needs_privilege && !wants_help(sub_argc, sub_argv) && !privileged()) {
			log__error("cannot %s: permission denied (run as root or grant "
				   "CAP_BPF and CAP_PERFMON)", cmd->name);
			return KHPROF_EXIT_FAILURE;
		}
		return cmd->run(sub_argc, sub_argv);
	}
	log__error("'%s' is not a khprof command (see 'khprof --help')", argv[first]);
	return KHPROF_EXIT_USAGE;
}
