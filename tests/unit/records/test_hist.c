// SPDX-License-Identifier: MIT
/* Bucket arithmetic of include/khprof_hist.h and percentiles from buckets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hist.h"
#include "json.h"
#include "latency_text.h"
#include "record.h"
#include "text.h"

/* The highest set bit, the slow and obvious way. */
static uint32_t slow_log2(uint64_t v)
{
	uint32_t r = 0;

	while (v >>= 1)
		r++;
	return r;
}

static void test_log2_matches_the_obvious_loop(void **state)
{
	(void)state;
	for (uint32_t bit = 0; bit < 63; bit++) {
		uint64_t v = 1ull << bit;

		assert_int_equal(kh_hist_log2(v), bit);
		assert_int_equal(kh_hist_log2(v + (v >> 1)), slow_log2(v + (v >> 1)));
		assert_int_equal(kh_hist_log2(2 * v - 1), bit);
	}
	assert_int_equal(kh_hist_log2(1), 0);
	assert_int_equal(kh_hist_log2(3), 1);
}

/* Every value lands in the bucket whose edges hold it; buckets are contiguous. */
static void test_buckets_hold_their_values(void **state)
{
	(void)state;
	for (uint32_t i = 0; i < KH_HIST_BUCKETS; i++) {
		uint64_t low = kh_hist_bucket_low(i), width = kh_hist_bucket_width(i);

		assert_int_equal(kh_hist_bucket(low), i);
		assert_int_equal(kh_hist_bucket(low + width - 1), i);
		if (i + 1 < KH_HIST_BUCKETS)
			assert_true(kh_hist_bucket_low(i + 1) == low + width);
		/* The relative width that bounds the percentile error. */
		if (i >= KH_HIST_LINEAR)
			assert_true(width * KH_HIST_SUB <= low);
	}
}

/* The BPF side's table for short spans holds what the arithmetic gives. */
static void test_small_span_table_matches_the_arithmetic(void **state)
{
	(void)state;
	for (uint32_t ns = 0; ns < KH_HIST_SMALL; ns++)
		assert_int_equal(kh_hist_small[ns], kh_hist_bucket(ns));
	/* The table ends inside an octave: the arithmetic takes over seamlessly. */
	assert_int_equal(kh_hist_bucket(KH_HIST_SMALL), kh_hist_small[KH_HIST_SMALL - 1] + 1);
}

static void test_bucket_edges(void **state)
{
	(void)state;
	/* 0 ns is a span too (two probes in the same clock tick). */
	assert_int_equal(kh_hist_bucket(0), 0);
	assert_int_equal(kh_hist_bucket(63), 63);
	assert_int_equal(kh_hist_bucket(64), 64);
	assert_int_equal(kh_hist_bucket(65), 64);
	assert_int_equal(kh_hist_bucket(66), 65);
	/* One hour fits below the last bucket's edge; longer spans clamp. */
	assert_true(kh_hist_bucket(3600ull * 1000000000ull) < KH_HIST_BUCKETS - 1);
	assert_int_equal(kh_hist_bucket(KH_HIST_MAX_VALUE), KH_HIST_BUCKETS - 1);
	assert_int_equal(kh_hist_bucket(KH_HIST_MAX_VALUE + 1), KH_HIST_BUCKETS - 1);
	assert_int_equal(kh_hist_bucket(UINT64_MAX >> 1), KH_HIST_BUCKETS - 1);
	assert_true(kh_hist_bucket_low(KH_HIST_BUCKETS - 1) == 63ull << 36);
}

static void dist_add(struct kh_stage_dist *d, uint64_t ns)
{
	if (!d->present) {
		d->present = true;
		d->min_ns = ns;
		d->max_ns = ns;
	}
	d->counts[kh_hist_bucket(ns)]++;
	d->spans++;
	if (ns < d->min_ns)
		d->min_ns = ns;
	if (ns > d->max_ns)
		d->max_ns = ns;
}

