// SPDX-License-Identifier: MIT
/*
 * html.c - the HTML page of one record (what every page shares is
 * html_kit.c's).
 *
 * Charts are SVG written here with a viewBox, so they scale to the window
 * and to paper without a script.  Sizes are in SVG user units on a 960-wide
 * canvas, the width of the page's main column.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "html.h"

#define CHART_W 960.0
/* --- one record ------------------------------------------------------------- */

static const char *str_or(const char *s, const char *fallback)
{
	return s ? s : fallback;
}

static double mib_per_s(const struct kh_profile *p)
{
	if (!p->wall_time_ns)
		return 0;
	return (double)p->input_bytes * 1e9 / (double)p->wall_time_ns / (1024.0 * 1024.0);
}

static void card_open(struct outbuf *b, const char *id, const char *key)
{
	outbuf__printf(b, "<div class=\"card\" id=\"%s\"><div class=\"k\">%s</div><div class=\"v\">",
		       id, key);
}

static void card_close(struct outbuf *b, const char *sub)
{
	outbuf__puts(b, "</div>");
	if (sub) {
		outbuf__puts(b, "<div class=\"s\">");
		outbuf__puts(b, sub);
		outbuf__puts(b, "</div>");
	}
	outbuf__puts(b, "</div>\n");
}

/* "exit code 0", "signal 9 (SIGKILL)", "execve"; as the record says it. */
static void process_end(struct outbuf *b, const struct kh_profile_ext *e)
{
	const char *abbrev;

	if (!strcmp(e->process_end, "exit") && e->exit_code.present) {
		outbuf__printf(b, "exit code %" PRIu64, e->exit_code.value);
	} else if (!strcmp(e->process_end, "signal") && e->exit_signal.present) {
		outbuf__printf(b, "signal %" PRIu64, e->exit_signal.value);
		abbrev = e->exit_signal.value < 128 ? sigabbrev_np((int)e->exit_signal.value) : NULL;
		if (abbrev)
			outbuf__printf(b, " (SIG%s)", abbrev);
	} else if (!strcmp(e->process_end, "exec")) {
		outbuf__puts(b, "execve");
	} else {
		html__escape(b, e->process_end);
	}
}

static void render__summary(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_state_measurement *state = profile__bottleneck_state(p);
	const struct kh_stage_measurement *stage = profile__bottleneck_stage(p);
	const char *status = str_or(kh_run_state__name(p->status), "unknown");
	char sub[96];

	outbuf__puts(b, "<section id=\"summary\">\n<h2>Run summary</h2>\n<div class=\"cards\">\n");
	card_open(b, "card-status", "status");
	/* A word, not just a colour: completed or failed. */
	outbuf__printf(b, "<span class=\"badge %s\">%s%s</span>",
		       p->status == KH_STATE_COMPLETED ? "verdict-improved" : "verdict-regressed",
		       p->status == KH_STATE_COMPLETED ? "✓ " : "✗ ", status);
	card_close(b, p->ext.started_mid_session || p->ext.ended_mid_session
			      ? "observed in part (see notes)" : "whole session observed");
	card_open(b, "card-wall", "wall time");
	html__duration(b, (double)p->wall_time_ns);
	card_close(b, "session start to finish");
	card_open(b, "card-throughput", "throughput");
	outbuf__printf(b, "%.1f MiB/s", mib_per_s(p));
	snprintf(sub, sizeof(sub), "%" PRIu64 " input units", p->input_units);
	card_close(b, sub);
	card_open(b, "card-input", "input");
	html__bytes(b, (double)p->input_bytes);
	snprintf(sub, sizeof(sub), "%" PRIu64 " bytes", p->input_bytes);
	card_close(b, sub);
	card_open(b, "card-bottleneck", "bottleneck");
	if (stage) {
		html__escape(b, kh_stage__name(stage->stage));
		outbuf__puts(b, "</div><div class=\"s\">");
		html__duration(b, (double)stage->elapsed_ns);
		outbuf__puts(b, " summed over threads");
		if (state) {
			outbuf__puts(b, "; longest state ");
			html__escape(b, kh_run_state__name(state->state));
			outbuf__puts(b, " ");
			html__duration(b, (double)state->elapsed_ns);
		}
		card_close(b, NULL);
	} else {
		outbuf__puts(b, "none");
		card_close(b, "no stage recorded");
	}
	card_open(b, "card-cpu", "CPU");
	{
		struct kh_cpu_share c = profile__run_cpu(p);

		if (c.present)
			outbuf__printf(b, "%s%.1f %%", c.capped ? "&ge; " : "", c.percent);
		else
			outbuf__puts(b, "n/a");
	}
	card_close(b, "of one CPU, over the session");
	card_open(b, "card-rss", "peak RSS");
	if (p->resources.max_observed_resident_bytes.present)
		html__bytes(b, (double)p->resources.max_observed_resident_bytes.value);
	else
		outbuf__puts(b, "n/a");
	card_close(b, "resident memory, at transitions");
	if (p->ext.process_end) {
		card_open(b, "card-end", "process end");
		process_end(b, &p->ext);
		card_close(b, p->ext.ended_mid_session ? "before the session finished"
						       : "at the record's end");
	}
	outbuf__puts(b, "</div>\n</section>\n");
}

