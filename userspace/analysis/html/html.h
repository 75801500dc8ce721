/* SPDX-License-Identifier: MIT */
/*
 * html.h - self-contained HTML reports: one record, a directory of runs,
 * a diff.
 *
 * Each page is one file that opens from disk with no network: CSS inline,
 * charts drawn here as inline SVG (server-side, so they print and need no
 * script), no fonts but the system's.  Colours come from the Okabe-Ito
 * palette, which stays distinguishable with the common colour-vision
 * deficiencies, and every colour is backed by a text label or a pattern.
 * Elements the browser tests look for carry stable ids (docs/REPORTS.md).
 */
#ifndef KHPROF_HTML_H
#define KHPROF_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "diff.h"
#include "outbuf.h"
#include "record.h"

/* The page for one record.  malloc'd, or NULL (ENOMEM). */
char *profile__render_html(const struct kh_profile *p);

/*
 * The page for n runs of one command (record --repeat), in the order given:
 * wall time and each stage as a trend over the runs, then the spread table.
 * names label the runs (file names); NULL labels them by number.
 */
char *runs__render_html(const struct kh_profile *runs, const char *const *names, size_t n);

/* The page for a comparison: verdicts, intervals, base against candidate. */
char *diff__render_html(const struct kh_diff *d);

/* --- shared by the page writers (html_kit.c) --------------------------------- */

/* Okabe-Ito colours, by position; html__stage_colour cycles them per stage. */
extern const char *const html_palette[8];
const char *html__stage_colour(uint32_t stage);

/* Escaped text: & < > " ' become entities. */
void html__escape(struct outbuf *b, const char *s);
/* "<!doctype html>…<body><main>" with the CSS, and the closing tags. */
void html__open(struct outbuf *b, const char *title);
void html__close(struct outbuf *b);
/* "59.1 ms", "1.23 s", "412 µs", "85 ns". */
void html__duration(struct outbuf *b, double ns);
/* "5.0 MiB", "812 KiB", "912 B". */
void html__bytes(struct outbuf *b, double bytes);
/* An SVG <defs> with the hatch and dot patterns every chart may use. */
void html__svg_defs(struct outbuf *b);
/* The --interval series section (html_series.c); nothing without a series. */
void html__render_series(struct outbuf *b, const struct kh_profile *p);
/*
 * The latency sections (html_latency.c): percentiles per stage and the
 * on-CPU/off-CPU split; nothing for a record without khprof.latency.
 */
void html__render_latency(struct outbuf *b, const struct kh_profile *p);
/* A flame graph per stage (html_flame.c); nothing for a record without --sample's stacks. */
void html__render_flames(struct outbuf *b, const struct kh_profile *p);
/* Round step for about n ticks over [0, max]. */
double html__tick_step(double max, int n);
/* x axis in time over [0, span_ns] at y, its grid lines up to top. */
void html__time_axis(struct outbuf *b, double x0, double w, double top, double y, double span_ns);

#endif /* KHPROF_HTML_H */
