// SPDX-License-Identifier: MIT
/*
 * khprof diff and what the machine does to runs (docs/CI.md, "Runs the
 * machine slowed"): a stage judged on its time on CPU, waiting for a CPU
 * left to the machine, runs starved of CPU left out of the wall times,
 * stages whose off-CPU split is incomplete judged on elapsed time, and the
 * properties the verdicts rest on: the change lies inside its interval for
 * every item, one stage's change never moves another stage's verdict, and
 * the same build on a busy runner never fails.
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

#define RUNS 10
#define STAGES 5

static const uint32_t stages[STAGES] = { KH_STAGE_SOURCE_READ, KH_STAGE_PHASE1_TRIGGERS,
					 KH_STAGE_ENTROPY, KH_STAGE_DECODE,
					 KH_STAGE_SUPPRESSION };
/* Each stage's time on CPU a run (ns), its spans, and its blocked time. */
static const uint64_t on_ns[STAGES] = { 9000000, 42000000, 5000000, 21000000, 7000000 };
static const uint64_t spans[STAGES] = { 200, 200, 200, 200, 200 };
static const uint64_t blocked_ns[STAGES] = { 12000000, 0, 0, 0, 200000 };

/* Run-to-run factors, median 1: the noise of a quiet runner. */
static const double steady[RUNS] = { 1.00, 1.01, 0.99, 1.02, 0.98,
				     1.00, 1.01, 0.99, 1.015, 0.985 };

struct run {
	double cpu[STAGES];  /* each stage's time on CPU, against on_ns */
	double waiting;      /* runnable time, as a share of each stage's time on CPU */
	bool truncated[STAGES]; /* spans whose off-CPU time is a lower bound */
};

static struct run quiet(int i)
{
	struct run r = { .waiting = 0.01 };

	for (int s = 0; s < STAGES; s++)
		r.cpu[s] = steady[(i + s) % RUNS];
	return r;
}

/*
 * A record of one run of a single-threaded program: each stage's spans
 * take its time on CPU, the time it waited for a CPU and its blocked time;
 * the wall time is their sum.
 */
static void make_record(struct kh_profile *p, const struct run *r)
{
	uint64_t wall = 0;

	assert_int_equal(profile__init(p), 0);
	assert_int_equal(profile__set_mode(p, KH_MODE_BATCH), 0);
	p->ext.latency.present = true;
	p->ext.latency.off_cpu = true;
	p->input_bytes = 64ull << 20;
	for (int s = 0; s < STAGES; s++) {
		struct kh_stage_dist *d = &p->ext.latency.stages[stages[s]];
		uint64_t on = (uint64_t)llround((double)on_ns[s] * r->cpu[s]);
		uint64_t runnable = (uint64_t)llround((double)on * r->waiting);
		uint64_t elapsed = on + runnable + blocked_ns[s];

		assert_int_equal(kh_dist__alloc(d), 0);
		d->present = true;
		d->spans = spans[s];
		d->counts[kh_hist_bucket(elapsed / spans[s])] = spans[s];
		d->min_ns = d->max_ns = elapsed / spans[s];
		d->off_cpu_ns = runnable + blocked_ns[s];
		d->runnable_ns = runnable;
		d->offcpu_truncated = r->truncated[s] ? spans[s] / 4 : 0;
		assert_int_equal(profile__set_stage(p, stages[s], elapsed, spans[s],
						    stages[s] == KH_STAGE_DECODE ? elapsed : 0), 0);
		wall += elapsed;
	}
	assert_int_equal(profile__add_transition(p, KH_STATE_SCANNING, 0, NULL), 0);
	assert_int_equal(profile__finish(p, KH_STATE_COMPLETED, wall), 0);
}

struct set {
	struct kh_profile rec[RUNS];
	const char *names[RUNS];
	struct kh_diff_side side;
};

