// SPDX-License-Identifier: MIT
/* khprof report PATH|DIR: prints a record or a series of runs; needs no privileges. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "html.h"
#include "json.h"
#include "latency_text.h"
#include "log.h"
#include "notes.h"
#include "pprof.h"
#include "text.h"
#include "trace_event.h"
#include "record.h"
#include "spread.h"
#include "stacks.h"

static const char report_usage[] =
	"usage: khprof report [PATH] [--format text|seed|json|html|perfetto|folded|pprof]\n"
	"       khprof report DIR [--format text|html]\n"
	"\n"
	"Without PATH, reads khprof.json in the current directory: the record\n"
	"'khprof record' writes there without -o (as 'perf report' reads perf.data).\n"
	"Reads a keyhog-profile-v1 record and prints it: text is exactly the seed's\n"
	"report for that record, then khprof's tables of per-stage latency\n"
	"percentiles and on-CPU/off-CPU time; seed is the seed's report alone (for\n"
	"byte comparisons); json is the record re-serialised; html is a\n"
	"self-contained page (charts inline, nothing loaded from the network) to\n"
	"open in a browser or print; perfetto is Chrome trace-event JSON for\n"
	"ui.perfetto.dev or chrome://tracing (docs/REPORTS.md); folded is the stack\n"
	"samples of a record made with --sample, one line per distinct stack,\n"
	"'STAGE;outermost;...;innermost COUNT' ((no stage) outside every span), for\n"
	"flamegraph.pl, inferno or speedscope; pprof is the same samples as a gzip'd\n"
	"pprof profile with 'stage' and 'attribution' labels, for go tool pprof,\n"
	"Pyroscope or Parca (docs/SAMPLING.md).  Notes (a profile that started or\n"
	"ended mid-session, dropped counts) go to stderr.\n"
	"\n"
	"DIR, a directory written by 'khprof record --repeat N -o DIR', prints the\n"
	"table the series printed: how much its runs varied (median, min, max and\n"
	"MAD of wall time, throughput, peak RSS and each stage).  With --format\n"
	"html it is one page instead: each stage and the wall time as a trend over\n"
	"the runs in name order, and their spread.  Each run is a record of its\n"
	"own: 'khprof report DIR/run-001.json'.\n"
	"\n"
	"Exit code 2 for a bad command line or a record that cannot be read, is\n"
	"malformed or has a schema other than keyhog-profile-v1 (a newer khprof's).\n"
	"\n"
	"examples:\n"
	"   khprof report                      # khprof.json, after 'khprof record -- CMD'\n"
	"   khprof report build/demo-profile.json\n"
	"   khprof report profile.json --format json\n"
	"   khprof report profile.json --format html > report.html\n"
	"   khprof report profile.json --format perfetto > run.json\n"
	"   khprof report profile.json --format folded | flamegraph.pl > stages.svg\n"
	"   khprof report profile.json --format pprof > profile.pb.gz\n"
	"   khprof report runs/\n"
	"   khprof report runs/ --format html > trend.html\n";

/*
 * Folded stacks of a record made with --sample; a record without samples
 * has none to print, and says so (an empty output would read as "no CPU").
 */
static char *render_folded(const struct kh_profile *p)
{
	struct outbuf out;

	outbuf__init(&out);
	kh_stacks__folded(&p->ext.stacks, &out);
	return outbuf__finish(&out);
}

/*
 * The gzip'd pprof profile on stdout; not onto a terminal, which binary
 * would garble.  A KHPROF_EXIT_* code; frees p.
 */
static int report_pprof(const char *path, struct kh_profile *p)
{
	size_t len = 0;
	unsigned char *data;
	int rc = KHPROF_EXIT_OK;

	if (isatty(STDOUT_FILENO)) {
		log__error("cannot print '%s' as a pprof profile onto a terminal: it is gzip'd "
			   "protobuf (redirect it: > profile.pb.gz)", path);
		profile__free(p);
		return KHPROF_EXIT_USAGE;
	}
	data = profile__to_pprof(p, &len);
	if (!data) {
		log__error("cannot make a pprof profile of '%s': %s", path, strerror(errno));
		rc = KHPROF_EXIT_FAILURE;
	} else if (fwrite(data, 1, len, stdout) != len || fflush(stdout)) {
		log__error("cannot write the pprof profile of '%s': %s", path, strerror(errno));
		rc = KHPROF_EXIT_FAILURE;
	}
	free(data);
	profile__free(p);
	return rc;
}

/* As the shell's "*.json": no hidden files (atomic writes' temporaries). */
static int is_record_name(const struct dirent *e)
{
	size_t n = strlen(e->d_name);

	return e->d_name[0] != '.' && n > 5 && !strcmp(e->d_name + n - 5, ".json");
}

/*
 * The runs of a directory (record --repeat) in name order, as one HTML page
 * of trends; a KHPROF_EXIT_* code.
 */
