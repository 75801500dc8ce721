// SPDX-License-Identifier: MIT
/*
 * html_runs.c - the HTML pages of many runs (a trend) and of a diff.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "spread.h"
#include "stats.h"

#define CHART_W 960.0

static double median_of(const double *v, size_t n)
{
	struct kh_spread s;

	if (!n || stats__spread(v, n, &s))
		return 0;
	return s.median;
}

/* A value in the unit of a trend. */
enum trend_unit { TREND_NS, TREND_MIB_S };

static void put_value(struct outbuf *b, enum trend_unit unit, double v)
{
	if (unit == TREND_NS)
		html__duration(b, v);
	else
		outbuf__printf(b, "%.1f MiB/s", v);
}

/*
 * A line over the runs in order (x = run number), y from 0, with the
 * median as a dashed line: a drift shows as a slope, noise as jitter.
 */
static void trend_chart(struct outbuf *b, const char *id, const char *cls, const char *label,
			const char *colour, const double *v, size_t n, enum trend_unit unit,
			double height)
{
	const double x0 = 90, w = CHART_W - x0 - 30, top = 26, h = height - 56;
	double max = 0, med = median_of(v, n), step;

	for (size_t i = 0; i < n; i++)
		if (v[i] > max)
			max = v[i];
	step = html__tick_step(max > 0 ? max : 1, 3);
	max = step * ceil((max > 0 ? max : 1) / step);
	outbuf__printf(b, "<svg id=\"%s\" class=\"%s\" role=\"img\" aria-label=\"%s over the runs\" "
			  "viewBox=\"0 0 %.0f %.0f\">", id, cls, label, CHART_W, height);
	for (double t = 0; t <= max * 1.0001; t += step) {
		double y = top + h - h * t / max;

		outbuf__printf(b, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>"
				  "<text class=\"muted\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" "
				  "font-size=\"10\">", x0, y, x0 + w, y, x0 - 4, y + 4);
		put_value(b, unit, t);
		outbuf__puts(b, "</text>");
	}
	outbuf__printf(b, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#555\" "
			  "stroke-dasharray=\"5 4\"><title>median</title></line>", x0,
		       top + h - h * med / max, x0 + w, top + h - h * med / max);
	outbuf__printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colour);
	for (size_t i = 0; i < n; i++)
		outbuf__printf(b, "%s%.1f,%.1f", i ? " " : "",
			       x0 + (n > 1 ? w * i / (n - 1) : w / 2), top + h - h * v[i] / max);
	outbuf__puts(b, "\"/>");
	for (size_t i = 0; i < n; i++) {
		double x = x0 + (n > 1 ? w * i / (n - 1) : w / 2);

		outbuf__printf(b, "<circle class=\"run-point\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" "
				  "fill=\"%s\"><title>run %zu: ", x, top + h - h * v[i] / max,
			       colour, i + 1);
		put_value(b, unit, v[i]);
		outbuf__puts(b, "</title></circle>");
		if (n <= 30 || i % ((n + 29) / 30) == 0)
			outbuf__printf(b, "<text class=\"muted\" x=\"%.1f\" y=\"%.1f\" "
					  "text-anchor=\"middle\" font-size=\"10\">%zu</text>", x,
				       top + h + 14, i + 1);
	}
	outbuf__printf(b, "<text x=\"0\" y=\"14\" font-weight=\"600\">%s</text>", label);
	outbuf__printf(b, "<text class=\"muted\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" "
			  "font-size=\"11\">median ", x0 + w, height - 4);
	put_value(b, unit, med);
	outbuf__puts(b, "; run number →</text></svg>\n");
}