static void make_set(struct set *s, const struct run *runs)
{
	static const char *const names[RUNS] = { "a", "b", "c", "d", "e",
						 "f", "g", "h", "i", "j" };

	for (int i = 0; i < RUNS; i++) {
		make_record(&s->rec[i], &runs[i]);
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

static void compare_runs(const struct run *rb, const struct run *rc, struct kh_diff *d)
{
	struct kh_diff_options opts;
	struct set b, c;

	make_set(&b, rb);
	make_set(&c, rc);
	diff_options__init(&opts);
	assert_int_equal(diff__compare(&b.side, &c.side, &opts, d), 0);
	free_set(&b);
	free_set(&c);
}

static void quiet_runs(struct run *r)
{
	for (int i = 0; i < RUNS; i++)
		r[i] = quiet(i);
}

/* --- the rules ---------------------------------------------------------------- */

static void test_starved_rule(void **state)
{
	/* Lower quartile 0.20: starved above 0.30 (1.5 times), whatever the points. */
	const double base[4] = { 0.20, 0.21, 0.22, 0.19 }, cand[4] = { 0.25, 0.31, 0.29, -1 };
	/* Lower quartile 0.01: 1.5 times is 0.015, but starved only 5 points above. */
	const double low_b[4] = { 0.01, 0.012, 0.009, 0.011 }, low_c[4] = { 0.05, 0.061, 0, 0 };
	bool sb[4], sc[4], *starved[2] = { sb, sc };
	const double *share[2] = { base, cand };
	const size_t n[2] = { 4, 4 };
	size_t count[2];

	(void)state;
	assert_int_equal(diff_runs__starved(share, n, starved, count), 0);
	assert_true(!sb[0] && !sb[1] && !sb[2] && !sb[3]);
	assert_true(!sc[0] && sc[1] && !sc[2] && !sc[3]); /* unmeasured: never starved */
	assert_true(count[0] == 0 && count[1] == 1);
	share[0] = low_b;
	share[1] = low_c;
	assert_int_equal(diff_runs__starved(share, n, starved, count), 0);
	assert_true(!sc[0] && sc[1] && !sc[2]);
}

static void test_split_complete(void **state)
{
	struct run r = quiet(0);
	struct kh_profile p;

	(void)state;
	r.truncated[3] = true;
	make_record(&p, &r);
	assert_true(diff_run__split_complete(&p, KH_STAGE_PHASE1_TRIGGERS));
	assert_false(diff_run__split_complete(&p, KH_STAGE_DECODE));
	/* A stage the run lacks took no time: nothing is missing. */
	assert_true(diff_run__split_complete(&p, KH_STAGE_HOT_PATTERNS));
	assert_true(fabs(diff_run__stage_share(&p, KH_STAGE_ENTROPY) - 0.01 / 1.01) < 1e-6);
	assert_true(diff_run__stage_share(&p, KH_STAGE_HOT_PATTERNS) == -1);
	/* A record that never measured the split has none. */
	p.ext.latency.off_cpu = false;
	assert_false(diff_run__split_complete(&p, KH_STAGE_PHASE1_TRIGGERS));
	assert_true(diff_run__starved_share(&p) == -1);
	assert_true(diff_run__wait_factor(&p) == 1.0);
	profile__free(&p);
}

/* +10 % of decode's work: decode.on_cpu fails the job, nothing else moves. */
static void test_stage_judged_on_its_time_on_cpu(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	const struct kh_diff_item *it;
	struct kh_diff d;
	char *text;

	(void)state;
	quiet_runs(rb);
	quiet_runs(rc);
	for (int i = 0; i < RUNS; i++)
		rc[i].cpu[3] *= 1.10;
	compare_runs(rb, rc, &d);
	it = find(&d, KH_DIFF_M_ON_CPU, KH_STAGE_DECODE);
	assert_true(it->gating);
	assert_false(find(&d, KH_DIFF_M_ELAPSED, KH_STAGE_DECODE)->gating);
	assert_int_equal(it->verdict, KH_DIFF_REGRESSED);
	assert_true(fabs(it->change_pct - 10.0) < 0.5);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_REGRESSED);
	assert_int_equal(d.regression_count, 1);
	text = diff__summary(&d);
	assert_string_equal(text, "diff: 1 regression: decode.on_cpu +10.0%");
	free(text);
	diff__free(&d);
}

/*
 * The issue that retired the speed index: the candidate's only change is
 * entropy twice as fast, and phase1-triggers was failed for it.  Each
 * stage's figures come from its own spans now.
 */
static void test_speedup_fails_nothing(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	struct kh_diff d;

	(void)state;
	quiet_runs(rb);
	quiet_runs(rc);
	for (int i = 0; i < RUNS; i++)
		rc[i].cpu[2] *= 0.5;
	compare_runs(rb, rc, &d);
	assert_int_equal(find(&d, KH_DIFF_M_ON_CPU, KH_STAGE_ENTROPY)->verdict, KH_DIFF_IMPROVED);
	for (size_t i = 0; i < d.item_count; i++)
		assert_int_not_equal(d.items[i].verdict, KH_DIFF_REGRESSED);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	assert_int_equal(find(&d, KH_DIFF_M_P50, KH_STAGE_PHASE1_TRIGGERS)->verdict, KH_DIFF_OK);
	diff__free(&d);
}

/*
 * The same build, its candidate's runs on a busy runner: every stage
 * waited for a CPU for 60 % of its time on CPU.  Waiting is the machine's:
 * the runnable rows say so, the stages' time on CPU is ok, the wall times
 * cannot be judged (every candidate run starved), and the comparison
 * cannot judge: exit 4, never 1.
 */
static void test_busy_runner_same_build_never_fails(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	struct kh_diff d;
	char *json, *reason;

	(void)state;
	quiet_runs(rb);
	quiet_runs(rc);
	for (int i = 0; i < RUNS; i++)
		rc[i].waiting = 0.6;
	compare_runs(rb, rc, &d);
	for (size_t i = 0; i < d.item_count; i++)
		if (d.items[i].gating)
			assert_int_not_equal(d.items[i].verdict, KH_DIFF_REGRESSED);
	assert_int_equal(find(&d, KH_DIFF_M_ELAPSED, KH_STAGE_DECODE)->verdict,
			 KH_DIFF_REGRESSED); /* judged, never gating: elapsed includes the wait */
	assert_int_equal(find(&d, KH_DIFF_M_RUNNABLE, KH_STAGE_DECODE)->verdict, KH_DIFF_MACHINE);
	assert_int_equal(find(&d, KH_DIFF_M_ON_CPU, KH_STAGE_DECODE)->verdict, KH_DIFF_OK);
	assert_int_equal(find(&d, KH_DIFF_M_WALL, 0)->verdict, KH_DIFF_UNJUDGED);
	assert_int_equal(find(&d, KH_DIFF_M_WALL, 0)->unjudged, KH_DIFF_STARVED);
	assert_int_equal(d.starved[1], RUNS);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_CANNOT_JUDGE);
	assert_int_equal(d.cannot, KH_DIFF_STARVED);
	reason = diff__cannot_reason(&d);
	assert_string_equal(reason, "0 of 10 base and 10 of 10 candidate runs were starved of "
				    "CPU, too few left to judge wall, throughput; "
				    "nothing that was judged regressed");
	free(reason);
	json = diff__to_json(&d);
	assert_non_null(strstr(json, "\"verdict\":\t\"cannot-judge\""));
	assert_non_null(strstr(json, "\"reason\":\t\"starved\""));
	free(json);
	diff__free(&d);

	/* The same busy runner with a real +20 % in decode: caught all the same. */
	for (int i = 0; i < RUNS; i++)
		rc[i].cpu[3] *= 1.2;
	compare_runs(rb, rc, &d);
	assert_int_equal(find(&d, KH_DIFF_M_ON_CPU, KH_STAGE_DECODE)->verdict, KH_DIFF_REGRESSED);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_REGRESSED);
	diff__free(&d);
}

