// SPDX-License-Identifier: MIT
/*
 * Session assembly without root or libbpf: events and slot totals in,
 * records out, as the tracer drives it (userspace/capture/session/session.c).
 */
#include "khtest.h"

#include <inttypes.h>
#include <signal.h>

#include "session.h"

#define MAX_SEEN 8

/* What the tests check of each record; the profile is freed after the callback. */
struct seen_record {
	char run_id[96];
	uint32_t status;
	uint64_t wall_time_ns;
	uint64_t decode_calls;
	uint64_t decode_ns;
	uint64_t input_bytes;
	uint64_t session_sequence;
	bool started_mid_session;
	bool ended_mid_session;
	uint64_t drops[KH_DROP_COUNT];
	uint32_t states[16];
	size_t transition_count;
	char binary_version[32];
	uint64_t tracer_cost_ns;
	/* The --interval series. */
	size_t series_count;
	uint64_t series_decode_calls, series_decode_ns, series_end_ns;
	uint32_t series_last_state;
	char process_end[16];
	struct kh_opt_u64 exit_code;
	struct kh_opt_u64 exit_signal;
	uint64_t refused;
	bool observed_from;
	char attach_state[16];
	uint64_t created_ns;
	bool last_rss_known;
	/* khprof.latency as the record took it over. */
	bool latency_present;
	uint64_t latency_decode_spans;
};

struct seen {
	struct seen_record records[MAX_SEEN];
	size_t count;
};

static void on_profile(const struct kh_profile *p, void *ctx)
{
	struct seen *seen = ctx;
	struct seen_record *r;
	const struct kh_stage_measurement *decode = profile__find_stage(p, KH_STAGE_DECODE);

	assert_true(seen->count < MAX_SEEN);
	r = &seen->records[seen->count++];
	memset(r, 0, sizeof(*r));
	snprintf(r->run_id, sizeof(r->run_id), "%s", p->identity.run_id);
	snprintf(r->binary_version, sizeof(r->binary_version), "%s", p->identity.binary_version);
	r->status = p->status;
	r->wall_time_ns = p->wall_time_ns;
	r->decode_calls = decode ? decode->calls : 0;
	r->decode_ns = decode ? decode->elapsed_ns : 0;
	r->input_bytes = p->input_bytes;
	r->session_sequence = p->ext.session_sequence;
	r->started_mid_session = p->ext.started_mid_session;
	r->ended_mid_session = p->ext.ended_mid_session;
	memcpy(r->drops, p->ext.drops, sizeof(r->drops));
	r->tracer_cost_ns = p->ext.tracer_cost_ns;
	r->transition_count = p->transition_count;
	snprintf(r->process_end, sizeof(r->process_end), "%s",
		 p->ext.process_end ? p->ext.process_end : "");
	r->exit_code = p->ext.exit_code;
	r->exit_signal = p->ext.exit_signal;
	r->refused = p->ext.refused_session_starts;
	r->observed_from = p->ext.observed_from_unix_ns.present;
	snprintf(r->attach_state, sizeof(r->attach_state), "%s",
		 p->ext.attach_state ? p->ext.attach_state : "");
	r->created_ns = p->state_count ? p->states[0].elapsed_ns : UINT64_MAX;
	r->last_rss_known = p->resource_sample_count &&
			    p->resource_samples[p->resource_sample_count - 1].snapshot.resident_bytes.present;
	for (size_t i = 0; i < p->transition_count && i < 16; i++)
		r->states[i] = p->transitions[i].state;
	r->latency_present = p->ext.latency.present;
	r->latency_decode_spans = p->ext.latency.stages[KH_STAGE_DECODE].spans;
	r->series_count = p->ext.series.count;
	for (size_t i = 0; i < p->ext.series.count; i++) {
		const struct kh_interval *iv = &p->ext.series.intervals[i];

		r->series_decode_calls += iv->calls[KH_STAGE_DECODE];
		r->series_decode_ns += iv->elapsed_ns[KH_STAGE_DECODE];
		r->series_end_ns = iv->start_ns + iv->duration_ns;
		r->series_last_state = iv->state;
	}
}

static size_t intervals_seen;

