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
#include "exit_codes.h"
#include "keyhog_profile.h"
#include "log.h"
#include "privileges.h"
#include "record.h"
#include "stops.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* Shown by --version; bump with each release. */
#define KHPROF_VERSION "0.2.0"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	bool needs_root; /* loads BPF programs: root, or CAP_BPF with CAP_PERFMON */
	const char *summary;
};

static const struct command commands[] = {
	/* name      run          needs_root summary */
	{ "record", cmd_record, true, "run a command and profile it" },
	{ "attach", cmd_attach, true, "profile a running process" },
	{ "report", cmd_report, false, "print a record, or the spread of a series of runs" },
	{ "diff", cmd_diff, false, "compare records or series of runs and flag regressions" },
	{ "probes", cmd_probes, false, "list the USDT probes of an ELF file" },
	{ "export", cmd_export, false, "write records as OpenMetrics for Prometheus" },
	{ "features", cmd_features, false, "print what the running kernel offers khprof" },
	{ "help", NULL, false, "describe khprof or one of its commands" },
};

#define COMMAND_COUNT (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *out)
{
	fprintf(out, "usage: khprof [-v] [--version] [--help] <command> [<args>]\n\n");
	for (size_t i = 0; i < COMMAND_COUNT; i++)
		fprintf(out, "   %-8s %-6s %s\n", commands[i].name,
			commands[i].needs_root ? "(root)" : "", commands[i].summary);
	fprintf(out, "\n'khprof help <command>' or 'khprof <command> --help' describes a command;\n"
		     "(root): needs root or CAP_BPF with CAP_PERFMON (docs/PRIVILEGES.md).\n"
		     "Exit codes: 0 ok, 1 tracing failed (diff: a regression), 2 bad command\n"
		     "line or bad input file, 3 records not comparable (diff); record returns\n"
		     "the command's status.\n"
		     "\n"
		     "examples:\n"
		     "   khprof record -o profile.json -- ./scanner repo/\n"
		     "   khprof report profile.json\n"
		     "   khprof help record\n");
}

static void print_version(void)
{
	printf("khprof version %s\n"
	       "probe ABI %d (provider keyhog, include/keyhog_profile.h)\n"
	       "record schema %s\n",
	       KHPROF_VERSION, KH_PROBE_ABI_VERSION, KH_PROFILE_SCHEMA);
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < COMMAND_COUNT; i++)
		if (strcmp(name, commands[i].name) == 0)
			return &commands[i];
	return NULL;
}

/* Levenshtein distance of two short words (command names); 99 past 31 bytes. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[32];

	if (la >= 32 || lb >= 32)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			best = up + 1 < best ? up + 1 : best;
			best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/*
 * Not a command: one line, with the nearest command as git says it ("did
 * you mean"), when one is within two edits or starts with what was typed.
 */
static int unknown_command(const char *name)
{
	const struct command *near = NULL;
	size_t best = 3;

	for (size_t i = 0; i < COMMAND_COUNT; i++) {
		size_t d = edit_distance(name, commands[i].name);

		if (strlen(name) >= 2 && !strncmp(commands[i].name, name, strlen(name)))
			d = 1;
		if (d < best) {
			best = d;
			near = &commands[i];
		}
	}
	if (near)
		log__error("'%s' is not a khprof command; did you mean '%s'? (see 'khprof "
			   "--help')", name, near->name);
	else
		log__error("'%s' is not a khprof command (see 'khprof --help')", name);
	return KHPROF_EXIT_USAGE;
}

/* khprof help [COMMAND]: as git and perf, the command's --help. */
static int run_help(int argc, char **argv)
{
	const struct command *cmd;
	char *help_argv[] = { NULL, "--help", NULL };

	if (argc < 2 || !strcmp(argv[1], "help") || argv[1][0] == '-') {
		usage(stdout);
		return KHPROF_EXIT_OK;
	}
	if (argc > 2) {
		log__error("unexpected argument '%s' (khprof help [COMMAND])", argv[2]);
		return KHPROF_EXIT_USAGE;
	}
	cmd = find_command(argv[1]);
	if (!cmd)
		return unknown_command(argv[1]);
	help_argv[0] = argv[1];
	return cmd->run(2, help_argv);
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
	const struct command *cmd;
	const char *self = strrchr(argv[0], '/');
	int first = 1;

	/* khprof's stop keeper is khprof's binary under another name (stops.h). */
	if (!strcmp(self ? self + 1 : argv[0], STOPS_KEEPER_NAME))
		return stops__keeper_main(argc, argv);
	while (first < argc && argv[first][0] == '-') {
		if (!strcmp(argv[first], "-v") || !strcmp(argv[first], "--verbose")) {
			khprof_verbose = true;
		} else if (!strcmp(argv[first], "-h") || !strcmp(argv[first], "--help")) {
			usage(stdout);
			return KHPROF_EXIT_OK;
		} else if (!strcmp(argv[first], "--version")) {
			print_version();
			return KHPROF_EXIT_OK;
		} else {
			log__error("unknown option '%s' (see 'khprof --help')", argv[first]);
			return KHPROF_EXIT_USAGE;
		}
		first++;
	}
	if (first >= argc) {
		usage(stderr);
		return KHPROF_EXIT_USAGE;
	}
	cmd = find_command(argv[first]);
	if (!cmd)
		return unknown_command(argv[first]);
	privileges__give_files_to_sudo_user();
	if (!cmd->run)
		return run_help(argc - first, argv + first);
	if (cmd->needs_root && !wants_help(argc - first, argv + first) && !privileged()) {
		log__error("cannot %s: permission denied (run as root or grant "
			   "CAP_BPF and CAP_PERFMON)", cmd->name);
		return KHPROF_EXIT_FAILURE;
	}
	return cmd->run(argc - first, argv + first);
}