/* Runs starved of CPU leave the wall times, which are divided by each run's wait. */
static void test_wall_of_runs_not_starved(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	const struct kh_diff_item *wall;
	struct kh_diff d;
	char *text;

	(void)state;
	quiet_runs(rb);
	quiet_runs(rc);
	/* Two candidate runs starved: left out; the others waited 4 % instead of 1 %. */
	for (int i = 0; i < RUNS; i++)
		rc[i].waiting = i == 1 || i == 4 ? 0.8 : 0.04;
	compare_runs(rb, rc, &d);
	wall = find(&d, KH_DIFF_M_WALL, 0);
	assert_int_equal(wall->cand_used, RUNS - 2);
	assert_int_equal(wall->left_out, KH_DIFF_LEFT_STARVED);
	assert_true(wall->wait_adjusted);
	assert_true(wall->recorded_cand > 1.03 * wall->recorded_base);
	assert_int_equal(wall->verdict, KH_DIFF_OK);
	assert_true(wall->interval_low_pct <= wall->change_pct &&
		    wall->change_pct <= wall->interval_high_pct);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	assert_int_equal(d.warning_count, 1);
	assert_non_null(strstr(d.warnings[0].message, "0 of 10 base and 2 of 10 candidate runs"));
	/* The row says it was adjusted, and the footnote how. */
	d.opts.all = true;
	text = diff__render_text(&d);
	assert_non_null(strstr(text, "\nwall† "));
	assert_non_null(strstr(text, "\n† wall, throughput: judged on the values of "
				     "the runs not starved of CPU, each divided by its wait factor"));
	free(text);
	diff__free(&d);

	/* The same wall with the usual wait: the code's, and regressed. */
	for (int i = 0; i < RUNS; i++) {
		rc[i].waiting = 0.01;
		for (int s = 0; s < STAGES; s++)
			rc[i].cpu[s] *= 1.07;
	}
	compare_runs(rb, rc, &d);
	assert_int_equal(find(&d, KH_DIFF_M_WALL, 0)->verdict, KH_DIFF_REGRESSED);
	diff__free(&d);
}