static void on_interval(const struct kh_profile *p, const struct kh_interval *iv, void *ctx)
{
	(void)ctx;
	/* Called with the interval already in the session's series. */
	assert_memory_equal(&p->ext.series.intervals[p->ext.series.count - 1], iv, sizeof(*iv));
	intervals_seen++;
}

#define START_NS 1000000000ull
#define REALTIME_OFFSET 5000000000ll

static void table_init(struct session_table *tbl, struct seen *seen)
{
	struct session_config cfg = {
		.pid = getpid(),
		.mode = KH_MODE_BATCH,
		.trace_start_ns = START_NS,
		.realtime_offset_ns = REALTIME_OFFSET,
		.page_size = 4096,
		.span_cost_ns = 10,
		.span_bias_ns = 5,
		.on_profile = on_profile,
		.ctx = seen,
	};

	memset(seen, 0, sizeof(*seen));
	sessions__init(tbl, &cfg);
}

/* Each test's table, initialised by table_init and freed even when the test fails. */
struct session_fx {
	struct session_table tbl;
	struct seen seen;
};

static int fx_setup(void **state)
{
	struct session_fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	table_init(&f->tbl, &f->seen);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct session_fx *f = *state;

	sessions__free(&f->tbl);
	free(f);
	return 0;
}

static struct kh_event event(uint32_t type, uint32_t slot, uint64_t ts, uint64_t arg0)
{
	struct kh_event e;

	memset(&e, 0, sizeof(e));
	e.type = type;
	e.slot = slot;
	e.ts_ns = ts;
	e.arg0 = arg0;
	e.pid = (uint32_t)getpid();
	return e;
}

static void feed(struct session_table *tbl, uint32_t type, uint32_t slot, uint64_t ts,
		 uint64_t arg0, const struct kh_slot_stats *totals)
{
	struct kh_event e = event(type, slot, ts, arg0);

	/* The tracer's handle_event picks these by type, as here. */
	switch (type) {
	case KH_EVENT_SESSION_START:
		sessions__start(tbl, &e);
		break;
	case KH_EVENT_TRANSITION:
		sessions__transition(tbl, &e);
		break;
	case KH_EVENT_SESSION_REFUSED:
		sessions__refused(tbl, &e);
		break;
	case KH_EVENT_SESSION_FINISH:
		sessions__finish(tbl, &e, totals, NULL);
		break;
	default:
		fail_msg("feed: event type %u is not a session event", type);
	}
}

static struct kh_slot_stats decode_totals(uint64_t calls, uint64_t elapsed_ns)
{
	struct kh_slot_stats s;

	memset(&s, 0, sizeof(s));
	s.stages[KH_STAGE_DECODE].calls = calls;
	s.stages[KH_STAGE_DECODE].elapsed_ns = elapsed_ns;
	s.probe_hits = 1;
	return s;
}

static void test_complete_session(void **state)
{
	struct session_fx *f = *state;
	struct kh_slot_stats totals = decode_totals(10, 10000);
	struct kh_event id = event(KH_EVENT_IDENTITY, 1, START_NS + 200, 0);
	char run_id[96];

	feed(&f->tbl, KH_EVENT_SESSION_START, 1, START_NS + 100, 3, NULL);
	snprintf(id.key, sizeof(id.key), "binary_version");
	snprintf(id.value, sizeof(id.value), "9.8.7");
	sessions__identity(&f->tbl, &id);
	feed(&f->tbl, KH_EVENT_TRANSITION, 1, START_NS + 300, KH_STATE_SCANNING, NULL);
	assert_true(sessions__is_open(&f->tbl, 1));
	assert_int_equal(f->seen.count, 0);
	feed(&f->tbl, KH_EVENT_SESSION_FINISH, 1, START_NS + 1100, KH_STATE_COMPLETED, &totals);

	assert_false(sessions__is_open(&f->tbl, 1));
	assert_int_equal(f->seen.count, 1);
	assert_int_equal(f->tbl.records_emitted, 1);
	snprintf(run_id, sizeof(run_id), "%d-%" PRIu64 "-3", getpid(),
		 (uint64_t)(START_NS + 100 + REALTIME_OFFSET));
	assert_string_equal(f->seen.records[0].run_id, run_id);
	assert_string_equal(f->seen.records[0].binary_version, "9.8.7");
	assert_int_equal(f->seen.records[0].status, KH_STATE_COMPLETED);
	assert_int_equal(f->seen.records[0].wall_time_ns, 1000);
	assert_int_equal(f->seen.records[0].decode_calls, 10);
	/* The calibrated bias (5 ns per span) is taken off. */
	assert_int_equal(f->seen.records[0].decode_ns, 10000 - 10 * 5);
	assert_int_equal(f->seen.records[0].tracer_cost_ns, 10 * 10);
	assert_int_equal(f->seen.records[0].session_sequence, 3);
	assert_false(f->seen.records[0].started_mid_session);
	assert_false(f->seen.records[0].ended_mid_session);
	assert_int_equal(f->seen.records[0].transition_count, 3);
	assert_int_equal(f->seen.records[0].states[0], KH_STATE_CREATED);
	assert_int_equal(f->seen.records[0].states[1], KH_STATE_SCANNING);
	assert_int_equal(f->seen.records[0].states[2], KH_STATE_COMPLETED);
}

