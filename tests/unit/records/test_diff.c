// SPDX-License-Identifier: MIT
/*
 * khprof diff: the pure comparison over record sets built in
 * tests/common/diff_sets.h, the Mann-Whitney interval it relies on, the
 * options and config file.  The command itself, run as a program on the
 * same sets, is tested in test_diff_cli.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "diff.h"
#include "diff_sets.h"
#include "json.h"
#include "khtest.h"
#include "stats.h"

/* --- verdicts --------------------------------------------------------------- */

static void test_stage_regression_detected(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d = compare_shapes(fx, plain(RUNS, steady),
					   scaled(RUNS, shuffled, KH_STAGE_HOT_PATTERNS, 1.2));
	const struct kh_diff_item *it = item(d, KH_DIFF_M_ELAPSED, KH_STAGE_HOT_PATTERNS);

	assert_int_equal(d->method, KH_DIFF_METHOD_MANN_WHITNEY);
	assert_int_equal(it->verdict, KH_DIFF_REGRESSED);
	assert_true(it->gating);
	assert_true(fabs(it->change_pct - 20.0) < 1e-6);
	assert_true(it->has_interval);
	/* Sure of more than the 5 % threshold, not merely of some change. */
	assert_true(it->interval_low_pct > 5 && it->interval_low_pct <= it->change_pct);
	assert_true(it->interval_high_pct >= it->change_pct);
	assert_others_ok(d, it);
	/* Per call says why: each call is slower, there are not more of them. */
	assert_int_equal(item(d, KH_DIFF_M_PER_CALL, KH_STAGE_HOT_PATTERNS)->verdict,
			 KH_DIFF_REGRESSED);
	assert_false(item(d, KH_DIFF_M_PER_CALL, KH_STAGE_HOT_PATTERNS)->gating);
	assert_int_equal(item(d, KH_DIFF_M_CALLS, KH_STAGE_HOT_PATTERNS)->verdict, KH_DIFF_SAME);
	assert_int_equal(d->regression_count, 1);
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_REGRESSED);
	assert_summary(d, "diff: 1 regression: hot-patterns.elapsed +20.0%");
}

static void test_noise_within_thresholds_passes(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d = compare_shapes(fx, plain(RUNS, steady), plain(RUNS, drift));

	/* Every item moved by the drift's 1 %, and none of them counts. */
	assert_true(fabs(item(d, KH_DIFF_M_WALL, 0)->change_pct - 1.0) < 1e-6);
	assert_true(fabs(item(d, KH_DIFF_M_ELAPSED, KH_STAGE_DECODE)->change_pct - 1.0) < 1e-6);
	assert_others_ok(d, NULL);
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_OK);
	assert_summary(d, "diff: no regression (0 improved, 0 noisy)");
}

static void test_speedup_reported_and_passes(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d = compare_shapes(fx, plain(RUNS, steady),
					   scaled(RUNS, shuffled, KH_STAGE_DECODE, 0.8));
	const struct kh_diff_item *it = item(d, KH_DIFF_M_ELAPSED, KH_STAGE_DECODE);

	assert_int_equal(it->verdict, KH_DIFF_IMPROVED);
	assert_true(fabs(it->change_pct + 20.0) < 1e-6);
	assert_true(it->interval_high_pct < -5);
	assert_others_ok(d, it);
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_OK);
	assert_summary(d, "diff: no regression (1 improved, 0 noisy)");
}

/* The median moved 8 % but the runs spread ±30 %: the interval covers no change. */
static void test_wide_noise_is_noisy_not_regressed(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d = compare_shapes(
		fx, plain(RUNS, wide), scaled(RUNS, wide_shuffled, KH_STAGE_HOT_PATTERNS, 1.08));
	const struct kh_diff_item *it = item(d, KH_DIFF_M_ELAPSED, KH_STAGE_HOT_PATTERNS);

	assert_true(fabs(it->change_pct - 8.0) < 1e-6);
	assert_true(it->interval_low_pct < 0 && it->interval_high_pct > 0);
	assert_int_equal(it->verdict, KH_DIFF_NOISY);
	assert_int_equal(d->noisy_count, 1);
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_OK);
	assert_summary(d, "diff: no regression (0 improved, 1 noisy)");

	/* A narrower interval does not make the spread go away; a wider threshold passes it. */
	fx->opts.confidence = 50;
	assert_int_equal(item(compare(fx), KH_DIFF_M_ELAPSED, KH_STAGE_HOT_PATTERNS)->verdict,
			 KH_DIFF_NOISY);
	fx->opts.stage[KH_STAGE_HOT_PATTERNS] = (struct kh_diff_threshold){ true, false, 10 };
	assert_int_equal(item(compare(fx), KH_DIFF_M_ELAPSED, KH_STAGE_HOT_PATTERNS)->verdict,
			 KH_DIFF_OK);
}

