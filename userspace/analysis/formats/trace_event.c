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
#include "series.h"
#include "trace_event.h"

/* Counters carry their unit in the name, as the viewers show nothing else. */
#define CPU_COUNTER "CPU % of one CPU"
#define RSS_COUNTER "RSS MiB"
#define THREADS_COUNTER "threads"

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
	event_open(w, name, 'C', w->pid, ts_ns);
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

/*
 * The threads counter over each window between two samples: the most
 * threads alive at once in it (the extension's peak, seen at every thread
 * creation), else the thread count at its end.  The count at transitions
 * alone read 1 for a scanner whose 4 threads all ran between two of them.
 */
static bool window_threads(const struct kh_profile *p, size_t i, double *out)
{
	const struct kh_resource_sample *s = &p->resource_samples[i];

	if (p->ext.sample_count == p->resource_sample_count && p->ext.samples[i].peak_threads.present) {
		*out = (double)p->ext.samples[i].peak_threads.value;
		return true;
	}
	if (s->snapshot.thread_count.present) {
		*out = (double)s->snapshot.thread_count.value;
		return true;
	}
	return false;
}

static void states(struct writer *w, const struct kh_profile *p)
{
	size_t n = p->transition_count < p->resource_sample_count ? p->transition_count
								     : p->resource_sample_count;
	double threads;

	for (size_t i = 0; i + 1 < p->transition_count; i++) {
		const struct kh_transition *t = &p->transitions[i];
		const char *name = kh_run_state__name(t->state);
		struct kh_cpu_share c = profile__window_cpu(p, i);

		if (t[1].elapsed_ns < t[0].elapsed_ns)
			continue;
		slice(w, name ? name : "unknown", w->pid, t[0].elapsed_ns,
		      t[1].elapsed_ns - t[0].elapsed_ns);
		outbuf__puts(&w->b, "}");
		if (c.present)
			counter(w, CPU_COUNTER, t[0].elapsed_ns, "percent", c.percent);
	}
	/* A counter holds its value until the next one: close CPU at the end. */
	if (p->transition_count >= 2 && n >= 2)
		counter(w, CPU_COUNTER, p->transitions[p->transition_count - 1].elapsed_ns,
			"percent", 0);
	for (size_t i = 0; i < n; i++) {
		const struct kh_resource_sample *s = &p->resource_samples[i];

		if (s->snapshot.resident_bytes.present)
			counter(w, RSS_COUNTER, s->elapsed_ns, "mib",
				(double)s->snapshot.resident_bytes.value / (1024.0 * 1024.0));
		/* Sample i + 1's peak covers the window that starts here. */
		if (i + 1 < n && window_threads(p, i + 1, &threads))
			counter(w, THREADS_COUNTER, s->elapsed_ns, "threads", threads);
		else if (i + 1 == n && s->snapshot.thread_count.present)
			counter(w, THREADS_COUNTER, s->elapsed_ns, "threads",
				(double)s->snapshot.thread_count.value);
	}
}

/*
 * The --interval series as counters, each set at its interval's start and
 * holding until the next: threads busy per stage (one counter, a series
 * per stage, which the viewers stack), input throughput and CPU; RSS at
 * each interval's end.  Zeros close them at the series' end.
 */
static void series_counters(struct writer *w, const struct kh_profile *p)
{
	const struct kh_series *s = &p->ext.series;
	bool used[KH_STAGE_COUNT] = { false };
	uint64_t end = 0;

	for (size_t i = 0; i < s->count; i++)
		for (int st = 0; st < KH_STAGE_COUNT; st++)
			used[st] |= st != KH_STAGE_BACKEND_DISPATCH && s->intervals[i].elapsed_ns[st];
	for (size_t i = 0; i <= s->count; i++) {
		const struct kh_interval *iv = i < s->count ? &s->intervals[i] : NULL;
		double d = iv && iv->duration_ns ? (double)iv->duration_ns : 0, cpu = 0;
		bool first = true;

		if (iv)
			end = iv->start_ns + iv->duration_ns;
		event_open(w, "stage threads busy", 'C', w->pid, iv ? iv->start_ns : end);
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
		if (!iv || interval__cpu_percent(iv, p->identity.logical_cpus, &cpu))
			counter(w, "CPU % of one CPU (interval)", iv ? iv->start_ns : end, "percent",
				iv ? cpu : 0);
		if (iv && iv->resident_bytes.present)
			counter(w, RSS_COUNTER, end, "mib",
				(double)iv->resident_bytes.value / (1024.0 * 1024.0));
	}
}