static void render__identity(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_identity *id = &p->identity;
	const struct { const char *k; const char *v; } rows[] = {
		{ "binary version", id->binary_version },
		{ "source", id->source_kind },
		{ "workload class", id->workload_class },
		{ "backend requested", id->backend_requested },
		{ "backend selected", str_or(id->backend_selected, "unselected") },
		{ "cache", kh_cache_state__name(id->cache_state) },
		{ "daemon", kh_daemon_state__name(id->daemon_state) },
		{ "detector digest", id->detector_digest },
		{ "config digest", id->config_digest },
	};

	outbuf__puts(b, "<section id=\"identity\">\n<h2>What ran</h2>\n<dl class=\"id\">\n");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		outbuf__printf(b, "<dt>%s</dt><dd class=\"mono\">", rows[i].k);
		html__escape(b, str_or(rows[i].v, "unknown"));
		outbuf__puts(b, "</dd>\n");
	}
	outbuf__printf(b, "<dt>threads</dt><dd>%" PRIu64 " scanner, ", id->scanner_threads);
	if (id->reader_threads.present)
		outbuf__printf(b, "%" PRIu64 " reader", id->reader_threads.value);
	else
		outbuf__puts(b, "automatic reader");
	outbuf__printf(b, "; %" PRIu64 " logical CPUs</dd>\n</dl>\n</section>\n", id->logical_cpus);
}

static const char *const drop_text[KH_DROP_COUNT] = {
	[KH_DROP_STACK_OVERFLOW] = "spans deeper than khprof's stack bound",
	[KH_DROP_UNMATCHED_EXIT] = "span exits without their enter (attached mid-span)",
	[KH_DROP_RINGBUF_FULL] = "events lost to a full ring buffer",
	[KH_DROP_SESSION_SLOTS] = "sessions started while every slot was unread",
	[KH_DROP_BAD_STAGE] = "stage or state numbers out of range",
	[KH_DROP_LATE_BATCH] = "batched spans that ended before their session",
	[KH_DROP_EXIT_UNREAD] = "buffered spans of ending threads that could not be read",
	[KH_DROP_EXIT_UNKNOWN] = "ended threads whose buffers khprof could not find",
	[KH_DROP_UNSEEN] = "spans threads numbered that never reached khprof",
};
/* When the probes went live and in which state, for a record begun mid-session. */
static void render__started_mid(struct outbuf *b, const struct kh_profile_ext *e)
{
	time_t sec;
	struct tm tm;
	char when[64];

	outbuf__puts(b, "<p class=\"note\" id=\"note-started-mid\">Started mid-session: khprof "
			"attached after the session began, so earlier work is not here");
	/* Records from before khprof kept the attach time say no more, as before. */
	if (!e->observed_from_unix_ns.present) {
		outbuf__puts(b, ".</p>\n");
		return;
	}
	sec = (time_t)(e->observed_from_unix_ns.value / 1000000000u);
	if (gmtime_r(&sec, &tm) && strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm))
		outbuf__printf(b, "; observed from <span class=\"mono\" id=\"observed-from\">"
				  "%s.%03u UTC</span>", when,
			       (unsigned)(e->observed_from_unix_ns.value / 1000000u % 1000u));
	if (e->attach_state) {
		outbuf__puts(b, ", when the program was <code id=\"attach-state\">");
		html__escape(b, e->attach_state);
		outbuf__puts(b, "</code>");
	} else {
		outbuf__puts(b, " (the program did not say its state then: time up to the first "
				"observed transition counts as <code>created</code>)");
	}
	outbuf__puts(b, ". The wall time, states and transitions count observed time only.</p>\n");
}