char *runs__render_html(const struct kh_profile *runs, const char *const *names, size_t n)
{
	struct outbuf b;
	double *v = calloc(n ? n : 1, sizeof(*v));
	char *spread, *html;

	if (!v)
		return NULL;
	outbuf__init(&b);
	html__open(&b, "KeyHog profile: runs");
	outbuf__puts(&b, "<header id=\"run-header\"><h1>KeyHog profile: ");
	outbuf__printf(&b, "%zu run%s</h1>\n<p class=\"lead\">", n, n == 1 ? "" : "s");
	if (n) {
		outbuf__puts(&b, "Runs of <code>");
		html__escape(&b, runs[0].identity.binary_version);
		outbuf__puts(&b, "</code>, workload <code>");
		html__escape(&b, runs[0].identity.workload_class);
		outbuf__puts(&b, "</code>, ");
	}
	outbuf__puts(&b, "in the order of their files (oldest first for <code>record --repeat"
			 "</code> and dated names). Each chart is one quantity over the runs: a "
			 "slope is a drift, scatter around the dashed median is noise.</p>\n"
			 "</header>\n");

	outbuf__puts(&b, "<section id=\"trend-wall\">\n<h2>Wall time and throughput</h2>\n");
	for (size_t i = 0; i < n; i++)
		v[i] = (double)runs[i].wall_time_ns;
	trend_chart(&b, "trend-wall-chart", "trend", "wall time", html_palette[0], v, n, TREND_NS,
		    190);
	for (size_t i = 0; i < n; i++)
		v[i] = runs[i].wall_time_ns ? (double)runs[i].input_bytes * 1e9 /
						      (double)runs[i].wall_time_ns / 1048576.0
					    : 0;
	trend_chart(&b, "trend-throughput-chart", "trend", "throughput", html_palette[2], v, n,
		    TREND_MIB_S, 190);
	outbuf__puts(&b, "</section>\n<section id=\"trend-stages\">\n<h2>Each stage over the "
			 "runs</h2>\n<p class=\"lead\">Elapsed time summed over threads; stages in "
			 "the scanner's order.</p>\n");
	for (uint32_t stage = 0; stage < KH_STAGE_COUNT; stage++) {
		bool present = false;
		char id[64];

		for (size_t i = 0; i < n; i++) {
			const struct kh_stage_measurement *m = profile__find_stage(&runs[i], stage);

			present |= m != NULL;
			v[i] = m ? (double)m->elapsed_ns : 0;
		}
		if (!present)
			continue;
		snprintf(id, sizeof(id), "trend-%s", kh_stage__name(stage));
		trend_chart(&b, id, "trend stage-trend", kh_stage__name(stage),
			    html__stage_colour(stage), v, n, TREND_NS, 140);
	}
	outbuf__puts(&b, "</section>\n<section id=\"runs\">\n<h2>The runs</h2>\n<table "
			 "id=\"runs-table\"><thead><tr><th>#</th><th>record</th><th>status</th>"
			 "<th>wall</th><th>throughput</th><th>peak RSS</th></tr></thead><tbody>\n");
	for (size_t i = 0; i < n; i++) {
		const struct kh_profile *p = &runs[i];

		outbuf__printf(&b, "<tr><td>%zu</td><td class=\"mono\">", i + 1);
		html__escape(&b, names && names[i] ? names[i] : p->identity.run_id);
		outbuf__printf(&b, "</td><td>%s</td><td>", kh_run_state__name(p->status)
								  ? kh_run_state__name(p->status)
								  : "?");
		html__duration(&b, (double)p->wall_time_ns);
		outbuf__printf(&b, "</td><td>%.1f MiB/s</td><td>",
			       p->wall_time_ns ? (double)p->input_bytes * 1e9 /
							 (double)p->wall_time_ns / 1048576.0
					       : 0);
		if (p->resources.max_observed_resident_bytes.present)
			html__bytes(&b, (double)p->resources.max_observed_resident_bytes.value);
		else
			outbuf__puts(&b, "n/a");
		outbuf__puts(&b, "</td></tr>\n");
	}
	outbuf__puts(&b, "</tbody></table>\n</section>\n");
	spread = runs__render_spread(runs, n);
	outbuf__puts(&b, "<section id=\"spread\">\n<h2>Spread</h2>\n<p class=\"lead\">Median, "
			 "minimum, maximum and median absolute deviation over the runs, as "
			 "<code>record --repeat</code> prints it: the noise a CI threshold must "
			 "clear.</p>\n<pre id=\"spread-table\" class=\"mono\">");
	html__escape(&b, spread ? spread : "");
	outbuf__puts(&b, "</pre>\n</section>\n");
	html__close(&b);
	if (!spread)
		b.failed = true;
	free(spread);
	free(v);
	html = outbuf__finish(&b);
	if (!html)
		errno = ENOMEM;
	return html;
}

/* --- diff ------------------------------------------------------------------- */

