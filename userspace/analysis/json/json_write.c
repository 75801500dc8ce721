// SPDX-License-Identifier: MIT
/*
 * json_write.c - RunProfile to keyhog-profile-v1 JSON, written by hand.
 *
 * cJSON's printer cannot reproduce serde_json's pretty layout (two-space
 * indent, "key": value, empty containers as [] and {}) or its float
 * spelling (ryu's shortest digits, "1.0", "1e-7"), and the seed's readers
 * and goldens compare records byte for byte, so the writer is our own.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "json_number.h"
#include "outbuf.h"
#include "utf8.h"

/* ------------------------------------------------------------------ */
/* Writer: serde_json's PrettyFormatter                                */
/* ------------------------------------------------------------------ */

#define WRITER_MAX_DEPTH 8

struct writer {
	struct outbuf out;
	int depth;
	size_t items[WRITER_MAX_DEPTH];
};

static void writer__newline(struct writer *w)
{
	outbuf__putc(&w->out, '\n');
	for (int i = 0; i < w->depth; i++)
		outbuf__puts(&w->out, "  ");
}

static void writer__open(struct writer *w, char bracket)
{
	outbuf__putc(&w->out, bracket);
	w->items[++w->depth] = 0;
}

static void writer__close(struct writer *w, char bracket)
{
	bool empty = w->items[w->depth] == 0;

	w->depth--;
	if (!empty)
		writer__newline(w);
	outbuf__putc(&w->out, bracket);
}

/* Separator and indentation before the next element or member. */
static void writer__next(struct writer *w)
{
	if (w->items[w->depth]++)
		outbuf__putc(&w->out, ',');
	writer__newline(w);
}

/* serde_json escapes quote, backslash and C0 controls, nothing else. */
static void writer__string(struct writer *w, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(s);

	outbuf__putc(&w->out, '"');
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		bool valid;
		size_t step;

		if (c == '"' || c == '\\') {
			outbuf__putc(&w->out, '\\');
			outbuf__putc(&w->out, (char)c);
			i++;
			continue;
		}
		if (c < 0x20) {
			const char *short_form = c == '\b' ? "\\b" : c == '\t' ? "\\t" : c == '\n' ? "\\n"
					       : c == '\f' ? "\\f" : c == '\r' ? "\\r" : NULL;
			if (short_form)
				outbuf__puts(&w->out, short_form);
			else
				outbuf__printf(&w->out, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
			i++;
			continue;
		}
		/* A Rust String is UTF-8; repair rather than emit unreadable JSON. */
		step = utf8__scan((const unsigned char *)s + i, n - i, &valid);
		if (valid)
			outbuf__put(&w->out, s + i, step);
		else
			outbuf__puts(&w->out, "\xEF\xBF\xBD");
		i += step;
	}
	outbuf__putc(&w->out, '"');
}

static void writer__key(struct writer *w, const char *key)
{
	writer__next(w);
	writer__string(w, key);
	outbuf__puts(&w->out, ": ");
}

static void writer__u64(struct writer *w, const char *key, uint64_t value)
{
	writer__key(w, key);
	outbuf__printf(&w->out, "%" PRIu64, value);
}

static void writer__opt_u64(struct writer *w, const char *key, struct kh_opt_u64 value)
{
	if (value.present) {
		writer__u64(w, key, value.value);
		return;
	}
	writer__key(w, key);
	outbuf__puts(&w->out, "null");
}

static void writer__opt_f64(struct writer *w, const char *key, struct kh_opt_f64 value)
{
	writer__key(w, key);
	if (value.present)
		json__put_f64(&w->out, value.value);
	else
		outbuf__puts(&w->out, "null");
}

static void writer__str(struct writer *w, const char *key, const char *value)
{
	writer__key(w, key);
	if (value)
		writer__string(w, value);
	else
		outbuf__puts(&w->out, "null");
}

static void writer__bool(struct writer *w, const char *key, bool value)
{
	writer__key(w, key);
	outbuf__puts(&w->out, value ? "true" : "false");
}

