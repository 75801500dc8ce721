// SPDX-License-Identifier: MIT
/*
 * Session assembly without root or libbpf: events and slot totals in,
 * records out, as the tracer drives it (userspace/capture/session.c).
 */
#include "khtest.h"

#include <inttypes.h>

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
	for (size_t i = 0; i < p->transition_count && i < 16; i++)
		r->states[i] = p->transitions[i].state;
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

	assert_int_equal(sessions__event_ends_session(&e), type == KH_EVENT_SESSION_FINISH);
	sessions__event(tbl, &e, totals);
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
	struct session_table tbl;
	struct seen seen;
	struct kh_slot_stats totals = decode_totals(10, 10000);
	struct kh_event id = event(KH_EVENT_IDENTITY, 1, START_NS + 200, 0);
	char run_id[96];

	(void)state;
	table_init(&tbl, &seen);
	feed(&tbl, KH_EVENT_SESSION_START, 1, START_NS + 100, 3, NULL);
	snprintf(id.key, sizeof(id.key), "binary_version");
	snprintf(id.value, sizeof(id.value), "9.8.7");
	sessions__event(&tbl, &id, NULL);
	feed(&tbl, KH_EVENT_TRANSITION, 1, START_NS + 300, KH_STATE_SCANNING, NULL);
	assert_true(sessions__is_open(&tbl, 1));
	assert_int_equal(seen.count, 0);
	feed(&tbl, KH_EVENT_SESSION_FINISH, 1, START_NS + 1100, KH_STATE_COMPLETED, &totals);

	assert_false(sessions__is_open(&tbl, 1));
	assert_int_equal(seen.count, 1);
	assert_int_equal(tbl.records_emitted, 1);
	snprintf(run_id, sizeof(run_id), "%d-%" PRIu64 "-3", getpid(),
		 (uint64_t)(START_NS + 100 + REALTIME_OFFSET));
	assert_string_equal(seen.records[0].run_id, run_id);
	assert_string_equal(seen.records[0].binary_version, "9.8.7");
	assert_int_equal(seen.records[0].status, KH_STATE_COMPLETED);
	assert_int_equal(seen.records[0].wall_time_ns, 1000);
	assert_int_equal(seen.records[0].decode_calls, 10);
	/* The calibrated bias (5 ns per span) is taken off. */
	assert_int_equal(seen.records[0].decode_ns, 10000 - 10 * 5);
	assert_int_equal(seen.records[0].tracer_cost_ns, 10 * 10);
	assert_int_equal(seen.records[0].session_sequence, 3);
	assert_false(seen.records[0].started_mid_session);
	assert_false(seen.records[0].ended_mid_session);
	assert_int_equal(seen.records[0].transition_count, 3);
	assert_int_equal(seen.records[0].states[0], KH_STATE_CREATED);
	assert_int_equal(seen.records[0].states[1], KH_STATE_SCANNING);
	assert_int_equal(seen.records[0].states[2], KH_STATE_COMPLETED);
	sessions__free(&tbl);
}

/* Events of a session whose start was never seen open a partial one. */
static void test_partial_session(void **state)
{
	struct session_table tbl;
	struct seen seen;
	struct kh_slot_stats totals = decode_totals(2, 400);

	(void)state;
	table_init(&tbl, &seen);
	feed(&tbl, KH_EVENT_TRANSITION, 2, START_NS + 500, KH_STATE_REPORTING, NULL);
	feed(&tbl, KH_EVENT_SESSION_FINISH, 2, START_NS + 900, KH_STATE_COMPLETED, &totals);
	assert_int_equal(seen.count, 1);
	assert_true(seen.records[0].started_mid_session);
	assert_true(has_suffix(seen.records[0].run_id, "-partial"));
	assert_int_equal(seen.records[0].wall_time_ns, 900);
	assert_int_equal(seen.records[0].decode_calls, 2);
	sessions__free(&tbl);
}