/* Events of a session whose start was never seen open a partial one. */
static void test_partial_session(void **state)
{
	struct session_fx *f = *state;
	struct kh_slot_stats totals = decode_totals(2, 400);

	feed(&f->tbl, KH_EVENT_TRANSITION, 2, START_NS + 500, KH_STATE_REPORTING, NULL);
	feed(&f->tbl, KH_EVENT_SESSION_FINISH, 2, START_NS + 900, KH_STATE_COMPLETED, &totals);
	assert_int_equal(f->seen.count, 1);
	assert_true(f->seen.records[0].started_mid_session);
	assert_true(has_suffix(f->seen.records[0].run_id, "-partial"));
	assert_int_equal(f->seen.records[0].wall_time_ns, 900);
	assert_int_equal(f->seen.records[0].decode_calls, 2);
}

/* A process that exits inside a session failed it; a detach keeps its state. */
static void test_end_open_sessions(void **state)
{
	struct session_fx *f = *state;
	struct kh_slot_stats totals = decode_totals(1, 100);

	feed(&f->tbl, KH_EVENT_SESSION_START, 1, START_NS, 0, NULL);
	feed(&f->tbl, KH_EVENT_TRANSITION, 1, START_NS + 10, KH_STATE_SCANNING, NULL);
	sessions__end(&f->tbl, 1, 3, START_NS + 50, &totals, NULL);
	feed(&f->tbl, KH_EVENT_SESSION_START, 2, START_NS + 60, 1, NULL);
	feed(&f->tbl, KH_EVENT_TRANSITION, 2, START_NS + 70, KH_STATE_RESOLVING, NULL);
	sessions__end(&f->tbl, 2, -1, START_NS + 90, &totals, NULL);
	assert_int_equal(f->seen.count, 2);
	assert_int_equal(f->seen.records[0].status, KH_STATE_FAILED);
	assert_true(f->seen.records[0].ended_mid_session);
	assert_int_equal(f->seen.records[0].wall_time_ns, 50);
	assert_int_equal(f->seen.records[1].status, KH_STATE_RESOLVING);
	assert_int_equal(f->seen.records[1].wall_time_ns, 30);
	assert_false(sessions__none_seen(&f->tbl));
}

/* Spans without session probes: one record for the whole trace, if any activity. */
static void test_whole_trace(void **state)
{
	struct session_fx *f = *state;
	struct kh_slot_stats idle, busy = decode_totals(4, 800);

	memset(&idle, 0, sizeof(idle));
	assert_true(sessions__none_seen(&f->tbl));
	sessions__end_whole_trace(&f->tbl, 0, START_NS + 100, &idle, NULL);
	assert_int_equal(f->seen.count, 0);
	sessions__end_whole_trace(&f->tbl, 0, START_NS + 100, &busy, NULL);
	assert_int_equal(f->seen.count, 1);
	assert_int_equal(f->seen.records[0].status, KH_STATE_COMPLETED);
	assert_true(has_suffix(f->seen.records[0].run_id, "-0"));
	assert_int_equal(f->seen.records[0].wall_time_ns, 100);
	assert_int_equal(f->seen.records[0].decode_calls, 4);
	table_init(&f->tbl, &f->seen);
	sessions__end_whole_trace(&f->tbl, 9, START_NS + 100, &busy, NULL);
	assert_int_equal(f->seen.records[0].status, KH_STATE_FAILED);
	table_init(&f->tbl, &f->seen);
	sessions__end_whole_trace(&f->tbl, -1, START_NS + 100, &busy, NULL);
	assert_int_equal(f->seen.records[0].status, KH_STATE_SCANNING);
	assert_true(f->seen.records[0].ended_mid_session);
}