static void writer__open_member(struct writer *w, const char *key, char bracket)
{
	writer__key(w, key);
	writer__open(w, bracket);
}

/* An object as the next element of the array being written. */
static void writer__open_item(struct writer *w)
{
	writer__next(w);
	writer__open(w, '{');
}

static void writer__snapshot(struct writer *w, const char *key,
			     const struct kh_resource_snapshot *s)
{
	writer__open_member(w, key, '{');
	writer__opt_u64(w, "cpu_time_ms", s->cpu_time_ms);
	writer__opt_u64(w, "resident_bytes", s->resident_bytes);
	writer__opt_u64(w, "virtual_bytes", s->virtual_bytes);
	writer__opt_u64(w, "thread_count", s->thread_count);
	writer__close(w, '}');
}

static void writer__identity(struct writer *w, const struct kh_identity *id)
{
	writer__open_member(w, "identity", '{');
	writer__str(w, "run_id", id->run_id);
	writer__str(w, "binary_version", id->binary_version);
	writer__str(w, "detector_digest", id->detector_digest);
	writer__str(w, "config_digest", id->config_digest);
	writer__str(w, "source_kind", id->source_kind);
	writer__str(w, "workload_class", id->workload_class);
	writer__str(w, "backend_requested", id->backend_requested);
	writer__str(w, "backend_selected", id->backend_selected);
	writer__str(w, "cache_state", kh_cache_state__name(id->cache_state));
	writer__str(w, "daemon_state", kh_daemon_state__name(id->daemon_state));
	writer__u64(w, "scanner_threads", id->scanner_threads);
	writer__opt_u64(w, "reader_threads", id->reader_threads);
	writer__u64(w, "logical_cpus", id->logical_cpus);
	writer__close(w, '}');
}

static void writer__stages(struct writer *w, const struct kh_profile *p)
{
	writer__open_member(w, "stages", '[');
	for (size_t i = 0; i < p->stage_count; i++) {
		const struct kh_stage_measurement *s = &p->stages[i];

		writer__open_item(w);
		writer__str(w, "stage", kh_stage__name(s->stage));
		writer__u64(w, "elapsed_ns", s->elapsed_ns);
		writer__u64(w, "calls", s->calls);
		writer__u64(w, "attributed_ns", s->attributed_ns);
		writer__close(w, '}');
	}
	writer__close(w, ']');
}

static void writer__transitions(struct writer *w, const struct kh_profile *p)
{
	writer__open_member(w, "transitions", '[');
	for (size_t i = 0; i < p->transition_count; i++) {
		writer__open_item(w);
		writer__str(w, "state", kh_run_state__name(p->transitions[i].state));
		writer__u64(w, "elapsed_ns", p->transitions[i].elapsed_ns);
		writer__close(w, '}');
	}
	writer__close(w, ']');
}

static void writer__states(struct writer *w, const struct kh_profile *p)
{
	writer__open_member(w, "states", '[');
	for (size_t i = 0; i < p->state_count; i++) {
		const struct kh_state_measurement *s = &p->states[i];

		writer__open_item(w);
		writer__str(w, "state", kh_run_state__name(s->state));
		writer__u64(w, "elapsed_ns", s->elapsed_ns);
		writer__opt_u64(w, "cpu_time_ms", s->cpu_time_ms);
		writer__opt_u64(w, "aggregate_cpu_milli_percent", s->aggregate_cpu_milli_percent);
		writer__opt_u64(w, "resident_start_bytes", s->resident_start_bytes);
		writer__opt_u64(w, "resident_end_bytes", s->resident_end_bytes);
		writer__opt_u64(w, "threads_start", s->threads_start);
		writer__opt_u64(w, "threads_end", s->threads_end);
		writer__close(w, '}');
	}
	writer__close(w, ']');
}