/* A process that exits inside a session failed it; a detach keeps its state. */
static void test_end_open_sessions(void **state)
{
	struct session_table tbl;
	struct seen seen;
	struct kh_slot_stats totals = decode_totals(1, 100);

	(void)state;
	table_init(&tbl, &seen);
	feed(&tbl, KH_EVENT_SESSION_START, 1, START_NS, 0, NULL);
	feed(&tbl, KH_EVENT_TRANSITION, 1, START_NS + 10, KH_STATE_SCANNING, NULL);
	sessions__end(&tbl, 1, 3, START_NS + 50, &totals);
	feed(&tbl, KH_EVENT_SESSION_START, 2, START_NS + 60, 1, NULL);
	feed(&tbl, KH_EVENT_TRANSITION, 2, START_NS + 70, KH_STATE_RESOLVING, NULL);
	sessions__end(&tbl, 2, -1, START_NS + 90, &totals);
	assert_int_equal(seen.count, 2);
	assert_int_equal(seen.records[0].status, KH_STATE_FAILED);
	assert_true(seen.records[0].ended_mid_session);
	assert_int_equal(seen.records[0].wall_time_ns, 50);
	assert_int_equal(seen.records[1].status, KH_STATE_RESOLVING);
	assert_int_equal(seen.records[1].wall_time_ns, 30);
	assert_false(sessions__none_seen(&tbl));
	sessions__free(&tbl);
}

/* Spans without session probes: one record for the whole trace, if any activity. */
static void test_whole_trace(void **state)
{
	struct session_table tbl;
	struct seen seen;
	struct kh_slot_stats idle, busy = decode_totals(4, 800);

	(void)state;
	memset(&idle, 0, sizeof(idle));
	table_init(&tbl, &seen);
	assert_true(sessions__none_seen(&tbl));
	sessions__end_whole_trace(&tbl, 0, START_NS + 100, &idle);
	assert_int_equal(seen.count, 0);
	sessions__end_whole_trace(&tbl, 0, START_NS + 100, &busy);
	assert_int_equal(seen.count, 1);
	assert_int_equal(seen.records[0].status, KH_STATE_COMPLETED);
	assert_true(has_suffix(seen.records[0].run_id, "-0"));
	assert_int_equal(seen.records[0].wall_time_ns, 100);
	assert_int_equal(seen.records[0].decode_calls, 4);
	table_init(&tbl, &seen);
	sessions__end_whole_trace(&tbl, 9, START_NS + 100, &busy);
	assert_int_equal(seen.records[0].status, KH_STATE_FAILED);
	table_init(&tbl, &seen);
	sessions__end_whole_trace(&tbl, -1, START_NS + 100, &busy);
	assert_int_equal(seen.records[0].status, KH_STATE_SCANNING);
	assert_true(seen.records[0].ended_mid_session);
	sessions__free(&tbl);
}

/* A session start with every slot unread is not recorded; out-of-range slots are outside. */
static void test_unrecorded_session(void **state)
{
	struct session_table tbl;
	struct seen seen;
	struct kh_event far = event(KH_EVENT_TRANSITION, KH_MAX_SLOTS + 3, START_NS, 0);

	(void)state;
	table_init(&tbl, &seen);
	assert_int_equal(sessions__slot_of(&far), KH_OUTSIDE_SLOT);
	feed(&tbl, KH_EVENT_SESSION_START, KH_OUTSIDE_SLOT, START_NS, 7, NULL);
	assert_false(sessions__is_open(&tbl, KH_OUTSIDE_SLOT));
	assert_false(sessions__none_seen(&tbl));
	sessions__free(&tbl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_complete_session),
		cmocka_unit_test(test_partial_session),
		cmocka_unit_test(test_end_open_sessions),
		cmocka_unit_test(test_whole_trace),
		cmocka_unit_test(test_unrecorded_session),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
