// SPDX-License-Identifier: MIT
/* khprof diff BASE NEW: flags performance regressions; needs no privileges. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "diff.h"
#include "fileio.h"
#include "json.h"
#include "log.h"
#include "record.h"

static const char diff_usage[] =
	"usage: khprof diff BASE NEW [--threshold PCT] [--min-ms MS] [--format text|json]\n"
	"                            [--strict]\n"
	"\n"
	"Compares two keyhog-profile-v1 records, BASE (the baseline) and NEW, and\n"
	"flags a regression where the wall time, a macro state's time or a stage's\n"
	"time grew by more than PCT percent.  Entries below MS milliseconds on both\n"
	"sides are noise and never flagged.  A stage whose call count changed is\n"
	"shown (the runs did different work) but is not a regression by itself.\n"
	"\n"
	"Times compare honestly only between like runs: every difference in the\n"
	"identity fields that change cost (detector and config digests, source,\n"
	"workload, backends, cache, daemon, thread and CPU counts), in input bytes\n"
	"or units or in tracing mode, and every record that lost spans or covers\n"
	"only part of its session, is a warning on stderr.\n"
	"\n"
	"   --threshold PCT   increase in percent that regresses (default 10)\n"
	"   --min-ms MS       ignore entries below MS ms on both sides (default 1)\n"
	"   --format FORMAT   text (a table and a summary line; default) or json\n"
	"   --strict          identity or input differences are errors\n"
	"\n"
	"Exit codes: 0 no regression, 1 regression found, 2 usage error, 3 a record\n"
	"cannot be read or is malformed, 4 records not comparable (with --strict).\n"
	"\n"
	"examples:\n"
	"   khprof diff baseline.json new.json\n"
	"   khprof diff baseline.json new.json --threshold 5 --min-ms 2 --strict\n"
	"   khprof diff baseline.json new.json --format json > diff.json\n";

/*
 * A non-negative decimal such as "10" or "2.5" (a trailing '%' allowed
 * when percent): strtod alone would also take blanks, signs, hex, "inf"
 * and "nan", none of which a CI configuration means.
 */
static int parse_amount(const char *text, bool percent, double *out)
{
	char *end;

	if (!isdigit((unsigned char)text[0]) && text[0] != '.')
		return -EINVAL;
	if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
		return -EINVAL;
	errno = 0;
	*out = strtod(text, &end);
	if (percent && *end == '%')
		end++;
	if (end == text || *end || errno || !isfinite(*out))
		return -EINVAL;
	return 0;
}

/* Reads and parses one record; a KHPROF_EXIT_* code. */
static int read_record(const char *path, struct kh_profile *p)
{
	char problem[256], *text = NULL;
	size_t len;
	int err;

	err = file__read_all(path, &text, &len);
	if (err) {
		log__error("cannot read record '%s': %s", path, strerror(-err));
		return KHPROF_EXIT_BAD_INPUT;
	}
	err = profile__from_json(text, p, problem, sizeof(problem));
	free(text);
	if (err == -ENOMEM) {
		log__error("cannot read record '%s': out of memory", path);
		return KHPROF_EXIT_FAILURE;
	}
	if (err) {
		log__error("cannot read record '%s': %s", path, problem);
		return KHPROF_EXIT_BAD_INPUT;
	}
	return KHPROF_EXIT_OK;
}

static bool is_mismatch(const struct kh_diff_warning *w)
{
	return w->kind == KH_DIFF_WARN_IDENTITY || w->kind == KH_DIFF_WARN_INPUT;
}

static void print_warnings(const struct kh_diff *d, bool strict)
{
	for (size_t i = 0; i < d->warning_count; i++) {
		const struct kh_diff_warning *w = &d->warnings[i];

		if (strict && is_mismatch(w))
			log__error("%s", w->message);
		else
			log__warn("%s", w->message);
	}
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
	}
	return KHPROF_EXIT_FAILURE;
}