/*
 * --interval: samples at the session's boundaries (start + k * interval,
 * however late the wake), differences of the running totals, and a last
 * interval from the final totals, so the series sums to the record.
 */
static void test_interval_series(void **state)
{
	struct session_fx *f = *state;
	struct kh_slot_stats r1 = decode_totals(4, 4000), r2 = decode_totals(7, 7000);
	struct kh_slot_stats totals = decode_totals(10, 10000);
	const uint64_t s0 = START_NS + 100;

	f->tbl.cfg.interval_ns = 1000;
	f->tbl.cfg.on_interval = on_interval;
	intervals_seen = 0;
	assert_int_equal(sessions__next_sample_ns(&f->tbl), 0);
	feed(&f->tbl, KH_EVENT_SESSION_START, 1, s0, 0, NULL);
	feed(&f->tbl, KH_EVENT_TRANSITION, 1, s0 + 10, KH_STATE_SCANNING, NULL);
	assert_int_equal(sessions__next_sample_ns(&f->tbl), s0 + 1000);
	assert_false(sessions__sample_due(&f->tbl, 1, s0 + 999));
	assert_false(sessions__sample_due(&f->tbl, 2, s0 + 5000));
	assert_true(sessions__sample_due(&f->tbl, 1, s0 + 1000));
	sessions__sample(&f->tbl, 1, s0 + 1050, &r1);
	/* Aligned to the session: the next boundary is s0 + 2000, not now + 1000. */
	assert_int_equal(sessions__next_sample_ns(&f->tbl), s0 + 2000);
	/* A late wake skips the boundaries it missed. */
	sessions__sample(&f->tbl, 1, s0 + 3500, &r2);
	assert_int_equal(sessions__next_sample_ns(&f->tbl), s0 + 4000);
	assert_int_equal(intervals_seen, 2);
	/* A slot that cannot be read moves the boundary on; its time goes to the next interval. */
	sessions__sample(&f->tbl, 1, s0 + 4000, NULL);
	assert_int_equal(sessions__next_sample_ns(&f->tbl), s0 + 5000);
	assert_int_equal(intervals_seen, 2);
	feed(&f->tbl, KH_EVENT_SESSION_FINISH, 1, s0 + 3600, KH_STATE_COMPLETED, &totals);

	assert_int_equal(f->seen.count, 1);
	assert_int_equal(f->seen.records[0].series_count, 3);
	assert_int_equal(f->seen.records[0].series_decode_calls, f->seen.records[0].decode_calls);
	/* Bias off per interval (5 ns a call), as in the totals: here exactly. */
	assert_int_equal(f->seen.records[0].series_decode_ns, f->seen.records[0].decode_ns);
	assert_int_equal(f->seen.records[0].series_end_ns, f->seen.records[0].wall_time_ns);
	assert_int_equal(f->seen.records[0].series_last_state, KH_STATE_COMPLETED);
	assert_int_equal(sessions__next_sample_ns(&f->tbl), 0);
}

/*
 * A sample read after the session ended in the kernel, before its end event
 * was read: the series still ends at the record's wall time.
 */
static void test_interval_after_end(void **state)
{
	struct session_fx *f = *state;
	struct kh_slot_stats r1 = decode_totals(4, 4000), totals = decode_totals(10, 10000);
	const uint64_t s0 = START_NS + 100;

	f->tbl.cfg.interval_ns = 1000;
	feed(&f->tbl, KH_EVENT_SESSION_START, 1, s0, 0, NULL);
	sessions__sample(&f->tbl, 1, s0 + 1000, &r1);
	sessions__sample(&f->tbl, 1, s0 + 2950, &totals);
	feed(&f->tbl, KH_EVENT_SESSION_FINISH, 1, s0 + 2900, KH_STATE_COMPLETED, &totals);

	assert_int_equal(f->seen.count, 1);
	assert_int_equal(f->seen.records[0].series_count, 3);
	assert_int_equal(f->seen.records[0].wall_time_ns, 2900);
	assert_int_equal(f->seen.records[0].series_end_ns, 2900);
	assert_int_equal(f->seen.records[0].series_decode_calls, 10);
	assert_int_equal(f->seen.records[0].series_last_state, KH_STATE_COMPLETED);
}

