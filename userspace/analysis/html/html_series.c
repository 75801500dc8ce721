// SPDX-License-Identifier: MIT
/*
 * html_series.c - the --interval series of a record on its HTML page:
 * stage time stacked over time, and input throughput and CPU over time.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "html.h"
#include "series.h"

#define CHART_W 960.0
/* Stages drawn in their own colour; the rest are summed as "other". */
#define SERIES_TOP 7

static const char other_colour[] = "#BBBBBB";

/*
 * The stages with the most time over the series, dispatch left out (it
 * wraps the matcher stages); returns how many, at most SERIES_TOP.
 */
static int top_stages(const struct kh_series *s, int top[SERIES_TOP], bool is_top[KH_STAGE_COUNT])
{
	uint64_t total[KH_STAGE_COUNT] = { 0 };
	int n = 0;

	memset(is_top, 0, KH_STAGE_COUNT * sizeof(*is_top));
	for (size_t i = 0; i < s->count; i++)
		for (int st = 0; st < KH_STAGE_COUNT; st++)
			total[st] += s->intervals[i].elapsed_ns[st];
	while (n < SERIES_TOP) {
		int best = -1;

		for (int st = 0; st < KH_STAGE_COUNT; st++)
			if (st != KH_STAGE_BACKEND_DISPATCH && !is_top[st] && total[st] &&
			    (best < 0 || total[st] > total[best]))
				best = st;
		if (best < 0)
			break;
		is_top[best] = true;
		top[n++] = best;
	}
	return n;
}

static double series_span(const struct kh_series *s)
{
	const struct kh_interval *last = &s->intervals[s->count - 1];
	double span = (double)(last->start_ns + last->duration_ns);

	return span > 0 ? span : 1;
}



/* Busy threads in each stage (stage time per wall second), stacked. */
static void stacked_chart(struct outbuf *b, const struct kh_series *s)
{
	const double x0 = 70, w = CHART_W - x0 - 20, top = 10, h = 200, axis_y = top + h;
	int top_st[SERIES_TOP], n_top;
	bool is_top[KH_STAGE_COUNT];
	double span = series_span(s), max = 0, step;

	n_top = top_stages(s, top_st, is_top);
	for (size_t i = 0; i < s->count; i++) {
		const struct kh_interval *iv = &s->intervals[i];
		double sum = 0;

		for (int st = 0; st < KH_STAGE_COUNT; st++)
			if (st != KH_STAGE_BACKEND_DISPATCH)
				sum += (double)iv->elapsed_ns[st];
		if (iv->duration_ns && sum / (double)iv->duration_ns > max)
			max = sum / (double)iv->duration_ns;
	}
	step = html__tick_step(max > 0 ? max : 1, 4);
	max = step * ceil((max > 0 ? max : 1) / step);
	outbuf__printf(b, "<svg id=\"series-stages\" role=\"img\" aria-label=\"stage time over "
			  "time, stacked\" viewBox=\"0 0 %.0f %.0f\">", CHART_W, axis_y + 24);
	html__svg_defs(b);
	for (double v = 0; v <= max * 1.0001; v += step) {
		double y = axis_y - h * v / max;

		outbuf__printf(b, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>"
				  "<text class=\"muted\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" "
				  "font-size=\"10\">%.3g</text>", x0, y, x0 + w, y, x0 - 4, y + 4, v);
	}
	outbuf__printf(b, "<text x=\"0\" y=\"%.0f\" font-size=\"11\">threads</text>", top + 8);
	for (size_t i = 0; i < s->count; i++) {
		const struct kh_interval *iv = &s->intervals[i];
		double x = x0 + w * (double)iv->start_ns / span;
		double iw = w * (double)iv->duration_ns / span, y = axis_y, other = 0;

		if (!iv->duration_ns)
			continue;
		outbuf__printf(b, "<g class=\"series-interval\"><title>");
		html__duration(b, (double)iv->start_ns);
		outbuf__puts(b, " + ");
		html__duration(b, (double)iv->duration_ns);
		outbuf__puts(b, "</title>");
		for (int k = 0; k < n_top; k++) {
			double v = (double)iv->elapsed_ns[top_st[k]] / (double)iv->duration_ns;
			double rh = h * v / max;

			if (rh <= 0)
				continue;
			y -= rh;
			outbuf__printf(b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
					  "fill=\"%s\"/>", x, y, iw, rh, html_palette[k]);
		}
		for (int st = 0; st < KH_STAGE_COUNT; st++)
			if (!is_top[st] && st != KH_STAGE_BACKEND_DISPATCH)
				other += (double)iv->elapsed_ns[st] / (double)iv->duration_ns;
		if (other > 0) {
			double rh = h * other / max;

			outbuf__printf(b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
					  "fill=\"%s\"/><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
					  "height=\"%.2f\" fill=\"url(#dots)\"/>", x, y - rh, iw, rh,
				       other_colour, x, y - rh, iw, rh);
		}
		outbuf__puts(b, "</g>");
	}
	html__time_axis(b, x0, w, top, axis_y, span);
	outbuf__puts(b, "</svg>\n<div class=\"legend\" id=\"series-legend\">");
	for (int k = 0; k < n_top; k++)
		outbuf__printf(b, "<span style=\"--c:%s\">%s</span>", html_palette[k],
			       kh_stage__name((uint32_t)top_st[k]));
	outbuf__printf(b, "<span style=\"--c:%s\">other stages (dotted)</span></div>\n",
		       other_colour);
}