/*
 * The false positive that retired the bootstrap: identical builds, one
 * stage spreading ±15 % a run, medians 16 % apart.  The interval leaves out
 * no change, so "sure of some change" would fail the job; it is not sure
 * of more than the threshold, so the gate holds.
 */
static void test_same_build_spread_is_noisy_not_regressed(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d = compare_shapes(fx, one_noisy_stage(aa_base, KH_STAGE_DECODE),
					   one_noisy_stage(aa_cand, KH_STAGE_DECODE));
	const struct kh_diff_item *it = item(d, KH_DIFF_M_ELAPSED, KH_STAGE_DECODE);

	/* The shift is 15.9 % (the medians are 16.4 % apart), inside [+2.9 %, +38.2 %]. */
	assert_true(it->change_pct > 15.8 && it->change_pct < 16);
	assert_true(it->has_interval);
	assert_true(it->interval_low_pct > 0 && it->interval_low_pct < it->threshold_pct);
	assert_int_equal(it->verdict, KH_DIFF_NOISY);
	assert_others_ok(d, it);
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_OK);
	assert_summary(d, "diff: no regression (0 improved, 1 noisy)");
	/* The base's own runs made 20 % slower are beyond doubt, spread and all. */
	set_free(&fx->cand);
	set_make(&fx->cand, (struct shape){ RUNS, steady, KH_STAGE_DECODE, 1.2, aa_base });
	d = compare(fx);
	assert_int_equal(item(d, KH_DIFF_M_ELAPSED, KH_STAGE_DECODE)->verdict, KH_DIFF_REGRESSED);
}

/* 2 and 2 runs cannot give a 95 % interval: nothing is judged, and the verdict says why. */
static void test_too_few_runs_cannot_judge(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d = compare_shapes(fx, plain(2, steady),
					   scaled(2, steady, KH_STAGE_DECODE, 1.06));
	const struct kh_diff_item *it = item(d, KH_DIFF_M_ELAPSED, KH_STAGE_DECODE);

	assert_int_equal(d->method, KH_DIFF_METHOD_FEW_RUNS);
	assert_int_equal(d->runs_needed, 4);
	assert_false(it->has_interval);
	assert_int_equal(it->verdict, KH_DIFF_UNJUDGED);
	assert_int_equal(it->beyond, 1);
	assert_int_equal(d->regression_count, 0);
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_CANNOT_JUDGE);
	assert_int_equal(d->cannot, KH_DIFF_FEW_RUNS);
	assert_summary(d, "diff: cannot judge: too few runs (2 base, 2 candidate records; 4 a side "
			  "needed for a 95% interval): 1 item beyond its threshold, not judged");
	/* At 60 %, 2 and 2 are enough: P(U <= 0) = 1/6 <= 0.2. */
	fx->opts.confidence = 60;
	d = compare(fx);
	assert_int_equal(d->method, KH_DIFF_METHOD_MANN_WHITNEY);
	assert_true(item(d, KH_DIFF_M_ELAPSED, KH_STAGE_DECODE)->has_interval);
}