static int report_dir_html(const char *dir)
{
	struct dirent **entries = NULL;
	struct kh_profile *runs = NULL;
	char **names = NULL, problem[256];
	int n = scandir(dir, &entries, is_record_name, alphasort), count = 0;
	int rc = KHPROF_EXIT_OK;
	char *html = NULL;

	if (n < 0) {
		log__error("cannot read records in '%s': %s", dir, strerror(errno));
		return KHPROF_EXIT_BAD_INPUT;
	}
	runs = calloc(n ? n : 1, sizeof(*runs));
	names = calloc(n ? n : 1, sizeof(*names));
	if (!runs || !names) {
		log__error("cannot read records in '%s': out of memory", dir);
		rc = KHPROF_EXIT_FAILURE;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		struct stat st;

		if (asprintf(&names[count], "%s/%s", dir, entries[i]->d_name) < 0) {
			names[count] = NULL;
			log__error("cannot read records in '%s': out of memory", dir);
			rc = KHPROF_EXIT_FAILURE;
			goto out;
		}
		if (stat(names[count], &st) || !S_ISREG(st.st_mode)) {
			free(names[count]);
			continue;
		}
		if (profile__read_file(names[count], &runs[count], problem, sizeof(problem))) {
			log__error("cannot read record '%s': %s", names[count], problem);
			free(names[count]);
			rc = KHPROF_EXIT_BAD_INPUT;
			goto out;
		}
		count++;
	}
	if (!count) {
		log__error("cannot read records in '%s': no *.json record in the directory", dir);
		rc = KHPROF_EXIT_BAD_INPUT;
		goto out;
	}
	html = runs__render_html(runs, (const char *const *)names, count);
	if (!html) {
		log__error("cannot report on '%s': out of memory", dir);
		rc = KHPROF_EXIT_FAILURE;
		goto out;
	}
	fputs(html, stdout);
out:
	free(html);
	for (int i = 0; i < count; i++) {
		profile__free(&runs[i]);
		free(names[i]);
	}
	for (int i = 0; i < n; i++)
		free(entries[i]);
	free(entries);
	free(runs);
	free(names);
	return rc;
}

/* The spread of the runs in dir, on stdout; a KHPROF_EXIT_* code. */
static int report_runs(const char *dir)
{
	struct kh_profile *runs;
	size_t count, unreadable;
	char *text;
	int err;

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
	const char *format = "text", *path;
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
	while ((c = getopt_long(argc, argv, ":f:", options, NULL)) != -1) {
		if (c == 'f' && option_value_refused(argv, optind, optarg))
			return KHPROF_EXIT_USAGE;
		if (c == ':')
			return usage_error("report", "option '%s' needs a value", argv[optind - 1]);
		if (c != 'f')
			return usage_error("report", "unknown option '%s'", argv[optind - 1]);
		format = optarg;
	}
	if (strcmp(format, "text") && strcmp(format, "seed") && strcmp(format, "json") &&
	    strcmp(format, "html") && strcmp(format, "perfetto") && strcmp(format, "folded") &&
	    strcmp(format, "pprof")) {
		log__error("unknown format '%s' (text, seed, json, html, perfetto, folded or pprof)",
			   format);
		return KHPROF_EXIT_USAGE;
	}
	if (optind + 1 < argc)
		return usage_error("report", "unexpected argument '%s' (report takes one PATH)",
				   argv[optind + 1]);
	/* As `perf report` reads perf.data: the record `khprof record` wrote here. */
	path = optind < argc ? argv[optind] : KH_DEFAULT_RECORD;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (strcmp(format, "text") == 0)
			return report_runs(path);
		if (strcmp(format, "html") == 0)
			return report_dir_html(path);
		log__error("cannot print '%s' as %s: it is a directory of runs, printed as a "
			   "table or, with --format html, a page (report one run's record for %s)",
			   path, format, format);
		return KHPROF_EXIT_USAGE;
	}
	if (optind == argc && access(path, F_OK) != 0) {
		log__error("cannot read record '%s': %s (no PATH given: 'khprof record' writes "
			   KH_DEFAULT_RECORD " in the directory it runs in)", path, strerror(errno));
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (profile__read_file(path, &profile, problem, sizeof(problem)) != 0) {
		log__error("cannot read record '%s': %s", path, problem);
		return KHPROF_EXIT_BAD_INPUT;
	}
	if ((!strcmp(format, "folded") || !strcmp(format, "pprof")) &&
	    !profile.ext.stacks.present) {
		log__error("cannot print '%s' as %s: the record has no stack samples "
			   "(record it with --sample)", argv[optind],
			   strcmp(format, "folded") ? "a pprof profile" : "folded stacks");
		profile__free(&profile);
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (!strcmp(format, "pprof"))
		return report_pprof(argv[optind], &profile);
	if (strcmp(format, "json") == 0)
		rendered = profile__to_json(&profile);
	else if (strcmp(format, "html") == 0)
		rendered = profile__render_html(&profile);
	else if (strcmp(format, "perfetto") == 0)
		rendered = profile__to_trace_events(&profile);
	else if (strcmp(format, "seed") == 0)
		rendered = profile__render_text(&profile);
	else if (strcmp(format, "folded") == 0)
		rendered = render_folded(&profile);
	else
		rendered = profile__render_report(&profile);
	if (rendered) {
		fputs(rendered, stdout);
		free(rendered);
	}
	/*
	 * The notes go after the report, also when both streams go to one
	 * file or pipe: unflushed, the report came out after them, or cut
	 * where a 4 KiB buffer ended, so that a warning ran into its line.
	 */
	fflush(stdout);
	profile__print_notes(&profile);
	profile__free(&profile);
	return rendered ? KHPROF_EXIT_OK : KHPROF_EXIT_FAILURE;
}