/* One value per interval as a step line. */
static void step_chart(struct outbuf *b, const struct kh_profile *p, const char *id,
		       const char *label, const char *unit, const char *colour,
		       double (*value)(const struct kh_profile *, const struct kh_interval *,
				       bool *))
{
	const struct kh_series *s = &p->ext.series;
	const double x0 = 70, w = CHART_W - x0 - 20, top = 10, h = 110, axis_y = top + h;
	double span = series_span(s), max = 0, step;
	bool open = false;

	for (size_t i = 0; i < s->count; i++) {
		bool ok;
		double v = value(p, &s->intervals[i], &ok);

		if (ok && v > max)
			max = v;
	}
	step = html__tick_step(max > 0 ? max : 1, 3);
	max = step * ceil((max > 0 ? max : 1) / step);
	outbuf__printf(b, "<svg id=\"%s\" role=\"img\" aria-label=\"%s over time\" viewBox=\"0 0 "
			  "%.0f %.0f\">", id, label, CHART_W, axis_y + 24);
	for (double v = 0; v <= max * 1.0001; v += step) {
		double y = axis_y - h * v / max;

		outbuf__printf(b, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>"
				  "<text class=\"muted\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" "
				  "font-size=\"10\">%.4g %s</text>", x0, y, x0 + w, y, x0 - 4, y + 4, v,
			       unit);
	}
	outbuf__printf(b, "<polyline class=\"series-line\" fill=\"none\" stroke=\"%s\" "
			  "stroke-width=\"2\" points=\"", colour);
	for (size_t i = 0; i < s->count; i++) {
		const struct kh_interval *iv = &s->intervals[i];
		bool ok;
		double v = value(p, iv, &ok), y;

		if (!ok)
			continue;
		y = axis_y - h * v / max;
		outbuf__printf(b, "%s%.2f,%.2f %.2f,%.2f", open ? " " : "",
			       x0 + w * (double)iv->start_ns / span, y,
			       x0 + w * (double)(iv->start_ns + iv->duration_ns) / span, y);
		open = true;
	}
	outbuf__puts(b, "\"/>");
	html__time_axis(b, x0, w, top, axis_y, span);
	outbuf__puts(b, "</svg>\n");
}

static double throughput_of(const struct kh_profile *p, const struct kh_interval *iv, bool *ok)
{
	(void)p;
	*ok = iv->duration_ns > 0;
	return *ok ? (double)iv->input_bytes * 1e9 / (double)iv->duration_ns / 1048576.0 : 0;
}

static double cpu_of(const struct kh_profile *p, const struct kh_interval *iv, bool *ok)
{
	double pct = 0;

	*ok = interval__cpu_percent(iv, p->identity.logical_cpus, &pct);
	return pct;
}

void html__render_series(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_series *s = &p->ext.series;

	if (!s->interval_ns || !s->count)
		return;
	outbuf__puts(b, "<section id=\"series\">\n<h2>Over time</h2>\n<p class=\"lead\">Sampled by "
			"khprof every ");
	html__duration(b, (double)s->interval_ns);
	outbuf__printf(b, " (%zu interval%s", s->count, s->count == 1 ? "" : "s");
	if (s->merged)
		outbuf__printf(b, "; %" PRIu64 " merged into their neighbours to keep the series "
				  "bounded, so older intervals are longer", s->merged);
	outbuf__puts(b, "). Stage time is counted in the interval where a span ends, as threads "
			"busy in each stage (1 is one thread the whole interval).</p>\n");
	stacked_chart(b, s);
	outbuf__puts(b, "<h3>Input throughput</h3>\n");
	step_chart(b, p, "series-throughput", "input throughput", "MiB/s", html_palette[2],
		   throughput_of);
	outbuf__puts(b, "<h3>CPU (100 % is one CPU busy)</h3>\n");
	step_chart(b, p, "series-cpu", "CPU", "%", html_palette[0], cpu_of);
	outbuf__puts(b, "</section>\n");
}
