// SPDX-License-Identifier: MIT
/*
 * Counting what a thread still holds in its batch buffer after a detach
 * (userspace/capture/session/buffers.c), as the BPF side counts a dying thread's:
 * the part already claimed is skipped (include/khprof_shared.h, "Claims"),
 * TSC times are placed on the kernel clock, spans that ended after the
 * detach are left out, spans begun before their session are set aside, and
 * spans numbered but never seen are counted.
 */
#include "khtest.h"

#include "buffers.h"

/* 1 ns per tick: mult 1 << 8, shift 8. */
static const struct buffer_clock clock_1ns = {
	.now_ticks = 100000000,
	.now_ns = 5000000,
	.tsc_mult = 256,
	.tsc_shift = 8,
	.trace_start_ns = 1000,
	.session_start_ns = 2000,
	.until_ns = 4990000,
};

struct state_bytes {
	unsigned char bytes[KH_TS_READ_BYTES];
};

static void put_entry(struct state_bytes *s, uint32_t i, uint64_t start, uint64_t end,
		      uint32_t stage, uint32_t attribution)
{
	unsigned char *raw = s->bytes + KH_TS_BATCH_OFF + (size_t)i * 24;

	memcpy(raw, &start, 8);
	memcpy(raw + 8, &end, 8);
	memcpy(raw + 16, &stage, 4);
	memcpy(raw + 20, &attribution, 4);
}

static void put_header(struct state_bytes *s, uint32_t count, uint64_t bytes, uint64_t units,
		       uint64_t flushes)
{
	memcpy(s->bytes + KH_TS_BATCH_COUNT_OFF, &count, 4);
	memcpy(s->bytes + KH_TS_INPUT_OFF, &bytes, 8);
	memcpy(s->bytes + KH_TS_INPUT_OFF + 8, &units, 8);
	memcpy(s->bytes + KH_TS_FLUSHES_OFF, &flushes, 8);
}

/* TSC time of a kernel time, on clock_1ns. */
static uint64_t tsc_at(uint64_t ns)
{
	return (clock_1ns.now_ticks - (clock_1ns.now_ns - ns)) | KH_TIME_TSC;
}

static void test_counts_buffer(void **state)
{
	struct state_bytes s = { 0 };
	struct buffer_take take = { .input_bytes = 300, .input_units = 3 };
	struct kh_slot_stats out = { 0 };

	(void)state;
	put_header(&s, 6, 300, 3, 7);
	put_entry(&s, 0, tsc_at(10000), tsc_at(10500), KH_STAGE_DECODE, KH_ATTRIBUTION_ROOT);
	put_entry(&s, 1, 20000, 20700, KH_STAGE_DECODE, KH_ATTRIBUTION_DECODED);
	/* Ended after the detach: not observed. */
	put_entry(&s, 2, tsc_at(4980000), tsc_at(4995000), KH_STAGE_DECODE, 0);
	/* Ended before its session began. */
	put_entry(&s, 3, tsc_at(1500), tsc_at(1800), KH_STAGE_ENTROPY, 0);
	/* Begun before its session, ended in it: not the session's, as the seed has it (both clocks). */
	put_entry(&s, 4, tsc_at(1999), tsc_at(2500), KH_STAGE_ENTROPY, 0);
	put_entry(&s, 5, 1500, 2000, KH_STAGE_ENTROPY, 0);
	assert_int_equal(buffers__account(s.bytes, &take, &clock_1ns, &out, NULL), 1);
	assert_int_equal(out.stages[KH_STAGE_DECODE].calls, 2);
	assert_int_equal(out.stages[KH_STAGE_DECODE].elapsed_ns, 500 + 700);
	assert_int_equal(out.stages[KH_STAGE_DECODE].attributed_calls, 1);
	assert_int_equal(out.stages[KH_STAGE_DECODE].attributed_ns, 700);
	assert_int_equal(out.stages[KH_STAGE_ENTROPY].calls, 0);
	assert_int_equal(out.drops[KH_DROP_LATE_BATCH], 1);
	assert_int_equal(out.begun_before_session, 2);
	assert_int_equal(out.input_bytes, 300);
	assert_int_equal(out.input_units, 3);
}

/*
 * What the claims say was counted of the buffer's generation is skipped:
 * two entries and 100 bytes that a session's end or an execve took.  A
 * later generation is all new; an earlier one than the claims' was taken
 * whole by the thread's batch (it died between its flush and the reset).
 */
static void test_skips_what_was_claimed(void **state)
{
	struct state_bytes s = { 0 };
	struct kh_thread_entry entry = {
		.state_addr = 1, .flags = KH_THREAD_ABI3,
		.claim_spans = kh_claim(7, 2), .claim_bytes = kh_claim(7, 100),
		.claim_units = kh_claim(7, 0),
	};
	struct buffer_take take;
	struct kh_slot_stats out = { 0 };

	(void)state;
	put_header(&s, 3, 150, 0, 7);
	for (uint32_t i = 0; i < 3; i++)
		put_entry(&s, i, 10000 + i * 1000, 10100 + i * 1000, KH_STAGE_DECODE, 0);
	buffers__take_of(s.bytes, &entry, 0, &take);
	buffers__account(s.bytes, &take, &clock_1ns, &out, NULL);
	assert_int_equal(out.stages[KH_STAGE_DECODE].calls, 1);
	assert_int_equal(out.input_bytes, 50);

	memset(&out, 0, sizeof(out));
	put_header(&s, 3, 150, 0, 8);
	buffers__take_of(s.bytes, &entry, 0, &take);
	buffers__account(s.bytes, &take, &clock_1ns, &out, NULL);
	assert_int_equal(out.stages[KH_STAGE_DECODE].calls, 3);
	assert_int_equal(out.input_bytes, 150);

	memset(&out, 0, sizeof(out));
	put_header(&s, 3, 150, 0, 6);
	buffers__take_of(s.bytes, &entry, 0, &take);
	buffers__account(s.bytes, &take, &clock_1ns, &out, NULL);
	assert_int_equal(out.stages[KH_STAGE_DECODE].calls, 0);
	assert_int_equal(out.input_bytes, 0);
}