static void writer__samples(struct writer *w, const struct kh_profile *p)
{
	writer__open_member(w, "resource_samples", '[');
	for (size_t i = 0; i < p->resource_sample_count; i++) {
		const struct kh_resource_sample *s = &p->resource_samples[i];

		writer__open_item(w);
		writer__str(w, "state", kh_run_state__name(s->state));
		writer__u64(w, "elapsed_ns", s->elapsed_ns);
		writer__snapshot(w, "snapshot", &s->snapshot);
		writer__close(w, '}');
	}
	writer__close(w, ']');
}

static void writer__resources(struct writer *w, const struct kh_resource_usage *r)
{
	writer__open_member(w, "resources", '{');
	writer__snapshot(w, "start", &r->start);
	writer__snapshot(w, "finish", &r->finish);
	writer__opt_u64(w, "max_observed_resident_bytes", r->max_observed_resident_bytes);
	writer__opt_u64(w, "max_observed_threads", r->max_observed_threads);
	writer__opt_f64(w, "aggregate_cpu_percent", r->aggregate_cpu_percent);
	writer__close(w, '}');
}

/* One column of the series: a value per interval. */
static void writer__column(struct writer *w, const char *name, const struct kh_series *s,
			   size_t offset, bool optional)
{
	writer__open_member(w, name, '[');
	for (size_t i = 0; i < s->count; i++) {
		const char *field = (const char *)&s->intervals[i] + offset;

		writer__next(w);
		if (optional) {
			const struct kh_opt_u64 *v = (const struct kh_opt_u64 *)field;

			if (v->present)
				outbuf__printf(&w->out, "%" PRIu64, v->value);
			else
				outbuf__puts(&w->out, "null");
		} else {
			outbuf__printf(&w->out, "%" PRIu64, *(const uint64_t *)field);
		}
	}
	writer__close(w, ']');
}

/*
 * The series by columns (an array per quantity, a value per interval): a
 * third of the lines of an object per interval in this pretty layout, and
 * what plotting tools take directly.  Stages that are zero in every
 * interval are left out.
 */
static void writer__series(struct writer *w, const struct kh_series *s)
{
	writer__open_member(w, "series", '{');
	writer__u64(w, "interval_ns", s->interval_ns);
	writer__u64(w, "merged", s->merged);
	writer__column(w, "start_ns", s, offsetof(struct kh_interval, start_ns), false);
	writer__column(w, "duration_ns", s, offsetof(struct kh_interval, duration_ns), false);
	writer__open_member(w, "state", '[');
	for (size_t i = 0; i < s->count; i++) {
		writer__next(w);
		writer__string(w, kh_run_state__name(s->intervals[i].state));
	}
	writer__close(w, ']');
	writer__column(w, "input_bytes", s, offsetof(struct kh_interval, input_bytes), false);
	writer__column(w, "input_units", s, offsetof(struct kh_interval, input_units), false);
	writer__column(w, "cpu_time_ms", s, offsetof(struct kh_interval, cpu_time_ms), true);
	writer__column(w, "cpu_time_ns", s, offsetof(struct kh_interval, cpu_time_ns), true);
	writer__column(w, "resident_bytes", s, offsetof(struct kh_interval, resident_bytes),
		       true);
	writer__open_member(w, "stages", '{');
	for (int st = 0; st < KH_STAGE_COUNT; st++) {
		bool any = false;

		for (size_t i = 0; i < s->count && !any; i++)
			any = s->intervals[i].elapsed_ns[st] || s->intervals[i].calls[st];
		if (!any)
			continue;
		writer__open_member(w, kh_stage__name((uint32_t)st), '{');
		writer__column(w, "elapsed_ns", s,
			       offsetof(struct kh_interval, elapsed_ns) + st * sizeof(uint64_t), false);
		writer__column(w, "calls", s,
			       offsetof(struct kh_interval, calls) + st * sizeof(uint64_t), false);
		writer__close(w, '}');
	}
	writer__close(w, '}');
	writer__close(w, '}');
}