static void test_single_runs_cannot_judge_and_floor(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d =
		compare_shapes(fx, plain(1, NULL), scaled(1, NULL, KH_STAGE_ENTROPY, 1.5));
	const struct kh_diff_item *entropy = item(d, KH_DIFF_M_ELAPSED, KH_STAGE_ENTROPY);

	assert_int_equal(d->method, KH_DIFF_METHOD_SINGLE);
	/* +50 % of 20 µs is 10 µs, under the 0.1 ms minimum change. */
	assert_true(fabs(entropy->change_pct - 50.0) < 1e-6);
	assert_false(entropy->has_interval);
	assert_true(entropy->below_floor);
	assert_int_equal(entropy->verdict, KH_DIFF_OK);
	/* One run a side cannot tell a change from noise: no verdict, whatever moved. */
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_CANNOT_JUDGE);
	assert_summary(d, "diff: cannot judge: too few runs (1 base, 1 candidate record; 4 a side "
			  "needed for a 95% interval): 0 items beyond their thresholds, not judged");

	/* Without the floor the same change is beyond its threshold, still not judged. */
	fx->opts.min_change_ns = 0;
	d = compare(fx);
	assert_int_equal(item(d, KH_DIFF_M_ELAPSED, KH_STAGE_ENTROPY)->verdict, KH_DIFF_UNJUDGED);
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_CANNOT_JUDGE);
	assert_summary(d, "diff: cannot judge: too few runs (1 base, 1 candidate record; 4 a side "
			  "needed for a 95% interval): 1 item beyond its threshold, not judged");
}

/* "Beyond" the threshold: exactly 3 % of wall time passes, one nanosecond more fails. */
static void test_threshold_is_exclusive(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d = compare_shapes(fx, plain(RUNS, NULL), plain(RUNS, NULL));

	for (size_t i = 0; i < RUNS; i++) {
		fx->cand.rec[i].wall_time_ns = 103 * MS;
		fx->cand.rec[i].input_bytes = 0; /* keep throughput out of it */
		fx->base.rec[i].input_bytes = 0;
	}
	d = compare(fx);
	assert_int_equal(item(d, KH_DIFF_M_WALL, 0)->verdict, KH_DIFF_OK);
	for (size_t i = 0; i < RUNS; i++)
		fx->cand.rec[i].wall_time_ns++;
	d = compare(fx);
	assert_int_equal(item(d, KH_DIFF_M_WALL, 0)->verdict, KH_DIFF_REGRESSED);
	assert_int_equal(d->regression_count, 1);
}

/* A shift below -100 % cannot be: the text clips it and says why; the JSON keeps it. */
static void test_interval_below_minus_100_is_clipped(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d = compare_shapes(fx, plain(RUNS, steady),
					   scaled(RUNS, shuffled, KH_STAGE_HOT_PATTERNS, 1.2));
	struct kh_diff_item *it = (struct kh_diff_item *)item(d, KH_DIFF_M_ELAPSED,
							     KH_STAGE_HOT_PATTERNS);
	char *text, *json;

	it->interval_low_pct = -13993.9;
	it->interval_high_pct = 2690.9;
	text = diff__render_text(d);
	json = diff__to_json(d);
	assert_non_null(strstr(text, "[<-100%, +2690.9%]"));
	assert_null(strstr(text, "-13993.9"));
	assert_non_null(strstr(text, "\n<-100%: the interval's low end is below -100%"));
	assert_non_null(strstr(json, "-13993.9"));
	free(text);
	free(json);
}

static void test_throughput_and_rss_directions(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d = compare_shapes(fx, plain(RUNS, NULL), plain(RUNS, NULL));

	/* Same time, more bytes: throughput up is better. */
	for (size_t i = 0; i < RUNS; i++) {
		fx->cand.rec[i].input_bytes += fx->cand.rec[i].input_bytes / 10;
		fx->cand.rec[i].resources.max_observed_resident_bytes.value += 4 << 20; /* +6.25 % */
	}
	d = compare(fx);
	assert_int_equal(item(d, KH_DIFF_M_THROUGHPUT, 0)->verdict, KH_DIFF_IMPROVED);
	assert_int_equal(item(d, KH_DIFF_M_PEAK_RSS, 0)->verdict, KH_DIFF_REGRESSED);
	/* RSS changes under 1 MiB are noise, whatever the percentage. */
	for (size_t i = 0; i < RUNS; i++) {
		fx->base.rec[i].resources.max_observed_resident_bytes.value = 4 << 20;
		fx->cand.rec[i].resources.max_observed_resident_bytes.value = 5 << 20;
	}
	d = compare(fx);
	assert_true(item(d, KH_DIFF_M_PEAK_RSS, 0)->below_floor == false);
	for (size_t i = 0; i < RUNS; i++)
		fx->cand.rec[i].resources.max_observed_resident_bytes.value = (5 << 20) - 1;
	d = compare(fx);
	assert_true(item(d, KH_DIFF_M_PEAK_RSS, 0)->below_floor);
	assert_int_equal(item(d, KH_DIFF_M_PEAK_RSS, 0)->verdict, KH_DIFF_OK);
}

