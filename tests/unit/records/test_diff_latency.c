// SPDX-License-Identifier: MIT
/*
 * khprof diff's items from khprof.latency (a stage's time on CPU, blocked
 * and runnable, p50, p99, decoded) and the macro states' wall and CPU
 * time: which of them gate, the noise bound, and the text's "ok (below
 * floor)".
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "diff.h"
#include "html.h"
#include "hist.h"
#include "record.h"
#include "stats.h"

#define RUNS 5
#define US 1000ull

/* Run-to-run factors, median 1; the last is a run disturbed by a neighbour. */
static const double steady[RUNS] = { 1.00, 1.02, 0.98, 1.01, 0.99 };

struct set {
	struct kh_profile rec[RUNS];
	const char *names[RUNS];
};

/*
 * A record whose decode stage ran `calls` spans of span_ns * factor each,
 * one in fifty of them tail_factor times longer, and which spent
 * off_ns * factor of them off CPU.
 */
static void make_record(struct kh_profile *p, double factor, uint64_t span_ns, double tail_factor,
			uint64_t off_ns)
{
	struct kh_stage_dist *d = &p->ext.latency.stages[KH_STAGE_DECODE];
	const uint64_t calls = 500;
	uint64_t total = 0;

	assert_int_equal(profile__init(p), 0);
	assert_int_equal(profile__set_mode(p, KH_MODE_SPAN), 0);
	assert_int_equal(kh_dist__alloc(d), 0);
	d->present = true;
	d->min_ns = UINT64_MAX;
	for (uint64_t i = 0; i < calls; i++) {
		uint64_t ns = (uint64_t)llround((double)span_ns * factor *
						(i % 50 == 49 ? tail_factor : 1.0));

		d->counts[kh_hist_bucket(ns)]++;
		d->spans++;
		d->min_ns = ns < d->min_ns ? ns : d->min_ns;
		d->max_ns = ns > d->max_ns ? ns : d->max_ns;
		total += ns;
	}
	d->off_cpu_ns = (uint64_t)llround((double)off_ns * factor);
	p->ext.latency.present = true;
	p->ext.latency.off_cpu = true;
	assert_int_equal(profile__set_stage(p, KH_STAGE_DECODE, total, calls, total / 2), 0);
	for (int t = 0; t < 3; t++) {
		static const uint32_t states[] = { KH_STATE_CREATED, KH_STATE_SCANNING,
						   KH_STATE_COMPLETED };
		struct kh_resource_snapshot snap = { .cpu_time_ms = { true, t == 2 ? 50 : 0 } };

		assert_int_equal(profile__add_transition(p, states[t], t ? 1000 + (t - 1) * total : 0,
							 &snap), 0);
	}
	assert_int_equal(profile__finish(p, KH_STATE_COMPLETED, total + 1000), 0);
}

static void make_set(struct set *s, const double *noise, uint64_t span_ns, double tail_factor,
		     uint64_t off_ns)
{
	static const char *const names[RUNS] = { "a", "b", "c", "d", "e" };

	for (int i = 0; i < RUNS; i++) {
		make_record(&s->rec[i], noise[i], span_ns, tail_factor, off_ns);
		s->names[i] = names[i];
	}
}

static void free_set(struct set *s)
{
	for (int i = 0; i < RUNS; i++)
		profile__free(&s->rec[i]);
}

static void compare(struct set *b, struct set *c, struct kh_diff *d)
{
	struct kh_diff_side bs = { "base", b->rec, b->names, RUNS };
	struct kh_diff_side cs = { "cand", c->rec, c->names, RUNS };
	struct kh_diff_options opts;

	diff_options__init(&opts);
	assert_int_equal(diff__compare(&bs, &cs, &opts, d), 0);
}

static const struct kh_diff_item *find(const struct kh_diff *d, enum kh_diff_metric metric,
				       uint32_t stage)
{
	for (size_t i = 0; i < d->item_count; i++)
		if (d->items[i].metric == metric && d->items[i].stage == stage)
			return &d->items[i];
	fail_msg("no item %s", diff_metric__name(metric));
	return NULL;
}

