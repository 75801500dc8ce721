// SPDX-License-Identifier: MIT
/* khprof report PATH|DIR: prints a record or a series' spread; needs no privileges. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "json.h"
#include "log.h"
#include "text.h"
#include "record.h"
#include "spread.h"

static const char report_usage[] =
	"usage: khprof report PATH [--format text|json]\n"
	"       khprof report DIR\n"
	"\n"
	"Reads a keyhog-profile-v1 record and prints it: text is exactly the seed's\n"
	"report for that record; json is the record re-serialised.  Notes (a profile\n"
	"that started or ended mid-session, dropped counts) go to stderr.\n"
	"\n"
	"DIR, a directory written by 'khprof record --repeat N -o DIR', prints the\n"
	"table the series printed: how much its runs varied (median, min, max and\n"
	"MAD of wall time, throughput, peak RSS and each stage).  Each run is a\n"
	"record of its own: 'khprof report DIR/run-001.json'.\n"
	"\n"
	"Exit code 2 for a bad command line or a record that cannot be read or is\n"
	"malformed.\n"
	"\n"
	"examples:\n"
	"   khprof report build/demo-profile.json\n"
	"   khprof report profile.json --format json\n"
	"   khprof report runs/\n";

/* The spread of the runs in dir, on stdout; a KHPROF_EXIT_* code. */
static int report_runs(const char *dir, const char *format)
{
	struct kh_profile *runs;
	size_t count, unreadable;
	char *text;
	int err;

	if (strcmp(format, "text") != 0) {
		log__error("cannot print '%s' as %s: it is a directory of runs, printed as a "
			   "table (report one run's record for JSON)", dir, format);
		return KHPROF_EXIT_USAGE;
	}
	err = read_repeat_runs(dir, &runs, &count, &unreadable);
	if (err == -ENOENT) {
		log__error("cannot read runs in '%s': no run-NNN.json written by 'khprof record "
			   "--repeat' in the directory", dir);
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (err) {
		log__error("cannot read runs in '%s': %s", dir, strerror(-err));
		return err == -ENOMEM ? KHPROF_EXIT_FAILURE : KHPROF_EXIT_BAD_INPUT;
	}
	text = count ? runs__render_spread(runs, count) : NULL;
	if (text) {
		printf("%zu run%s in '%s':\n", count, count == 1 ? "" : "s", dir);
		fputs(text, stdout);
	}
	free(text);
	for (size_t i = 0; i < count; i++)
		profile__free(&runs[i]);
	free(runs);
	if (unreadable)
		return KHPROF_EXIT_BAD_INPUT; /* each was named on stderr */
	return text ? KHPROF_EXIT_OK : KHPROF_EXIT_FAILURE;
}

int cmd_report(int argc, char **argv)
{
	static const struct option options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = "text";
	struct kh_profile profile;
	char problem[256], *rendered;
	struct stat st;
	int c;

	if (wants_help(argc, argv)) {
		fputs(report_usage, stdout);
		return KHPROF_EXIT_OK;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:", options, NULL)) != -1) {
		if (c == 'f' && option_value_refused(argv, optind, optarg))
			return KHPROF_EXIT_USAGE;
		if (c != 'f') {
			log__error("unknown option '%s'", argv[optind - 1]);
			fputs(report_usage, stderr);
			return KHPROF_EXIT_USAGE;
		}
		format = optarg;
	}
	if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
		log__error("unknown format '%s' (text or json)", format);
		return KHPROF_EXIT_USAGE;
	}
	if (optind + 1 != argc) {
		fputs(report_usage, stderr);
		return KHPROF_EXIT_USAGE;
	}
	if (stat(argv[optind], &st) == 0 && S_ISDIR(st.st_mode))
		return report_runs(argv[optind], format);
	if (profile__read_file(argv[optind], &profile, problem, sizeof(problem)) != 0) {
		log__error("cannot read record '%s': %s", argv[optind], problem);
		return KHPROF_EXIT_BAD_INPUT;
	}
	rendered = strcmp(format, "json") == 0 ? profile__to_json(&profile)
					       : profile__render_text(&profile);
	if (rendered) {
		fputs(rendered, stdout);
		free(rendered);
	}
	print_profile_notes(&profile);
	profile__free(&profile);
	return rendered ? KHPROF_EXIT_OK : KHPROF_EXIT_FAILURE;
}