static void test_threshold_off_shows_but_never_gates(void **state)
{
	struct fx *fx = *state;
	char err[256];
	const struct kh_diff_item *it;

	assert_int_equal(diff_options__set(&fx->opts, "threshold.hot-patterns", "off", err,
					   sizeof(err)), 0);
	it = item(compare_shapes(fx, plain(RUNS, steady),
				 scaled(RUNS, steady, KH_STAGE_HOT_PATTERNS, 1.5)),
		  KH_DIFF_M_ELAPSED, KH_STAGE_HOT_PATTERNS);
	assert_int_equal(it->verdict, KH_DIFF_OFF);
	assert_true(it->threshold_off);
	assert_true(it->has_interval);
	assert_int_equal(fx->d.verdict, KH_DIFF_VERDICT_OK);
}

/* Queue waits are shown but gate only when named. */
static void test_queue_waits_gate_only_when_named(void **state)
{
	struct fx *fx = *state;
	char err[256];
	const struct kh_diff_item *it;

	compare_shapes(fx, plain(RUNS, steady), plain(RUNS, shuffled));
	for (size_t i = 0; i < RUNS; i++) {
		double f = steady[i];

		assert_int_equal(profile__set_stage(&fx->base.rec[i], KH_STAGE_SCANNER_QUEUE_WAIT,
						    llround(10.0 * MS * f), 40, 0), 0);
		assert_int_equal(profile__set_stage(&fx->cand.rec[i], KH_STAGE_SCANNER_QUEUE_WAIT,
						    llround(15.0 * MS * f), 40, 0), 0);
	}
	it = item(compare(fx), KH_DIFF_M_ELAPSED, KH_STAGE_SCANNER_QUEUE_WAIT);
	assert_int_equal(it->verdict, KH_DIFF_OFF);
	assert_int_equal(fx->d.verdict, KH_DIFF_VERDICT_OK);

	/* A new default for every stage leaves them off; naming one turns it on. */
	assert_int_equal(diff_options__set(&fx->opts, "threshold", "2", err, sizeof(err)), 0);
	it = item(compare(fx), KH_DIFF_M_ELAPSED, KH_STAGE_SCANNER_QUEUE_WAIT);
	assert_int_equal(it->verdict, KH_DIFF_OFF);
	assert_int_equal(diff_options__set(&fx->opts, "threshold.scanner-queue-wait", "5", err,
					   sizeof(err)), 0);
	it = item(compare(fx), KH_DIFF_M_ELAPSED, KH_STAGE_SCANNER_QUEUE_WAIT);
	assert_int_equal(it->verdict, KH_DIFF_REGRESSED);
	assert_int_equal(fx->d.verdict, KH_DIFF_VERDICT_REGRESSED);
}

/* Items: wall, throughput, peak RSS, then each stage's three in wire order. */
static void test_items_and_stage_missing_from_a_record(void **state)
{
	static const enum kh_diff_metric head[] = { KH_DIFF_M_WALL, KH_DIFF_M_THROUGHPUT,
						    KH_DIFF_M_PEAK_RSS };
	struct fx *fx = *state;
	struct kh_diff *d;
	const struct kh_diff_item *it;

	set_make(&fx->base, plain(3, NULL));
	set_make(&fx->cand, plain(3, NULL));
	/* Machine learning ran in one candidate run only: 0 in the other two. */
	assert_int_equal(profile__set_stage(&fx->cand.rec[1], KH_STAGE_MACHINE_LEARNING, 5 * MS,
					    1, 0), 0);
	d = compare(fx);
	assert_int_equal(d->item_count, 3 + 3 * 5);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(d->items[i].metric, head[i]);
	assert_int_equal(d->items[3].stage, KH_STAGE_SOURCE_READ);
	assert_int_equal(d->items[3 + 3 * 3].stage, KH_STAGE_MACHINE_LEARNING);
	assert_int_equal(d->items[3 + 3 * 4].stage, KH_STAGE_DECODE);
	it = item(d, KH_DIFF_M_ELAPSED, KH_STAGE_MACHINE_LEARNING);
	assert_true(it->base_median == 0 && it->cand_median == 0);
	assert_false(it->has_change);
	assert_int_equal(it->verdict, KH_DIFF_OK);
}

