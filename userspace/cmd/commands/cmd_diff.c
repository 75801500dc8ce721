// SPDX-License-Identifier: MIT
/*
 * khprof diff BASE CANDIDATE: gates CI on performance regressions between
 * two sets of records; needs no privileges.  Reading files and directories,
 * options, printing and exit codes live here; the comparison is diff.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "array.h"
#include "commands.h"
#include "diff.h"
#include "exit_codes.h"
#include "fileio.h"
#include "json.h"
#include "log.h"
#include "output_formats.h"
#include "record.h"
#include "record_dir.h"

/* After the usage lines, up to the format list. */
static const char diff_usage[] =
	"\n"
	"Compares the candidate's records with the baseline's and exits 1 when the\n"
	"data are confident that the candidate's code is slower by more than a\n"
	"threshold.  BASE and CANDIDATE are each a record or a directory of records\n"
	"(every *.json file directly in it, as written by 'khprof record --repeat N\n"
	"-o DIR').\n"
	"\n"
	"Items: wall time, throughput (input bytes per wall second; a drop is worse),\n"
	"peak RSS; per stage its elapsed time, calls and time per call and, from\n"
	"khprof.latency, its time on CPU (on_cpu, on_cpu_per_call), blocked (asleep,\n"
	"on a lock, a queue or the disk) and runnable (waiting for a CPU), its median\n"
	"and 99th-percentile span (p50, p99) and its decoded-attributed time\n"
	"(decoded); per macro state its wall and CPU time.  When both sides were\n"
	"recorded with --sample, the text ends with each stage's functions whose\n"
	"share of the stage's samples changed most (informative, never gating).\n"
	"\n"
	"What gates: the wall time, throughput, peak RSS, and one figure per stage:\n"
	"what its code spent, its time on CPU (on_cpu), or for a stage blocked a\n"
	"quarter of its time its time on CPU or blocked (own), from the runs whose\n"
	"off-CPU split of it is complete; where too few are (records without the\n"
	"split, a thread that left its CPU more often than khprof's log holds), its\n"
	"elapsed time.  Waiting for a CPU is the machine's: runnable rows say\n"
	"'machine', never 'regressed'.  The other items are judged but never fail\n"
	"('regressed*'): they say why a gating figure moved.\n"
	"\n"
	"Verdicts: one estimator per item.  The change is the Hodges-Lehmann shift\n"
	"(the median of every candidate-minus-base difference, as a percentage of\n"
	"the base's median) and the interval its Mann-Whitney confidence interval,\n"
	"so the change always lies inside it: 'regressed' when the whole interval\n"
	"lies beyond the item's threshold and 2 MADs of its runs (3 for the wall\n"
	"times) in the bad direction, 'improved' likewise in the good one, 'noisy'\n"
	"(never fails) when the shift is beyond the threshold but the interval is\n"
	"not sure of it, else 'ok'.  A time change smaller than --min-change-ms\n"
	"(peak RSS: 1 MiB) is never judged: 'ok (below floor)'.  Exactly the\n"
	"threshold does not count.  Runs starved of CPU (waiting for a CPU far\n"
	"longer than usual) are left out of the wall times, which are also divided\n"
	"by each run's wait for a CPU; a stage judged on elapsed time leaves out the\n"
	"runs in which it waited far longer; rows judged on such values are marked\n"
	"'†' and a footnote says how.\n"
	"Nothing is judged with fewer runs a side than an interval needs (4 at 95%),\n"
	"and an item with too few runs left is 'unjudged' (docs/CI.md).\n"
	"\n"
	"Records must be alike: binary_version, detector_digest, config_digest,\n"
	"source_kind, workload_class, backend_requested, backend_selected,\n"
	"cache_state, daemon_state, scanner_threads, reader_threads, logical_cpus and\n"
	"the tracing mode must agree between all records, on both sides, unless\n"
	"--allow-mismatch names the field.  Comparing two builds changes\n"
	"binary_version on purpose: allow it.\n"
	"\n"
	"   --threshold PCT          per-stage threshold in percent (default 5)\n"
	"   --threshold NAME=PCT     one item: a stage as the seed names it\n"
	"                            (hot-patterns), or wall (default 3), throughput\n"
	"                            (default 3), peak_rss (default 5), p50 (10),\n"
	"                            p99 (50), blocked (20), decoded (10),\n"
	"                            state_wall (5) or state_cpu (10); PCT 'off'\n"
	"                            shows the item without gating on it.  The two\n"
	"                            queue-wait stages are off unless named: waiting\n"
	"                            moves with scheduling, not with the work\n"
	"   --min-change-ms MS       smallest time change judged (default 0.1)\n"
	"   --allow-mismatch FIELD   an identity difference that is intended; a field\n"
	"                            above, mode, backends, threads or all; repeatable\n"
	"                            or a comma list\n"
	"   --confidence PCT         of the interval, 50 to 99.9 (default 95)\n"
	"   --config FILE            settings, one 'key value' a line: threshold,\n"
	"                            threshold.NAME, min_change_ms, confidence,\n"
	"                            allow_mismatch; flags win over the file\n"
	;

