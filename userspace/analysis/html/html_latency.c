// SPDX-License-Identifier: MIT
/*
 * html_latency.c - the record page's latency section (khprof.latency): each
 * stage's span lengths as marks on a log scale, and each stage's time split
 * into on-CPU, runnable and blocked.  Nothing for a record without
 * distributions, so older records render as before.
 *
 * A log scale, because one stage's spans run from tens of nanoseconds (a
 * cache hit) to milliseconds (a read from disk), and a linear axis would
 * squash every p50 against 0.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "html.h"

#define CHART_W 960.0

/* On-CPU, runnable and blocked: a colour, a pattern and a word each. */
static const struct {
	const char *cls;
	const char *word;
	const char *colour;
	const char *pattern; /* NULL: solid */
} split_part[3] = {
	{ "split-on", "on-CPU", "#0072B2", NULL },
	{ "split-runnable", "runnable", "#E69F00", "url(#hatch)" },
	{ "split-blocked", "blocked", "#999999", "url(#dots)" },
};

/* Column heads: kh_dist_percentile_name spells p99.9 "p999", as the JSON does. */
static const char *const percentile_head[KH_DIST_PERCENTILES] = { "p50", "p90", "p99", "p99.9" };

static const char *stage_name(uint32_t st)
{
	const char *name = kh_stage__name(st);

	return name ? name : "?";
}

/* x of ns on the log axis [lo, hi] drawn over [x0, x0 + w]. */
static double log_x(double ns, double lo, double hi, double x0, double w)
{
	if (ns < lo)
		ns = lo;
	return x0 + w * (log10(ns) - log10(lo)) / (log10(hi) - log10(lo));
}

static void diamond(struct outbuf *b, double x, double y, double r, const char *cls)
{
	outbuf__printf(b, "<polygon class=\"%s\" points=\"%.2f,%.1f %.2f,%.1f %.2f,%.1f %.2f,%.1f\" "
			  "fill=\"#fff\" stroke=\"#1a1a1a\" stroke-width=\"1.4\"/>", cls, x, y - r,
		       x + r, y, x, y + r, x - r, y);
}

/* A stage's marks: whisker min..max, box p50..p99 with a bar at p50, ○ p90, ◆ p99.9. */
static void latency_row(struct outbuf *b, const struct kh_profile *p, uint32_t st, double y,
			double lo, double hi, double x0, double w)
{
	const struct kh_stage_dist *d = &p->ext.latency.stages[st];
	uint64_t q[KH_DIST_PERCENTILES];
	double xq[KH_DIST_PERCENTILES], xmin, xmax, mid = y + 11;
	const char *name = stage_name(st);

	for (int i = 0; i < KH_DIST_PERCENTILES; i++) {
		q[i] = kh_dist__percentile(d, kh_dist_permille[i], p->ext.span_bias_ns);
		xq[i] = log_x((double)q[i], lo, hi, x0, w);
	}
	xmin = log_x((double)d->min_ns, lo, hi, x0, w);
	xmax = log_x((double)d->max_ns, lo, hi, x0, w);
	outbuf__printf(b, "<g class=\"latency-row\" data-stage=\"%s\"><title>%s: %" PRIu64
			  " spans; min ", name, name, d->spans);
	html__duration(b, (double)d->min_ns);
	for (int i = 0; i < KH_DIST_PERCENTILES; i++) {
		outbuf__printf(b, ", %s ", percentile_head[i]);
		html__duration(b, (double)q[i]);
	}
	outbuf__puts(b, ", max ");
	html__duration(b, (double)d->max_ns);
	outbuf__printf(b, "</title><text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
		       x0 - 10, mid + 4, name);
	outbuf__printf(b, "<line class=\"whisker\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
			  "stroke=\"#333\"/>", xmin, mid, xmax, mid);
	for (int end = 0; end < 2; end++)
		outbuf__printf(b, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
				  "stroke=\"#333\"/>", end ? xmax : xmin, mid - 5, end ? xmax : xmin,
			       mid + 5);
	/* p50 to p99; at least 2 units wide so equal spans still show a box. */
	outbuf__printf(b, "<rect class=\"iqr\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"14\" "
			  "fill=\"%s\" fill-opacity=\".55\" stroke=\"#333\" stroke-width=\".8\"/>",
		       xq[0], mid - 7, xq[2] - xq[0] < 2 ? 2 : xq[2] - xq[0], html__stage_colour(st));
	outbuf__printf(b, "<line class=\"p50\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
			  "stroke=\"#1a1a1a\" stroke-width=\"3\"/>", xq[0], mid - 8, xq[0], mid + 8);
	outbuf__printf(b, "<circle class=\"p90\" cx=\"%.2f\" cy=\"%.1f\" r=\"3.5\" fill=\"#fff\" "
			  "stroke=\"#1a1a1a\" stroke-width=\"1.4\"/>", xq[1], mid);
	diamond(b, xq[3], mid, 4.5, "p999");
	/* The figures beside the marks: the median, the tail and the worst. */
	outbuf__printf(b, "<text x=\"%.0f\" y=\"%.1f\">p50 ", x0 + w + 14, mid + 4);
	html__duration(b, (double)q[0]);
	outbuf__puts(b, " · p99 ");
	html__duration(b, (double)q[2]);
	outbuf__puts(b, " · max ");
	html__duration(b, (double)d->max_ns);
	outbuf__puts(b, "</text></g>\n");
}