static void render__notes(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_profile_ext *e = &p->ext;

	outbuf__puts(b, "<section id=\"notes\">\n<h2>How it was measured</h2>\n");
	if (!e->present) {
		outbuf__puts(b, "<p>The record has no khprof extension (written in-process by the "
				"scanner's own library).</p>\n</section>\n");
		return;
	}
	outbuf__puts(b, "<p>Traced from outside the process by khprof, mode <code>");
	html__escape(b, str_or(e->mode, "unknown"));
	outbuf__printf(b, "</code>, process %" PRIu64 ", session %" PRIu64 ". ", e->traced_pid,
		       e->session_sequence);
	if (e->probe_cost_ns) {
		outbuf__printf(b, "Each span cost the program about %" PRIu64 " ns; in all about ",
			       e->probe_cost_ns);
		html__duration(b, (double)e->tracer_cost_ns);
		outbuf__puts(b, " (the observer effect).");
	}
	outbuf__puts(b, "</p>\n");
	if (e->started_mid_session)
		render__started_mid(b, e);
	if (e->ended_mid_session && !e->process_end)
		outbuf__puts(b, "<p class=\"note\" id=\"note-ended-mid\">Ended mid-session: the "
				"session had not finished when tracing stopped.</p>\n");
	else if (e->ended_mid_session)
		outbuf__puts(b, "<p class=\"note\" id=\"note-ended-mid\">Ended mid-session: ");
	else if (e->process_end)
		outbuf__puts(b, "<p>At the record's end ");
	if (e->process_end) {
		const char *how = e->process_end;

		/* The card's words, as a sentence. */
		outbuf__printf(b, "<span id=\"note-process-end\">the program %s ",
			       !strcmp(how, "exit")     ? "exited with"
			       : !strcmp(how, "signal") ? "was killed by"
			       : !strcmp(how, "exec")   ? "ran"
						       : "ended:");
		process_end(b, e);
		outbuf__printf(b, "%s</span>%s</p>\n",
			       !strcmp(how, "exec") ? " (its new image is not traced)" : "",
			       e->ended_mid_session ? ", before the session finished." : ".");
	}
	if (e->refused_session_starts)
		outbuf__printf(b, "<p class=\"note\" id=\"note-refused\">%" PRIu64 " session "
				  "start%s refused while this session was open, as the seed refuses "
				  "them (<code>SessionActive</code>): the session went on and their "
				  "spans are in it.</p>\n", e->refused_session_starts,
			       e->refused_session_starts == 1 ? "" : "s");
	if (e->identity_unreadable)
		outbuf__printf(b, "<p class=\"note\" id=\"note-identity-unreadable\">%" PRIu64
				  " identity probe%s passed memory khprof could not read: %s kept "
				  "%s earlier value.</p>\n", e->identity_unreadable,
			       e->identity_unreadable == 1 ? "" : "s",
			       e->identity_unreadable == 1 ? "its field" : "their fields",
			       e->identity_unreadable == 1 ? "its" : "their");
	for (int d = 0; d < KH_DROP_COUNT; d++)
		if (e->drops[d])
			outbuf__printf(b, "<p class=\"note drop\">Not seen: %" PRIu64 " %s.</p>\n",
				       e->drops[d], drop_text[d] ? drop_text[d] : "other losses");
	outbuf__puts(b, "</section>\n");
}

