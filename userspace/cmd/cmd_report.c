// SPDX-License-Identifier: MIT
/* khprof report PATH: prints a record; needs no privileges. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "json.h"
#include "latency_text.h"
#include "log.h"
#include "notes.h"
#include "text.h"
#include "record.h"

static const char report_usage[] =
	"usage: khprof report PATH [--format text|seed|json]\n"
	"\n"
	"Reads a keyhog-profile-v1 record and prints it: text is exactly the seed's\n"
	"report for that record, then khprof's tables of per-stage latency\n"
	"percentiles and on-CPU/off-CPU time; seed is the seed's report alone (for\n"
	"byte comparisons); json is the record re-serialised.  Notes (a profile\n"
	"that started or ended mid-session, dropped counts) go to stderr.  Exit code\n"
	"2 for a bad command line or a record that cannot be read or is malformed.\n"
	"\n"
	"examples:\n"
	"   khprof report build/demo-profile.json\n"
	"   khprof report profile.json --format json\n";

int cmd_report(int argc, char **argv)
{
	static const struct option options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	const char *format = "text";
	struct kh_profile profile;
	char problem[256], *rendered;
	int c;

	if (wants_help(argc, argv)) {
		fputs(report_usage, stdout);
		return KHPROF_EXIT_OK;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:", options, NULL)) != -1) {
		if (c != 'f') {
			log__error("unknown option '%s'", argv[optind - 1]);
			fputs(report_usage, stderr);
			return KHPROF_EXIT_USAGE;
		}
		format = optarg;
	}
	if (strcmp(format, "text") != 0 && strcmp(format, "seed") != 0 &&
	    strcmp(format, "json") != 0) {
		log__error("unknown format '%s' (text, seed or json)", format);
		return KHPROF_EXIT_USAGE;
	}
	if (optind + 1 != argc) {
		fputs(report_usage, stderr);
		return KHPROF_EXIT_USAGE;
	}
	if (profile__read_file(argv[optind], &profile, problem, sizeof(problem)) != 0) {
		log__error("cannot read record '%s': %s", argv[optind], problem);
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (strcmp(format, "json") == 0)
		rendered = profile__to_json(&profile);
	else if (strcmp(format, "seed") == 0)
		rendered = profile__render_text(&profile);
	else
		rendered = profile__render_report(&profile);
	if (rendered) {
		fputs(rendered, stdout);
		free(rendered);
	}
	profile__print_notes(&profile);
	profile__free(&profile);
	return rendered ? KHPROF_EXIT_OK : KHPROF_EXIT_FAILURE;
}