static void render__percentiles(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_latency *l = &p->ext.latency;
	const double x0 = 200, w = 430, row_h = 26, top = 8;
	double lo = 0, hi = 0, y;
	size_t rows = 0;

	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_dist *d = &l->stages[st];
		double dmin = d->min_ns ? (double)d->min_ns : 1;

		if (!d->present || !d->spans)
			continue;
		if (!rows || dmin < lo)
			lo = dmin;
		if (!rows || (double)d->max_ns > hi)
			hi = (double)d->max_ns;
		rows++;
	}
	if (!rows) {
		outbuf__puts(b, "<p>No stage had spans.</p>\n");
		return;
	}
	/* Whole decades, at least one. */
	lo = pow(10, floor(log10(lo)));
	hi = pow(10, ceil(log10(hi > lo ? hi : lo * 10)));
	if (hi <= lo)
		hi = lo * 10;
	outbuf__puts(b, "<p class=\"lead\">The length of one span of each stage, on a log scale "
			"(bias removed). Line: shortest to longest span. Box: p50 to p99, the bar "
			"at p50; ○ p90, ◆ p99.9. Percentiles are read from khprof's histograms, "
			"within 1.6 % of the exact value.</p>\n");
	outbuf__printf(b, "<svg id=\"latency-chart\" role=\"img\" aria-label=\"span length "
			  "percentiles per stage\" viewBox=\"0 0 %.0f %.0f\">", CHART_W,
		       top + rows * row_h + 28);
	y = top + rows * row_h + 4;
	/* A grid line and a label per decade. */
	for (double t = lo; t <= hi * 1.0001; t *= 10) {
		double x = log_x(t, lo, hi, x0, w);

		outbuf__printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" "
				  "y2=\"%.1f\"/><text class=\"muted\" x=\"%.1f\" y=\"%.1f\" "
				  "text-anchor=\"middle\">", x, top, x, y, x, y + 15);
		html__duration(b, t);
		outbuf__puts(b, "</text>");
	}
	outbuf__printf(b, "<line class=\"axis\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>",
		       x0, y, x0 + w, y);
	rows = 0;
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++)
		if (l->stages[st].present && l->stages[st].spans)
			latency_row(b, p, st, top + row_h * rows++, lo, hi, x0, w);
	outbuf__puts(b, "</svg>\n");

	outbuf__puts(b, "<table id=\"latency-table\"><thead><tr><th>stage</th><th>spans</th>"
			"<th>min</th>");
	for (int i = 0; i < KH_DIST_PERCENTILES; i++)
		outbuf__printf(b, "<th>%s</th>", percentile_head[i]);
	outbuf__puts(b, "<th>max</th></tr></thead><tbody>\n");
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_dist *d = &l->stages[st];

		if (!d->present)
			continue;
		outbuf__printf(b, "<tr><td>%s</td><td>%" PRIu64 "</td><td>", stage_name(st),
			       d->spans);
		html__duration(b, (double)d->min_ns);
		for (int i = 0; i < KH_DIST_PERCENTILES; i++) {
			outbuf__puts(b, "</td><td>");
			html__duration(b, (double)kh_dist__percentile(d, kh_dist_permille[i],
								      p->ext.span_bias_ns));
		}
		outbuf__puts(b, "</td><td>");
		html__duration(b, (double)d->max_ns);
		outbuf__puts(b, "</td></tr>\n");
	}
	outbuf__puts(b, "</tbody></table>\n");
}

