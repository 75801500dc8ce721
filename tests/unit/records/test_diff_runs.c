// SPDX-License-Identifier: MIT
/*
 * khprof diff and runs the machine slowed (docs/CI.md, "Runs the machine
 * slowed"): the speed index, a stage's sensitivity to it, runs starved of
 * CPU, and what they do to the verdicts: a stage slowed by a change is
 * caught when other runs were slowed by the machine, and a machine that
 * slowed down between the sides is not taken for a regression.
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
#include "diff_internal.h"
#include "hist.h"
#include "record.h"
#include "stats.h"

#define RUNS 8
#define STAGES 5
#define SPANS 200

static const uint32_t stages[STAGES] = { KH_STAGE_SOURCE_READ, KH_STAGE_PHASE1_TRIGGERS,
					 KH_STAGE_ENTROPY, KH_STAGE_DECODE,
					 KH_STAGE_SUPPRESSION };
static const uint64_t span_ns[STAGES] = { 9000, 1300, 600, 17000, 3000 };

/* Small run-to-run noise, median 1. */
static const double steady[RUNS] = { 1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99 };

struct run {
	double machine;   /* every stage's spans this much slower (a neighbour's load) */
	double stage;     /* the one stage's spans this much slower too (a change or outlier) */
	uint32_t which;   /* that stage */
	double runnable;  /* share of span time spent waiting for a CPU */
	double wall;      /* wall time factor */
};

/* Spans a run of the decode stage (the others: SPANS). */
static uint64_t decode_spans = SPANS;

static struct run plain(int i)
{
	return (struct run){ steady[i], 1.0, KH_STAGE_DECODE, 0.2, steady[i] };
}

static void make_record(struct kh_profile *p, struct run r)
{
	uint64_t total_all = 0;

	assert_int_equal(profile__init(p), 0);
	assert_int_equal(profile__set_mode(p, KH_MODE_BATCH), 0);
	p->ext.latency.present = true;
	p->ext.latency.off_cpu = true;
	for (int s = 0; s < STAGES; s++) {
		struct kh_stage_dist *d = &p->ext.latency.stages[stages[s]];
		double f = r.machine * (stages[s] == r.which ? r.stage : 1.0);
		uint64_t spans = stages[s] == KH_STAGE_DECODE ? decode_spans : SPANS;
		uint64_t ns = (uint64_t)llround((double)span_ns[s] * f), total = ns * spans;

		assert_int_equal(kh_dist__alloc(d), 0);
		d->present = true;
		d->counts[kh_hist_bucket(ns)] = spans;
		d->spans = spans;
		d->min_ns = d->max_ns = ns;
		d->runnable_ns = d->off_cpu_ns = (uint64_t)llround((double)total * r.runnable);
		assert_int_equal(profile__set_stage(p, stages[s], total, spans, 0), 0);
		total_all += total;
	}
	assert_int_equal(profile__add_transition(p, KH_STATE_SCANNING, 0, NULL), 0);
	assert_int_equal(profile__finish(p, KH_STATE_COMPLETED,
					 (uint64_t)llround(40e6 * r.wall)), 0);
	(void)total_all;
}

struct set {
	struct kh_profile rec[RUNS];
	const char *names[RUNS];
	struct kh_diff_side side;
};

static void make_set(struct set *s, const struct run *runs)
{
	static const char *const names[RUNS] = { "a", "b", "c", "d", "e", "f", "g", "h" };

	for (int i = 0; i < RUNS; i++) {
		make_record(&s->rec[i], runs[i]);
		s->names[i] = names[i];
	}
	s->side = (struct kh_diff_side){ "side", s->rec, s->names, RUNS };
}