/*
 * source-read sleeps for most of its own time (blocked 12 ms, 9 ms on CPU):
 * it gates on its own time, on CPU or blocked.  A busy runner made its
 * time on CPU 10 % longer (each switch back in costs more after a
 * neighbour ran: measured here), its own time 4 %: no regression.  A
 * change that doubles its sleeping is one.
 */
static void test_blocking_stage_judged_on_own_time(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	const struct kh_diff_item *own;
	struct kh_diff d;

	(void)state;
	quiet_runs(rb);
	quiet_runs(rc);
	for (int i = 0; i < RUNS; i++)
		rc[i].cpu[0] *= 1.10;
	compare_runs(rb, rc, &d);
	own = find(&d, KH_DIFF_M_OWN, KH_STAGE_SOURCE_READ);
	assert_true(own->gating);
	assert_false(find(&d, KH_DIFF_M_ON_CPU, KH_STAGE_SOURCE_READ)->gating);
	assert_true(find(&d, KH_DIFF_M_ON_CPU, KH_STAGE_DECODE)->gating);
	assert_int_equal(find(&d, KH_DIFF_M_ON_CPU, KH_STAGE_SOURCE_READ)->verdict,
			 KH_DIFF_REGRESSED);
	assert_int_equal(own->verdict, KH_DIFF_OK);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	diff__free(&d);
}

/*
 * decode's split is incomplete in most runs (its thread left its CPU more
 * often than khprof's log holds): it is judged on elapsed time, leaving
 * out the runs in which it waited for a CPU far longer, and a warning
 * says so.
 */
static void test_incomplete_split_judged_on_elapsed(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	const struct kh_diff_item *el, *on;
	struct kh_diff d;

	(void)state;
	quiet_runs(rb);
	quiet_runs(rc);
	for (int i = 0; i < RUNS; i++) {
		rb[i].truncated[3] = rc[i].truncated[3] = i < 8;
		rc[i].cpu[3] *= 1.2;
	}
	compare_runs(rb, rc, &d);
	el = find(&d, KH_DIFF_M_ELAPSED, KH_STAGE_DECODE);
	on = find(&d, KH_DIFF_M_ON_CPU, KH_STAGE_DECODE);
	assert_true(el->gating);
	assert_false(on->gating);
	assert_int_equal(on->base_used, 2);
	assert_int_equal(on->left_out, KH_DIFF_LEFT_INCOMPLETE);
	assert_int_equal(el->verdict, KH_DIFF_REGRESSED);
	assert_true(find(&d, KH_DIFF_M_ON_CPU, KH_STAGE_PHASE1_TRIGGERS)->gating);
	assert_int_equal(d.warning_count, 1);
	assert_int_equal(d.warnings[0].kind, KH_DIFF_WARN_INCOMPLETE);
	assert_non_null(strstr(d.warnings[0].message, "1 stage is incomplete in some runs"));
	assert_non_null(strstr(d.warnings[0].message, "): decode, judged on elapsed time"));
	diff__free(&d);

	/* On a busy runner its elapsed time cannot be judged: too few runs did not wait. */
	for (int i = 0; i < RUNS; i++) {
		rc[i].cpu[3] /= 1.2;
		rc[i].waiting = 0.6;
	}
	compare_runs(rb, rc, &d);
	el = find(&d, KH_DIFF_M_ELAPSED, KH_STAGE_DECODE);
	assert_int_equal(el->verdict, KH_DIFF_UNJUDGED);
	assert_int_equal(el->unjudged, KH_DIFF_STARVED);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_CANNOT_JUDGE);
	diff__free(&d);
}

/* --- properties --------------------------------------------------------------- */

static uint64_t seed = 0x2545f4914f6cdd1dull;

static double noise(double spread)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return 1.0 + spread * ((double)(seed % 20001) / 10000.0 - 1.0);
}

static void noisy_runs(struct run *r, double spread, double busy)
{
	for (int i = 0; i < RUNS; i++) {
		for (int s = 0; s < STAGES; s++)
			r[i].cpu[s] = noise(spread);
		r[i].waiting = busy * noise(0.5);
		for (int s = 0; s < STAGES; s++)
			r[i].truncated[s] = noise(0.5) > 1.4;
	}
}

/*
 * One estimator per item: the change shown is the shift whose interval is
 * shown, so it lies inside it, for every item of every comparison, on
 * sets of every kind of noise, busy and truncated runs included.
 */