/* The parts of a stage's elapsed time: on-CPU, runnable, blocked. */
static void split_of(const struct kh_profile *p, uint32_t st, uint64_t part[3], uint64_t *elapsed)
{
	const struct kh_stage_dist *d = &p->ext.latency.stages[st];
	const struct kh_stage_measurement *m = profile__find_stage(p, st);
	uint64_t off = d->off_cpu_ns, runnable = d->runnable_ns < off ? d->runnable_ns : off;

	*elapsed = m ? m->elapsed_ns : 0;
	/* Elapsed is bias-corrected and off-CPU is not: never let off exceed it. */
	if (off > *elapsed)
		off = *elapsed;
	if (runnable > off)
		runnable = off;
	part[0] = *elapsed - off;
	part[1] = runnable;
	part[2] = off - runnable;
}

static void split_legend(struct outbuf *b, double y)
{
	double x = 200;

	for (int i = 0; i < 3; i++) {
		outbuf__printf(b, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"14\" fill=\"%s\" "
				  "stroke=\"#333\" stroke-width=\".6\"/>", x, y, split_part[i].colour);
		if (split_part[i].pattern)
			outbuf__printf(b, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"14\" "
					  "fill=\"%s\"/>", x, y, split_part[i].pattern);
		outbuf__printf(b, "<text x=\"%.0f\" y=\"%.0f\">%s</text>", x + 20, y + 12,
			       split_part[i].word);
		x += 130;
	}
}

/* A bar per stage as shares of its elapsed time, the shares written beside. */
static void render__split_chart(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_latency *l = &p->ext.latency;
	const double x0 = 200, w = 300, row_h = 24, top = 30;
	size_t rows = 0;

	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++)
		rows += l->stages[st].present;
	outbuf__printf(b, "<svg id=\"cpu-split-chart\" role=\"img\" aria-label=\"on-CPU and "
			  "off-CPU time per stage\" viewBox=\"0 0 %.0f %.0f\">", CHART_W,
		       top + rows * row_h + 4);
	html__svg_defs(b);
	split_legend(b, 4);
	rows = 0;
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++) {
		uint64_t part[3], elapsed;
		double y = top + row_h * rows, x = x0;
		const char *name = stage_name(st);

		if (!l->stages[st].present)
			continue;
		rows++;
		split_of(p, st, part, &elapsed);
		outbuf__printf(b, "<g class=\"split-row\" data-stage=\"%s\"><title>%s: ", name,
			       name);
		html__duration(b, (double)elapsed);
		for (int i = 0; i < 3; i++) {
			outbuf__printf(b, "; %s ", split_part[i].word);
			html__duration(b, (double)part[i]);
		}
		outbuf__printf(b, "</title><text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
			       x0 - 10, y + 16, name);
		if (!elapsed) {
			outbuf__printf(b, "<text class=\"muted\" x=\"%.0f\" y=\"%.1f\">no elapsed "
					  "time</text></g>\n", x0, y + 16);
			continue;
		}
		for (int i = 0; i < 3; i++) {
			double sw = w * (double)part[i] / (double)elapsed;

			if (!part[i])
				continue;
			outbuf__printf(b, "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
					  "height=\"18\" fill=\"%s\" stroke=\"#333\" "
					  "stroke-width=\".6\"/>", split_part[i].cls, x, y + 3,
				       sw < 0.5 ? 0.5 : sw, split_part[i].colour);
			if (split_part[i].pattern)
				outbuf__printf(b, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
						  "height=\"18\" fill=\"%s\"/>", x, y + 3,
					       sw < 0.5 ? 0.5 : sw, split_part[i].pattern);
			x += sw;
		}
		outbuf__printf(b, "<text x=\"%.0f\" y=\"%.1f\">", x0 + w + 10, y + 16);
		for (int i = 0; i < 3; i++)
			outbuf__printf(b, "%s%s %.1f %%", i ? " · " : "", split_part[i].word,
				       100.0 * (double)part[i] / (double)elapsed);
		outbuf__printf(b, " of ");
		html__duration(b, (double)elapsed);
		outbuf__printf(b, "%s</text></g>\n", l->stages[st].offcpu_truncated ? " *" : "");
	}
	outbuf__puts(b, "</svg>\n");
}

