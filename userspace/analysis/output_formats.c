// SPDX-License-Identifier: MIT
/*
 * The table of output formats (output_formats.h) and the small adapters
 * that give each writer the table's signature.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "diff_stacks.h"
#include "html.h"
#include "json.h"
#include "latency_text.h"
#include "log.h"
#include "openmetrics.h"
#include "output_formats.h"
#include "outbuf.h"
#include "pprof.h"
#include "record.h"
#include "spread.h"
#include "stacks.h"
#include "text.h"
#include "trace_event.h"

/* A text writer's string as the table's bytes (its terminating NUL not counted). */
static unsigned char *text_bytes(char *s, size_t *len)
{
	if (s)
		*len = strlen(s);
	return (unsigned char *)s;
}

#define TEXT_WRITER(name, render)                                                  \
	static unsigned char *name(const struct kh_profile *p, size_t *len)       \
	{                                                                           \
		return text_bytes(render(p), len);                                  \
	}

TEXT_WRITER(record_text, profile__render_report)
TEXT_WRITER(record_seed, profile__render_text)
TEXT_WRITER(record_json, profile__to_json)
TEXT_WRITER(record_html, profile__render_html)
TEXT_WRITER(record_perfetto, profile__to_trace_events)

/* Folded stacks of a record made with --sample. */
static unsigned char *record_folded(const struct kh_profile *p, size_t *len)
{
	struct outbuf out;

	outbuf__init(&out);
	kh_stacks__folded(&p->ext.stacks, &out);
	return text_bytes(outbuf__finish(&out), len);
}

/* The table 'record --repeat' printed, under a line naming the directory. */
static char *runs_text(const struct format_runs *r)
{
	char *spread = r->count ? runs__render_spread(r->runs, r->count) : NULL, *text = NULL;

	if (spread && asprintf(&text, "%zu run%s in '%s':\n%s", r->count,
			       r->count == 1 ? "" : "s", r->dir, spread) < 0)
		text = NULL;
	free(spread);
	return text;
}

static char *runs_html(const struct format_runs *r)
{
	return runs__render_html(r->runs, r->names, r->count);
}

/*
 * The text table, then the per-stage top functions when both sides have
 * samples; nothing when the sides are not comparable (the messages say why).
 */
static char *diff_text(const struct kh_diff *d, const struct kh_diff_side *base,
		       const struct kh_diff_side *cand)
{
	char *table, *fns, *both = NULL;

	if (d->verdict == KH_DIFF_VERDICT_NOT_COMPARABLE)
		return strdup("");
	table = diff__render_text(d);
	fns = table ? diff__render_stack_functions(base, cand) : NULL;
	if (fns && asprintf(&both, "%s%s", table, fns) < 0)
		both = NULL;
	free(table);
	free(fns);
	return both;
}

static char *diff_markdown(const struct kh_diff *d, const struct kh_diff_side *base,
			   const struct kh_diff_side *cand)
{
	(void)base;
	(void)cand;
	if (d->verdict == KH_DIFF_VERDICT_NOT_COMPARABLE)
		return strdup("");
	return diff__render_markdown(d);
}

/* JSON and HTML always carry the verdict, also when not comparable. */
static char *diff_json(const struct kh_diff *d, const struct kh_diff_side *base,
		       const struct kh_diff_side *cand)
{
	(void)base;
	(void)cand;
	return diff__to_json(d);
}

static char *diff_html(const struct kh_diff *d, const struct kh_diff_side *base,
		       const struct kh_diff_side *cand)
{
	(void)base;
	(void)cand;
	return diff__render_html(d);
}