/* A stage only the candidate runs: no percentage, the interval in nanoseconds. */
static void test_new_stage_interval_in_units(void **state)
{
	struct fx *fx = *state;
	const struct kh_diff_item *it;

	set_make(&fx->base, plain(RUNS, steady));
	set_make(&fx->cand, plain(RUNS, steady));
	for (size_t i = 0; i < RUNS; i++)
		assert_int_equal(profile__set_stage(&fx->cand.rec[i], KH_STAGE_MACHINE_LEARNING,
						    (uint64_t)llround(5.0 * MS * steady[i]), 1, 0),
				 0);
	it = item(compare(fx), KH_DIFF_M_ELAPSED, KH_STAGE_MACHINE_LEARNING);
	assert_false(it->has_change);
	assert_true(it->has_interval);
	/* The 25 differences are each candidate run minus 0, five times over. */
	assert_int_equal(it->base_used, 5);
	assert_int_equal(it->cand_used, 5);
	assert_true(it->interval_low == 4900000.0 && it->interval_high == 5100000.0);
	assert_int_equal(it->verdict, KH_DIFF_REGRESSED);
	assert_summary(&fx->d, "diff: 1 regression: machine-learning.elapsed new");
}

/* --- identity binding ------------------------------------------------------- */

static void test_identity_mismatch_is_not_comparable(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d;

	set_make(&fx->base, plain(2, NULL));
	set_make(&fx->cand, scaled(2, NULL, KH_STAGE_DECODE, 2.0));
	set_identity(&fx->cand, 1, "detector_digest", "det-xyz");
	set_identity(&fx->cand, 0, "binary_version", "kh-scan 1.1");
	set_identity(&fx->cand, 0, "reader_threads", "3");
	d = compare(fx);
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_NOT_COMPARABLE);
	assert_int_equal(d->mismatch_count, 3);
	assert_int_equal(d->blocking_count, 3);
	assert_int_equal(d->item_count, 0);
	/* Within the candidate side first: its own records disagree. */
	assert_int_equal(d->mismatches[1].field, KH_DIFF_F_DETECTOR_DIGEST);
	assert_int_equal(d->mismatches[1].within, 2);
	assert_string_equal(d->mismatches[1].message,
			    "records differ in 'detector_digest': 'det-abc' in 'run-001.json', "
			    "'det-xyz' in 'run-002.json'");
	assert_string_equal(d->mismatches[2].base_value, "auto");

	/* Intended differences are listed as allowed; the data decides. */
	fx->opts.allow = 1u << KH_DIFF_F_BINARY_VERSION | 1u << KH_DIFF_F_READER_THREADS;
	set_identity(&fx->cand, 0, "detector_digest", "det-abc");
	d = compare(fx);
	assert_int_equal(d->mismatch_count, 2);
	assert_int_equal(d->blocking_count, 0);
	assert_true(d->mismatches[0].allowed);
	/* Two runs a side: comparable, but too few to judge. */
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_CANNOT_JUDGE);
}

static void test_mismatch_within_one_side(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d;

	set_make(&fx->base, plain(3, NULL));
	set_make(&fx->cand, plain(3, NULL));
	set_identity(&fx->base, 2, "workload_class", "nightly");
	d = compare(fx);
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_NOT_COMPARABLE);
	assert_int_equal(d->mismatch_count, 1);
	assert_int_equal(d->mismatches[0].within, 1);
	assert_string_equal(d->mismatches[0].cand_file, "run-003.json");
}