static void render__split_table(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_latency *l = &p->ext.latency;
	uint64_t truncated = 0;

	outbuf__puts(b, "<table id=\"cpu-split-table\"><thead><tr><th>stage</th><th>elapsed</th>"
			"<th>on-CPU</th><th>off-CPU</th><th>runnable</th><th>blocked</th>"
			"<th>off-CPU share</th><th>spans with a lower bound</th></tr></thead>"
			"<tbody>\n");
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_dist *d = &l->stages[st];
		uint64_t part[3], elapsed;

		if (!d->present)
			continue;
		split_of(p, st, part, &elapsed);
		truncated += d->offcpu_truncated;
		outbuf__printf(b, "<tr><td>%s</td><td>", stage_name(st));
		html__duration(b, (double)elapsed);
		outbuf__puts(b, "</td><td>");
		html__duration(b, (double)part[0]);
		outbuf__puts(b, "</td><td>");
		html__duration(b, (double)(part[1] + part[2]));
		outbuf__puts(b, "</td><td>");
		html__duration(b, (double)part[1]);
		outbuf__puts(b, "</td><td>");
		html__duration(b, (double)part[2]);
		if (elapsed)
			outbuf__printf(b, "</td><td>%.1f %%",
				       100.0 * (double)(part[1] + part[2]) / (double)elapsed);
		else
			outbuf__puts(b, "</td><td>—");
		outbuf__printf(b, "</td><td>%" PRIu64 "</td></tr>\n", d->offcpu_truncated);
	}
	outbuf__puts(b, "</tbody></table>\n");
	if (truncated)
		outbuf__printf(b, "<p class=\"note\" id=\"note-offcpu-truncated\">* The off-CPU "
				  "time of %" PRIu64 " span%s is only partly known: each left its CPU "
				  "more often than the %d switches khprof logs per thread, or was read "
				  "from a thread's buffer after the thread ended or khprof detached. "
				  "For the stages with such spans, off-CPU and blocked are lower bounds "
				  "and on-CPU an upper bound.</p>\n", truncated,
			       truncated == 1 ? "" : "s", KH_OFFCPU_LOG);
	if (l->missed_switches)
		outbuf__printf(b, "<p class=\"note\" id=\"note-missed-switches\">%" PRIu64 " context "
				  "switch%s of the traced threads seen without %s other half: off-CPU "
				  "times may miss as many intervals.</p>\n", l->missed_switches,
			       l->missed_switches == 1 ? "" : "es",
			       l->missed_switches == 1 ? "its" : "their");
}

void html__render_latency(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_latency *l = &p->ext.latency;

	if (!l->present)
		return;
	outbuf__puts(b, "<section id=\"latency\">\n<h2>How long one span takes, per stage</h2>\n");
	render__percentiles(b, p);
	outbuf__puts(b, "</section>\n<section id=\"cpu-split\">\n<h2>On-CPU and off-CPU time, "
			"per stage</h2>\n");
	if (!l->off_cpu) {
		outbuf__puts(b, "<p id=\"no-cpu-split\">No off-CPU split in this record: khprof did "
				"not watch the program's context switches.</p>\n</section>\n");
		return;
	}
	outbuf__puts(b, "<p class=\"lead\">Each stage's elapsed time (summed over threads) as "
			"shares: running on a CPU; off-CPU but runnable, waiting for a CPU "
			"(preempted, or woken and not yet running); off-CPU and blocked or "
			"sleeping (a lock, a queue, the disk: the kernel does not tell these "
			"apart).</p>\n");
	render__split_chart(b, p);
	render__split_table(b, p);
	outbuf__puts(b, "</section>\n");
}
