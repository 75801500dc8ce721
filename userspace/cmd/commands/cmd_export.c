// SPDX-License-Identifier: MIT
/*
 * khprof export RECORD...: the metric families of finished records, for
 * Prometheus's textfile collector or a Pushgateway; needs no privileges.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "exit_codes.h"
#include "fileio.h"
#include "json.h"
#include "log.h"
#include "openmetrics.h"
#include "output_formats.h"

static const char export_about[] =
	"\n"
	"Sums the records' stage times and calls, span-length histograms, input,\n"
	"sessions by status, CPU, peak RSS and khprof's own counts into metric\n"
	"families (docs/FLEET.md) and prints them, or writes them to PATH\n"
	"atomically (temporary file, rename), as the node exporter's textfile\n"
	"collector needs.  Identities become khprof_run_info series (at most 8\n"
	"distinct ones; run ids are left out).  Exit code 2 for a bad command\n"
	"line or a record that cannot be read.\n"
	"\n";

static const char export_end[] =
	"   -o PATH              write to PATH instead of standard output\n"
	"\n"
	"examples:\n"
	"   khprof export profile.json\n"
	"   khprof export --format prometheus -o /var/lib/node_exporter/khprof.prom runs/*.json\n"
	"   khprof export profile.json | curl --fail-with-body --data-binary @- \\\n"
	"       http://pushgateway:9091/metrics/job/scan    # fails the job on a refusal\n";

/* The usage line and the format list come from the table of formats. */
static void export_usage(void)
{
	char names[128];

	output_format__names(FORMAT_EXPORT, "|", "|", names, sizeof(names));
	printf("usage: khprof export [--format %s] [-o PATH] RECORD...\n", names);
	fputs(export_about, stdout);
	output_format__print_help(stdout, FORMAT_EXPORT, 24);
	fputs(export_end, stdout);
}

int cmd_export(int argc, char **argv)
{
	static const struct option options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	const struct output_format *format = output_format__default(FORMAT_EXPORT);
	struct om_counters counters = { 0 };
	struct om_info_set info = { 0 };
	const char *output = NULL;
	char problem[256], *text;
	int c, code = KHPROF_EXIT_OK;

	if (wants_help(argc, argv)) {
		export_usage();
		return KHPROF_EXIT_OK;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:o:", options, NULL)) != -1) {
		if (c == 'o') {
			output = optarg;
		} else if (c == 'f') {
			format = output_format__pick(FORMAT_EXPORT, optarg);
			if (!format)
				return KHPROF_EXIT_USAGE;
		} else {
			return usage_error("export", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		return usage_error("export", "export needs at least one record");
	}
	for (int i = optind; i < argc; i++) {
		struct kh_profile p;

		if (profile__read_file(argv[i], &p, problem, sizeof(problem)) != 0) {
			log__error("cannot read record '%s': %s", argv[i], problem);
			om_info_set__free(&info);
			return KHPROF_EXIT_BAD_INPUT;
		}
		om_counters__add_profile(&counters, &p);
		if (om_info_set__add(&info, &p) != 0)
			code = KHPROF_EXIT_FAILURE;
		profile__free(&p);
	}
	text = code ? NULL : om__render(&counters, &info, NULL, (enum om_format)format->metrics);
	om_info_set__free(&info);
	if (!text) {
		log__error("cannot export: out of memory");
		return KHPROF_EXIT_FAILURE;
	}
	if (output) {
		int err = file__write_atomic(output, text, strlen(text));

		if (err) {
			log__error("cannot write '%s': %s", output, strerror(-err));
			code = KHPROF_EXIT_FAILURE;
		}
	} else {
		fputs(text, stdout);
	}
	free(text);
	return code;
}