static void test_one_span_is_exact(void **state)
{
	struct kh_stage_dist d = { 0 };

	(void)state;
	assert_int_equal(kh_dist__alloc(&d), 0);
	assert_true(kh_dist__percentile(&d, 500, 0) == 0); /* no spans yet */
	dist_add(&d, 1234567);
	for (int q = 0; q < KH_DIST_PERCENTILES; q++)
		assert_true(kh_dist__percentile(&d, kh_dist_permille[q], 0) == 1234567);
	assert_true(kh_dist__percentile(&d, 1000, 0) == 1234567);
	kh_dist__free(&d);
}

static void test_equal_spans_and_zero_are_exact(void **state)
{
	struct kh_stage_dist d = { 0 }, z = { 0 };

	(void)state;
	assert_int_equal(kh_dist__alloc(&d), 0);
	assert_int_equal(kh_dist__alloc(&z), 0);
	for (int i = 0; i < 1000; i++) {
		dist_add(&d, 10007);
		dist_add(&z, 0);
	}
	for (int q = 0; q < KH_DIST_PERCENTILES; q++) {
		assert_true(kh_dist__percentile(&d, kh_dist_permille[q], 0) == 10007);
		assert_true(kh_dist__percentile(&z, kh_dist_permille[q], 0) == 0);
	}
	/* The bias cannot take a percentile below the (corrected) minimum. */
	z.min_ns = 0;
	assert_true(kh_dist__percentile(&z, 500, 50) == 0);
	kh_dist__free(&d);
	kh_dist__free(&z);
}