/* khprof.latency (docs/SCHEMA.md): derived figures first, buckets last. */
static void writer__latency_off_cpu(struct writer *w, const struct kh_profile *p,
				    const struct kh_stage_dist *d, uint32_t stage)
{
	const struct kh_stage_measurement *m = profile__find_stage(p, stage);
	uint64_t elapsed = m ? m->elapsed_ns : 0;
	uint64_t off = d->off_cpu_ns, runnable = d->runnable_ns;
	struct kh_opt_u64 none = { false, 0 };
	bool known = p->ext.latency.off_cpu;

	writer__opt_u64(w, "on_cpu_ns", known ? (struct kh_opt_u64){ true, elapsed > off ? elapsed - off : 0 } : none);
	writer__opt_u64(w, "off_cpu_ns", known ? (struct kh_opt_u64){ true, off } : none);
	writer__opt_u64(w, "runnable_ns", known ? (struct kh_opt_u64){ true, runnable } : none);
	writer__opt_u64(w, "blocked_ns",
			known ? (struct kh_opt_u64){ true, off > runnable ? off - runnable : 0 } : none);
	writer__u64(w, "offcpu_truncated", d->offcpu_truncated);
}

static void writer__latency(struct writer *w, const struct kh_profile *p)
{
	const struct kh_latency *l = &p->ext.latency;

	writer__open_member(w, "latency", '{');
	writer__u64(w, "bucket_count", KH_HIST_BUCKETS);
	writer__u64(w, "linear_below_ns", KH_HIST_LINEAR);
	writer__u64(w, "buckets_per_octave", KH_HIST_SUB);
	writer__bool(w, "off_cpu", l->off_cpu);
	writer__u64(w, "missed_switches", l->missed_switches);
	writer__open_member(w, "stages", '[');
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_dist *d = &l->stages[st];
		bool first = true;

		if (!d->present)
			continue;
		writer__open_item(w);
		writer__str(w, "stage", kh_stage__name(st));
		writer__u64(w, "spans", d->spans);
		writer__u64(w, "min_ns", d->min_ns);
		for (int q = 0; q < KH_DIST_PERCENTILES; q++) {
			char key[16];

			snprintf(key, sizeof(key), "%s_ns", kh_dist_percentile_name[q]);
			writer__u64(w, key, kh_dist__percentile(d, kh_dist_permille[q],
								 p->ext.span_bias_ns));
		}
		writer__u64(w, "max_ns", d->max_ns);
		writer__latency_off_cpu(w, p, d, st);
		/* [index, count] pairs of the non-empty buckets, on one line. */
		writer__key(w, "buckets");
		outbuf__putc(&w->out, '[');
		for (uint32_t i = 0; d->counts && i < KH_HIST_BUCKETS; i++) {
			if (!d->counts[i])
				continue;
			outbuf__printf(&w->out, "%s[%" PRIu32 ", %" PRIu64 "]", first ? "" : ", ", i,
				       d->counts[i]);
			first = false;
		}
		outbuf__putc(&w->out, ']');
		writer__close(w, '}');
	}
	writer__close(w, ']');
	writer__close(w, '}');
}

