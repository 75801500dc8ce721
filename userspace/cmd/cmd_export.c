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
#include "fileio.h"
#include "json.h"
#include "log.h"
#include "openmetrics.h"

static const char export_usage[] =
	"usage: khprof export [--format openmetrics|prometheus] [-o PATH] RECORD...\n"
	"\n"
	"Sums the records' stage times and calls, span-length histograms, input,\n"
	"sessions by status, CPU, peak RSS and khprof's own counts into metric\n"
	"families (docs/FLEET.md) and prints them, or writes them to PATH\n"
	"atomically (temporary file, rename), as the node exporter's textfile\n"
	"collector needs.  Identities become khprof_run_info series (at most 8\n"
	"distinct ones; run ids are left out).  Exit code 2 for a bad command\n"
	"line or a record that cannot be read.\n"
	"\n"
	"   --format openmetrics OpenMetrics 1.0 text (default; what a Pushgateway\n"
	"                        and Prometheus scrapes take)\n"
	"   --format prometheus  Prometheus text format 0.0.4 (the textfile collector,\n"
	"                        promtool check metrics)\n"
	"   -o PATH              write to PATH instead of standard output\n"
	"\n"
	"examples:\n"
	"   khprof export profile.json\n"
	"   khprof export --format prometheus -o /var/lib/node_exporter/khprof.prom runs/*.json\n"
	"   khprof export profile.json | curl --data-binary @- \\\n"
	"       http://pushgateway:9091/metrics/job/scan\n";

int cmd_export(int argc, char **argv)
{
	static const struct option options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	enum om_format format = OM_FORMAT_OPENMETRICS;
	struct om_counters counters = { 0 };
	struct om_info_set info = { 0 };
	const char *output = NULL;
	char problem[256], *text;
	int c, code = KHPROF_EXIT_OK;

	if (wants_help(argc, argv)) {
		fputs(export_usage, stdout);
		return KHPROF_EXIT_OK;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:o:", options, NULL)) != -1) {
		if (c == 'o') {
			output = optarg;
		} else if (c == 'f' && strcmp(optarg, "openmetrics") == 0) {
			format = OM_FORMAT_OPENMETRICS;
		} else if (c == 'f' && strcmp(optarg, "prometheus") == 0) {
			format = OM_FORMAT_PROMETHEUS;
		} else if (c == 'f') {
			log__error("unknown format '%s' (openmetrics or prometheus)", optarg);
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
	text = code ? NULL : om__render(&counters, &info, NULL, format);
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
