// SPDX-License-Identifier: MIT
/* khprof report PATH: prints a record; needs no privileges. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "html.h"
#include "json.h"
#include "log.h"
#include "text.h"
#include "trace_event.h"
#include "record.h"

static const char report_usage[] =
	"usage: khprof report PATH [--format text|json|html|perfetto]\n"
	"\n"
	"Reads a keyhog-profile-v1 record and prints it: text is exactly the seed's\n"
	"report for that record; json is the record re-serialised; html is a\n"
	"self-contained page (charts inline, nothing loaded from the network) to\n"
	"open in a browser or print; perfetto is Chrome trace-event JSON for\n"
	"ui.perfetto.dev or chrome://tracing (docs/REPORTS.md).  Notes (a profile\n"
	"that started or ended mid-session, dropped counts) go to stderr.  Exit code\n"
	"2 for a bad command line or a record that cannot be read or is malformed.\n"
	"\n"
	"examples:\n"
	"   khprof report build/demo-profile.json\n"
	"   khprof report profile.json --format json\n"
	"   khprof report profile.json --format html > report.html\n"
	"   khprof report profile.json --format perfetto > run.json\n";

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
	if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "html") &&
	    strcmp(format, "perfetto")) {
		log__error("unknown format '%s' (text, json, html or perfetto)", format);
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
	else if (strcmp(format, "html") == 0)
		rendered = profile__render_html(&profile);
	else if (strcmp(format, "perfetto") == 0)
		rendered = profile__to_trace_events(&profile);
	else
		rendered = profile__render_text(&profile);
	if (rendered) {
		fputs(rendered, stdout);
		free(rendered);
	}
	print_profile_notes(&profile);
	profile__free(&profile);
	return rendered ? KHPROF_EXIT_OK : KHPROF_EXIT_FAILURE;
}
