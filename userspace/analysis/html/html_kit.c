// SPDX-License-Identifier: MIT
/*
 * html_kit.c - what every HTML page shares: the palette, the page's frame
 * and CSS, escaping, units and the SVG patterns and axes of the charts.
 * The page writers (html.c, html_runs.c and the sections html_flame.c,
 * html_latency.c, html_series.c draw) call down to it and it calls none of
 * them, so the pages' files depend one way.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"

const char *const html_palette[8] = {
	"#0072B2", /* blue */
	"#E69F00", /* orange */
	"#009E73", /* bluish green */
	"#CC79A7", /* reddish purple */
	"#56B4E9", /* sky blue */
	"#D55E00", /* vermillion */
	"#F0E442", /* yellow */
	"#555555", /* grey (instead of black, to keep text readable on it) */
};

const char *html__stage_colour(uint32_t stage)
{
	return html_palette[stage % 8];
}

static const char page_css[] =
	":root{--fg:#1a1a1a;--muted:#5a5a5a;--line:#d0d0d0;--bg:#fff;--panel:#f6f6f6;"
	"--accent:#0072B2}"
	"*{box-sizing:border-box}"
	"body{margin:0;background:var(--bg);color:var(--fg);"
	"font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif}"
	"main{max-width:1040px;margin:0 auto;padding:16px 20px 40px}"
	"h1{font-size:1.5em;margin:.2em 0 .1em}h2{font-size:1.2em;margin:1.6em 0 .4em;"
	"border-bottom:1px solid var(--line);padding-bottom:.2em}"
	"p.lead{color:var(--muted);margin:.2em 0 1em}"
	"code,.mono{font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:.92em}"
	".cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(180px,1fr));gap:10px}"
	".card{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:8px 12px}"
	".card .k{color:var(--muted);font-size:.82em;text-transform:uppercase;letter-spacing:.04em}"
	".card .v{font-size:1.3em;font-weight:600}.card .s{color:var(--muted);font-size:.85em}"
	"dl.id{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:.4em 0}"
	"dl.id dt{color:var(--muted)}dl.id dd{margin:0;overflow-wrap:anywhere}"
	"table{border-collapse:collapse;width:100%;font-size:.9em;margin:.6em 0}"
	"th,td{text-align:right;padding:3px 8px;border-bottom:1px solid var(--line)}"
	"th:first-child,td:first-child{text-align:left}th{background:var(--panel)}"
	"svg{display:block;width:100%;height:auto;font-family:inherit}"
	"svg text{fill:var(--fg);font-size:12px}svg .axis{stroke:#888;stroke-width:1}"
	"svg .grid{stroke:#e4e4e4;stroke-width:1}svg .muted{fill:var(--muted)}"
	".note{border-left:4px solid #E69F00;background:#fff8e6;padding:6px 10px;margin:6px 0}"
	".badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;"
	"border:1px solid currentColor}"
	".legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:.85em;margin:.3em 0}"
	".legend span::before{content:'';display:inline-block;width:11px;height:11px;"
	"margin-right:5px;vertical-align:-1px;background:var(--c);border:1px solid #333}"
	".verdict-regressed{color:#B34700}.verdict-improved{color:#005A8C}"
	".verdict-noisy{color:#6b5a00}.verdict-ok,.verdict-same,.verdict-off{color:var(--muted)}"
	"footer{margin-top:2em;color:var(--muted);font-size:.8em}"
	"@media (max-width:700px){main{padding:10px}.cards{grid-template-columns:1fr 1fr}}"
	"@media print{body{font-size:10pt}main{max-width:none;padding:0}"
	"section,figure,table{break-inside:avoid}h2{break-after:avoid}"
	"*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}";

void html__escape(struct outbuf *b, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': outbuf__puts(b, "&amp;"); break;
		case '<': outbuf__puts(b, "&lt;"); break;
		case '>': outbuf__puts(b, "&gt;"); break;
		case '"': outbuf__puts(b, "&quot;"); break;
		case '\'': outbuf__puts(b, "&#39;"); break;
		default: outbuf__putc(b, *s);
		}
	}
}

void html__open(struct outbuf *b, const char *title)
{
	outbuf__puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
			"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
			"<meta name=\"generator\" content=\"khprof\">\n<title>");
	html__escape(b, title);
	outbuf__printf(b, "</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", page_css);
}

void html__close(struct outbuf *b)
{
	outbuf__puts(b, "<footer>Written by khprof. This page is self-contained: it loads "
			"nothing from the network and needs no script.</footer>\n"
			"</main>\n</body>\n</html>\n");
}

void html__duration(struct outbuf *b, double ns)
{
	double a = fabs(ns);

	if (a >= 1e9)
		outbuf__printf(b, "%.3g s", ns / 1e9);
	else if (a >= 1e6)
		outbuf__printf(b, "%.*f ms", a >= 1e8 ? 0 : a >= 1e7 ? 1 : 2, ns / 1e6);
	else if (a >= 1e3)
		outbuf__printf(b, "%.*f µs", a >= 1e5 ? 0 : a >= 1e4 ? 1 : 2, ns / 1e3);
	else
		outbuf__printf(b, "%.0f ns", ns);
}

void html__bytes(struct outbuf *b, double bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (fabs(bytes) >= 1024 && u < 4) {
		bytes /= 1024;
		u++;
	}
	if (u == 0)
		outbuf__printf(b, "%.0f B", bytes);
	else
		outbuf__printf(b, "%.*f %s", fabs(bytes) >= 100 ? 0 : 1, bytes, units[u]);
}

void html__svg_defs(struct outbuf *b)
{
	/* Patterns tell fills apart without colour (print, colour blindness). */
	outbuf__puts(b, "<defs>"
			"<pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\""
			" patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\""
			" stroke=\"#000\" stroke-opacity=\".45\" stroke-width=\"2\"/></pattern>"
			"<pattern id=\"dots\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\">"
			"<circle cx=\"2.5\" cy=\"2.5\" r=\"1\" fill=\"#000\" fill-opacity=\".45\"/></pattern>"
			"<pattern id=\"rhatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\""
			" patternTransform=\"rotate(-45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\""
			" stroke=\"#000\" stroke-opacity=\".3\" stroke-width=\"1.5\"/></pattern>"
			"</defs>");
}

double html__tick_step(double max, int n)
{
	double raw, mag, f;

	if (!(max > 0) || n < 1)
		return 1;
	raw = max / n;
	mag = pow(10, floor(log10(raw)));
	f = raw / mag;
	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* x axis in time over [0, span_ns] at y, its grid lines up to top. */
void html__time_axis(struct outbuf *b, double x0, double w, double top, double y, double span_ns)
{
	double step = html__tick_step(span_ns, 8);

	outbuf__printf(b, "<line class=\"axis\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>",
		       x0, y, x0 + w, y);
	for (double t = 0; t <= span_ns * 1.0001; t += step) {
		double x = x0 + w * t / span_ns;

		outbuf__printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
				  "<text class=\"muted\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
			       x, top, x, y, x, y + 15);
		html__duration(b, t);
		outbuf__puts(b, "</text>");
	}
}