static int stage_by_elapsed_desc(const void *a, const void *b)
{
	const struct kh_stage_measurement *x = a, *y = b;

	if (x->elapsed_ns != y->elapsed_ns)
		return x->elapsed_ns < y->elapsed_ns ? 1 : -1;
	return x->stage < y->stage ? -1 : x->stage > y->stage;
}

/* Horizontal bars, longest first, with the value and calls written beside. */
static void render__stages(struct outbuf *b, const struct kh_profile *p)
{
	struct kh_stage_measurement sorted[KH_STAGE_COUNT];
	const double label_w = 190, bar_x = 200, bar_w = 480, row_h = 24;
	uint64_t max = 1;
	size_t n = p->stage_count;

	outbuf__puts(b, "<section id=\"stages\">\n<h2>Where the time went, per stage</h2>\n");
	if (!n) {
		outbuf__puts(b, "<p>No stage was recorded.</p>\n</section>\n");
		return;
	}
	memcpy(sorted, p->stages, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), stage_by_elapsed_desc);
	for (size_t i = 0; i < n; i++)
		if (sorted[i].elapsed_ns > max)
			max = sorted[i].elapsed_ns;
	outbuf__puts(b, "<p class=\"lead\">Elapsed time of each stage, summed over threads (so "
			"it can exceed the wall time). Hatched: time attributed to decoded content. "
			"<code>backend-dispatch</code> wraps the matcher stages.</p>\n");
	outbuf__printf(b, "<svg id=\"stage-bars\" role=\"img\" aria-label=\"elapsed time per stage\" "
			  "viewBox=\"0 0 %.0f %.0f\">", CHART_W, n * row_h + 8);
	html__svg_defs(b);
	for (size_t i = 0; i < n; i++) {
		const struct kh_stage_measurement *s = &sorted[i];
		double y = 4 + i * row_h, w = bar_w * (double)s->elapsed_ns / (double)max;
		double aw = bar_w * (double)s->attributed_ns / (double)max;
		const char *name = str_or(kh_stage__name(s->stage), "?");

		outbuf__printf(b, "<g class=\"stage-bar\" data-stage=\"%s\"><title>%s</title>", name,
			       name);
		outbuf__printf(b, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
			       label_w, y + 16, name);
		/* A dark outline keeps the light palette colours (yellow) visible. */
		outbuf__printf(b, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" "
				  "fill=\"%s\" stroke=\"#333\" stroke-width=\".6\"/>", bar_x, y + 3,
			       w < 1 && s->elapsed_ns ? 1 : w,
			       row_h - 6, html__stage_colour(s->stage));
		if (aw >= 0.5)
			outbuf__printf(b, "<rect x=\"%.0f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" "
					  "fill=\"url(#hatch)\"/>", bar_x, y + 3, aw, row_h - 6);
		outbuf__printf(b, "<text x=\"%.1f\" y=\"%.1f\">", bar_x + w + 6, y + 16);
		html__duration(b, (double)s->elapsed_ns);
		outbuf__printf(b, " · %" PRIu64 " call%s", s->calls, s->calls == 1 ? "" : "s");
		if (s->calls) {
			outbuf__puts(b, " · ");
			html__duration(b, (double)s->elapsed_ns / (double)s->calls);
			outbuf__puts(b, "/call");
		}
		outbuf__puts(b, "</text></g>\n");
	}
	outbuf__puts(b, "</svg>\n");

	outbuf__puts(b, "<p class=\"lead\">The figures are in the table of stages below.</p>\n</section>\n");
}

static const char *const state_fill[] = { "none", "url(#hatch)", "url(#dots)", "url(#rhatch)" };

/*
 * The macro states as a band over the session's time, with the CPU use of
 * each state as a step chart and RSS at each transition as a line below.
 */
