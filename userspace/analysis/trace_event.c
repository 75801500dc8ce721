// SPDX-License-Identifier: MIT
/*
 * trace_event.c - Chrome trace-event JSON ("JSON Object Format": an object
 * with a traceEvents array) for one record.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outbuf.h"
#include "trace_event.h"

/* The tids of the process's tracks: one per kind of row. */
enum { TID_STATES = 1 };

struct writer {
	struct outbuf b;
	uint64_t pid;
	bool first;
};

static void put_string(struct outbuf *b, const char *s)
{
	outbuf__putc(b, '"');
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			outbuf__printf(b, "\\%c", c);
		else if (c < 0x20)
			outbuf__printf(b, "\\u%04x", c);
		else
			outbuf__putc(b, (char)c);
	}
	outbuf__putc(b, '"');
}

/* Microseconds with the nanoseconds as three decimals, exactly. */
static void put_us(struct outbuf *b, uint64_t ns)
{
	outbuf__printf(b, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

/* Opens an event: {"name":…,"ph":…,"pid":…,"tid":…,"ts":… — args follow. */
static void event_open(struct writer *w, const char *name, char ph, uint64_t tid, uint64_t ts_ns)
{
	outbuf__puts(&w->b, w->first ? "\n" : ",\n");
	w->first = false;
	outbuf__puts(&w->b, "{\"name\":");
	put_string(&w->b, name);
	outbuf__printf(&w->b, ",\"cat\":\"khprof\",\"ph\":\"%c\",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64
			      ",\"ts\":", ph, w->pid, tid);
	put_us(&w->b, ts_ns);
}

static void metadata(struct writer *w, const char *what, uint64_t tid, const char *name)
{
	event_open(w, what, 'M', tid, 0);
	outbuf__puts(&w->b, ",\"args\":{\"name\":");
	put_string(&w->b, name);
	outbuf__puts(&w->b, "}}");
}

static void slice(struct writer *w, const char *name, uint64_t tid, uint64_t start_ns,
		  uint64_t dur_ns)
{
	event_open(w, name, 'X', tid, start_ns);
	outbuf__puts(&w->b, ",\"dur\":");
	put_us(&w->b, dur_ns);
}

static void counter(struct writer *w, const char *name, uint64_t ts_ns, const char *series,
		    double value)
{
	event_open(w, name, 'C', TID_STATES, ts_ns);
	outbuf__puts(&w->b, ",\"args\":{");
	put_string(&w->b, series);
	outbuf__printf(&w->b, ":%.6g}}", value);
}

static void identity_object(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_identity *id = &p->identity;
	const struct { const char *k, *v; } s[] = {
		{ "run_id", id->run_id },
		{ "binary_version", id->binary_version },
		{ "detector_digest", id->detector_digest },
		{ "config_digest", id->config_digest },
		{ "source_kind", id->source_kind },
		{ "workload_class", id->workload_class },
		{ "backend_requested", id->backend_requested },
		{ "backend_selected", id->backend_selected ? id->backend_selected : "unselected" },
		{ "cache_state", kh_cache_state__name(id->cache_state) },
		{ "daemon_state", kh_daemon_state__name(id->daemon_state) },
		{ "status", kh_run_state__name(p->status) },
		{ "khprof_mode", p->ext.mode },
	};

	outbuf__puts(b, "{\"schema\":");
	put_string(b, p->schema);
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		outbuf__printf(b, ",\"%s\":", s[i].k);
		put_string(b, s[i].v ? s[i].v : "unknown");
	}
	outbuf__printf(b, ",\"scanner_threads\":%" PRIu64 ",\"logical_cpus\":%" PRIu64
			  ",\"wall_time_ns\":%" PRIu64 ",\"input_bytes\":%" PRIu64
			  ",\"input_units\":%" PRIu64,
		       id->scanner_threads, id->logical_cpus, p->wall_time_ns, p->input_bytes,
		       p->input_units);
	/* How the process ended, when it did inside the record; as the record spells it. */
	if (p->ext.process_end) {
		outbuf__puts(b, ",\"process_end\":");
		put_string(b, p->ext.process_end);
		if (p->ext.exit_code.present)
			outbuf__printf(b, ",\"exit_code\":%" PRIu64, p->ext.exit_code.value);
		if (p->ext.exit_signal.present)
			outbuf__printf(b, ",\"exit_signal\":%" PRIu64, p->ext.exit_signal.value);
	}
	outbuf__putc(b, '}');
}

static void states(struct writer *w, const struct kh_profile *p)
{
	size_t n = p->transition_count < p->resource_sample_count ? p->transition_count
								     : p->resource_sample_count;

	for (size_t i = 0; i + 1 < p->transition_count; i++) {
		const struct kh_transition *t = &p->transitions[i];
		const char *name = kh_run_state__name(t->state);

		if (t[1].elapsed_ns < t[0].elapsed_ns)
			continue;
		slice(w, name ? name : "unknown", TID_STATES, t[0].elapsed_ns,
		      t[1].elapsed_ns - t[0].elapsed_ns);
		outbuf__puts(&w->b, "}");
		if (i + 1 < n) {
			struct kh_opt_u64 mp = kh_cpu_milli_percent(
				p->resource_samples[i].snapshot.cpu_time_ms,
				p->resource_samples[i + 1].snapshot.cpu_time_ms,
				t[1].elapsed_ns - t[0].elapsed_ns);

			if (mp.present)
				counter(w, "CPU %", t[0].elapsed_ns, "cpu_percent",
					(double)mp.value / 1000.0);
		}
	}
	/* A counter holds its value until the next one: close CPU at the end. */
	if (p->transition_count >= 2 && n >= 2)
		counter(w, "CPU %", p->transitions[p->transition_count - 1].elapsed_ns,
			"cpu_percent", 0);
	for (size_t i = 0; i < n; i++) {
		const struct kh_resource_sample *s = &p->resource_samples[i];

		if (s->snapshot.resident_bytes.present)
			counter(w, "RSS", s->elapsed_ns, "rss_mib",
				(double)s->snapshot.resident_bytes.value / (1024.0 * 1024.0));
		if (s->snapshot.thread_count.present)
			counter(w, "threads", s->elapsed_ns, "threads",
				(double)s->snapshot.thread_count.value);
	}
}

/*
 * The --interval series as counters, each set at its interval's start and
 * holding until the next: threads busy per stage (one counter, a series
 * per stage, which the viewers stack), input throughput and CPU; RSS at
 * each interval's end.  Zeros close them at the series' end.
 */
static void series_counters(struct writer *w, const struct kh_series *s)
{
	bool used[KH_STAGE_COUNT] = { false };
	uint64_t end = 0;

	for (size_t i = 0; i < s->count; i++)
		for (int st = 0; st < KH_STAGE_COUNT; st++)
			used[st] |= st != KH_STAGE_BACKEND_DISPATCH && s->intervals[i].elapsed_ns[st];
	for (size_t i = 0; i <= s->count; i++) {
		const struct kh_interval *iv = i < s->count ? &s->intervals[i] : NULL;
		double d = iv && iv->duration_ns ? (double)iv->duration_ns : 0;
		bool first = true;

		if (iv)
			end = iv->start_ns + iv->duration_ns;
		event_open(w, "stage threads busy", 'C', TID_STATES, iv ? iv->start_ns : end);
		outbuf__puts(&w->b, ",\"args\":{");
		for (int st = 0; st < KH_STAGE_COUNT; st++) {
			if (!used[st])
				continue;
			outbuf__printf(&w->b, "%s\"%s\":%.6g", first ? "" : ",",
				       kh_stage__name((uint32_t)st),
				       d ? (double)iv->elapsed_ns[st] / d : 0.0);
			first = false;
		}
		if (first)
			outbuf__puts(&w->b, "\"none\":0");
		outbuf__puts(&w->b, "}}");
		counter(w, "throughput MiB/s", iv ? iv->start_ns : end, "mib_per_s",
			d ? (double)iv->input_bytes * 1e9 / d / 1048576.0 : 0);
		if (!iv || iv->cpu_time_ms.present)
			counter(w, "CPU % (interval)", iv ? iv->start_ns : end, "cpu_percent",
				d ? (double)iv->cpu_time_ms.value * 1e8 / d : 0);
		if (iv && iv->resident_bytes.present)
			counter(w, "RSS", end, "rss_mib",
				(double)iv->resident_bytes.value / (1024.0 * 1024.0));
	}
}

/*
 * --sample's timeline: each sample an instant on its thread's own track,
 * named by the function it was in, with its stage and whole stack as
 * args (Perfetto shows them on selection).
 */
static void stack_samples(struct writer *w, const struct kh_stacks *s)
{
	uint32_t *named = calloc(s->timeline_count ? s->timeline_count : 1, sizeof(*named));
	size_t n_named = 0;

	for (size_t i = 0; named && i < s->timeline_count; i++) {
		const struct kh_stack_sample *smp = &s->timeline[i];
		const struct kh_stack *st = &s->stacks[smp->stack];
		char track[48];
		bool known = false;

		for (size_t k = 0; k < n_named && !known; k++)
			known = named[k] == smp->tid;
		if (!known) {
			named[n_named++] = smp->tid;
			snprintf(track, sizeof(track), "thread %" PRIu32 " (stack samples)", smp->tid);
			metadata(w, "thread_name", smp->tid, track);
		}
		event_open(w, st->frame_count ? s->names[st->frames[st->frame_count - 1]] : "[unknown]",
			   'i', smp->tid, smp->at_ns);
		outbuf__puts(&w->b, ",\"s\":\"t\",\"args\":{\"stage\":");
		put_string(&w->b, st->stage < KH_STAGE_COUNT ? kh_stage__name(st->stage) : "(no stage)");
		outbuf__puts(&w->b, ",\"stack\":\"");
		for (uint32_t f = 0; f < st->frame_count; f++) {
			struct outbuf name;
			char *text;

			/* put_string quotes: escape into a scratch buffer, drop its quotes. */
			outbuf__init(&name);
			put_string(&name, s->names[st->frames[f]]);
			text = outbuf__finish(&name);
			if (text) {
				text[strlen(text) - 1] = '\0';
				outbuf__printf(&w->b, "%s%s", f ? ";" : "", text + 1);
			}
			free(text);
		}
		outbuf__puts(&w->b, "\"}}");
	}
	if (!named)
		w->b.failed = true;
	free(named);
}

char *profile__to_trace_events(const struct kh_profile *p)
{
	struct writer w = { .pid = p->ext.traced_pid ? p->ext.traced_pid : 1, .first = true };
	char process[128];
	char *json;

	outbuf__init(&w.b);
	outbuf__puts(&w.b, "{\"displayTimeUnit\":\"ms\",\"otherData\":");
	identity_object(&w.b, p);
	outbuf__puts(&w.b, ",\"traceEvents\":[");
	snprintf(process, sizeof(process), "%s (%s)",
		 p->identity.binary_version ? p->identity.binary_version : "scanner",
		 p->identity.run_id ? p->identity.run_id : "run");
	metadata(&w, "process_name", TID_STATES, process);
	metadata(&w, "thread_name", TID_STATES, "macro state");

	/* The whole session, with the stage totals (summed over threads) as args. */
	slice(&w, "session", TID_STATES, 0, p->wall_time_ns);
	outbuf__puts(&w.b, ",\"args\":{\"status\":");
	put_string(&w.b, kh_run_state__name(p->status));
	outbuf__printf(&w.b, ",\"input_bytes\":%" PRIu64, p->input_bytes);
	for (size_t i = 0; i < p->stage_count; i++)
		outbuf__printf(&w.b, ",\"%s_ms\":%.3f", kh_stage__name(p->stages[i].stage),
			       (double)p->stages[i].elapsed_ns / 1e6);
	outbuf__puts(&w.b, "}}");
	states(&w, p);
	if (p->ext.series.interval_ns && p->ext.series.count)
		series_counters(&w, &p->ext.series);
	if (p->ext.stacks.present)
		stack_samples(&w, &p->ext.stacks);
	outbuf__puts(&w.b, "\n]}\n");
	json = outbuf__finish(&w.b);
	if (!json)
		errno = ENOMEM;
	return json;
}