/* Without --interval a record has no series. */
static void test_no_interval_no_series(void **state)
{
	struct session_fx *f = *state;
	struct kh_slot_stats totals = decode_totals(10, 10000);

	feed(&f->tbl, KH_EVENT_SESSION_START, 1, START_NS, 0, NULL);
	assert_int_equal(sessions__next_sample_ns(&f->tbl), 0);
	assert_false(sessions__sample_due(&f->tbl, 1, START_NS + 1000000000));
	feed(&f->tbl, KH_EVENT_SESSION_FINISH, 1, START_NS + 10, KH_STATE_COMPLETED, &totals);
	assert_int_equal(f->seen.records[0].series_count, 0);
}

/* A session start with every slot unread is not recorded; out-of-range slots are outside. */
static void test_unrecorded_session(void **state)
{
	struct session_fx *f = *state;
	struct kh_event far = event(KH_EVENT_TRANSITION, KH_MAX_SLOTS + 3, START_NS, 0);

	assert_int_equal(sessions__slot_of(&far), KH_OUTSIDE_SLOT);
	feed(&f->tbl, KH_EVENT_SESSION_START, KH_OUTSIDE_SLOT, START_NS, 7, NULL);
	assert_false(sessions__is_open(&f->tbl, KH_OUTSIDE_SLOT));
	assert_false(sessions__none_seen(&f->tbl));
}

/* What test_samples_from_the_probe checks of its one record. */
struct sampled {
	size_t records;
	struct kh_resource_snapshot snapshots[4];
	struct kh_sample_ext ext[4];
	size_t count;
	struct kh_opt_u64 max_threads, max_rss, state_cpu_ms;
	uint64_t latency_max, identity_unreadable;
	char binary_version[32];
};

static void on_sampled_profile(const struct kh_profile *p, void *ctx)
{
	struct sampled *r = ctx;

	r->records++;
	r->count = p->resource_sample_count;
	assert_int_equal(p->ext.sample_count, p->resource_sample_count);
	for (size_t i = 0; i < p->resource_sample_count && i < 4; i++) {
		r->snapshots[i] = p->resource_samples[i].snapshot;
		r->ext[i] = p->ext.samples[i];
	}
	r->max_threads = p->resources.max_observed_threads;
	r->max_rss = p->resources.max_observed_resident_bytes;
	r->state_cpu_ms = p->states[1].cpu_time_ms;
	r->latency_max = p->ext.sample_latency_ns_max;
	r->identity_unreadable = p->ext.identity_unreadable;
	snprintf(r->binary_version, sizeof(r->binary_version), "%s", p->identity.binary_version);
}

static struct kh_event sampled_event(uint32_t type, uint64_t ts, uint64_t arg0, uint64_t cpu_ns,
				     uint64_t pages, uint64_t threads, uint64_t peak_pages,
				     uint64_t peak_threads)
{
	struct kh_event e = event(type, 1, ts, arg0);

	e.cpu_ns = cpu_ns;
	e.resident_pages = pages;
	e.virtual_pages = 2 * pages;
	e.threads = threads;
	e.peak_resident_pages = peak_pages;
	e.peak_threads = peak_threads;
	e.sampled_ns = ts + 700;
	return e;
}

/*
 * Samples come from the probe: CPU time in ns (the seed's ms truncated),
 * memory in pages; peaks between samples raise the seed's maxima, except
 * the first sample's, which are from before the session.
 */