static void test_max_bucket_reports_the_exact_max(void **state)
{
	struct kh_stage_dist d = { 0 };
	uint64_t two_hours = 7200ull * 1000000000ull;

	(void)state;
	assert_int_equal(kh_dist__alloc(&d), 0);
	dist_add(&d, 10);
	dist_add(&d, two_hours);
	assert_int_equal(d.counts[KH_HIST_BUCKETS - 1], 1);
	assert_true(kh_dist__percentile(&d, 999, 0) == two_hours);
	assert_true(kh_dist__percentile(&d, 500, 0) == 10);
	kh_dist__free(&d);
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Within half a bucket, 1/64 of the value, of the exact nearest-rank value. */
static void test_percentiles_within_bucket_error(void **state)
{
	enum { N = 20000 };
	uint64_t *values = malloc(N * sizeof(*values));
	struct kh_stage_dist d = { 0 };
	uint64_t seed = 88172645463325252ull;

	(void)state;
	assert_non_null(values);
	assert_int_equal(kh_dist__alloc(&d), 0);
	for (int i = 0; i < N; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		/* log-uniform over 1 ns .. ~1 s */
		values[i] = 1 + (seed % 1000000) * (1ull << (seed >> 60)) / 31;
		dist_add(&d, values[i]);
	}
	qsort(values, N, sizeof(*values), compare_u64);
	for (unsigned int q = 1; q <= 999; q++) {
		uint64_t exact = kh_exact_percentile(values, N, q);
		uint64_t got = kh_dist__percentile(&d, q, 0);
		uint64_t err = got > exact ? got - exact : exact - got;

		assert_true(err * 64 <= exact);
	}
	/* The nearest-rank percentile of the tests' own workloads. */
	assert_true(kh_exact_percentile(values, N, 1000) == values[N - 1]);
	assert_true(kh_exact_percentile(values, 1, 500) == values[0]);
	free(values);
	kh_dist__free(&d);
}

static void test_copy_is_deep(void **state)
{
	struct kh_stage_dist a = { 0 }, b;

	(void)state;
	assert_int_equal(kh_dist__alloc(&a), 0);
	dist_add(&a, 5);
	assert_int_equal(kh_dist__copy(&b, &a), 0);
	a.counts[5] = 0;
	assert_int_equal(b.counts[5], 1);
	kh_dist__free(&a);
	kh_dist__free(&b);
}

/* khprof.latency survives a write and a read, and the report adds its tables. */
static void test_latency_round_trip_and_report(void **state)
{
	struct kh_profile p, back;
	struct kh_stage_dist *d;
	char err[256], *json, *again, *seed, *report;

	(void)state;
	assert_int_equal(profile__init(&p), 0);
	assert_int_equal(profile__set_mode(&p, KH_MODE_SPAN), 0);
	assert_int_equal(profile__set_stage(&p, KH_STAGE_DECODE, 30000000, 3, 0), 0);
	assert_int_equal(profile__finish(&p, KH_STATE_COMPLETED, 40000000), 0);
	d = &p.ext.latency.stages[KH_STAGE_DECODE];
	assert_int_equal(kh_dist__alloc(d), 0);
	d->present = true;
	d->counts[kh_hist_bucket(1000000)] = 2;
	d->counts[kh_hist_bucket(28000000)] = 1;
	d->spans = 3;
	d->min_ns = 1000000;
	d->max_ns = 28000000;
	d->off_cpu_ns = 25000000;
	d->runnable_ns = 1000000;
	p.ext.latency.present = p.ext.latency.off_cpu = true;
	json = profile__to_json(&p);
	assert_non_null(json);
	assert_non_null(strstr(json, "\"p50_ns\": 1007615"));
	assert_non_null(strstr(json, "\"blocked_ns\": 24000000"));
	assert_int_equal(profile__from_json(json, &back, err, sizeof(err)), 0);
	again = profile__to_json(&back);
	assert_string_equal(again, json);
	/* The seed's text first, unchanged; then the tables. */
	seed = profile__render_text(&back);
	report = profile__render_report(&back);
	assert_int_equal(strncmp(report, seed, strlen(seed)), 0);
	assert_non_null(strstr(report + strlen(seed), "  decode "));
	assert_non_null(strstr(report + strlen(seed), "runnable"));
	for (char *line = report + strlen(seed); *line; line = strchr(line, '\n') + 1)
		assert_true(strcspn(line, "\n") <= 100);
	free(json);
	free(again);
	free(seed);
	free(report);
	profile__free(&back);
	profile__free(&p);
}

static void test_latency_bad_bucket_is_refused(void **state)
{
	static const char *const bad[][2] = {
		{ "[[5000, 1]]", "bucket 5000 out of range" },
		{ "[[1, 2, 3]]", "expected [index, count]" },
		{ "[[1, -2]]", "expected an unsigned 64-bit integer" },
	};
	char text[1024], err[256];
	struct kh_profile p;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
			 "{\"schema\": \"keyhog-profile-v1\", \"identity\": {\"run_id\": \"r\", "
			 "\"binary_version\": \"v\", \"detector_digest\": \"d\", \"config_digest\": "
			 "\"c\", \"source_kind\": \"s\", \"workload_class\": \"w\", "
			 "\"backend_requested\": \"a\", \"backend_selected\": null, \"cache_state\": "
			 "\"cold\", \"daemon_state\": \"off\", \"scanner_threads\": 1, "
			 "\"reader_threads\": null, \"logical_cpus\": 1}, \"status\": \"completed\", "
			 "\"wall_time_ns\": 1, \"input_bytes\": 0, \"input_units\": 0, \"stages\": [], "
			 "\"transitions\": [], \"states\": [], \"resource_samples\": [], \"resources\": "
			 "{\"start\": {}, \"finish\": {}}, \"khprof\": {\"latency\": {\"stages\": "
			 "[{\"stage\": \"decode\", \"buckets\": %s}]}}}", bad[i][0]);
		assert_int_not_equal(profile__from_json(text, &p, err, sizeof(err)), 0);
		if (!strstr(err, bad[i][1]))
			fail_msg("'%s': got '%s'", bad[i][0], err);
		assert_non_null(strstr(err, "khprof.latency.stages[0].buckets[0]"));
	}
}

/* The fold index a span of v ns must land in, by the bounds' definition. */
static unsigned int slow_fold_index(uint64_t v)
{
	for (unsigned int j = 0; j < KH_SPAN_BOUNDS; j++)
		if (v <= kh_span_bound_ns(j))
			return j;
	return KH_SPAN_BOUNDS;
}

