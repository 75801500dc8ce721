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
	"usage: khprof export [--format prometheus|openmetrics] [-o PATH] RECORD...\n"
	"\n"
	"Sums the records' stage times and calls, span-length histograms, input,\n"
	"sessions by status, CPU, peak RSS and khprof's own counts into metric\n"
	"families (docs/FLEET.md) and prints them, or writes them to PATH\n"
	"atomically (temporary file, rename), as the node exporter's textfile\n"
	"collector needs.  Identities become khprof_run_info series (at most 8\n"
	"distinct ones; run ids are left out).  Exit code 2 for a bad command\n"
	"line or a record that cannot be read.\n"
	"\n"
	"   --format prometheus  Prometheus text format 0.0.4 (default): what a\n"
	"                        Pushgateway, the node exporter's textfile collector\n"
	"                        and 'promtool check metrics' read; the identity is a\n"
	"                        khprof_run_info gauge of value 1\n"
	"   --format openmetrics OpenMetrics 1.0 text (# UNIT, an info family, # EOF),\n"
	"                        for readers of OpenMetrics; Debian 12's Pushgateway 1.5\n"
	"                        and promtool 2.42 refuse it (unknown metric type info)\n"
	"   -o PATH              write to PATH instead of standard output\n"
	"\n"
	"examples:\n"
	"   khprof export profile.json\n"
	"   khprof export --format prometheus -o /var/lib/node_exporter/khprof.prom runs/*.json\n"
	"   khprof export profile.json | curl --fail-with-body --data-binary @- \\\n"
	"       http://pushgateway:9091/metrics/job/scan    # fails the job on a refusal\n";

int cmd_export(int argc, char **argv)
{
	static const struct option options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	/*
	 * Prometheus text by default: what the tools a push or a file goes to
	 * read (Pushgateway 1.5 and promtool 2.42 reject OpenMetrics' info
	 * type with HTTP 400).  A live scrape negotiates instead (--serve).
	 */
	enum om_format format = OM_FORMAT_PROMETHEUS;
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