static void test_samples_from_the_probe(void **state)
{
	struct kh_slot_stats totals = decode_totals(1, 100);
	struct session_table tbl;
	struct sampled r = { 0 };
	struct session_config cfg = {
		.pid = getpid(), .mode = KH_MODE_BATCH, .trace_start_ns = START_NS,
		.page_size = 4096, .on_profile = on_sampled_profile, .ctx = &r,
	};
	struct kh_event e[] = {
		sampled_event(KH_EVENT_SESSION_START, START_NS, 0, 1999999, 100, 1, 900, 7),
		sampled_event(KH_EVENT_TRANSITION, START_NS + 1000000, KH_STATE_SCANNING, 2000001,
			      110, 1, 110, 1),
		sampled_event(KH_EVENT_SESSION_FINISH, START_NS + 5000000, KH_STATE_COMPLETED,
			      4500000, 120, 1, 500, 3),
	};
	struct kh_event bad_value = event(KH_EVENT_IDENTITY, 1, START_NS + 10, 0x10);

	(void)state;
	sessions__init(&tbl, &cfg);
	sessions__start(&tbl, &e[0]);
	snprintf(bad_value.key, sizeof(bad_value.key), "binary_version");
	bad_value.value_err = -14; /* EFAULT */
	sessions__identity(&tbl, &bad_value);
	sessions__transition(&tbl, &e[1]);
	sessions__finish(&tbl, &e[2], &totals, NULL);

	assert_int_equal(r.records, 1);
	assert_int_equal(r.count, 3);
	assert_int_equal(r.snapshots[0].cpu_time_ms.value, 1);
	assert_int_equal(r.snapshots[1].cpu_time_ms.value, 2);
	assert_int_equal(r.snapshots[2].cpu_time_ms.value, 4);
	assert_int_equal(r.ext[1].cpu_time_ns.value, 2000001);
	assert_int_equal(r.snapshots[1].resident_bytes.value, 110 * 4096);
	assert_int_equal(r.snapshots[1].virtual_bytes.value, 220 * 4096);
	assert_int_equal(r.snapshots[1].thread_count.value, 1);
	assert_int_equal(r.ext[2].peak_resident_bytes.value, 500 * 4096);
	assert_int_equal(r.ext[2].peak_threads.value, 3);
	/* scanning: 4 - 2 ms of CPU */
	assert_true(r.state_cpu_ms.present);
	assert_int_equal(r.state_cpu_ms.value, 2);
	/* 900 pages and 7 threads were before the session: not its maxima. */
	assert_int_equal(r.max_rss.value, 500 * 4096);
	assert_int_equal(r.max_threads.value, 3);
	assert_int_equal(r.latency_max, 700);
	/* An unreadable value is counted and leaves the field as it was. */
	assert_int_equal(r.identity_unreadable, 1);
	assert_string_equal(r.binary_version, "unknown");
	sessions__free(&tbl);
}

/*
 * Strings the probe could not read: where it cannot fault pages in
 * (identity_reread, the classic object) khprof reads them from the
 * process, here this one; a process gone by then leaves the field as it
 * was, counted.  Where the probe faults pages in, its failure is final.
 */
static void test_identity_read_by_khprof(void **state)
{
	static const char key[] = "binary_version", value[] = "9.8.7";
	const struct {
		bool reread;
		bool gone;
		const char *want;
	} cases[] = {
		{ true, false, "9.8.7" },
		{ true, true, "unknown" },
		{ false, false, "unknown" },
	};
	pid_t gone = fork();

	(void)state;
	if (gone == 0)
		_exit(0);
	assert_true(gone > 0 && waitpid(gone, NULL, 0) == gone); /* reaped: no such process */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kh_slot_stats totals = decode_totals(1, 100);
		struct session_table tbl;
		struct sampled r = { 0 };
		struct session_config cfg = {
			.pid = cases[i].gone ? gone : getpid(), .mode = KH_MODE_SPAN,
			.trace_start_ns = START_NS, .page_size = 4096,
			.on_profile = on_sampled_profile, .ctx = &r,
			.identity_reread = cases[i].reread,
		};
		struct kh_event start = event(KH_EVENT_SESSION_START, 1, START_NS, 0);
		struct kh_event id = event(KH_EVENT_IDENTITY_STOPPED, 1, START_NS + 10,
					   (uintptr_t)key);
		struct kh_event finish = event(KH_EVENT_SESSION_FINISH, 1, START_NS + 20,
					       KH_STATE_COMPLETED);

		id.arg1 = (uintptr_t)value;
		id.key_err = -14; /* EFAULT: a page the probe could not fault in */
		id.value_err = -14;
		sessions__init(&tbl, &cfg);
		sessions__start(&tbl, &start);
		sessions__identity(&tbl, &id);
		sessions__finish(&tbl, &finish, &totals, NULL);
		assert_int_equal(r.records, 1);
		assert_string_equal(r.binary_version, cases[i].want);
		assert_int_equal(r.identity_unreadable, strcmp(cases[i].want, "unknown") == 0);
		sessions__free(&tbl);
	}
}