static void render__timeline(struct outbuf *b, const struct kh_profile *p)
{
	const double x0 = 110, w = CHART_W - x0 - 20, band_y = 10, band_h = 34;
	const double cpu_y = 70, cpu_h = 90, rss_y = 190, rss_h = 90, axis_y = 300;
	size_t n = p->transition_count < p->resource_sample_count ? p->transition_count
								     : p->resource_sample_count;
	double span = (double)p->wall_time_ns, cpu_max = 100, rss_max = 0;

	outbuf__puts(b, "<section id=\"timeline\">\n<h2>Macro states over time</h2>\n");
	if (p->transition_count < 2) {
		outbuf__puts(b, "<p>The record has fewer than two state transitions: no timeline."
				"</p>\n</section>\n");
		return;
	}
	if (span < (double)p->transitions[p->transition_count - 1].elapsed_ns)
		span = (double)p->transitions[p->transition_count - 1].elapsed_ns;
	if (span <= 0)
		span = 1;
	/* Shares capped at 100 % per CPU: one whole-ms artefact cannot flatten the rest. */
	for (size_t i = 0; i + 1 < n; i++) {
		struct kh_cpu_share c = profile__window_cpu(p, i);

		if (c.present && c.percent > cpu_max)
			cpu_max = c.percent;
	}
	for (size_t i = 0; i < n; i++)
		if (p->resource_samples[i].snapshot.resident_bytes.present &&
		    (double)p->resource_samples[i].snapshot.resident_bytes.value > rss_max)
			rss_max = (double)p->resource_samples[i].snapshot.resident_bytes.value;
	cpu_max = html__tick_step(cpu_max, 4) * 4;

	outbuf__puts(b, "<p class=\"lead\">Top: the run's macro state. Middle: CPU used in each "
			"state (100 % is one CPU busy). Bottom: resident memory (RSS) sampled at "
			"each transition. Time from the session's start.</p>\n");
	outbuf__printf(b, "<svg id=\"timeline-chart\" role=\"img\" aria-label=\"macro states, CPU "
			  "and RSS over time\" viewBox=\"0 0 %.0f %.0f\">", CHART_W, axis_y + 24);
	html__svg_defs(b);
	outbuf__printf(b, "<text x=\"0\" y=\"%.0f\">state</text>", band_y + 22);
	for (size_t i = 0; i + 1 < p->transition_count; i++) {
		const struct kh_transition *t = &p->transitions[i];
		double a = (double)t[0].elapsed_ns, z = (double)t[1].elapsed_ns;
		double x = x0 + w * a / span, sw = w * (z - a) / span;
		const char *name = str_or(kh_run_state__name(t->state), "?");

		if (z < a)
			continue;
		outbuf__printf(b, "<g class=\"state-seg\" data-state=\"%s\"><title>%s: ", name, name);
		html__duration(b, z - a);
		outbuf__printf(b, "</title><rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" "
				  "fill=\"%s\" stroke=\"#fff\"/>", x, band_y, sw < 0.5 ? 0.5 : sw,
			       band_h, html_palette[(t->state + 4) % 8]);
		outbuf__printf(b, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" "
				  "fill=\"%s\"/>", x, band_y, sw < 0.5 ? 0.5 : sw, band_h,
			       state_fill[t->state % 4]);
		/* Names that do not fit go to the legend below. */
		if (sw > 7.5 * (double)strlen(name) + 8)
			outbuf__printf(b, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" "
					  "style=\"font-weight:600\">%s</text>", x + sw / 2,
				       band_y + 22, name);
		outbuf__puts(b, "</g>");

		/* CPU of the state, as a step at its height. */
		if (i + 1 < n) {
			struct kh_cpu_share c = profile__window_cpu(p, i);

			if (c.present) {
				double h = cpu_h * c.percent / cpu_max;

				outbuf__printf(b, "<rect class=\"cpu-step\" x=\"%.2f\" y=\"%.2f\" "
						  "width=\"%.2f\" height=\"%.2f\" fill=\"#0072B2\" "
						  "fill-opacity=\".75\"><title>%s: CPU %s%.1f %%</title>"
						  "</rect>", x, cpu_y + cpu_h - h, sw < 0.5 ? 0.5 : sw,
					       h, name, c.capped ? "&ge; " : "", c.percent);
			}
		}
	}
	/* CPU axis. */
	outbuf__printf(b, "<text x=\"0\" y=\"%.0f\">CPU</text>", cpu_y + cpu_h / 2);
	for (int k = 0; k <= 4; k++) {
		double y = cpu_y + cpu_h - cpu_h * k / 4.0;

		outbuf__printf(b, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" "
				  "y2=\"%.1f\"/><text class=\"muted\" x=\"%.0f\" y=\"%.1f\" "
				  "text-anchor=\"end\" font-size=\"10\">%.0f %%</text>", x0, y, x0 + w,
			       y, x0 - 4, y + 4, cpu_max * k / 4.0);
	}
	/* RSS line through the transitions' samples. */
	outbuf__printf(b, "<text x=\"0\" y=\"%.0f\">RSS</text>", rss_y + rss_h / 2);
	if (rss_max > 0) {
		bool open = false;

		for (int k = 0; k <= 2; k++) {
			double y = rss_y + rss_h - rss_h * k / 2.0;

			outbuf__printf(b, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" "
					  "y2=\"%.1f\"/><text class=\"muted\" x=\"%.0f\" y=\"%.1f\" "
					  "text-anchor=\"end\" font-size=\"10\">", x0, y, x0 + w, y,
				       x0 - 4, y + 4);
			html__bytes(b, rss_max * k / 2.0);
			outbuf__puts(b, "</text>");
		}
		outbuf__puts(b, "<polyline id=\"rss-line\" fill=\"none\" stroke=\"#D55E00\" "
				"stroke-width=\"2\" points=\"");
		for (size_t i = 0; i < n; i++) {
			const struct kh_resource_sample *s = &p->resource_samples[i];

			if (!s->snapshot.resident_bytes.present)
				continue;
			outbuf__printf(b, "%s%.2f,%.2f", open ? " " : "",
				       x0 + w * (double)s->elapsed_ns / span,
				       rss_y + rss_h -
					       rss_h * (double)s->snapshot.resident_bytes.value / rss_max);
			open = true;
		}
		outbuf__puts(b, "\"/>");
		for (size_t i = 0; i < n; i++) {
			const struct kh_resource_sample *s = &p->resource_samples[i];

			if (!s->snapshot.resident_bytes.present)
				continue;
			outbuf__printf(b, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"#D55E00\">"
					  "<title>", x0 + w * (double)s->elapsed_ns / span,
				       rss_y + rss_h -
					       rss_h * (double)s->snapshot.resident_bytes.value / rss_max);
			html__bytes(b, (double)s->snapshot.resident_bytes.value);
			outbuf__puts(b, "</title></circle>");
		}
	} else {
		outbuf__printf(b, "<text class=\"muted\" x=\"%.0f\" y=\"%.0f\">RSS not sampled</text>",
			       x0 + 8, rss_y + rss_h / 2);
	}
	html__time_axis(b, x0, w, band_y, axis_y, span);
	outbuf__puts(b, "</svg>\n<div class=\"legend\" id=\"state-legend\">");
	for (size_t i = 0; i + 1 < p->transition_count; i++) {
		const struct kh_transition *t = &p->transitions[i];
		bool seen = false;

		for (size_t j = 0; j < i; j++)
			seen |= p->transitions[j].state == t->state;
		if (seen)
			continue;
		outbuf__printf(b, "<span style=\"--c:%s\">%s</span>", html_palette[(t->state + 4) % 8],
			       str_or(kh_run_state__name(t->state), "?"));
	}
	outbuf__puts(b, "</div>\n");

	/* The states as a table too. */
	outbuf__puts(b, "<table id=\"state-table\"><thead><tr><th>state</th><th>wall</th>"
			"<th>CPU</th><th>RSS start</th><th>RSS end</th><th>threads</th></tr>"
			"</thead><tbody>\n");
	for (size_t i = 0; i < p->state_count; i++) {
		const struct kh_state_measurement *s = &p->states[i];
		struct kh_cpu_share c = profile__window_cpu(p, profile__state_window(p, i));

		outbuf__printf(b, "<tr><td>%s</td><td>", str_or(kh_run_state__name(s->state), "?"));
		html__duration(b, (double)s->elapsed_ns);
		outbuf__puts(b, "</td><td>");
		if (c.present)
			outbuf__printf(b, "%s%.1f %%", c.capped ? "&ge; " : "", c.percent);
		else
			outbuf__puts(b, "n/a");
		outbuf__puts(b, "</td><td>");
		if (s->resident_start_bytes.present)
			html__bytes(b, (double)s->resident_start_bytes.value);
		else
			outbuf__puts(b, "n/a");
		outbuf__puts(b, "</td><td>");
		if (s->resident_end_bytes.present)
			html__bytes(b, (double)s->resident_end_bytes.value);
		else
			outbuf__puts(b, "n/a");
		outbuf__puts(b, "</td><td>");
		if (s->threads_start.present && s->threads_end.present)
			outbuf__printf(b, "%" PRIu64 " → %" PRIu64, s->threads_start.value,
				       s->threads_end.value);
		else
			outbuf__puts(b, "n/a");
		outbuf__puts(b, "</td></tr>\n");
	}
	outbuf__puts(b, "</tbody></table>\n</section>\n");
}