/* The rest of diff's help, after the format list. */
static const char diff_usage_end[] =
	"   --all                    text and markdown: every item, not only those that\n"
	"                            changed (JSON and HTML always have every item)\n"
	"\n"
	"The text leads with the verdict, then the items that changed, largest change\n"
	"first.  'regressed' fails the job; 'regressed*' is a regression in an item\n"
	"that does not gate.  An interval below -100% (a time cannot fall below 0)\n"
	"is shown as <-100%; the JSON has its bounds.\n"
	"\n"
	"Exit codes: 0 no regression, 1 regression, 2 bad command line or bad input\n"
	"(unreadable or malformed record or config file), 3 records not comparable,\n"
	"4 cannot judge (too few runs a side, or too few left once the runs starved\n"
	"of CPU are left out, and nothing judged regressed: record more, or rerun on\n"
	"a quieter runner; one line on stderr says which).\n"
	"\n"
	"examples:\n"
	"   khprof diff baseline.json candidate.json\n"
	"   khprof diff base-runs cand-runs --allow-mismatch binary_version\n"
	"   khprof diff base-runs cand-runs --threshold 10 --threshold wall=5 \\\n"
	"          --threshold entropy=off --format markdown > comment.md\n"
	"   khprof diff base-runs cand-runs --config perf-gate.conf --format json\n";

/* The usage lines and the format list come from the table of formats. */
static void print_usage(void)
{
	char names[128];

	output_format__names(FORMAT_DIFF, "|", "|", names, sizeof(names));
	printf("usage: khprof diff BASE CANDIDATE [--threshold [NAME=]PCT]...\n"
	       "           [--min-change-ms MS] [--allow-mismatch FIELD]... [--confidence PCT]\n"
	       "           [--config FILE] [--format %s] [--all]\n", names);
	fputs(diff_usage, stdout);
	output_format__print_help(stdout, FORMAT_DIFF, 28);
	fputs(diff_usage_end, stdout);
}

/* The records of one side, in file order. */
struct side {
	const char *path;
	struct kh_profile *records;
	char **names;
	size_t count, cap, names_cap;
};

static void side__free(struct side *s)
{
	for (size_t i = 0; i < s->count; i++) {
		profile__free(&s->records[i]);
		free(s->names[i]);
	}
	free(s->records);
	free(s->names);
	memset(s, 0, sizeof(*s));
}

/* Reads and parses one record into the side; a KHPROF_EXIT_* code. */
static int side__read_record(struct side *s, const char *path)
{
	char problem[256], *name;
	int err;

	if (array__reserve((void **)&s->records, &s->cap, s->count + 1, sizeof(*s->records)) ||
	    array__reserve((void **)&s->names, &s->names_cap, s->count + 1, sizeof(*s->names)))
		goto nomem;
	err = profile__read_file(path, &s->records[s->count], problem, sizeof(problem));
	if (err == -ENOMEM)
		goto nomem;
	if (err) {
		log__error("cannot read record '%s': %s", path, problem);
		return KHPROF_EXIT_BAD_INPUT;
	}
	name = strdup(path);
	if (!name) {
		profile__free(&s->records[s->count]);
		goto nomem;
	}
	s->names[s->count++] = name;
	return KHPROF_EXIT_OK;
nomem:
	log__error("cannot read record '%s': out of memory", path);
	return KHPROF_EXIT_FAILURE;
}