/* Records the process's end cut short say how it ended; finished ones do not. */
static void test_process_end(void **state)
{
	struct session_fx *f = *state;
	struct kh_slot_stats totals = decode_totals(1, 100);

	feed(&f->tbl, KH_EVENT_SESSION_START, 1, START_NS, 0, NULL);
	feed(&f->tbl, KH_EVENT_SESSION_FINISH, 1, START_NS + 10, KH_STATE_COMPLETED, &totals);
	feed(&f->tbl, KH_EVENT_SESSION_START, 2, START_NS + 20, 1, NULL);
	sessions__process_ended(&f->tbl, SIGSEGV); /* waitpid's form for a SIGSEGV death */
	sessions__end(&f->tbl, 2, 0, START_NS + 30, &totals, NULL);
	assert_int_equal(f->seen.count, 2);
	assert_string_equal(f->seen.records[0].process_end, "");
	assert_string_equal(f->seen.records[1].process_end, "signal");
	assert_true(f->seen.records[1].last_rss_known); /* this test process's own /proc */
	assert_true(f->seen.records[1].exit_signal.present);
	assert_int_equal(f->seen.records[1].exit_signal.value, SIGSEGV);
	assert_false(f->seen.records[1].exit_code.present);

	table_init(&f->tbl, &f->seen);
	feed(&f->tbl, KH_EVENT_SESSION_START, 1, START_NS, 0, NULL);
	sessions__process_ended(&f->tbl, 3 << 8); /* exit(3) */
	sessions__end(&f->tbl, 1, 0, START_NS + 30, &totals, NULL);
	assert_string_equal(f->seen.records[0].process_end, "exit");
	assert_int_equal(f->seen.records[0].exit_code.value, 3);

	table_init(&f->tbl, &f->seen);
	feed(&f->tbl, KH_EVENT_SESSION_START, 1, START_NS, 0, NULL);
	sessions__process_execed(&f->tbl);
	sessions__end(&f->tbl, 1, 0, START_NS + 30, &totals, NULL);
	assert_string_equal(f->seen.records[0].process_end, "exec");
	assert_int_equal(f->seen.records[0].status, KH_STATE_FAILED);
	/* /proc would describe the new program: the last sample is unknown. */
	assert_false(f->seen.records[0].last_rss_known);
}

/* A refused second start stays in the open session and is counted there. */
static void test_refused_start(void **state)
{
	struct session_fx *f = *state;
	struct kh_slot_stats totals = decode_totals(20, 100);

	feed(&f->tbl, KH_EVENT_SESSION_START, 1, START_NS, 0, NULL);
	feed(&f->tbl, KH_EVENT_SESSION_REFUSED, 1, START_NS + 5, 1, NULL);
	feed(&f->tbl, KH_EVENT_SESSION_FINISH, 1, START_NS + 10, KH_STATE_COMPLETED, &totals);
	assert_int_equal(f->seen.count, 1);
	assert_int_equal(f->seen.records[0].refused, 1);
	assert_int_equal(f->seen.records[0].decode_calls, 20);
	assert_int_equal(f->seen.records[0].session_sequence, 0);
}

/* Joined mid-session: the clock starts when observation did, in the state the program says. */
static void test_open_partial(void **state)
{
	struct session_fx *f = *state;
	struct kh_slot_stats totals = decode_totals(2, 100);

	f->tbl.cfg.observed_from_ns = START_NS + 40000000;
	sessions__open_partial(&f->tbl, 1, KH_STATE_SCANNING);
	feed(&f->tbl, KH_EVENT_SESSION_FINISH, 1, START_NS + 40000500, KH_STATE_COMPLETED, &totals);
	assert_int_equal(f->seen.count, 1);
	assert_int_equal(f->seen.records[0].wall_time_ns, 500);
	assert_true(f->seen.records[0].started_mid_session);
	assert_true(f->seen.records[0].observed_from);
	assert_string_equal(f->seen.records[0].attach_state, "scanning");
	assert_int_equal(f->seen.records[0].created_ns, 0);
	assert_int_equal(f->seen.records[0].states[1], KH_STATE_SCANNING);
	assert_true(has_suffix(f->seen.records[0].run_id, "-partial"));

	/* Unknown state (probe ABI 2): events open it lazily, from the same start. */
	table_init(&f->tbl, &f->seen);
	f->tbl.cfg.observed_from_ns = START_NS + 40000000;
	feed(&f->tbl, KH_EVENT_SESSION_FINISH, 0, START_NS + 40000700, KH_STATE_COMPLETED, &totals);
	assert_int_equal(f->seen.records[0].wall_time_ns, 700);
	assert_string_equal(f->seen.records[0].attach_state, "");
}