/* Colour, fill and symbol of a verdict: never the colour alone. */
static const char *mark_colour(enum kh_diff_mark m)
{
	switch (m) {
	case KH_DIFF_REGRESSED: return "#D55E00";
	case KH_DIFF_IMPROVED: return "#0072B2";
	case KH_DIFF_NOISY: return "#E69F00";
	case KH_DIFF_UNJUDGED: return "#CC79A7";
	default: return "#777777";
	}
}

static const char *mark_symbol(enum kh_diff_mark m)
{
	switch (m) {
	case KH_DIFF_REGRESSED: return "▲";
	case KH_DIFF_IMPROVED: return "▼";
	case KH_DIFF_NOISY: return "◆";
	case KH_DIFF_CHANGED: return "≠";
	case KH_DIFF_UNJUDGED: return "?";
	case KH_DIFF_MACHINE: return "⧗";
	default: return "●";
	}
}

static void item_label(char *buf, size_t len, const struct kh_diff_item *it)
{
	switch (it->metric) {
	case KH_DIFF_M_ELAPSED: snprintf(buf, len, "%s", it->name); break;
	case KH_DIFF_M_CALLS: snprintf(buf, len, "%s calls", it->name); break;
	case KH_DIFF_M_PER_CALL: snprintf(buf, len, "%s per call", it->name); break;
	case KH_DIFF_M_ON_CPU: snprintf(buf, len, "%s on CPU", it->name); break;
	case KH_DIFF_M_ON_CPU_PER_CALL: snprintf(buf, len, "%s on CPU per call", it->name); break;
	case KH_DIFF_M_OWN: snprintf(buf, len, "%s on CPU or blocked", it->name); break;
	case KH_DIFF_M_BLOCKED: snprintf(buf, len, "%s blocked", it->name); break;
	case KH_DIFF_M_RUNNABLE: snprintf(buf, len, "%s waiting for a CPU", it->name); break;
	case KH_DIFF_M_P50: snprintf(buf, len, "%s p50", it->name); break;
	case KH_DIFF_M_P99: snprintf(buf, len, "%s p99", it->name); break;
	case KH_DIFF_M_DECODED: snprintf(buf, len, "%s decoded", it->name); break;
	case KH_DIFF_M_STATE_WALL: snprintf(buf, len, "state %s wall", it->name); break;
	case KH_DIFF_M_STATE_CPU: snprintf(buf, len, "state %s CPU", it->name); break;
	default: snprintf(buf, len, "%s", it->name);
	}
}

static void item_value(struct outbuf *b, const struct kh_diff_item *it, double v)
{
	switch (it->metric) {
	case KH_DIFF_M_THROUGHPUT: outbuf__printf(b, "%.1f MiB/s", v / 1048576.0); break;
	case KH_DIFF_M_PEAK_RSS: html__bytes(b, v); break;
	case KH_DIFF_M_CALLS: outbuf__printf(b, "%.0f", v); break;
	default: html__duration(b, v);
	}
}

/*
 * A forest plot of the judged items: the shift in percent as a marker, its
 * interval as a line (one estimator, so the marker is always on its line),
 * the threshold as a shaded band around 0.  A regression is a marker
 * outside the band on the worse side whose interval clears it.
 */