/* --sample's stacks: names once, each stack as name indices on one line. */
static void writer__stacks(struct writer *w, const struct kh_stacks *s)
{
	writer__open_member(w, "stacks", '{');
	writer__u64(w, "rate_hz", s->rate_hz);
	writer__str(w, "unwinding", s->unwinding);
	writer__u64(w, "samples", s->samples);
	writer__open_member(w, "tags", '{');
	for (uint32_t i = 0; i < KH_SAMPLE_TAG_COUNT; i++)
		writer__u64(w, kh_sample_tag__name(i), s->tags[i]);
	writer__close(w, '}');
	writer__u64(w, "in_kernel", s->in_kernel);
	writer__u64(w, "truncated", s->truncated);
	writer__u64(w, "unwind_failed", s->unwind_failed);
	writer__u64(w, "leaf_restored", s->leaf_restored);
	writer__u64(w, "incomplete", s->incomplete);
	writer__u64(w, "ring_full", s->ring_full);
	writer__u64(w, "threads_missed", s->threads_missed);
	writer__open_member(w, "names", '[');
	for (size_t i = 0; i < s->name_count; i++) {
		writer__next(w);
		writer__string(w, s->names[i]);
	}
	writer__close(w, ']');
	writer__open_member(w, "stacks", '[');
	for (size_t i = 0; i < s->stack_count; i++) {
		const struct kh_stack *st = &s->stacks[i];

		writer__open_item(w);
		writer__str(w, "stage", st->stage == KH_NO_STAGE ? NULL : kh_stage__name(st->stage));
		writer__str(w, "attribution",
			    st->attribution == KH_ATTRIBUTION_DECODED ? "decoded" : "root");
		writer__u64(w, "count", st->count);
		writer__str(w, "unwind", kh_unwind__name(st->unwind));
		writer__bool(w, "complete", !st->incomplete);
		writer__key(w, "frames");
		outbuf__putc(&w->out, '[');
		for (uint32_t f = 0; f < st->frame_count; f++)
			outbuf__printf(&w->out, "%s%" PRIu32, f ? ", " : "", st->frames[f]);
		outbuf__putc(&w->out, ']');
		writer__close(w, '}');
	}
	writer__close(w, ']');
	writer__u64(w, "timeline_every", s->timeline_every);
	/* [at_ns, tid, stack] per sample, one to a line. */
	writer__open_member(w, "timeline", '[');
	for (size_t i = 0; i < s->timeline_count; i++) {
		writer__next(w);
		outbuf__printf(&w->out, "[%" PRIu64 ", %" PRIu32 ", %" PRIu32 "]",
			       s->timeline[i].at_ns, s->timeline[i].tid, s->timeline[i].stack);
	}
	writer__close(w, ']');
	writer__close(w, '}');
}

static void writer__ext(struct writer *w, const struct kh_profile *p)
{
	const struct kh_profile_ext *ext = &p->ext;

	writer__open_member(w, "khprof", '{');
	writer__str(w, "mode", ext->mode);
	/* Only when known: records of older khprof versions round-trip unchanged. */
	if (ext->span_clock) {
		writer__str(w, "span_clock", ext->span_clock);
		writer__str(w, "span_clock_reason", ext->span_clock_reason);
	}
	writer__bool(w, "started_mid_session", ext->started_mid_session);
	writer__bool(w, "ended_mid_session", ext->ended_mid_session);
	writer__open_member(w, "drops", '{');
	for (uint32_t i = 0; i < KH_DROP_COUNT; i++)
		writer__u64(w, kh_drop__name(i), ext->drops[i]);
	writer__close(w, '}');
	writer__u64(w, "probe_hits", ext->probe_hits);
	writer__u64(w, "probe_cost_ns", ext->probe_cost_ns);
	writer__u64(w, "tracer_cost_ns", ext->tracer_cost_ns);
	writer__u64(w, "span_bias_ns", ext->span_bias_ns);
	writer__u64(w, "traced_pid", ext->traced_pid);
	/* Only when known: records of older khprof versions round-trip unchanged. */
	if (ext->cgroup) {
		writer__u64(w, "namespace_pid", ext->namespace_pid);
		writer__str(w, "cgroup", ext->cgroup);
		writer__opt_u64(w, "cgroup_id", ext->cgroup_id);
		writer__str(w, "container_id", ext->container_id);
	}
	writer__u64(w, "session_sequence", ext->session_sequence);
	writer__u64(w, "sample_latency_ns_max", ext->sample_latency_ns_max);
	if (ext->series.interval_ns)
		writer__series(w, &ext->series);
	writer__u64(w, "identity_unreadable", ext->identity_unreadable);
	writer__open_member(w, "samples", '[');
	for (size_t i = 0; i < ext->sample_count; i++) {
		const struct kh_sample_ext *s = &ext->samples[i];

		writer__open_item(w);
		writer__opt_u64(w, "cpu_time_ns", s->cpu_time_ns);
		writer__opt_u64(w, "peak_resident_bytes", s->peak_resident_bytes);
		writer__opt_u64(w, "peak_threads", s->peak_threads);
		writer__close(w, '}');
	}
	writer__close(w, ']');
	writer__str(w, "process_end", ext->process_end);
	writer__opt_u64(w, "exit_code", ext->exit_code);
	writer__opt_u64(w, "exit_signal", ext->exit_signal);
	writer__u64(w, "refused_session_starts", ext->refused_session_starts);
	writer__u64(w, "begun_before_session", ext->begun_before_session);
	writer__opt_u64(w, "observed_from_unix_ns", ext->observed_from_unix_ns);
	writer__str(w, "attach_state", ext->attach_state);
	if (ext->latency.present)
		writer__latency(w, p);
	if (ext->kernel_release) {
		writer__open_member(w, "kernel", '{');
		writer__str(w, "release", ext->kernel_release);
		writer__open_member(w, "degraded", '[');
		for (size_t i = 0; i < ext->kernel_degraded_count; i++) {
			writer__next(w);
			writer__string(w, ext->kernel_degraded[i]);
		}
		writer__close(w, ']');
		writer__close(w, '}');
	}
	if (ext->stacks.present)
		writer__stacks(w, &ext->stacks);
	if (ext->refused_site_count) {
		writer__open_member(w, "refused_sites", '[');
		for (size_t i = 0; i < ext->refused_site_count; i++) {
			const struct kh_refused_site *r = &ext->refused_sites[i];

			writer__open_item(w);
			writer__str(w, "file", r->file);
			writer__str(w, "provider", r->provider);
			writer__str(w, "name", r->name);
			writer__u64(w, "address", r->address);
			writer__str(w, "refusal", r->refusal);
			writer__str(w, "reason", r->reason);
			writer__close(w, '}');
		}
		writer__close(w, ']');
	}
	writer__close(w, '}');
}