/* A record without khprof's extension has no mode, which matches any. */
static void test_mode_absent_matches_any(void **state)
{
	struct fx *fx = *state;
	struct kh_diff *d;

	set_make(&fx->base, plain(2, NULL));
	set_make(&fx->cand, plain(2, NULL));
	free(fx->base.rec[0].ext.mode);
	fx->base.rec[0].ext.mode = NULL;
	assert_int_equal(compare(fx)->blocking_count, 0);
	assert_int_equal(profile__set_mode(&fx->cand.rec[1], KH_MODE_SPAN), 0);
	d = compare(fx);
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_NOT_COMPARABLE);
	assert_int_equal(d->mismatches[0].field, KH_DIFF_F_MODE);
	/* Incomplete records and other work stay warnings. */
	fx->opts.allow = 1u << KH_DIFF_F_MODE;
	fx->cand.rec[0].ext.drops[KH_DROP_RINGBUF_FULL] = 3;
	fx->cand.rec[1].input_units++;
	d = compare(fx);
	assert_int_equal(d->verdict, KH_DIFF_VERDICT_CANNOT_JUDGE);
	assert_int_equal(d->warning_count, 2);
	assert_non_null(strstr(d->warnings[0].message, "'input_units'"));
	assert_non_null(strstr(d->warnings[1].message, "lost spans or events: 3 ringbuf_full"));
}

/* --- options and config ----------------------------------------------------- */

static void test_config_file_settings(void **state)
{
	static const char config[] =
		"# perf gate\n"
		"threshold            7      # every stage\n"
		"threshold.wall       2.5%\n"
		"\n"
		"threshold.scanner-queue-wait off\n"
		"min_change_ms = 0.5\n"
		"confidence           99\n"
		"allow_mismatch       binary_version, threads\n";
	struct fx *fx = *state;
	struct kh_diff_options flags;
	size_t line;
	char err[256];

	assert_int_equal(diff_config__parse(config, &fx->opts, &line, err, sizeof(err)), 0);
	assert_true(fx->opts.stages.pct == 7 && fx->opts.wall.pct == 2.5);
	assert_true(fx->opts.stage[KH_STAGE_SCANNER_QUEUE_WAIT].off);
	assert_int_equal(fx->opts.min_change_ns, 500000);
	assert_true(fx->opts.confidence == 99);
	assert_int_equal(fx->opts.allow, 1u << KH_DIFF_F_BINARY_VERSION |
						 1u << KH_DIFF_F_SCANNER_THREADS |
						 1u << KH_DIFF_F_READER_THREADS);

	/* Flags replace what they set, and only that. */
	diff_options__init(&flags);
	assert_int_equal(diff_options__set(&flags, "threshold.wall", "4", err, sizeof(err)), 0);
	assert_int_equal(diff_options__set(&flags, "allow_mismatch", "mode", err, sizeof(err)), 0);
	diff_options__merge(&fx->opts, &flags);
	assert_true(fx->opts.wall.pct == 4 && fx->opts.stages.pct == 7);
	assert_true(fx->opts.allow & 1u << KH_DIFF_F_MODE);
	assert_true(fx->opts.allow & 1u << KH_DIFF_F_BINARY_VERSION);

	/* A config of before the on-CPU verdicts: its off_cpu is read as blocked. */
	assert_int_equal(diff_config__parse("threshold.off_cpu 35\n", &fx->opts, &line, err,
					    sizeof(err)), 0);
	assert_true(fx->opts.blocked.pct == 35);
}

static void test_config_and_option_errors(void **state)
{
	static const struct {
		const char *text;
		size_t line;
		const char *reason;
	} bad[] = {
		{ "threshold 5\n\nthreshold.scan_regex 10\n", 3, "unknown item 'scan_regex'" },
		{ "threshold -5\n", 1, "bad threshold '-5'" },
		{ "# x\nconfidence 100\n", 2, "bad confidence '100'" },
		{ "min_change_ms\n", 1, "'min_change_ms' needs a value" },
		{ "allow_mismatch binary_version,,mode\n", 1, "empty field name" },
		{ "allow_mismatch run_id\n", 1, "unknown field 'run_id'" },
		{ "speed 5\n", 1, "unknown setting 'speed'" },
	};
	struct fx *fx = *state;
	struct kh_diff_side side;
	char err[512];
	size_t line;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(diff_config__parse(bad[i].text, &fx->opts, &line, err,
						    sizeof(err)), -EINVAL);
		assert_int_equal(line, bad[i].line);
		if (!strstr(err, bad[i].reason))
			fail_msg("'%s': got '%s'", bad[i].text, err);
	}
	/* Out-of-range values never reach a comparison either. */
	fx->opts.wall.pct = NAN;
	set_make(&fx->base, plain(1, NULL));
	side = side_of(&fx->base, "b");
	assert_int_equal(diff__compare(&side, &side, &fx->opts, &fx->d), -EINVAL);
}

