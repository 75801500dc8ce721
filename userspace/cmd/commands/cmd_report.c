// SPDX-License-Identifier: MIT
/* khprof report PATH|DIR: prints a record or a series of runs; needs no privileges. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "exit_codes.h"
#include "json.h"
#include "log.h"
#include "notes.h"
#include "output_formats.h"
#include "record.h"
#include "record_dir.h"

static const char report_about[] =
	"\n"
	"Without PATH, reads khprof.json in the current directory: the record\n"
	"'khprof record' writes there without -o (as 'perf report' reads perf.data).\n"
	"Reads a keyhog-profile-v1 record and prints it in one of these formats;\n"
	"notes (a profile that started or ended mid-session, dropped counts) go to\n"
	"stderr:\n"
	"\n";

static const char report_dir_about[] =
	"\n"
	"DIR, a directory written by 'khprof record --repeat N -o DIR', prints how\n"
	"much its runs varied, or one page of them.  Each run is a record of its\n"
	"own: 'khprof report DIR/run-001.json'.\n"
	"\n";

static const char report_end[] =
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

/* The usage lines and the format lists come from the table of formats. */
static void report_usage(void)
{
	char names[128], dir_names[128];

	output_format__names(FORMAT_REPORT, "|", "|", names, sizeof(names));
	output_format__names(FORMAT_REPORT_DIR, "|", "|", dir_names, sizeof(dir_names));
	printf("usage: khprof report [PATH] [--format %s]\n"
	       "       khprof report DIR [--format %s]\n", names, dir_names);
	fputs(report_about, stdout);
	output_format__print_help(stdout, FORMAT_REPORT, 24);
	fputs(report_dir_about, stdout);
	output_format__print_help(stdout, FORMAT_REPORT_DIR, 24);
	fputs(report_end, stdout);
}

/*
 * A binary format on stdout; not onto a terminal, which binary would
 * garble.  A KHPROF_EXIT_* code.
 */
static int report_binary(const char *path, const struct kh_profile *p,
			 const struct output_format *f)
{
	size_t len = 0;
	unsigned char *data;
	int rc = KHPROF_EXIT_OK;

	if (isatty(STDOUT_FILENO)) {
		log__error("cannot print '%s' as %s onto a terminal: it is gzip'd "
			   "protobuf (redirect it: > profile.pb.gz)", path, f->what);
		return KHPROF_EXIT_USAGE;
	}
	data = f->of_record(p, &len);
	if (!data) {
		log__error("cannot make %s of '%s': %s", f->what, path, strerror(errno));
		rc = KHPROF_EXIT_FAILURE;
	} else if (fwrite(data, 1, len, stdout) != len || fflush(stdout)) {
		log__error("cannot write %s of '%s': %s", f->what, path, strerror(errno));
		rc = KHPROF_EXIT_FAILURE;
	}
	free(data);
	return rc;
}

/* The records of a directory, as read for report DIR. */
struct dir_runs {
	struct kh_profile *runs;
	size_t count;
	char **paths;      /* every *.json (NULL: the numbered runs were read) */
	size_t listed;
	size_t unreadable; /* numbered runs that could not be read, each named */
};

/* Every *.json of dir, read in name order; a KHPROF_EXIT_* code. */
static int read_dir_records(const char *dir, struct dir_runs *d)
{
	char problem[256];
	int err = record_dir__list(dir, &d->paths, &d->listed);

	if (err) {
		log__error("cannot read records in '%s': %s", dir, strerror(-err));
		return err == -ENOMEM ? KHPROF_EXIT_FAILURE : KHPROF_EXIT_BAD_INPUT;
	}
	d->runs = calloc(d->listed ? d->listed : 1, sizeof(*d->runs));
	if (!d->runs) {
		log__error("cannot read records in '%s': out of memory", dir);
		return KHPROF_EXIT_FAILURE;
	}
	if (!d->listed) {
		log__error("cannot read records in '%s': no *.json record in the directory", dir);
		return KHPROF_EXIT_BAD_INPUT;
	}
	for (; d->count < d->listed; d->count++) {
		const char *path = d->paths[d->count];

		if (profile__read_file(path, &d->runs[d->count], problem, sizeof(problem))) {
			log__error("cannot read record '%s': %s", path, problem);
			return KHPROF_EXIT_BAD_INPUT;
		}
	}
	return KHPROF_EXIT_OK;
}