static void diff_plot(struct outbuf *b, const struct kh_diff *d)
{
	const double x0 = 230, w = CHART_W - x0 - 150, row_h = 24;
	double lim = 5;
	size_t rows = 0, r = 0;

	for (size_t i = 0; i < d->item_count; i++) {
		const struct kh_diff_item *it = &d->items[i];

		if (!it->has_change || it->metric == KH_DIFF_M_CALLS)
			continue;
		rows++;
		lim = fmax(lim, fabs(it->change_pct));
		if (it->has_threshold && !it->threshold_off)
			lim = fmax(lim, it->threshold_pct);
		if (it->has_interval)
			lim = fmax(lim, fmax(fabs(it->interval_low_pct), fabs(it->interval_high_pct)));
	}
	lim = fmin(lim * 1.15, 200);
	outbuf__printf(b, "<svg id=\"diff-plot\" role=\"img\" aria-label=\"change per item with "
			  "intervals\" viewBox=\"0 0 %.0f %.0f\">", CHART_W, rows * row_h + 40);
	html__svg_defs(b);
	for (int k = -4; k <= 4; k++) {
		double pct = lim * k / 4, x = x0 + w / 2 + w / 2 * k / 4;

		outbuf__printf(b, "<line class=\"%s\" x1=\"%.1f\" y1=\"4\" x2=\"%.1f\" y2=\"%.0f\"/>"
				  "<text class=\"muted\" x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" "
				  "font-size=\"10\">%+.0f %%</text>", k ? "grid" : "axis", x, x,
			       rows * row_h + 6, x, rows * row_h + 20, pct);
	}
	outbuf__printf(b, "<text class=\"muted\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" "
			  "font-size=\"11\">change of the candidate against the base (a shaded "
			  "band is the item's threshold)</text>", x0 + w / 2, rows * row_h + 36);
	for (size_t i = 0; i < d->item_count; i++) {
		const struct kh_diff_item *it = &d->items[i];
		double y = 4 + r * row_h, cy = y + row_h / 2, cx;
		const char *c = mark_colour(it->verdict);
		char label[96], verdict[64];

		if (!it->has_change || it->metric == KH_DIFF_M_CALLS)
			continue;
		r++;
		item_label(label, sizeof(label), it);
		diff_item__verdict(d, it, false, verdict, sizeof(verdict));
		cx = x0 + w / 2 + w / 2 * fmax(-lim, fmin(lim, it->change_pct)) / lim;
		outbuf__printf(b, "<g class=\"diff-row verdict-%s\" data-item=\"%s\">",
			       diff_mark__name(it->verdict), label);
		outbuf__printf(b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>", x0 - 8,
			       cy + 4, label);
		if (it->has_threshold && !it->threshold_off) {
			double tw = w / 2 * fmin(it->threshold_pct, lim) / lim;

			outbuf__printf(b, "<rect class=\"threshold\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
					  "height=\"%.0f\" fill=\"#000\" fill-opacity=\".07\"/>",
				       x0 + w / 2 - tw, y + 3, 2 * tw, row_h - 6);
		}
		if (it->has_interval) {
			double lo = fmax(-lim, fmin(lim, it->interval_low_pct));
			double hi = fmax(-lim, fmin(lim, it->interval_high_pct));

			outbuf__printf(b, "<line class=\"interval\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
					  "y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>",
				       x0 + w / 2 + w / 2 * lo / lim, cy, x0 + w / 2 + w / 2 * hi / lim,
				       cy, c);
		}
		outbuf__printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"%s\" "
				  "style=\"fill:%s;font-size:14px\">%s</text>", cx, cy + 5, c, c,
			       mark_symbol(it->verdict));
		outbuf__printf(b, "<text x=\"%.0f\" y=\"%.1f\" style=\"fill:%s;font-weight:600\">"
				  "%s %+.1f %%</text></g>\n", x0 + w + 10, cy + 4, c, verdict,
			       it->change_pct);
	}
	outbuf__puts(b, "</svg>\n");
}

static void diff_table(struct outbuf *b, const struct kh_diff *d)
{
	outbuf__puts(b, "<table id=\"diff-table\"><thead><tr><th>item</th><th>base</th>"
			"<th>candidate</th><th>change</th><th>interval of the shift</th>"
			"<th>threshold</th><th>verdict</th></tr></thead><tbody>\n");
	for (size_t i = 0; i < d->item_count; i++) {
		const struct kh_diff_item *it = &d->items[i];
		const char *how = diff_item__adjustment(it);
		char label[96], verdict[64];

		item_label(label, sizeof(label), it);
		diff_item__verdict(d, it, false, verdict, sizeof(verdict));
		outbuf__printf(b, "<tr class=\"verdict-%s\"><td>%s", diff_mark__name(it->verdict),
			       label);
		/* Judged on adjusted values: the mark says so, its title how. */
		if (how)
			outbuf__printf(b, " <abbr class=\"adjusted\" title=\"judged on %s\">†</abbr>",
				       how);
		outbuf__puts(b, "</td><td>");
		item_value(b, it, it->base_median);
		outbuf__puts(b, "</td><td>");
		item_value(b, it, it->cand_median);
		outbuf__puts(b, "</td><td>");
		if (it->has_change)
			outbuf__printf(b, "%+.1f %%", it->change_pct);
		else
			outbuf__puts(b, "—");
		outbuf__puts(b, "</td><td>");
		if (it->has_interval && it->has_change)
			outbuf__printf(b, "%+.1f %% … %+.1f %%", it->interval_low_pct,
				       it->interval_high_pct);
		else
			outbuf__puts(b, "—");
		outbuf__puts(b, "</td><td>");
		if (!it->has_threshold)
			outbuf__puts(b, "—");
		else if (it->threshold_off)
			outbuf__puts(b, "off");
		else
			outbuf__printf(b, "%.1f %%%s", it->threshold_pct, it->gating ? "" : " (no gate)");
		outbuf__printf(b, "</td><td><strong>%s %s</strong></td></tr>\n",
			       mark_symbol(it->verdict), verdict);
	}
	outbuf__puts(b, "</tbody></table>\n");
}