/*
 * --sample's timeline: each sample an instant on its thread's own track,
 * named by the function it was in, with its stage and whole stack as
 * args (Perfetto shows them on selection), names demangled and escaped,
 * each frame of the joined stack as a frame of a folded line (stacks.h,
 * KH_NAMES_STACKED): a symbol's own ';' or line break is never read as
 * another frame or line.
 */
static void stack_samples(struct writer *w, const struct kh_stacks *recorded)
{
	struct kh_stacks shown, *s = &shown;
	uint32_t *named = calloc(recorded->timeline_count ? recorded->timeline_count : 1,
				 sizeof(*named));
	size_t n_named = 0;

	if (kh_stacks__shown(recorded, KH_NAMES_STACKED, &shown, NULL)) {
		w->b.failed = true;
		free(named);
		return;
	}

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
	kh_stacks__free(&shown);
}

/* --- thread tracks ------------------------------------------------------- */

/*
 * The record has no single spans and no per-thread times: stage time is
 * summed over threads, per interval with --interval, else over the whole
 * session.  So each thread's track gets the stage time of each interval
 * laid out end to end across the threads of the stage's role, as the
 * record names them (main, reader N, scanner N from the identity); what
 * does not fit in a role's threads goes on tracks of further threads (the
 * record's peak says how many ran).  Slices say where the time went in
 * each interval, not which thread spent it (docs/REPORTS.md).
 */
enum role { ROLE_MAIN, ROLE_READER, ROLE_SCANNER, ROLE_COUNT };

#define LANES_MAX 64

static enum role stage_role(uint32_t stage)
{
	switch (stage) {
	case KH_STAGE_SOURCE_ACQUIRE:
	case KH_STAGE_SOURCE_WALK:
	case KH_STAGE_SOURCE_READ:
	case KH_STAGE_SOURCE_QUEUE_WAIT:
		return ROLE_READER;
	case KH_STAGE_REPORTING:
	case KH_STAGE_BACKEND_SELECT:
	case KH_STAGE_RESULT_MERGE:
	case KH_STAGE_LIVE_VERIFICATION:
	case KH_STAGE_INCREMENTAL_LOOKUP:
		return ROLE_MAIN;
	default:
		return ROLE_SCANNER;
	}
}

struct lanes {
	size_t count;                  /* tracks named so far */
	size_t first[ROLE_COUNT], n[ROLE_COUNT]; /* each role's lanes */
	size_t named;                  /* lanes the identity and peak name */
	uint64_t cursor[LANES_MAX];
	uint64_t not_drawn_ns;         /* beyond LANES_MAX lanes */
};

static void lanes__init(struct lanes *l, const struct kh_profile *p)
{
	uint64_t readers = p->identity.reader_threads.present ? p->identity.reader_threads.value : 0;
	uint64_t scanners = p->identity.scanner_threads;
	uint64_t peak = p->resources.max_observed_threads.present
				? p->resources.max_observed_threads.value : 1;

	memset(l, 0, sizeof(*l));
	if (readers > LANES_MAX / 4)
		readers = LANES_MAX / 4;
	if (scanners > LANES_MAX / 2)
		scanners = LANES_MAX / 2;
	l->first[ROLE_MAIN] = 0;
	l->n[ROLE_MAIN] = 1;
	l->first[ROLE_READER] = 1;
	l->n[ROLE_READER] = readers;
	l->first[ROLE_SCANNER] = 1 + readers;
	l->n[ROLE_SCANNER] = scanners;
	l->named = 1 + readers + scanners;
	if (peak > l->named)
		l->named = peak > LANES_MAX ? LANES_MAX : peak;
	l->count = l->named;
}

static void lane_name(const struct lanes *l, size_t lane, char *buf, size_t len)
{
	if (lane == 0)
		snprintf(buf, len, "main thread");
	else if (lane < l->first[ROLE_SCANNER])
		snprintf(buf, len, "reader %zu", lane - l->first[ROLE_READER] + 1);
	else if (lane < l->first[ROLE_SCANNER] + l->n[ROLE_SCANNER])
		snprintf(buf, len, "scanner %zu", lane - l->first[ROLE_SCANNER] + 1);
	else
		snprintf(buf, len, "thread %zu", lane + 1);
}