/* --- statistics ------------------------------------------------------------- */

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void test_mann_whitney_null_distribution(void **state)
{
	/* Arrangements of 5 + 5 values with U <= u: 1, 2, 4, 7 of C(10, 5) = 252. */
	static const double at_most[] = { 1, 2, 4, 7 };
	double p;

	(void)state;
	for (size_t u = 0; u < sizeof(at_most) / sizeof(at_most[0]); u++) {
		assert_int_equal(stats__mann_whitney_cdf(5, 5, u, &p), 0);
		assert_true(fabs(p - at_most[u] / 252) < 1e-12);
	}
	/* Symmetric about mn / 2, whichever side is the larger. */
	assert_int_equal(stats__mann_whitney_cdf(3, 7, 10, &p), 0);
	assert_true(fabs(p - 0.5) < 1e-12);
	assert_int_equal(stats__mann_whitney_cdf(7, 3, 21, &p), 0);
	assert_true(p == 1);
	assert_int_equal(stats__mann_whitney_cdf(0, 3, 0, &p), -EINVAL);
}

static void test_shift_interval_small_samples(void **state)
{
	static const double base[] = { 10, 12, 15, 19, 24 }, cand[] = { 11, 14, 18, 23, 29 };
	double lo, hi, diffs[25];
	size_t k;

	(void)state;
	/* 5 and 5 at 95 %: P(U <= 2) = 4/252 <= 0.025 < P(U <= 3) = 7/252, so k = 3. */
	assert_int_equal(stats__shift_rank(5, 5, 95, STATS_RANK_AUTO, &k), 0);
	assert_int_equal(k, 3);
	assert_int_equal(stats__shift_interval(base, 5, cand, 5, 95, &lo, &hi), 0);
	/* The 3rd smallest difference is 11 - 19, the 3rd largest 29 - 15. */
	assert_true(lo == -8 && hi == 14);
	for (size_t i = 0; i < 5; i++)
		for (size_t j = 0; j < 5; j++)
			diffs[i * 5 + j] = cand[j] - base[i];
	qsort(diffs, 25, sizeof(diffs[0]), compare_doubles);
	assert_true(lo == diffs[2] && hi == diffs[22]);
	/* A lower confidence takes inner differences. */
	assert_int_equal(stats__shift_interval(base, 5, cand, 5, 80, &lo, &hi), 0);
	assert_true(lo > diffs[2] && hi < diffs[22]);

	/* 3 and 3: P(U <= 0) = 1/20, enough for 90 % but not for 95 %. */
	assert_int_equal(stats__shift_interval(base, 3, cand, 3, 95, &lo, &hi), -ERANGE);
	assert_int_equal(stats__shift_rank(3, 3, 90, STATS_RANK_AUTO, &k), 0);
	assert_int_equal(k, 1);
	assert_int_equal(stats__shift_runs_needed(95), 4);
	assert_int_equal(stats__shift_runs_needed(99.9), 7); /* 2 / C(14, 7) <= 0.001 */
	assert_int_equal(stats__shift_interval(base, 0, cand, 5, 95, &lo, &hi), -EINVAL);
	assert_int_equal(stats__shift_interval(base, 5, cand, 5, 100, &lo, &hi), -EINVAL);
}

/*
 * The selection gives exactly what sorting all m n differences gives, for
 * every k, with ties, negative values and unequal sides, including sides
 * large enough to leave the small-candidate shortcut.
 */