static void test_items_exist_with_their_thresholds(void **state)
{
	struct set b, c;
	struct kh_diff d;

	(void)state;
	make_set(&b, steady, 100 * US, 1.0, 0);
	make_set(&c, steady, 100 * US, 1.0, 0);
	compare(&b, &c, &d);
	assert_true(find(&d, KH_DIFF_M_P50, KH_STAGE_DECODE)->threshold_pct == KH_DIFF_DEFAULT_P50_PCT);
	assert_true(find(&d, KH_DIFF_M_P99, KH_STAGE_DECODE)->threshold_pct == KH_DIFF_DEFAULT_P99_PCT);
	assert_true(find(&d, KH_DIFF_M_BLOCKED, KH_STAGE_DECODE)->threshold_pct ==
		    KH_DIFF_DEFAULT_BLOCKED_PCT);
	/* One figure per stage gates: its time on CPU, complete in every run here. */
	assert_true(find(&d, KH_DIFF_M_ON_CPU, KH_STAGE_DECODE)->gating);
	assert_false(find(&d, KH_DIFF_M_ELAPSED, KH_STAGE_DECODE)->gating);
	assert_false(find(&d, KH_DIFF_M_DECODED, KH_STAGE_DECODE)->gating);
	assert_false(find(&d, KH_DIFF_M_P50, KH_STAGE_DECODE)->gating);
	assert_false(find(&d, KH_DIFF_M_P99, KH_STAGE_DECODE)->gating);
	assert_false(find(&d, KH_DIFF_M_ON_CPU_PER_CALL, KH_STAGE_DECODE)->gating);
	/* A state's wall time is a part of the wall time, which gates: judged, never gating. */
	assert_false(find(&d, KH_DIFF_M_STATE_WALL, KH_STATE_SCANNING)->gating);
	assert_true(find(&d, KH_DIFF_M_WALL, 0)->gating);
	/* CPU time is shown and judged, but moves with the machine: it never gates. */
	assert_false(find(&d, KH_DIFF_M_STATE_CPU, KH_STATE_SCANNING)->gating);
	assert_false(find(&d, KH_DIFF_M_BLOCKED, KH_STAGE_DECODE)->gating);
	assert_false(find(&d, KH_DIFF_M_RUNNABLE, KH_STAGE_DECODE)->gating);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	assert_int_equal(d.regression_count, 0);
	diff__free(&d);
	free_set(&b);
	free_set(&c);
}

/*
 * One call in fifty ten times slower: the mean moves by 18%, p99 tenfold.
 * The stage's time on CPU fails the job; p99 says why, p50 stays ok.
 */
static void test_tail_regression_caught_by_p99(void **state)
{
	struct set b, c;
	struct kh_diff d;
	char *text;

	(void)state;
	make_set(&b, steady, 100 * US, 1.0, 0);
	make_set(&c, steady, 100 * US, 10.0, 0);
	compare(&b, &c, &d);
	assert_int_equal(find(&d, KH_DIFF_M_ON_CPU, KH_STAGE_DECODE)->verdict, KH_DIFF_REGRESSED);
	assert_int_equal(find(&d, KH_DIFF_M_P99, KH_STAGE_DECODE)->verdict, KH_DIFF_REGRESSED);
	assert_int_equal(find(&d, KH_DIFF_M_P50, KH_STAGE_DECODE)->verdict, KH_DIFF_OK);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_REGRESSED);
	assert_int_equal(d.regression_count, 2); /* decode.on_cpu and wall */
	text = diff__render_text(&d);
	assert_non_null(strstr(text, "decode.p99 "));
	assert_non_null(strstr(text, " regressed*\n"));
	free(text);
	/* The HTML page names each latency item apart from the stage's elapsed time. */
	text = diff__render_html(&d);
	assert_non_null(text);
	assert_non_null(strstr(text, "data-item=\"decode p99\""));
	assert_non_null(strstr(text, "<td>decode p50</td>"));
	assert_non_null(strstr(text, "<td>decode on CPU</td>"));
	assert_non_null(strstr(text, "<td>decode waiting for a CPU</td>"));
	free(text);
	diff__free(&d);
	free_set(&b);
	free_set(&c);
}