char *diff__render_html(const struct kh_diff *d)
{
	struct outbuf b;
	char *summary = diff__summary(d), *html;
	const char *verdict = diff_verdict__name(d->verdict);

	outbuf__init(&b);
	html__open(&b, "khprof diff");
	outbuf__puts(&b, "<header id=\"run-header\"><h1>KeyHog profile: base against candidate"
			 "</h1>\n<p class=\"lead\">Base <code>");
	html__escape(&b, d->base.path);
	outbuf__printf(&b, "</code> (%zu record%s), candidate <code>", d->base.count,
		       d->base.count == 1 ? "" : "s");
	html__escape(&b, d->cand.path);
	outbuf__printf(&b, "</code> (%zu record%s). ", d->cand.count, d->cand.count == 1 ? "" : "s");
	switch (d->method) {
	case KH_DIFF_METHOD_MANN_WHITNEY:
		outbuf__printf(&b, "The change is the Hodges-Lehmann shift between the runs, and "
				   "counts when its %g %% Mann-Whitney interval clears the "
				   "threshold.", d->opts.confidence);
		break;
	case KH_DIFF_METHOD_FEW_RUNS:
		outbuf__printf(&b, "Too few runs for a %g %% interval (%zu per side needed): "
				   "nothing is judged.", d->opts.confidence, d->runs_needed);
		break;
	case KH_DIFF_METHOD_SINGLE:
		outbuf__puts(&b, "Single runs: nothing is judged.");
		break;
	}
	outbuf__puts(&b, "</p>\n</header>\n<section id=\"verdict\">\n<h2>Verdict</h2>\n<p>");
	outbuf__printf(&b, "<span class=\"badge verdict-%s\" id=\"verdict-badge\">%s %s</span> ",
		       d->verdict == KH_DIFF_VERDICT_OK		? "improved"
		       : d->verdict == KH_DIFF_VERDICT_CANNOT_JUDGE ? "noisy"
								    : "regressed",
		       d->verdict == KH_DIFF_VERDICT_OK		? "✓"
		       : d->verdict == KH_DIFF_VERDICT_CANNOT_JUDGE ? "?"
								    : "✗",
		       verdict ? verdict : "?");
	html__escape(&b, summary ? summary : "");
	outbuf__puts(&b, "</p>\n");
	for (size_t i = 0; i < d->mismatch_count; i++) {
		outbuf__printf(&b, "<p class=\"note mismatch\">%s: ",
			       d->mismatches[i].allowed ? "Allowed difference" : "Not comparable");
		html__escape(&b, d->mismatches[i].message);
		outbuf__puts(&b, "</p>\n");
	}
	for (size_t i = 0; i < d->warning_count; i++) {
		outbuf__puts(&b, "<p class=\"note warning\">");
		html__escape(&b, d->warnings[i].message);
		outbuf__puts(&b, "</p>\n");
	}
	outbuf__puts(&b, "</section>\n");
	if (d->item_count) {
		outbuf__puts(&b, "<section id=\"changes\">\n<h2>Changes per item</h2>\n<p class="
				 "\"lead\">▲ regressed (worse beyond the threshold, interval clear of "
				 "it), ▼ improved, ◆ noisy (the shift is beyond the threshold but the "
				 "interval is not sure), ? unjudged (too few runs), ⧗ waiting for a "
				 "CPU moved (the machine's), ● within the threshold. Throughput is "
				 "better when it rises; everything else when it falls. † marks an item "
				 "judged on adjusted values (its title says how).</p>\n");
		diff_plot(&b, d);
		diff_table(&b, d);
		outbuf__puts(&b, "</section>\n");
	}
	html__close(&b);
	if (!summary)
		b.failed = true;
	free(summary);
	html = outbuf__finish(&b);
	if (!html)
		errno = ENOMEM;
	return html;
}