static void test_kth_difference_equals_the_sorted_list(void **state)
{
	static const size_t sizes[][2] = { { 1, 1 }, { 1, 7 }, { 9, 2 }, { 40, 40 },
					   { 120, 33 }, { 300, 300 } };
	uint64_t seed = 88172645463325252ull;

	(void)state;
	for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		size_t m = sizes[t][0], n = sizes[t][1], mn = m * n;
		double *b = malloc(m * sizeof(*b)), *c = malloc(n * sizeof(*c));
		double *all = malloc(mn * sizeof(*all)), got;

		assert_true(b && c && all);
		for (size_t i = 0; i < m + n; i++) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			/* Coarse values, so that differences tie often. */
			*(i < m ? &b[i] : &c[i - m]) = (double)(seed % 61) * 0.5 - 9.0;
		}
		for (size_t i = 0; i < m; i++)
			for (size_t j = 0; j < n; j++)
				all[i * n + j] = c[j] - b[i];
		qsort(all, mn, sizeof(*all), compare_doubles);
		for (size_t k = 1; k <= mn; k += 1 + mn / 97) {
			assert_int_equal(stats__kth_difference(b, m, c, n, k, &got), 0);
			if (got != all[k - 1])
				fail_msg("%zu x %zu, k = %zu: %g, sorted %g", m, n, k, got, all[k - 1]);
		}
		assert_int_equal(stats__kth_difference(b, m, c, n, mn, &got), 0);
		assert_true(got == all[mn - 1]);
		assert_int_equal(stats__kth_difference(b, m, c, n, mn + 1, &got), -EINVAL);
		free(b);
		free(c);
		free(all);
	}
}

/* Past STATS_EXACT_MAX the normal approximation takes over; at the edge the two agree. */
static void test_shift_rank_exact_and_normal_agree(void **state)
{
	static const double levels[] = { 80, 90, 95, 99 };
	size_t exact, normal, auto_k;
	double below, at;

	(void)state;
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		double tail = (100 - levels[i]) / 200;

		assert_int_equal(stats__shift_rank(50, 51, levels[i], STATS_RANK_EXACT, &exact), 0);
		assert_int_equal(stats__shift_rank(50, 51, levels[i], STATS_RANK_NORMAL, &normal),
				 0);
		assert_int_equal(stats__shift_rank(50, 51, levels[i], STATS_RANK_AUTO, &auto_k), 0);
		assert_int_equal(auto_k, normal);
		/* The exact rank is the one the definition asks for... */
		assert_int_equal(stats__mann_whitney_cdf(50, 51, exact - 1, &below), 0);
		assert_int_equal(stats__mann_whitney_cdf(50, 51, exact, &at), 0);
		assert_true(below <= tail && at > tail);
		/* ...and the approximation lands within a few ranks of 2550. */
		if (exact > normal + 3 || normal > exact + 3)
			fail_msg("at %g%%: exact %zu, normal %zu", levels[i], exact, normal);
	}
	/* The quantile behind it inverts the normal distribution function. */
	for (double p = 0.001; p < 1; p += 0.0495)
		assert_true(fabs(0.5 * erfc(-stats__normal_quantile(p) / M_SQRT2) - p) < 1e-12);
	assert_true(fabs(stats__normal_quantile(0.975) - 1.959964) < 1e-6);
	assert_true(isnan(stats__normal_quantile(1)));
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(test_stage_regression_detected),
		FX_TEST(test_noise_within_thresholds_passes),
		FX_TEST(test_speedup_reported_and_passes),
		FX_TEST(test_wide_noise_is_noisy_not_regressed),
		FX_TEST(test_same_build_spread_is_noisy_not_regressed),
		FX_TEST(test_too_few_runs_cannot_judge),
		FX_TEST(test_single_runs_cannot_judge_and_floor),
		FX_TEST(test_threshold_is_exclusive),
		FX_TEST(test_interval_below_minus_100_is_clipped),
		FX_TEST(test_throughput_and_rss_directions),
		FX_TEST(test_threshold_off_shows_but_never_gates),
		FX_TEST(test_queue_waits_gate_only_when_named),
		FX_TEST(test_items_and_stage_missing_from_a_record),
		FX_TEST(test_new_stage_interval_in_units),
		FX_TEST(test_identity_mismatch_is_not_comparable),
		FX_TEST(test_mismatch_within_one_side),
		FX_TEST(test_mode_absent_matches_any),
		FX_TEST(test_config_file_settings),
		FX_TEST(test_config_and_option_errors),
		cmocka_unit_test(test_mann_whitney_null_distribution),
		cmocka_unit_test(test_shift_interval_small_samples),
		cmocka_unit_test(test_kth_difference_equals_the_sorted_list),
		cmocka_unit_test(test_shift_rank_exact_and_normal_agree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