#define FX_TEST(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

/* A decode distribution of spans spans, as collect.c hands one over. */
static struct kh_latency decode_latency(uint64_t spans)
{
	struct kh_latency l;

	memset(&l, 0, sizeof(l));
	l.present = true;
	l.stages[KH_STAGE_DECODE].present = true;
	l.stages[KH_STAGE_DECODE].spans = spans;
	l.stages[KH_STAGE_DECODE].counts = calloc(KH_HIST_BUCKETS, sizeof(uint64_t));
	assert_non_null(l.stages[KH_STAGE_DECODE].counts);
	l.stages[KH_STAGE_DECODE].counts[3] = spans;
	return l;
}

/*
 * A session's distributions travel as its totals do, by parameter: the
 * record of the session that ends takes them over and leaves the caller's
 * empty; a whole-trace record that is not due frees them.
 */
static void test_latency_passed_with_totals(void **state)
{
	struct session_fx *f = *state;
	struct kh_slot_stats totals = decode_totals(4, 400);
	struct kh_slot_stats idle;
	struct kh_event finish = event(KH_EVENT_SESSION_FINISH, 1, START_NS + 50,
				       KH_STATE_COMPLETED);
	struct kh_latency latency = decode_latency(4);

	feed(&f->tbl, KH_EVENT_SESSION_START, 1, START_NS + 10, 1, NULL);
	sessions__finish(&f->tbl, &finish, &totals, &latency);
	assert_int_equal(f->seen.count, 1);
	assert_true(f->seen.records[0].latency_present);
	assert_int_equal(f->seen.records[0].latency_decode_spans, 4);
	assert_false(latency.present);
	assert_null(latency.stages[KH_STAGE_DECODE].counts);

	/* The next session's record has only its own. */
	feed(&f->tbl, KH_EVENT_SESSION_START, 2, START_NS + 60, 2, NULL);
	latency = decode_latency(9);
	sessions__end(&f->tbl, 2, -1, START_NS + 90, &totals, &latency);
	assert_int_equal(f->seen.count, 2);
	assert_int_equal(f->seen.records[1].latency_decode_spans, 9);
	assert_false(latency.present);

	/* Without a distribution, a record has none. */
	feed(&f->tbl, KH_EVENT_SESSION_START, 3, START_NS + 100, 3, NULL);
	feed(&f->tbl, KH_EVENT_SESSION_FINISH, 3, START_NS + 110, KH_STATE_COMPLETED, &totals);
	assert_int_equal(f->seen.count, 3);
	assert_false(f->seen.records[2].latency_present);

	memset(&idle, 0, sizeof(idle));
	latency = decode_latency(2);
	sessions__end_whole_trace(&f->tbl, 0, START_NS + 200, &idle, &latency);
	assert_int_equal(f->seen.count, 3);
	assert_false(latency.present);
	assert_null(latency.stages[KH_STAGE_DECODE].counts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(test_complete_session),
		FX_TEST(test_partial_session),
		FX_TEST(test_end_open_sessions),
		FX_TEST(test_whole_trace),
		FX_TEST(test_unrecorded_session),
		FX_TEST(test_interval_series),
		FX_TEST(test_interval_after_end),
		FX_TEST(test_no_interval_no_series),
		cmocka_unit_test(test_samples_from_the_probe),
		cmocka_unit_test(test_identity_read_by_khprof),
		FX_TEST(test_process_end),
		FX_TEST(test_refused_start),
		FX_TEST(test_open_partial),
		FX_TEST(test_latency_passed_with_totals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