static void free_set(struct set *s)
{
	for (int i = 0; i < RUNS; i++)
		profile__free(&s->rec[i]);
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

static void compare(struct set *b, struct set *c, struct kh_diff *d)
{
	struct kh_diff_options opts;

	diff_options__init(&opts);
	assert_int_equal(diff__compare(&b->side, &c->side, &opts, d), 0);
}

static void test_drop_farthest_k(void **state)
{
	const double v[] = { 10, 30, 9, 11, 2, 10 };
	double out[6];

	(void)state;
	/* Median 10: 30 (20 away) goes, then 2 (8 away). */
	assert_int_equal(stats__drop_farthest_k(v, 6, 2, out), 4);
	assert_true(out[0] == 10 && out[1] == 9 && out[2] == 11 && out[3] == 10);
	/* Nothing to drop, or everything: all copied. */
	assert_int_equal(stats__drop_farthest_k(v, 6, 0, out), 6);
	assert_int_equal(stats__drop_farthest_k(v, 6, 6, out), 6);
	assert_true(out[1] == 30);
	assert_int_equal(stats__drop_farthest_k(v, 1, 1, out), 1);
	assert_int_equal(stats__drop_farthest_k(v, 0, 1, out), 0);
	/* Equally far: the first ones go, in order. */
	assert_int_equal(stats__drop_farthest_k((const double[]){ 1, 5, 3, 3, 3 }, 5, 2, out), 3);
	assert_true(out[0] == 3 && out[1] == 3 && out[2] == 3);
}

static void test_sensitivity(void **state)
{
	const double ub[] = { 1.0, 1.2, 1.0, 1.5 }, uc[] = { 1.0, 1.0, 1.3, 1.0 };
	double vb[4], vc[4];

	(void)state;
	/* Values that follow u^1.5 on both sides: 1.5, whatever the shift between sides. */
	for (int i = 0; i < 4; i++) {
		vb[i] = 10 * pow(ub[i], 1.5);
		vc[i] = 20 * pow(uc[i], 1.5);
	}
	assert_true(fabs(diff_run__sensitivity(vb, ub, 4, vc, uc, 4) - 1.5) < 1e-9);
	/* No pair of one side 5 % apart: 1, even though the sides differ by 1.3. */
	assert_true(diff_run__sensitivity((const double[]){ 10, 10 },
					  (const double[]){ 1, 1.02 }, 2,
					  (const double[]){ 13, 13 },
					  (const double[]){ 1.3, 1.3 }, 2) == 1.0);
	/* Clamped: a stage that gets faster as the machine slows is not sped up further. */
	assert_true(diff_run__sensitivity((const double[]){ 10, 5 }, (const double[]){ 1, 1.5 }, 2,
					  NULL, NULL, 0) == 0.0);
	assert_true(diff_run__sensitivity((const double[]){ 10, 100 },
					  (const double[]){ 1, 1.5 }, 2, NULL, NULL,
					  0) == DIFF_SENSITIVITY_MAX);
	assert_true(diff_run__sensitivity(NULL, NULL, 0, NULL, NULL, 0) == 1.0);
}

static void test_speed_index_and_starved_share(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	struct diff_runs runs;
	struct set b, c;
	double ub[RUNS], uc[RUNS];

	(void)state;
	for (int i = 0; i < RUNS; i++) {
		rb[i] = plain(i);
		rc[i] = plain(i);
	}
	rb[2].machine = 1.5;    /* a run the machine slowed */
	rc[5].stage = 3.0;      /* one stage of one run: not the machine */
	rc[6].runnable = 0.6;   /* starved of CPU */
	make_set(&b, rb);
	make_set(&c, rc);
	assert_true(fabs(diff_run__starved_share(&c.rec[6]) - 0.6) < 1e-6);
	assert_int_equal(diff_runs__init(&runs, &b.side, &c.side), 0);
	assert_int_equal(runs.reference_count, STAGES);
	diff_runs__speed(&runs, &b.side, KH_STAGE_COUNT, ub);
	diff_runs__speed(&runs, &c.side, KH_STAGE_COUNT, uc);
	assert_true(fabs(ub[2] - 1.5) < 0.05);
	assert_true(fabs(uc[5] - 1.0) < 0.05);
	assert_true(fabs(ub[0] - 1.0) < 0.05);
	assert_true(runs.starved[1][6]);
	assert_int_equal(runs.starved_count[0], 0);
	assert_int_equal(runs.starved_count[1], 1);
	diff_runs__free(&runs);

	/* Without latency: no reference stage, index 1, never starved. */
	for (int i = 0; i < RUNS; i++)
		b.rec[i].ext.latency.present = false;
	assert_true(diff_run__starved_share(&b.rec[0]) == -1);
	assert_int_equal(diff_runs__init(&runs, &b.side, &c.side), 0);
	assert_int_equal(runs.reference_count, 0);
	diff_runs__speed(&runs, &c.side, KH_STAGE_COUNT, uc);
	assert_true(uc[2] == 1.0);
	diff_runs__free(&runs);
	free_set(&b);
	free_set(&c);
}

/* A +33 % stage is caught though base runs were slowed by the machine and one by itself. */
static void test_change_caught_among_slowed_runs(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	const struct kh_diff_item *it;
	struct set b, c;
	struct kh_diff d;

	(void)state;
	for (int i = 0; i < RUNS; i++) {
		rb[i] = plain(i);
		rc[i] = plain(i);
		rc[i].stage = 1.33;
	}
	rb[1].machine = rb[4].machine = rb[6].machine = 1.3; /* three slowed runs in the base */
	rb[3].stage = 1.9;                                   /* and one outlier of the stage */
	make_set(&b, rb);
	make_set(&c, rc);
	compare(&b, &c, &d);
	it = find(&d, KH_DIFF_M_P50, KH_STAGE_DECODE);
	assert_true(it->speed_adjusted);
	assert_int_equal(it->verdict, KH_DIFF_REGRESSED);
	assert_int_equal(it->base_used, 6);
	/* The other stages moved with the machine only. */
	assert_int_not_equal(find(&d, KH_DIFF_M_P50, KH_STAGE_PHASE1_TRIGGERS)->verdict,
			     KH_DIFF_REGRESSED);
	diff__free(&d);
	free_set(&b);
	free_set(&c);
}

/* Identical builds; the machine slowed down for most of the candidate's runs (back to back). */
static void test_machine_slowdown_between_sides_is_no_regression(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	struct set b, c;
	struct kh_diff d;
	char *first, *second;

	(void)state;
	for (int i = 0; i < RUNS; i++) {
		rb[i] = plain(i);
		rc[i] = plain(i);
		/* Stages slow by their own measure (sensitivity 1.4 for phase1-triggers). */
		if (i >= 2) {
			rc[i].machine = 1.3;
			rc[i].wall = 1.3 * steady[i];
		}
	}
	/* Two base runs slowed too, so each side shows how its stages follow the machine. */
	rb[3].machine = rb[5].machine = 1.3;
	rb[3].wall = rb[5].wall = 1.3;
	make_set(&b, rb);
	make_set(&c, rc);
	compare(&b, &c, &d);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	assert_int_not_equal(find(&d, KH_DIFF_M_WALL, 0)->verdict, KH_DIFF_REGRESSED);
	assert_int_not_equal(find(&d, KH_DIFF_M_P50, KH_STAGE_DECODE)->verdict, KH_DIFF_REGRESSED);
	/* The same records, the same verdict, byte for byte. */
	first = diff__to_json(&d);
	diff__free(&d);
	compare(&b, &c, &d);
	second = diff__to_json(&d);
	assert_string_equal(first, second);
	assert_non_null(strstr(first, "\"speed_adjusted\":\ttrue"));
	free(first);
	free(second);
	diff__free(&d);
	free_set(&b);
	free_set(&c);
}

/* Runs starved of CPU leave the wall times; too many of them and wall is not judged. */
static void test_starved_runs(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	const struct kh_diff_item *wall;
	struct set b, c;
	struct kh_diff d;
	char *json;

	(void)state;
	for (int i = 0; i < RUNS; i++) {
		rb[i] = plain(i);
		rc[i] = plain(i);
	}
	/* Two candidate runs starved, their wall 1.8 times as long: left out. */
	rc[1].runnable = rc[4].runnable = 0.45;
	rc[1].wall = rc[4].wall = 1.8;
	make_set(&b, rb);
	make_set(&c, rc);
	compare(&b, &c, &d);
	wall = find(&d, KH_DIFF_M_WALL, 0);
	assert_int_equal(wall->cand_used, RUNS - 2);
	assert_false(wall->starved_out);
	assert_int_equal(wall->verdict, KH_DIFF_OK);
	assert_int_equal(d.warning_count, 1);
	assert_int_equal(d.warnings[0].kind, KH_DIFF_WARN_STARVED);
	assert_non_null(strstr(d.warnings[0].message, "0 of 8 base and 2 of 8 candidate runs"));
	assert_null(strstr(d.warnings[0].message, "too few"));
	diff__free(&d);
	free_set(&c);

	/* Seven starved: one left, no interval; noisy at most, never regressed. */
	for (int i = 0; i < 7; i++) {
		rc[i].runnable = 0.45;
		rc[i].wall = 1.8;
	}
	make_set(&c, rc);
	compare(&b, &c, &d);
	wall = find(&d, KH_DIFF_M_WALL, 0);
	assert_true(wall->starved_out);
	assert_false(wall->has_interval);
	assert_int_equal(wall->verdict, KH_DIFF_NOISY);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	assert_non_null(strstr(d.warnings[0].message, "too few left to judge them"));
	json = diff__to_json(&d);
	assert_non_null(strstr(json, "\"starved_out\":\ttrue"));
	assert_non_null(strstr(json, "\"kind\":\t\"starved\""));
	free(json);
	diff__free(&d);
	free_set(&b);
	free_set(&c);
}

/* Threads that waited longer for a CPU, short of starved: the wall they lost is not the code's. */
static void test_wall_waiting_for_cpu(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	struct set b, c;
	struct kh_diff d;

	(void)state;
	for (int i = 0; i < RUNS; i++) {
		rb[i] = plain(i);
		rc[i] = plain(i);
		/* 28 % of the span time runnable instead of 20 %: 1.11 times the wall. */
		rc[i].runnable = 0.28;
		rc[i].wall = steady[i] * 0.8 / 0.72;
	}
	make_set(&b, rb);
	make_set(&c, rc);
	assert_true(fabs(diff_run__wait_factor(&c.rec[0]) - 1 / 0.72) < 1e-6);
	compare(&b, &c, &d);
	assert_int_equal(d.warning_count, 0);
	assert_int_equal(find(&d, KH_DIFF_M_WALL, 0)->verdict, KH_DIFF_OK);
	assert_true(find(&d, KH_DIFF_M_WALL, 0)->change_pct > 10);
	diff__free(&d);
	free_set(&c);

	/* The same wall with the usual wait: the code's, and regressed. */
	for (int i = 0; i < RUNS; i++)
		rc[i].runnable = 0.2;
	make_set(&c, rc);
	compare(&b, &c, &d);
	assert_int_equal(find(&d, KH_DIFF_M_WALL, 0)->verdict, KH_DIFF_REGRESSED);
	diff__free(&d);
	b.rec[0].ext.latency.present = false;
	assert_true(diff_run__wait_factor(&b.rec[0]) == 1.0);
	free_set(&b);
	free_set(&c);
}

/* A stage of one span a run: its p50 is judged like its elapsed time, on every run. */
static void test_few_spans_judged_on_every_run(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	const struct kh_diff_item *p50, *other;
	struct set b, c;
	struct kh_diff d;

	(void)state;
	for (int i = 0; i < RUNS; i++) {
		rb[i] = plain(i);
		rc[i] = plain(i);
	}
	decode_spans = 1;
	make_set(&b, rb);
	make_set(&c, rc);
	decode_spans = SPANS;
	compare(&b, &c, &d);
	p50 = find(&d, KH_DIFF_M_P50, KH_STAGE_DECODE);
	assert_true(p50->few_spans);
	assert_false(p50->speed_adjusted);
	assert_int_equal(p50->base_used, RUNS);
	assert_int_equal(find(&d, KH_DIFF_M_P99, KH_STAGE_DECODE)->base_used, RUNS);
	/* A stage of many spans leaves a quarter of its runs out. */
	other = find(&d, KH_DIFF_M_P50, KH_STAGE_SOURCE_READ);
	assert_false(other->few_spans);
	assert_true(other->speed_adjusted);
	assert_int_equal(other->base_used, RUNS - RUNS / 4);
	/* and its p99 one. */
	assert_int_equal(find(&d, KH_DIFF_M_P99, KH_STAGE_SOURCE_READ)->base_used, RUNS - 1);
	diff__free(&d);
	free_set(&b);
	free_set(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drop_farthest_k),
		cmocka_unit_test(test_sensitivity),
		cmocka_unit_test(test_speed_index_and_starved_share),
		cmocka_unit_test(test_change_caught_among_slowed_runs),
		cmocka_unit_test(test_machine_slowdown_between_sides_is_no_regression),
		cmocka_unit_test(test_starved_runs),
		cmocka_unit_test(test_wall_waiting_for_cpu),
		cmocka_unit_test(test_few_spans_judged_on_every_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