static void stage_slice(struct writer *w, uint32_t stage, size_t lane, uint64_t at,
			uint64_t dur, uint64_t total)
{
	slice(w, kh_stage__name(stage), w->pid + 1 + lane, at, dur);
	outbuf__printf(&w->b, ",\"args\":{\"stage_ns_in_interval\":%" PRIu64
			      ",\"laid_out\":true}}", total);
}

/* The next lane with room before end: the role's own, then the others'. */
static bool lane_with_room(struct lanes *l, enum role role, uint64_t end, size_t *lane)
{
	for (size_t k = 0; k < l->n[role]; k++)
		if (l->cursor[l->first[role] + k] < end) {
			*lane = l->first[role] + k;
			return true;
		}
	for (size_t k = 1 + l->n[ROLE_READER] + l->n[ROLE_SCANNER]; k < LANES_MAX; k++) {
		if (l->cursor[k] < end) {
			if (k >= l->count)
				l->count = k + 1;
			*lane = k;
			return true;
		}
	}
	return false;
}

static void interval_slices(struct writer *w, struct lanes *l, uint64_t start, uint64_t dur,
			    const uint64_t elapsed[KH_STAGE_COUNT])
{
	uint64_t end = start + dur;

	for (size_t k = 0; k < LANES_MAX; k++)
		l->cursor[k] = start;
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++) {
		enum role role = stage_role(st);
		uint64_t left = elapsed[st];
		size_t lane;

		/* Dispatch wraps the matcher stages: drawn, it would count them twice. */
		if (st == KH_STAGE_BACKEND_DISPATCH)
			continue;
		if (!l->n[role])
			role = ROLE_MAIN;
		while (left && lane_with_room(l, role, end, &lane)) {
			uint64_t take = end - l->cursor[lane] < left ? end - l->cursor[lane] : left;

			stage_slice(w, st, lane, l->cursor[lane], take, elapsed[st]);
			l->cursor[lane] += take;
			left -= take;
		}
		l->not_drawn_ns += left;
	}
}

static void thread_tracks(struct writer *w, const struct kh_profile *p)
{
	const struct kh_series *s = &p->ext.series;
	struct lanes l;
	char name[64];

	lanes__init(&l, p);
	if (s->interval_ns && s->count) {
		for (size_t i = 0; i < s->count; i++)
			interval_slices(w, &l, s->intervals[i].start_ns, s->intervals[i].duration_ns,
					s->intervals[i].elapsed_ns);
	} else {
		uint64_t totals[KH_STAGE_COUNT] = { 0 };

		for (size_t i = 0; i < p->stage_count; i++)
			if (p->stages[i].stage < KH_STAGE_COUNT)
				totals[p->stages[i].stage] = p->stages[i].elapsed_ns;
		interval_slices(w, &l, 0, p->wall_time_ns, totals);
	}
	for (size_t k = 0; k < l.count; k++) {
		lane_name(&l, k, name, sizeof(name));
		metadata(w, "thread_name", w->pid + 1 + k, name);
	}
	if (l.not_drawn_ns) {
		event_open(w, "stage time not drawn", 'C', w->pid, 0);
		outbuf__printf(&w->b, ",\"args\":{\"ns\":%" PRIu64 "}}", l.not_drawn_ns);
	}
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
	metadata(&w, "process_name", w.pid, process);
	/* The process's own track (tid = pid): the session and its states. */
	metadata(&w, "thread_name", w.pid, "macro states");

	/* The whole session, with the stage totals (summed over threads) as args. */
	slice(&w, "session", w.pid, 0, p->wall_time_ns);
	outbuf__puts(&w.b, ",\"args\":{\"status\":");
	put_string(&w.b, kh_run_state__name(p->status));
	outbuf__printf(&w.b, ",\"input_bytes\":%" PRIu64, p->input_bytes);
	for (size_t i = 0; i < p->stage_count; i++)
		outbuf__printf(&w.b, ",\"%s_ms\":%.3f", kh_stage__name(p->stages[i].stage),
			       (double)p->stages[i].elapsed_ns / 1e6);
	outbuf__puts(&w.b, "}}");
	states(&w, p);
	if (p->ext.series.interval_ns && p->ext.series.count)
		series_counters(&w, p);
	thread_tracks(&w, p);
	if (p->ext.stacks.present)
		stack_samples(&w, &p->ext.stacks);
	outbuf__puts(&w.b, "\n]}\n");
	json = outbuf__finish(&w.b);
	if (!json)
		errno = ENOMEM;
	return json;
}