/* Only names from the tables can be written: the seed could not read others. */
static bool profile__enums_valid(const struct kh_profile *p)
{
	bool ok = p->status < KH_STATE_COUNT && p->identity.cache_state < KH_CACHE_COUNT &&
		  p->identity.daemon_state < KH_DAEMON_COUNT && p->stage_count <= KH_STAGE_COUNT;

	for (size_t i = 0; ok && i < p->stage_count; i++)
		ok = p->stages[i].stage < KH_STAGE_COUNT;
	for (size_t i = 0; ok && i < p->transition_count; i++)
		ok = p->transitions[i].state < KH_STATE_COUNT;
	for (size_t i = 0; ok && i < p->state_count; i++)
		ok = p->states[i].state < KH_STATE_COUNT;
	for (size_t i = 0; ok && i < p->resource_sample_count; i++)
		ok = p->resource_samples[i].state < KH_STATE_COUNT;
	for (size_t i = 0; ok && i < p->ext.series.count; i++)
		ok = p->ext.series.intervals[i].state < KH_STATE_COUNT;
	return ok;
}

static bool identity__complete(const struct kh_identity *id)
{
	return id->run_id && id->binary_version && id->detector_digest && id->config_digest &&
	       id->source_kind && id->workload_class && id->backend_requested;
}

char *profile__to_json(const struct kh_profile *p)
{
	struct writer w = { .depth = 0 };
	char *text;

	if (!p->schema || !identity__complete(&p->identity) || !profile__enums_valid(p)) {
		errno = EINVAL;
		return NULL;
	}
	outbuf__init(&w.out);
	writer__open(&w, '{');
	writer__str(&w, "schema", p->schema);
	writer__identity(&w, &p->identity);
	writer__str(&w, "status", kh_run_state__name(p->status));
	writer__u64(&w, "wall_time_ns", p->wall_time_ns);
	writer__u64(&w, "input_bytes", p->input_bytes);
	writer__u64(&w, "input_units", p->input_units);
	writer__stages(&w, p);
	writer__transitions(&w, p);
	writer__states(&w, p);
	writer__samples(&w, p);
	writer__resources(&w, &p->resources);
	if (p->ext.present)
		writer__ext(&w, p);
	writer__close(&w, '}');
	outbuf__putc(&w.out, '\n');
	text = outbuf__finish(&w.out);
	if (!text)
		errno = ENOMEM;
	return text;
}