/* A change beyond the threshold but under --min-change-ms says so. */
static void test_floor_only_is_said(void **state)
{
	struct set b, c;
	struct kh_diff d;
	const struct kh_diff_item *off;
	char *text;

	(void)state;
	make_set(&b, steady, 100 * US, 1.0, 20 * US);
	make_set(&c, steady, 100 * US, 1.0, 60 * US); /* +40 us: under the 0.1 ms floor */
	compare(&b, &c, &d);
	off = find(&d, KH_DIFF_M_BLOCKED, KH_STAGE_DECODE);
	assert_true(off->below_floor);
	assert_true(off->floor_only);
	assert_int_equal(off->verdict, KH_DIFF_OK);
	text = diff__render_text(&d);
	assert_null(strstr(text, "ok (below floor)")); /* only what changed... */
	free(text);
	d.opts.all = true;                              /* ...unless every item is asked for */
	text = diff__render_text(&d);
	assert_non_null(strstr(text, "ok (below floor)"));
	free(text);
	text = diff__to_json(&d);
	assert_non_null(strstr(text, "\"floor_only\":\ttrue"));
	free(text);
	diff__free(&d);
	free_set(&b);
	free_set(&c);
}

/* A run that spreads widely needs a change as wide: K pooled MADs. */
static void test_noise_bound(void **state)
{
	static const double wide[RUNS] = { 0.70, 1.30, 1.00, 0.85, 1.15 };
	struct set b, c;
	struct kh_diff d;
	const struct kh_diff_item *el;
	char *text;

	(void)state;
	make_set(&b, wide, 100 * US, 1.0, 0);
	make_set(&c, wide, 120 * US, 1.0, 0);
	compare(&b, &c, &d);
	el = find(&d, KH_DIFF_M_ELAPSED, KH_STAGE_DECODE);
	assert_true(el->noise_pct > el->threshold_pct);
	assert_int_not_equal(el->verdict, KH_DIFF_REGRESSED);
	text = diff__to_json(&d);
	assert_non_null(strstr(text, "\"noise_pct\":\t"));
	free(text);
	diff__free(&d);
	free_set(&b);
	free_set(&c);
}

static void test_pooled_mad(void **state)
{
	const double a[] = { 1, 2, 3 }, b[] = { 10, 10, 13 };

	(void)state;
	/* Deviations 1, 0, 1 and 0, 0, 3: median 0.5. */
	assert_true(stats__pooled_mad(a, 3, b, 3) == 0.5);
	assert_true(isnan(stats__pooled_mad(a, 0, b, 3)));
}

/* threshold.NAME names the new metrics too; flags win over the file. */
/*
 * STATE.cpu comes from the extension's ns samples when the records have
 * them (h2b's kernel samples), so a state under a millisecond of CPU is
 * not 0; without them, from the seed's whole milliseconds.
 */
static void test_state_cpu_in_ns_from_the_samples(void **state)
{
	static const uint64_t cpu_ns[3] = { 1000, 401000, 50000000 };
	struct set b, c;
	struct kh_diff d;

	(void)state;
	make_set(&b, steady, 100 * US, 1.0, 0);
	make_set(&c, steady, 100 * US, 1.0, 0);
	for (int r = 0; r < RUNS; r++)
		for (int i = 0; i < 3; i++) {
			struct kh_sample_ext e = { .cpu_time_ns = { true, cpu_ns[i] } };

			assert_int_equal(profile__add_sample_ext(&b.rec[r], &e), 0);
		}
	compare(&b, &c, &d);
	/* created ran 0.4 ms of CPU: 0 whole milliseconds in the seed's figure. */
	assert_true(find(&d, KH_DIFF_M_STATE_CPU, KH_STATE_CREATED)->base_median == 400000.0);
	assert_true(find(&d, KH_DIFF_M_STATE_CPU, KH_STATE_CREATED)->cand_median == 0.0);
	assert_true(find(&d, KH_DIFF_M_STATE_CPU, KH_STATE_SCANNING)->base_median == 49599000.0);
	assert_true(find(&d, KH_DIFF_M_STATE_CPU, KH_STATE_SCANNING)->cand_median == 50000000.0);
	diff__free(&d);
	free_set(&b);
	free_set(&c);
}