/* The runs record --repeat wrote in dir, in run order; a KHPROF_EXIT_* code. */
static int read_numbered_runs(const char *dir, struct dir_runs *d)
{
	int err = record_dir__read_runs(dir, &d->runs, &d->count, &d->unreadable);

	if (err == -ENOENT) {
		log__error("cannot read runs in '%s': no run-NNN.json written by 'khprof record "
			   "--repeat' in the directory", dir);
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (err) {
		log__error("cannot read runs in '%s': %s", dir, strerror(-err));
		return err == -ENOMEM ? KHPROF_EXIT_FAILURE : KHPROF_EXIT_BAD_INPUT;
	}
	return KHPROF_EXIT_OK;
}

/* The runs of dir, a directory of records, as f; a KHPROF_EXIT_* code. */
static int report_dir(const char *dir, const struct output_format *f)
{
	struct dir_runs d = { 0 };
	char *text = NULL;
	int rc;

	if (f->flags & FORMAT_NUMBERED_RUNS)
		rc = read_numbered_runs(dir, &d);
	else
		rc = read_dir_records(dir, &d);
	if (rc == KHPROF_EXIT_OK) {
		const struct format_runs r = { dir, d.runs, (const char *const *)d.paths, d.count };

		text = f->of_runs(&r);
		if (!text && !(f->flags & FORMAT_NUMBERED_RUNS))
			log__error("cannot report on '%s': out of memory", dir);
		if (text)
			fputs(text, stdout);
		rc = text ? KHPROF_EXIT_OK : KHPROF_EXIT_FAILURE;
		if (d.unreadable)
			rc = KHPROF_EXIT_BAD_INPUT; /* each was named on stderr */
	}
	free(text);
	for (size_t i = 0; i < d.count; i++)
		profile__free(&d.runs[i]);
	free(d.runs);
	for (size_t i = 0; i < d.listed; i++)
		free(d.paths[i]);
	free(d.paths);
	return rc;
}

int cmd_report(int argc, char **argv)
{
	static const struct option options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	const struct output_format *f, *dir_format;
	const char *format = NULL, *path;
	struct kh_profile profile;
	char problem[256];
	unsigned char *rendered;
	size_t len = 0;
	struct stat st;
	int c;

	if (wants_help(argc, argv)) {
		report_usage();
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
	f = format ? output_format__pick(FORMAT_REPORT, format)
		   : output_format__default(FORMAT_REPORT);
	if (!f)
		return KHPROF_EXIT_USAGE;
	if (optind + 1 < argc)
		return usage_error("report", "unexpected argument '%s' (report takes one PATH)",
				   argv[optind + 1]);
	/* As `perf report` reads perf.data: the record `khprof record` wrote here. */
	path = optind < argc ? argv[optind] : KH_DEFAULT_RECORD;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		dir_format = format ? output_format__find(FORMAT_REPORT_DIR, f->name)
				    : output_format__default(FORMAT_REPORT_DIR);
		if (dir_format)
			return report_dir(path, dir_format);
		log__error("cannot print '%s' as %s: it is a directory of runs, printed as a "
			   "table or, with --format html, a page (report one run's record for %s)",
			   path, f->name, f->name);
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
	if ((f->flags & FORMAT_NEEDS_STACKS) && !profile.ext.stacks.present) {
		log__error("cannot print '%s' as %s: the record has no stack samples "
			   "(record it with --sample)", path, f->what);
		profile__free(&profile);
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (f->flags & FORMAT_BINARY) {
		c = report_binary(path, &profile, f);
		profile__free(&profile);
		return c;
	}
	rendered = f->of_record(&profile, &len);
	if (rendered) {
		fwrite(rendered, 1, len, stdout);
		free(rendered);
	}
	/*
	 * The notes go after the report, also when both streams go to one
	 * file or pipe: unflushed, the report came out after them, or cut
	 * where a 4 KiB buffer ended, so that a warning ran into its line.
	 */
	fflush(stdout);
	profile__print_notes(&profile, false);
	profile__free(&profile);
	return rendered ? KHPROF_EXIT_OK : KHPROF_EXIT_FAILURE;
}
