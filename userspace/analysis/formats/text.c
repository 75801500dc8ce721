// SPDX-License-Identifier: MIT
/*
 * text.c - RunProfile::render_text, line for line.
 *
 * Rust's {:.N} and printf's %.Nf both print the exact binary value rounded
 * half to even, so "%.3f" is the seed's "{:.3}" for finite values; only
 * the spelling of NaN and infinities differs and is handled here.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "outbuf.h"
#include "text.h"

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

static double ns_to_ms(uint64_t ns)
{
	return (double)ns / 1000000.0;
}

/* Rust's Display of a non-finite f64. */
static const char *nonfinite_name(double v)
{
	if (isnan(v))
		return "NaN";
	return v > 0 ? "inf" : "-inf";
}

/* Rust's {:>width.precision} of an f64. */
static void put_fixed(struct outbuf *b, int width, int precision, double v)
{
	if (isfinite(v))
		outbuf__printf(b, "%*.*f", width, precision, v);
	else
		outbuf__printf(b, "%*s", width, nonfinite_name(v));
}

static double throughput_mib_s(const struct kh_profile *p)
{
	if (p->wall_time_ns == 0)
		return 0.0;
	return (double)p->input_bytes * 1000000000.0 / (double)p->wall_time_ns /
	       (1024.0 * 1024.0);
}

static void render__header(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_identity *id = &p->identity;

	outbuf__printf(b, "KeyHog profile %s\n", or_empty(id->run_id));
	outbuf__printf(b,
		       "state=%s source=%s workload=%s backend_requested=%s backend_selected=%s cache=%s daemon=%s wall_ms=",
		       or_empty(kh_run_state__name(p->status)), or_empty(id->source_kind),
		       or_empty(id->workload_class), or_empty(id->backend_requested),
		       id->backend_selected ? id->backend_selected : "unselected",
		       or_empty(kh_cache_state__name(id->cache_state)),
		       or_empty(kh_daemon_state__name(id->daemon_state)));
	put_fixed(b, 0, 3, ns_to_ms(p->wall_time_ns));
	outbuf__printf(b, "\nversion=%s detector_digest=%s config_digest=%s\n",
		       or_empty(id->binary_version), or_empty(id->detector_digest),
		       or_empty(id->config_digest));
	outbuf__printf(b, "input_bytes=%" PRIu64 " input_units=%" PRIu64 " throughput_mib_s=",
		       p->input_bytes, p->input_units);
	put_fixed(b, 0, 3, throughput_mib_s(p));
	outbuf__printf(b, " scanner_threads=%" PRIu64 " reader_threads=", id->scanner_threads);
	if (id->reader_threads.present)
		outbuf__printf(b, "%" PRIu64, id->reader_threads.value);
	else
		outbuf__puts(b, "auto");
	outbuf__printf(b, " logical_cpus=%" PRIu64 "\n", id->logical_cpus);
}

static void render__state(struct outbuf *b, const struct kh_state_measurement *s)
{
	outbuf__printf(b, "macro %-12s wall_ms=", or_empty(kh_run_state__name(s->state)));
	put_fixed(b, 0, 3, ns_to_ms(s->elapsed_ns));
	if (s->aggregate_cpu_milli_percent.present)
		outbuf__printf(b, " cpu=%.1f%%",
			       (double)s->aggregate_cpu_milli_percent.value / 1000.0);
	else
		outbuf__puts(b, " cpu=unavailable");
	if (s->resident_start_bytes.present && s->resident_end_bytes.present)
		outbuf__printf(b, " rss_bytes=%" PRIu64 "->%" PRIu64, s->resident_start_bytes.value,
			       s->resident_end_bytes.value);
	if (s->threads_start.present && s->threads_end.present)
		outbuf__printf(b, " threads=%" PRIu64 "->%" PRIu64, s->threads_start.value,
			       s->threads_end.value);
	outbuf__putc(b, '\n');
}

static void render__stage(struct outbuf *b, const struct kh_stage_measurement *s)
{
	double per_call_us = s->calls == 0 ? 0.0 : (double)s->elapsed_ns / (double)s->calls / 1000.0;

	outbuf__printf(b, "  %-24s ", or_empty(kh_stage__name(s->stage)));
	put_fixed(b, 10, 3, ns_to_ms(s->elapsed_ns));
	outbuf__printf(b, " ms calls=%" PRIu64 " per_call_us=", s->calls);
	put_fixed(b, 0, 3, per_call_us);
	outbuf__puts(b, " attributed_ms=");
	put_fixed(b, 0, 3, ns_to_ms(s->attributed_ns));
	outbuf__putc(b, '\n');
}

static void render__bottleneck(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_state_measurement *state = profile__bottleneck_state(p);
	const struct kh_stage_measurement *stage = profile__bottleneck_stage(p);

	if (state) {
		outbuf__printf(b, "bottleneck macro=%s wall_ms=",
			       or_empty(kh_run_state__name(state->state)));
		put_fixed(b, 0, 3, ns_to_ms(state->elapsed_ns));
	}
	if (stage) {
		outbuf__printf(b, " summed_stage=%s summed_ms=",
			       or_empty(kh_stage__name(stage->stage)));
		put_fixed(b, 0, 3, ns_to_ms(stage->elapsed_ns));
	}
	if (p->state_count || p->stage_count)
		outbuf__putc(b, '\n');
}

static void render__resources(struct outbuf *b, const struct kh_resource_usage *r)
{
	if (r->aggregate_cpu_percent.present) {
		outbuf__puts(b, "resources aggregate_cpu=");
		put_fixed(b, 0, 1, r->aggregate_cpu_percent.value);
		outbuf__putc(b, '%');
	} else {
		outbuf__puts(b, "resources aggregate_cpu=unavailable");
	}
	if (r->max_observed_resident_bytes.present)
		outbuf__printf(b, " max_observed_rss_bytes=%" PRIu64,
			       r->max_observed_resident_bytes.value);
	if (r->max_observed_threads.present)
		outbuf__printf(b, " max_observed_threads=%" PRIu64, r->max_observed_threads.value);
	outbuf__putc(b, '\n');
}

char *profile__render_text(const struct kh_profile *p)
{
	struct outbuf b;
	char *text;

	outbuf__init(&b);
	render__header(&b, p);
	for (size_t i = 0; i < p->state_count; i++)
		render__state(&b, &p->states[i]);
	for (size_t i = 0; i < p->stage_count; i++)
		render__stage(&b, &p->stages[i]);
	render__bottleneck(&b, p);
	render__resources(&b, &p->resources);
	text = outbuf__finish(&b);
	if (!text)
		errno = ENOMEM;
	return text;
}