/* Each bound is 4^k - 1 ns, the last value of a bucket; 4^k starts the next. */
static void test_span_bounds_are_bucket_edges(void **state)
{
	(void)state;
	assert_int_equal(kh_span_bound_ns(0), 255);
	assert_int_equal(kh_span_bound_ns(KH_SPAN_BOUNDS - 1), 274877906943ull); /* 4^19 - 1 */
	for (unsigned int j = 0; j < KH_SPAN_BOUNDS; j++) {
		uint64_t bound = kh_span_bound_ns(j);

		if (j)
			assert_true(bound == 4 * kh_span_bound_ns(j - 1) + 3);
		assert_int_equal(kh_hist_bucket(bound), KH_SPAN_EDGE(j) - 1);
		assert_int_equal(kh_hist_bucket(bound + 1), KH_SPAN_EDGE(j));
		assert_int_equal(kh_hist_bucket_low(KH_SPAN_EDGE(j)), bound + 1);
		assert_int_equal(kh_hist_bucket_low(KH_SPAN_EDGE(j) - 1) +
					 kh_hist_bucket_width(KH_SPAN_EDGE(j) - 1),
				 bound + 1);
	}
}

/*
 * Spans on a bound, one past it, 0 ns, and in the last open-ended bucket
 * land where "le" says, in both the u64 (record) and u32 (BPF) folds.
 */
static void test_span_fold_edges(void **state)
{
	static uint64_t counts[KH_HIST_BUCKETS];
	static uint32_t counts32[KH_HIST_BUCKETS];
	uint64_t values[3 * KH_SPAN_BOUNDS + 6];
	struct kh_span_fold f = { 0 }, f32 = { 0 }, expected = { 0 };
	size_t n = 0;

	(void)state;
	values[n++] = 0;
	values[n++] = 1;
	values[n++] = 63;
	values[n++] = 64;
	values[n++] = KH_HIST_MAX_VALUE;     /* the last bucket */
	values[n++] = KH_HIST_MAX_VALUE * 9; /* beyond it: also the last */
	for (unsigned int j = 0; j < KH_SPAN_BOUNDS; j++) {
		values[n++] = kh_span_bound_ns(j) - 1;
		values[n++] = kh_span_bound_ns(j);     /* exactly on the bound: in it */
		values[n++] = kh_span_bound_ns(j) + 1; /* 4^k ns: in the next one */
	}
	for (size_t i = 0; i < n; i++) {
		counts[kh_hist_bucket(values[i])] += i + 1; /* distinct weights */
		counts32[kh_hist_bucket(values[i])] += (uint32_t)(i + 1);
		expected.counts[slow_fold_index(values[i])] += i + 1;
	}
	kh_span_fold__add(&f, counts);
	kh_span_fold__add_u32(&f32, counts32);
	assert_memory_equal(&f, &expected, sizeof(f));
	assert_memory_equal(&f32, &expected, sizeof(f));
	/* The top two values are above every bound: +Inf only. */
	assert_int_equal(slow_fold_index(KH_HIST_MAX_VALUE), KH_SPAN_BOUNDS);
	assert_int_equal(f.counts[KH_SPAN_BOUNDS], 5 + 6 + n); /* and 4^19 ns, last */
	assert_int_equal(kh_span_fold__total(&f), n * (n + 1) / 2);
	/* 0 ns and the values under 255 ns: the first bound. */
	assert_int_equal(f.counts[0], 1 + 2 + 3 + 4 + 7 + 8);
	/* Merging adds; an empty stage folds to nothing. */
	kh_span_fold__merge(&f, &f32);
	assert_int_equal(kh_span_fold__total(&f), n * (n + 1));
	memset(counts, 0, sizeof(counts));
	memset(&f, 0, sizeof(f));
	kh_span_fold__add(&f, counts);
	assert_int_equal(kh_span_fold__total(&f), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log2_matches_the_obvious_loop),
		cmocka_unit_test(test_buckets_hold_their_values),
		cmocka_unit_test(test_small_span_table_matches_the_arithmetic),
		cmocka_unit_test(test_bucket_edges),
		cmocka_unit_test(test_one_span_is_exact),
		cmocka_unit_test(test_equal_spans_and_zero_are_exact),
		cmocka_unit_test(test_max_bucket_reports_the_exact_max),
		cmocka_unit_test(test_percentiles_within_bucket_error),
		cmocka_unit_test(test_copy_is_deep),
		cmocka_unit_test(test_latency_round_trip_and_report),
		cmocka_unit_test(test_latency_bad_bucket_is_refused),
		cmocka_unit_test(test_span_bounds_are_bucket_edges),
		cmocka_unit_test(test_span_fold_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