/* The stage figures as a table: for screen readers, copying and print. */
static void render__stage_table(struct outbuf *b, const struct kh_profile *p)
{
	uint64_t sum = 0;

	if (!p->stage_count)
		return;
	for (size_t i = 0; i < p->stage_count; i++)
		if (p->stages[i].stage != KH_STAGE_BACKEND_DISPATCH)
			sum += p->stages[i].elapsed_ns;
	outbuf__puts(b, "<section id=\"stage-figures\">\n<h2>Stages in the scanner's order</h2>\n");
	outbuf__puts(b, "<table id=\"stage-table\"><thead><tr><th>stage</th><th>elapsed</th>"
			"<th>share</th><th>calls</th><th>per call</th><th>attributed</th></tr>"
			"</thead><tbody>\n");
	for (size_t i = 0; i < p->stage_count; i++) {
		const struct kh_stage_measurement *s = &p->stages[i];

		outbuf__printf(b, "<tr><td>%s</td><td>", str_or(kh_stage__name(s->stage), "?"));
		html__duration(b, (double)s->elapsed_ns);
		if (s->stage == KH_STAGE_BACKEND_DISPATCH || !sum)
			outbuf__puts(b, "</td><td>—");
		else
			outbuf__printf(b, "</td><td>%.1f %%", 100.0 * (double)s->elapsed_ns / (double)sum);
		outbuf__printf(b, "</td><td>%" PRIu64 "</td><td>", s->calls);
		if (s->calls)
			html__duration(b, (double)s->elapsed_ns / (double)s->calls);
		else
			outbuf__puts(b, "—");
		outbuf__puts(b, "</td><td>");
		html__duration(b, (double)s->attributed_ns);
		outbuf__puts(b, "</td></tr>\n");
	}
	outbuf__puts(b, "</tbody></table>\n</section>\n");
}

char *profile__render_html(const struct kh_profile *p)
{
	struct outbuf b;
	char *html;

	outbuf__init(&b);
	html__open(&b, p->identity.run_id ? p->identity.run_id : "KeyHog profile");
	outbuf__puts(&b, "<header id=\"run-header\"><h1>KeyHog profile</h1>\n"
			 "<p class=\"lead\">Run <code id=\"run-id\">");
	html__escape(&b, p->identity.run_id);
	outbuf__puts(&b, "</code> of <code>");
	html__escape(&b, p->identity.binary_version);
	outbuf__puts(&b, "</code>, workload <code>");
	html__escape(&b, p->identity.workload_class);
	outbuf__puts(&b, "</code>. A profile of one scanner run: how long it took, how fast it "
			 "read its input, and which stage of the scanner took the time.</p>\n"
			 "</header>\n");
	render__summary(&b, p);
	render__stages(&b, p);
	render__timeline(&b, p);
	html__render_series(&b, p);
	render__stage_table(&b, p);
	html__render_latency(&b, p);
	html__render_flames(&b, p);
	render__identity(&b, p);
	render__notes(&b, p);
	html__close(&b);
	html = outbuf__finish(&b);
	if (!html)
		errno = ENOMEM;
	return html;
}