static void test_metric_thresholds_by_name(void **state)
{
	struct kh_diff_options opts, over;
	char err[256];

	(void)state;
	diff_options__init(&opts);
	diff_options__init(&over);
	assert_int_equal(diff_options__set(&opts, "threshold.p99", "30%", err, sizeof(err)), 0);
	assert_int_equal(diff_options__set(&opts, "threshold.blocked", "off", err, sizeof(err)), 0);
	assert_int_equal(diff_options__set(&over, "threshold.p99", "40", err, sizeof(err)), 0);
	assert_true(opts.p99.pct == 30 && opts.blocked.off);
	diff_options__merge(&opts, &over);
	assert_true(opts.p99.pct == 40);
	assert_true(diff_options__threshold(&opts, KH_DIFF_M_P99, KH_STAGE_DECODE) == &opts.p99);
	/* The queue waits stay off unless named, in every latency metric. */
	assert_true(diff_options__threshold(&opts, KH_DIFF_M_P50, KH_STAGE_SCANNER_QUEUE_WAIT)->off);
	assert_int_equal(diff_options__set(&opts, "threshold.p98", "5", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown item 'p98'"));
	assert_non_null(strstr(err, "p50, p99, blocked"));
	/* The old name of the off-CPU threshold is read as blocked (a gate of
	 * before the on-CPU verdicts keeps working), never as an item of its own. */
	assert_int_equal(diff_options__set(&opts, "threshold.off_cpu", "5", err, sizeof(err)), 0);
	assert_true(opts.blocked.pct == 5 && !opts.blocked.off);
}

/*
 * Span mode's calibrated bias is 525 ns a span here: a 2 us median span
 * that moved by 0.5 us (+25 %, beyond p50's 10 %) moved within what the
 * mode can tell apart, and the text says so; in batch mode (9 ns) not.
 */
static void test_change_within_span_error_is_said(void **state)
{
	struct set b, c;
	struct kh_diff d;
	const struct kh_diff_item *p50;
	char *text, *json;

	(void)state;
	for (int pass = 0; pass < 2; pass++) {
		uint64_t bias = pass ? 9 : 525;

		make_set(&b, steady, 2 * US, 1.0, 0);
		make_set(&c, steady, 2500, 1.0, 0);
		for (int i = 0; i < RUNS; i++)
			b.rec[i].ext.span_bias_ns = c.rec[i].ext.span_bias_ns = bias;
		compare(&b, &c, &d);
		p50 = find(&d, KH_DIFF_M_P50, KH_STAGE_DECODE);
		assert_true(p50->change_pct > 10);
		assert_true(p50->span_error_ns == (double)bias);
		assert_int_equal(p50->within_span_error, !pass);
		text = diff__render_text(&d);
		json = diff__to_json(&d);
		if (!pass) {
			assert_non_null(strstr(text, " (within span error)\n"));
			assert_non_null(strstr(text, "\nwithin span error: the median span moved by "
						     "no more than the tracing mode's calibrated "
						     "bias per span (525 ns)"));
			assert_non_null(strstr(json, "\"within_span_error\":\ttrue"));
		} else {
			assert_null(strstr(text, "within span error"));
		}
		free(text);
		free(json);
		diff__free(&d);
		free_set(&b);
		free_set(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_change_within_span_error_is_said),
		cmocka_unit_test(test_items_exist_with_their_thresholds),
		cmocka_unit_test(test_tail_regression_caught_by_p99),
		cmocka_unit_test(test_floor_only_is_said),
		cmocka_unit_test(test_noise_bound),
		cmocka_unit_test(test_pooled_mad),
		cmocka_unit_test(test_metric_thresholds_by_name),
		cmocka_unit_test(test_state_cpu_in_ns_from_the_samples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
