// SPDX-License-Identifier: MIT
/* The TSC rate batch mode converts ticks with. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "khtest.h"
#include "tsc.h"

static void test_scale_of_a_known_rate(void **state)
{
	/* 2.5 GHz: 0.4 ns per tick over 10 ms. */
	struct tsc_sample a = { 1000000000ull, 5000000000ull };
	struct tsc_sample b = { 1000000000ull + 25000000ull, 5000000000ull + 10000000ull };
	uint32_t mult, shift;
	uint64_t ticks = 2500000000ull; /* one second of ticks */
	uint64_t ns;

	(void)state;
	assert_int_equal(tsc__scale(&a, &b, &mult, &shift), 0);
	/* The split product the BPF side computes. */
	ns = (ticks >> shift) * mult + (((ticks & ((1ull << shift) - 1)) * mult) >> shift);
	assert_true(ns > 999999000ull && ns < 1000001000ull);
}

static void test_scale_rejects_short_or_backward_intervals(void **state)
{
	struct tsc_sample a = { 1000, 1000000 };
	struct tsc_sample close = { 2000, 1000000 + 1000 }; /* 1 µs apart */
	struct tsc_sample backward = { 500, 1000000 + 5000000 };
	struct tsc_sample frozen = { 1000, 1000000 + 5000000 };
	uint32_t mult = 7, shift = 7;

	(void)state;
	assert_int_equal(tsc__scale(&a, &close, &mult, &shift), -22);
	assert_int_equal(tsc__scale(&a, &backward, &mult, &shift), -22);
	assert_int_equal(tsc__scale(&a, &frozen, &mult, &shift), -22);
	/* Nothing written on failure. */
	assert_int_equal(mult, 7);
	assert_int_equal(shift, 7);
}

static void test_samples_follow_the_clock(void **state)
{
	struct tsc_sample a, b;
	uint32_t mult, shift;
	volatile uint64_t spin = 0;
	int64_t converted;

	(void)state;
	tsc__sample(&a);
	do {
		for (int i = 0; i < 100000; i++)
			spin += i;
		tsc__sample(&b);
	} while (b.raw_ns - a.raw_ns < 2000000);
	assert_true(b.ticks > a.ticks);
	/* Whatever this CPU's rate, it converts back to the interval measured. */
	assert_int_equal(tsc__scale(&a, &b, &mult, &shift), 0);
	converted = (int64_t)((b.ticks - a.ticks) * (uint64_t)mult >> shift);
	assert_true(llabs(converted - (int64_t)(b.raw_ns - a.raw_ns)) < 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scale_of_a_known_rate),
		cmocka_unit_test(test_scale_rejects_short_or_backward_intervals),
		cmocka_unit_test(test_samples_follow_the_clock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