/* Reads a record, or every record of a directory; a KHPROF_EXIT_* code. */
static int side__read(struct side *s, const char *path)
{
	char **paths = NULL;
	size_t count = 0;
	struct stat st;
	int err, rc = KHPROF_EXIT_OK;

	memset(s, 0, sizeof(*s));
	s->path = path;
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return side__read_record(s, path);
	err = record_dir__list(path, &paths, &count);
	if (err) {
		log__error("cannot read records in '%s': %s", path, strerror(-err));
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (!count) {
		log__error("cannot read records in '%s': no *.json record in the directory", path);
		rc = KHPROF_EXIT_BAD_INPUT;
	}
	for (size_t i = 0; i < count; i++) {
		if (rc == KHPROF_EXIT_OK)
			rc = side__read_record(s, paths[i]);
		free(paths[i]);
	}
	free(paths);
	return rc;
}

static int read_config(const char *path, struct kh_diff_options *opts)
{
	char problem[512], *text;
	size_t len, line;
	int err = file__read_all(path, &text, &len);

	if (err) {
		log__error("cannot read config '%s': %s", path, strerror(-err));
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (strlen(text) != len) {
		free(text);
		log__error("bad config '%s': it holds a NUL byte", path);
		return KHPROF_EXIT_BAD_INPUT;
	}
	err = diff_config__parse(text, opts, &line, problem, sizeof(problem));
	free(text);
	if (err == -ENOMEM) {
		log__error("cannot read config '%s': out of memory", path);
		return KHPROF_EXIT_FAILURE;
	}
	if (err) {
		log__error("bad config '%s' line %zu: %s", path, line, problem);
		return KHPROF_EXIT_BAD_INPUT;
	}
	return KHPROF_EXIT_OK;
}

/* --threshold [NAME=]PCT as the config file's "threshold[.NAME] PCT". */
static int set_threshold_flag(struct kh_diff_options *opts, const char *arg, char *err,
			      size_t errlen)
{
	const char *eq = strchr(arg, '=');
	char *key;
	int rc;

	if (!eq)
		return diff_options__set(opts, "threshold", arg, err, errlen);
	if (asprintf(&key, "threshold.%.*s", (int)(eq - arg), arg) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = diff_options__set(opts, key, eq + 1, err, errlen);
	free(key);
	return rc;
}

static void print_messages(const struct kh_diff *d)
{
	char fields[256] = "";
	size_t used = 0;

	for (size_t i = 0; i < d->mismatch_count; i++) {
		const struct kh_diff_mismatch *m = &d->mismatches[i];

		if (m->allowed) {
			log__note("%s (allowed by --allow-mismatch)", m->message);
			continue;
		}
		log__error("error: %s", m->message);
		if (used < sizeof(fields))
			used += (size_t)snprintf(fields + used, sizeof(fields) - used, "%s%s",
						 used ? "," : "", diff_field__name(m->field));
	}
	if (d->blocking_count)
		log__error("cannot compare '%s' with '%s': their records differ in %zu identity "
			   "field%s (if that is intended, add --allow-mismatch %s)",
			   d->base.path, d->cand.path, d->blocking_count,
			   d->blocking_count == 1 ? "" : "s", fields);
	for (size_t i = 0; i < d->warning_count; i++)
		log__warn("%s", d->warnings[i].message);
	if (d->verdict == KH_DIFF_VERDICT_CANNOT_JUDGE) {
		char *reason = diff__cannot_reason(d);

		/* One line: why, and what a job can do about it. */
		log__warn("cannot judge: %s (%s, docs/CI.md)", reason ? reason : "out of memory",
			  d->cannot == KH_DIFF_STARVED ? "rerun on a less busy runner"
						       : "record 10 runs a side: 'khprof record "
							 "--repeat 10'");
		free(reason);
	}
	if (d->calls_changed_count)
		log__note("call counts differ in %zu stage%s: the runs did different amounts "
			  "of work", d->calls_changed_count,
			  d->calls_changed_count == 1 ? "" : "s");
}

static int exit_code(enum kh_diff_verdict verdict)
{
	switch (verdict) {
	case KH_DIFF_VERDICT_OK:
		return KHPROF_EXIT_OK;
	case KH_DIFF_VERDICT_REGRESSED:
		return KHPROF_EXIT_REGRESSION;
	case KH_DIFF_VERDICT_NOT_COMPARABLE:
		return KHPROF_EXIT_NOT_COMPARABLE;
	case KH_DIFF_VERDICT_CANNOT_JUDGE:
		return KHPROF_EXIT_CANNOT_JUDGE;
	}
	return KHPROF_EXIT_FAILURE;
}

/* Compares the two sides and prints the result; a KHPROF_EXIT_* code. */
static int diff_sides(const struct side *base, const struct side *cand,
		      const struct kh_diff_options *opts, const struct output_format *format)
{
	const struct kh_diff_side bs = { base->path, base->records,
					 (const char *const *)base->names, base->count };
	const struct kh_diff_side cs = { cand->path, cand->records,
					 (const char *const *)cand->names, cand->count };
	struct kh_diff d;
	char *out;
	int rc;

	rc = diff__compare(&bs, &cs, opts, &d);
	if (rc) {
		log__error("cannot compare '%s' with '%s': %s", base->path, cand->path,
			   strerror(-rc));
		return KHPROF_EXIT_FAILURE;
	}
	print_messages(&d);
	out = format->of_diff(&d, &bs, &cs);
	if (!out) {
		log__error("cannot compare '%s' with '%s': out of memory", base->path, cand->path);
		diff__free(&d);
		return KHPROF_EXIT_FAILURE;
	}
	fputs(out, stdout);
	free(out);
	rc = exit_code(d.verdict);
	diff__free(&d);
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option options[] = {
		{ "threshold", required_argument, NULL, 't' },
		{ "min-change-ms", required_argument, NULL, 'm' },
		{ "allow-mismatch", required_argument, NULL, 'a' },
		{ "confidence", required_argument, NULL, 'c' },
		{ "config", required_argument, NULL, 'C' },
		{ "format", required_argument, NULL, 'f' },
		{ "all", no_argument, NULL, 'A' },
		{ NULL, 0, NULL, 0 },
	};
	struct kh_diff_options opts, flags;
	const char *format = NULL, *config = NULL;
	const struct output_format *f;
	struct side base, cand;
	char problem[512];
	int c, rc;

	if (wants_help(argc, argv)) {
		print_usage();
		return KHPROF_EXIT_OK;
	}
	diff_options__init(&flags);
	optind = 1;
	opterr = 0;
	/* Leading ':' tells a missing value apart from an unknown option. */
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
		const char *key = NULL, *flag = NULL;

		/* `--config -- base/ cand/`: the value was forgotten. */
		if (c != ':' && c != '?' && optarg && option_value_refused(argv, optind, optarg))
			return KHPROF_EXIT_USAGE;
		switch (c) {
		case 't':
			if (set_threshold_flag(&flags, optarg, problem, sizeof(problem)))
				return usage_error("diff", "bad --threshold '%s': %s", optarg, problem);
			continue;
		case 'm':
			key = "min_change_ms";
			flag = "min-change-ms";
			break;
		case 'a':
			key = "allow_mismatch";
			flag = "allow-mismatch";
			break;
		case 'c':
			key = "confidence";
			flag = "confidence";
			break;
		case 'C':
			config = optarg;
			continue;
		case 'f':
			format = optarg;
			continue;
		case 'A':
			flags.all = true;
			continue;
		case ':':
			return usage_error("diff", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("diff", "unknown option '%s'", argv[optind - 1]);
		}
		if (diff_options__set(&flags, key, optarg, problem, sizeof(problem)))
			return usage_error("diff", "bad --%s '%s': %s", flag, optarg, problem);
	}
	f = format ? output_format__pick(FORMAT_DIFF, format) : output_format__default(FORMAT_DIFF);
	if (!f)
		return KHPROF_EXIT_USAGE;
	if (argc - optind != 2) {
		return usage_error("diff", "diff needs BASE and CANDIDATE, a record or a directory "
				   "of records each (got %d argument%s)", argc - optind,
				   argc - optind == 1 ? "" : "s");
	}

	diff_options__init(&opts);
	if (config && (rc = read_config(config, &opts)))
		return rc;
	/* Flags win over the file whatever their order on the command line. */
	diff_options__merge(&opts, &flags);

	rc = side__read(&base, argv[optind]);
	if (rc) {
		side__free(&base);
		return rc;
	}
	rc = side__read(&cand, argv[optind + 1]);
	if (!rc)
		rc = diff_sides(&base, &cand, &opts, f);
	side__free(&base);
	side__free(&cand);
	return rc;
}