static int usage_error(void)
{
	fputs(diff_usage, stderr);
	return KHPROF_EXIT_USAGE;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option options[] = {
		{ "threshold", required_argument, NULL, 't' },
		{ "min-ms", required_argument, NULL, 'm' },
		{ "format", required_argument, NULL, 'f' },
		{ "strict", no_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct kh_diff_options opts;
	struct kh_profile base, new;
	const char *format = "text";
	struct kh_diff d;
	char *out;
	double ms;
	int c, rc;

	if (wants_help(argc, argv)) {
		fputs(diff_usage, stdout);
		return KHPROF_EXIT_OK;
	}
	diff_options__init(&opts);
	optind = 1;
	opterr = 0;
	/* Leading ':' tells a missing value apart from an unknown option. */
	while ((c = getopt_long(argc, argv, ":", options, NULL)) != -1) {
		switch (c) {
		case 't':
			if (parse_amount(optarg, true, &opts.threshold_pct)) {
				log__error("bad --threshold '%s': expected a percentage of 0 or "
					   "more (10 means 10%%)", optarg);
				return KHPROF_EXIT_USAGE;
			}
			break;
		case 'm':
			/* The bound keeps the nanosecond count inside 64 bits. */
			if (parse_amount(optarg, false, &ms) || ms > 1e12) {
				log__error("bad --min-ms '%s': expected milliseconds, 0 or more",
					   optarg);
				return KHPROF_EXIT_USAGE;
			}
			opts.min_ns = (uint64_t)llround(ms * 1e6);
			break;
		case 'f':
			format = optarg;
			break;
		case 's':
			opts.strict = true;
			break;
		case ':':
			log__error("option '%s' needs a value", argv[optind - 1]);
			return usage_error();
		default:
			log__error("unknown option '%s'", argv[optind - 1]);
			return usage_error();
		}
	}
	if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
		log__error("unknown format '%s' (text or json)", format);
		return KHPROF_EXIT_USAGE;
	}
	if (argc - optind != 2) {
		log__error("diff needs two records, BASE and NEW (got %d)", argc - optind);
		return usage_error();
	}
	opts.base_name = argv[optind];
	opts.new_name = argv[optind + 1];

	rc = read_record(opts.base_name, &base);
	if (rc)
		return rc;
	rc = read_record(opts.new_name, &new);
	if (rc) {
		profile__free(&base);
		return rc;
	}
	rc = diff__compare(&base, &new, &opts, &d);
	profile__free(&base);
	profile__free(&new);
	if (rc) {
		log__error("cannot compare '%s' with '%s': %s", opts.base_name, opts.new_name,
			   strerror(-rc));
		return KHPROF_EXIT_FAILURE;
	}

	print_warnings(&d, opts.strict);
	if (d.verdict == KH_DIFF_VERDICT_NOT_COMPARABLE)
		log__error("cannot compare '%s' with '%s': %zu identity or input difference%s "
			   "(compare records of like runs, or drop --strict)",
			   opts.base_name, opts.new_name, d.mismatch_count,
			   d.mismatch_count == 1 ? "" : "s");
	else if (d.calls_changed_count)
		log__note("call counts differ in %zu stage%s: the runs did different amounts "
			  "of work", d.calls_changed_count, d.calls_changed_count == 1 ? "" : "s");

	/* JSON always carries the verdict; the table means nothing when not comparable. */
	if (strcmp(format, "json") == 0)
		out = diff__to_json(&d, opts.base_name, opts.new_name);
	else if (d.verdict != KH_DIFF_VERDICT_NOT_COMPARABLE)
		out = diff__render_text(&d);
	else
		out = strdup("");
	if (!out) {
		log__error("cannot compare '%s' with '%s': out of memory", opts.base_name,
			   opts.new_name);
		diff__free(&d);
		return KHPROF_EXIT_FAILURE;
	}
	fputs(out, stdout);
	free(out);
	rc = exit_code(d.verdict);
	diff__free(&d);
	return rc;
}
