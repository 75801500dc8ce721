// SPDX-License-Identifier: MIT
/*
 * Counting what a thread still holds in its batch buffer after a detach
 * (userspace/capture/session/buffers.c), as the BPF side counts a dying thread's:
 * the part already handed over is skipped, TSC times are placed on the
 * kernel clock, and spans that ended after the detach are left out.
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
	struct kh_thread_info info = { .state_addr = 1, .flags = KH_THREAD_ABI3 };
	struct kh_slot_stats out = { 0 };

	(void)state;
	put_header(&s, 4, 300, 3, 7);
	put_entry(&s, 0, tsc_at(10000), tsc_at(10500), KH_STAGE_DECODE, KH_ATTRIBUTION_ROOT);
	put_entry(&s, 1, 20000, 20700, KH_STAGE_DECODE, KH_ATTRIBUTION_DECODED);
	/* Ended after the detach: not observed. */
	put_entry(&s, 2, tsc_at(4980000), tsc_at(4995000), KH_STAGE_DECODE, 0);
	/* Ended before its session began. */
	put_entry(&s, 3, tsc_at(1500), tsc_at(1800), KH_STAGE_ENTROPY, 0);
	assert_int_equal(buffers__account(s.bytes, &info, &clock_1ns, &out, NULL), 1);
	assert_int_equal(out.stages[KH_STAGE_DECODE].calls, 2);
	assert_int_equal(out.stages[KH_STAGE_DECODE].elapsed_ns, 500 + 700);
	assert_int_equal(out.stages[KH_STAGE_DECODE].attributed_calls, 1);
	assert_int_equal(out.stages[KH_STAGE_DECODE].attributed_ns, 700);
	assert_int_equal(out.stages[KH_STAGE_ENTROPY].calls, 0);
	assert_int_equal(out.drops[KH_DROP_LATE_BATCH], 1);
	assert_int_equal(out.input_bytes, 300);
	assert_int_equal(out.input_units, 3);
}

/*
 * The thread was handed over (flush probe) but had not reset its buffer:
 * the same generation is skipped whole.  After the reset, flushes moved on
 * and everything in the buffer is new.
 */
static void test_skips_what_was_handed_over(void **state)
{
	struct state_bytes s = { 0 };
	struct kh_thread_info info = {
		.state_addr = 1, .flags = KH_THREAD_ABI3 | KH_THREAD_MARKED,
		.marked_flushes = 7, .marked_count = 2, .marked_input_bytes = 100,
	};
	struct kh_slot_stats out = { 0 };

	(void)state;
	put_header(&s, 3, 150, 0, 7);
	for (uint32_t i = 0; i < 3; i++)
		put_entry(&s, i, 10000 + i * 1000, 10100 + i * 1000, KH_STAGE_DECODE, 0);
	buffers__account(s.bytes, &info, &clock_1ns, &out, NULL);
	/* A failed execve counted two: the third and 50 bytes are new. */
	assert_int_equal(out.stages[KH_STAGE_DECODE].calls, 1);
	assert_int_equal(out.input_bytes, 50);

	memset(&out, 0, sizeof(out));
	put_header(&s, 3, 150, 0, 8);
	buffers__account(s.bytes, &info, &clock_1ns, &out, NULL);
	assert_int_equal(out.stages[KH_STAGE_DECODE].calls, 3);
	assert_int_equal(out.input_bytes, 150);
}

/* Starts of 0 or from before the trace are unmatched; counts are bounded. */
static void test_unmatched_and_bounds(void **state)
{
	struct state_bytes s = { 0 };
	struct kh_thread_info info = { .state_addr = 1, .flags = KH_THREAD_ABI3 | KH_THREAD_ABI6 };
	struct kh_slot_stats out = { 0 };

	(void)state;
	put_header(&s, 1000, 0, 0, 0);
	for (uint32_t i = 0; i < KH_BATCH_CAPACITY; i++)
		put_entry(&s, i, i % 2 ? 0 : 500, 30000, KH_STAGE_DECODE, 0);
	buffers__account(s.bytes, &info, &clock_1ns, &out, NULL);
	assert_int_equal(out.drops[KH_DROP_UNMATCHED_EXIT], KH_BATCH_CAPACITY);
	assert_int_equal(out.stages[KH_STAGE_DECODE].calls, 0);
}

/* A thread of probe ABI 5 or older has 64 entries: a larger count reads no further. */
static void test_older_layout_bound(void **state)
{
	struct state_bytes s = { 0 };
	struct kh_thread_info info = { .state_addr = 1, .flags = KH_THREAD_ABI3 };
	struct kh_slot_stats out = { 0 };

	(void)state;
	put_header(&s, 1000, 0, 0, 0);
	for (uint32_t i = 0; i < KH_BATCH_CAPACITY; i++)
		put_entry(&s, i, 0, 30000, KH_STAGE_DECODE, 0);
	buffers__account(s.bytes, &info, &clock_1ns, &out, NULL);
	assert_int_equal(out.drops[KH_DROP_UNMATCHED_EXIT], KH_BATCH_CAPACITY_ABI5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_buffer),
		cmocka_unit_test(test_skips_what_was_handed_over),
		cmocka_unit_test(test_unmatched_and_bounds),
		cmocka_unit_test(test_older_layout_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