/*
 * Generations wrap at 2^20 in a claim: the one after the highest is the
 * first again, still later, not earlier.
 */
static void test_claim_generations_wrap(void **state)
{
	uint64_t last = (1ull << (64 - KH_CLAIM_SHIFT)) - 1;

	(void)state;
	assert_int_equal(kh_claim_counted(kh_claim(last + 1, 0), last, 5), 5);
	assert_true(kh_claim_ahead(kh_claim(last + 1, 0), last));
	assert_int_equal(kh_claim_counted(kh_claim(last, 3), last + 1, 5), 0);
	assert_false(kh_claim_ahead(kh_claim(last, 3), last + 1));
	assert_int_equal(kh_claim_counted(kh_claim(last + 1, 3), last + 1, 5), 3);
	assert_int_equal(kh_claim_counted(kh_claim(last + 1, 9), last + 1, 5), 5);
}

/*
 * Probe ABI 7: a thread whose buffer begins at span 130 when khprof
 * expected 100 handed over 30 spans khprof never saw; counted as unseen,
 * unless the thread had already handed its buffer over (claims ahead).
 */
static void test_unseen_spans(void **state)
{
	struct state_bytes s = { 0 };
	struct kh_thread_entry entry = {
		.state_addr = 1, .flags = KH_THREAD_ABI3 | KH_THREAD_ABI6 | KH_THREAD_ABI7,
		.claim_spans = kh_claim(4, 0), .claim_bytes = kh_claim(4, 0),
		.claim_units = kh_claim(4, 0), .next_flushed = 100,
	};
	struct buffer_take take;
	struct kh_slot_stats out = { 0 };

	(void)state;
	put_header(&s, 1, 0, 0, 4);
	put_entry(&s, 0, 10000, 10100, KH_STAGE_DECODE, 0);
	buffers__take_of(s.bytes, &entry, 130, &take);
	assert_int_equal(take.unseen, 30);
	buffers__account(s.bytes, &take, &clock_1ns, &out, NULL);
	assert_int_equal(out.drops[KH_DROP_UNSEEN], 30);
	assert_int_equal(out.stages[KH_STAGE_DECODE].calls, 1);

	buffers__take_of(s.bytes, &entry, 100, &take);
	assert_int_equal(take.unseen, 0);
	entry.claim_spans = kh_claim(5, 0);
	buffers__take_of(s.bytes, &entry, 130, &take);
	assert_int_equal(take.unseen, 0);
	assert_int_equal(take.first, 1);
}

/* Starts of 0 or from before the trace are unmatched; counts are bounded. */
static void test_unmatched_and_bounds(void **state)
{
	struct state_bytes s = { 0 };
	struct buffer_take take = { .capacity = KH_BATCH_CAPACITY };
	struct kh_slot_stats out = { 0 };

	(void)state;
	put_header(&s, 1000, 0, 0, 0);
	for (uint32_t i = 0; i < KH_BATCH_CAPACITY; i++)
		put_entry(&s, i, i % 2 ? 0 : 500, 30000, KH_STAGE_DECODE, 0);
	buffers__account(s.bytes, &take, &clock_1ns, &out, NULL);
	assert_int_equal(out.drops[KH_DROP_UNMATCHED_EXIT], KH_BATCH_CAPACITY);
	assert_int_equal(out.stages[KH_STAGE_DECODE].calls, 0);
}

/* A thread of probe ABI 5 or older has 64 entries: a larger count reads no further. */
static void test_older_layout_bound(void **state)
{
	struct state_bytes s = { 0 };
	struct kh_thread_entry entry = { .state_addr = 1, .flags = KH_THREAD_ABI3 };
	struct buffer_take take;
	struct kh_slot_stats out = { 0 };

	(void)state;
	put_header(&s, 1000, 0, 0, 0);
	for (uint32_t i = 0; i < KH_BATCH_CAPACITY; i++)
		put_entry(&s, i, 0, 30000, KH_STAGE_DECODE, 0);
	buffers__take_of(s.bytes, &entry, 0, &take);
	buffers__account(s.bytes, &take, &clock_1ns, &out, NULL);
	assert_int_equal(out.drops[KH_DROP_UNMATCHED_EXIT], KH_BATCH_CAPACITY_ABI5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_buffer),
		cmocka_unit_test(test_skips_what_was_claimed),
		cmocka_unit_test(test_claim_generations_wrap),
		cmocka_unit_test(test_unseen_spans),
		cmocka_unit_test(test_unmatched_and_bounds),
		cmocka_unit_test(test_older_layout_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