static void test_change_inside_interval_for_every_item(void **state)
{
	struct run rb[RUNS], rc[RUNS];
	size_t checked = 0;
	struct kh_diff d;

	(void)state;
	for (int trial = 0; trial < 60; trial++) {
		noisy_runs(rb, 0.02 + 0.01 * (trial % 20), trial % 3 ? 0.02 : 0.3);
		noisy_runs(rc, 0.02 + 0.01 * (trial % 20), trial % 2 ? 0.02 : 0.5);
		for (int i = 0; i < RUNS; i++)
			rc[i].cpu[trial % STAGES] *= 1.0 + 0.05 * (trial % 7);
		compare_runs(rb, rc, &d);
		for (size_t i = 0; i < d.item_count; i++) {
			const struct kh_diff_item *it = &d.items[i];
			char label[64];

			if (!it->has_interval)
				continue;
			diff_item__label(it, label, sizeof(label));
			if (it->shift < it->interval_low || it->shift > it->interval_high)
				fail_msg("%s: shift %g outside [%g, %g]", label, it->shift,
					 it->interval_low, it->interval_high);
			if (it->has_change && (it->change_pct < it->interval_low_pct ||
					       it->change_pct > it->interval_high_pct))
				fail_msg("%s: %+.2f%% outside [%+.2f%%, %+.2f%%]", label,
					 it->change_pct, it->interval_low_pct,
					 it->interval_high_pct);
			checked++;
		}
		diff__free(&d);
	}
	assert_true(checked > 60 * 40);
}

/* Everything an item's verdict rests on, compared between two comparisons. */
static void assert_same_item(const struct kh_diff_item *a, const struct kh_diff_item *b)
{
	char label[64];

	diff_item__label(a, label, sizeof(label));
	if (a->metric != b->metric || a->stage != b->stage || a->verdict != b->verdict ||
	    a->gating != b->gating || a->shift != b->shift || a->interval_low != b->interval_low ||
	    a->interval_high != b->interval_high || a->base_used != b->base_used ||
	    a->cand_used != b->cand_used)
		fail_msg("%s moved with another stage's change: %s %+g [%g, %g] against %s %+g "
			 "[%g, %g]", label, diff_mark__name(a->verdict), a->shift, a->interval_low,
			 a->interval_high, diff_mark__name(b->verdict), b->shift, b->interval_low,
			 b->interval_high);
}

/*
 * One stage's change never moves another stage's verdict: every stage in
 * turn made 2x faster, 20 % or 2x slower in the candidate, with busy and
 * truncated runs on both sides, leaves every item of every other stage
 * exactly as it was, verdict, shift and interval.
 */
static void test_one_stage_never_moves_another(void **state)
{
	static const double factors[] = { 0.5, 1.2, 2.0 };
	struct run rb[RUNS], rc[RUNS], changed[RUNS];
	struct kh_diff d, ref;
	size_t checked = 0;

	(void)state;
	for (int trial = 0; trial < 6; trial++) {
		noisy_runs(rb, 0.03 + 0.02 * trial, trial % 2 ? 0.3 : 0.02);
		noisy_runs(rc, 0.03 + 0.02 * trial, trial % 3 ? 0.02 : 0.4);
		compare_runs(rb, rc, &ref);
		for (int x = 0; x < STAGES; x++)
			for (size_t f = 0; f < sizeof(factors) / sizeof(factors[0]); f++) {
				memcpy(changed, rc, sizeof(changed));
				for (int i = 0; i < RUNS; i++)
					changed[i].cpu[x] *= factors[f];
				compare_runs(rb, changed, &d);
				assert_int_equal(d.item_count, ref.item_count);
				for (size_t i = 0; i < d.item_count; i++) {
					if (!diff_metric__is_stage(d.items[i].metric) ||
					    d.items[i].stage == stages[x])
						continue;
					assert_same_item(&d.items[i], &ref.items[i]);
					checked++;
				}
				diff__free(&d);
			}
		diff__free(&ref);
	}
	assert_true(checked > 6 * STAGES * 3 * 4 * 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starved_rule),
		cmocka_unit_test(test_split_complete),
		cmocka_unit_test(test_stage_judged_on_its_time_on_cpu),
		cmocka_unit_test(test_speedup_fails_nothing),
		cmocka_unit_test(test_busy_runner_same_build_never_fails),
		cmocka_unit_test(test_wall_of_runs_not_starved),
		cmocka_unit_test(test_blocking_stage_judged_on_own_time),
		cmocka_unit_test(test_incomplete_split_judged_on_elapsed),
		cmocka_unit_test(test_change_inside_interval_for_every_item),
		cmocka_unit_test(test_one_stage_never_moves_another),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