/* Each command's rows in the order its usage line and --help list them. */
static const struct output_format formats[] = {
	{ .command = FORMAT_REPORT, .name = "text", .of_record = record_text,
	  .flags = FORMAT_DEFAULT,
	  .writes = "the seed's report for the record, exactly, then\n"
		    "khprof's tables of per-stage latency percentiles and\n"
		    "on-CPU/off-CPU time (default)" },
	{ .command = FORMAT_REPORT, .name = "seed", .of_record = record_seed,
	  .writes = "the seed's report alone (for byte comparisons)" },
	{ .command = FORMAT_REPORT, .name = "json", .of_record = record_json,
	  .writes = "the record re-serialised" },
	{ .command = FORMAT_REPORT, .name = "html", .of_record = record_html,
	  .writes = "a self-contained page (charts inline, nothing loaded\n"
		    "from the network) to open in a browser or print" },
	{ .command = FORMAT_REPORT, .name = "perfetto", .of_record = record_perfetto,
	  .writes = "Chrome trace-event JSON for ui.perfetto.dev or\n"
		    "chrome://tracing (docs/REPORTS.md)" },
	{ .command = FORMAT_REPORT, .name = "folded", .of_record = record_folded,
	  .flags = FORMAT_NEEDS_STACKS, .what = "folded stacks",
	  .writes = "the stack samples of a record made with --sample, one\n"
		    "line per distinct stack, 'STAGE;outermost;...;innermost\n"
		    "COUNT' ((no stage) outside every span), for\n"
		    "flamegraph.pl, inferno or speedscope" },
	{ .command = FORMAT_REPORT, .name = "pprof", .of_record = profile__to_pprof,
	  .flags = FORMAT_NEEDS_STACKS | FORMAT_BINARY, .what = "a pprof profile",
	  .writes = "the same samples as a gzip'd pprof profile with 'stage'\n"
		    "and 'attribution' labels, for go tool pprof, Pyroscope\n"
		    "or Parca (docs/SAMPLING.md)" },

	{ .command = FORMAT_REPORT_DIR, .name = "text", .of_runs = runs_text,
	  .flags = FORMAT_DEFAULT | FORMAT_NUMBERED_RUNS,
	  .writes = "the table the series printed: how much its runs varied\n"
		    "(median, min, max and MAD of wall time, throughput,\n"
		    "peak RSS and each stage; default)" },
	{ .command = FORMAT_REPORT_DIR, .name = "html", .of_runs = runs_html,
	  .writes = "one page: each stage and the wall time as a trend over\n"
		    "the runs (every *.json) in name order, and their spread" },

	{ .command = FORMAT_DIFF, .name = "text", .of_diff = diff_text, .flags = FORMAT_DEFAULT,
	  .writes = "the verdict, then the items that changed (default)" },
	{ .command = FORMAT_DIFF, .name = "markdown", .of_diff = diff_markdown,
	  .writes = "the same as a PR comment" },
	{ .command = FORMAT_DIFF, .name = "json", .of_diff = diff_json,
	  .writes = "every item, the intervals' bounds included" },
	{ .command = FORMAT_DIFF, .name = "html", .of_diff = diff_html,
	  .writes = "a self-contained page (docs/REPORTS.md)" },

	/*
	 * Prometheus text by default: what the tools a push or a file goes to
	 * read (Pushgateway 1.5 and promtool 2.42 reject OpenMetrics' info
	 * type with HTTP 400).  A live scrape negotiates instead (--serve).
	 */
	{ .command = FORMAT_EXPORT, .name = "prometheus", .metrics = OM_FORMAT_PROMETHEUS,
	  .flags = FORMAT_DEFAULT,
	  .writes = "Prometheus text format 0.0.4 (default): what a\n"
		    "Pushgateway, the node exporter's textfile collector\n"
		    "and 'promtool check metrics' read; the identity is a\n"
		    "khprof_run_info gauge of value 1" },
	{ .command = FORMAT_EXPORT, .name = "openmetrics", .metrics = OM_FORMAT_OPENMETRICS,
	  .writes = "OpenMetrics 1.0 text (# UNIT, an info family, # EOF),\n"
		    "for readers of OpenMetrics; Debian 12's Pushgateway 1.5\n"
		    "and promtool 2.42 refuse it (unknown metric type info)" },
};

#define FORMAT_COUNT (sizeof(formats) / sizeof(formats[0]))

const struct output_format *output_format__find(enum format_command c, const char *name)
{
	for (size_t i = 0; i < FORMAT_COUNT; i++)
		if (formats[i].command == c && strcmp(formats[i].name, name) == 0)
			return &formats[i];
	return NULL;
}

const struct output_format *output_format__default(enum format_command c)
{
	for (size_t i = 0; i < FORMAT_COUNT; i++)
		if (formats[i].command == c && (formats[i].flags & FORMAT_DEFAULT))
			return &formats[i];
	return NULL;
}

const struct output_format *output_format__pick(enum format_command c, const char *name)
{
	/* The command whose --help lists the formats, for the error's pointer. */
	static const char *const command_names[FORMAT_COMMANDS] = {
		[FORMAT_REPORT] = "report", [FORMAT_REPORT_DIR] = "report",
		[FORMAT_DIFF] = "diff", [FORMAT_EXPORT] = "export",
	};
	const struct output_format *f = output_format__find(c, name);
	char names[256];

	if (!f) {
		output_format__names(c, ", ", " or ", names, sizeof(names));
		log__error("unknown format '%s' (%s) (see 'khprof %s --help')", name, names,
			   command_names[c]);
	}
	return f;
}

void output_format__names(enum format_command c, const char *sep, const char *last, char *out,
			  size_t len)
{
	size_t n = 0, count = 0, used = 0;

	for (size_t i = 0; i < FORMAT_COUNT; i++)
		count += formats[i].command == c;
	if (len)
		out[0] = '\0';
	for (size_t i = 0; i < FORMAT_COUNT && used < len; i++) {
		if (formats[i].command != c)
			continue;
		used += (size_t)snprintf(out + used, len - used, "%s%s",
					 n == 0 ? "" : n + 1 == count ? last : sep, formats[i].name);
		n++;
	}
}

void output_format__print_help(FILE *out, enum format_command c, int column)
{
	for (size_t i = 0; i < FORMAT_COUNT; i++) {
		const char *line = formats[i].writes, *end;

		if (formats[i].command != c)
			continue;
		/* "   --format " is 12 columns; the name is padded to the column. */
		fprintf(out, "   --format %-*s ", column - 13, formats[i].name);
		for (bool first = true; *line; first = false) {
			end = strchr(line, '\n');
			end = end ? end : line + strlen(line);
			fprintf(out, "%*s%.*s\n", first ? 0 : column, "", (int)(end - line), line);
			line = *end ? end + 1 : end;
		}
	}
}
