// SPDX-License-Identifier: MIT
/*
 * diff_rates: how often `khprof diff` fails identical builds, and how
 * often it catches an injected single-stage slowdown, by resampling one
 * series of records of the same binary (docs/CI.md, "The archived kh-scan
 * series").  Built and run by bench/diff-rates/run.sh.
 *
 *   diff_rates DIR [DRAWS [SIDE]]
 *
 * Each draw takes 2 x SIDE (default 5, at most 12) distinct runs of DIR at
 * random (a fixed xorshift seed: the figures reproduce) in recording order, and splits them two
 * ways: alternated (1st, 3rd... base; 2nd, 4th... candidate, as a job
 * that alternates builds records them) and back to back (the first SIDE
 * base, the last SIDE candidate).  Identical builds: every gating item is
 * judged as in a real job, and a draw fails when diff__compare says
 * regressed.  Injected: the candidate's spans of one stage are made 33%
 * longer (its elapsed, attributed time, histogram, minimum and maximum;
 * off-CPU time unchanged), optionally with one run of one side made an
 * outlier (that stage 1.9x, as in the report this answers); caught when
 * any gating item of that stage regressed; with every stage 33% slower,
 * when any gating item regressed.  DIFF_RATES_P99=PCT tries another p99
 * threshold, DIFF_RATES_VERBOSE=1 names each false alarm,
 * DIFF_RATES_MISSES=1 prints the stage's gating items of each miss.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "hist.h"
#include "json.h"
#include "record_dir.h"
#include "../draws.h"
#include "record.h"

#define MAX_SIDE 12
static int SIDE = 5;

static struct kh_profile *records;
static size_t record_count;

/* The runs in DIR (run-NNN.json), in recording order; 0 or -1. */
static int load_dir(const char *dir)
{
	size_t unreadable = 0;

	if (record_dir__read_runs(dir, &records, &record_count, &unreadable))
		return -1;
	if (unreadable)
		fprintf(stderr, "diff_rates: %zu records skipped\n", unreadable);
	return 0;
}

/* Spans of stage made factor times longer, in a copy of p. */
static void slow_stage(struct kh_profile *p, uint32_t stage, double factor)
{
	struct kh_stage_measurement *m = (struct kh_stage_measurement *)profile__find_stage(p, stage);
	struct kh_stage_dist *d = &p->ext.latency.stages[stage];

	if (m) {
		m->elapsed_ns = (uint64_t)llround((double)m->elapsed_ns * factor);
		m->attributed_ns = (uint64_t)llround((double)m->attributed_ns * factor);
	}
	if (d->present && d->counts) {
		uint64_t moved[KH_HIST_BUCKETS] = { 0 };

		for (uint32_t i = 0; i < KH_HIST_BUCKETS; i++) {
			double mid = (double)kh_hist_bucket_low(i) +
				     (double)(kh_hist_bucket_width(i) - 1) / 2;

			moved[kh_hist_bucket((uint64_t)llround(mid * factor))] += d->counts[i];
		}
		memcpy(d->counts, moved, sizeof(moved));
		d->min_ns = (uint64_t)llround((double)d->min_ns * factor);
		d->max_ns = (uint64_t)llround((double)d->max_ns * factor);
	}
}

/*
 * A shallow copy whose stage figures and the histogram of stage (every
 * stage's for KH_STAGE_COUNT, none for a negative one) may be changed:
 * copying all 25 histograms of 20 records a comparison made the bench
 * take most of an hour.  The stage figures are in the record itself.
 */
static void copy_record(struct kh_profile *dst, const struct kh_profile *src, int stage)
{
	*dst = *src;
	for (int s = 0; s < KH_STAGE_COUNT; s++)
		if (s == stage || stage == KH_STAGE_COUNT)
			kh_dist__copy(&dst->ext.latency.stages[s], &src->ext.latency.stages[s]);
}

static void free_copy(struct kh_profile *p, int stage)
{
	for (int s = 0; s < KH_STAGE_COUNT; s++)
		if (s == stage || stage == KH_STAGE_COUNT)
			kh_dist__free(&p->ext.latency.stages[s]);
}

enum outlier { NONE, BASE_OUTLIER, CAND_OUTLIER };

/* DIFF_RATES_MISSES: why a comparison missed the injected slowdown. */
static void print_miss(const struct kh_diff *d, uint32_t stage, bool alternated,
		       enum outlier outlier)
{
	static const char *const outliers[] = { "none", "base", "cand" };

	for (size_t i = 0; i < d->item_count; i++) {
		const struct kh_diff_item *it = &d->items[i];

		if (it->stage != stage || !it->gating || it->metric < KH_DIFF_M_ELAPSED ||
		    it->metric > KH_DIFF_M_DECODED)
			continue;
		fprintf(stderr, "miss %s %s: %s.%s %+.1f%% [%+.1f%%, %+.1f%%] noise %.1f%% %s\n",
			alternated ? "alt" : "b2b", outliers[outlier], it->name,
			diff_metric__name(it->metric), it->change_pct, it->interval_low_pct,
			it->interval_high_pct, it->noise_pct, diff_mark__name(it->verdict));
	}
}

/* One comparison: 1 when it failed (identical) or caught the stage (injected). */
static int compare(const size_t *idx, bool alternated, int stage, enum outlier outlier,
		   const struct kh_diff_options *opts)
{
	struct kh_profile base[MAX_SIDE], cand[MAX_SIDE];
	const char *names[MAX_SIDE] = { "a", "b", "c", "d", "e", "f",
					"g", "h", "i", "j", "k", "l" };
	struct kh_diff d;
	int hit = 0;

	for (int i = 0; i < SIDE; i++) {
		copy_record(&base[i], &records[idx[alternated ? 2 * i : i]], stage);
		copy_record(&cand[i], &records[idx[alternated ? 2 * i + 1 : SIDE + i]], stage);
		for (uint32_t st = 0; stage >= 0 && st < KH_STAGE_COUNT; st++)
			if (st == (uint32_t)stage || stage == KH_STAGE_COUNT)
				slow_stage(&cand[i], st, 1.33);
	}
	if (stage >= 0 && outlier == BASE_OUTLIER)
		slow_stage(&base[next_random() % SIDE], (uint32_t)stage, 1.9);
	if (stage >= 0 && outlier == CAND_OUTLIER)
		slow_stage(&cand[next_random() % SIDE], (uint32_t)stage, 1.9);
	{
		struct kh_diff_side bs = { "base", base, names, SIDE };
		struct kh_diff_side cs = { "cand", cand, names, SIDE };

		if (diff__compare(&bs, &cs, opts, &d) == 0) {
			for (size_t i = 0; i < d.item_count; i++) {
				const struct kh_diff_item *it = &d.items[i];

				if (!it->gating || it->verdict != KH_DIFF_REGRESSED)
					continue;
				if (stage < 0 || stage == KH_STAGE_COUNT ||
				    (it->stage == (uint32_t)stage && it->metric >= KH_DIFF_M_ELAPSED &&
				     it->metric <= KH_DIFF_M_DECODED))
					hit = 1;
				if (stage < 0 && getenv("DIFF_RATES_VERBOSE")) {
					fprintf(stderr, "false alarm: %s %s.%s %+.1f%% [%+.1f%%, %+.1f%%]\n",
						alternated ? "alternated" : "back-to-back", it->name,
						diff_metric__name(it->metric), it->change_pct,
						it->interval_low_pct, it->interval_high_pct);
				}
			}
			if (stage >= 0 && !hit && getenv("DIFF_RATES_MISSES"))
				print_miss(&d, (uint32_t)stage, alternated, outlier);
			diff__free(&d);
		}
	}
	for (int i = 0; i < SIDE; i++) {
		free_copy(&base[i], stage);
		free_copy(&cand[i], stage);
	}
	return hit;
}

static int by_value(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* 2*SIDE distinct runs at random, in recording order. */
static void draw(size_t *idx)
{
	for (int i = 0; i < 2 * SIDE;) {
		size_t r = next_random() % record_count;
		bool seen = false;

		for (int j = 0; j < i; j++)
			seen |= idx[j] == r;
		if (!seen)
			idx[i++] = r;
	}
	qsort(idx, 2 * SIDE, sizeof(*idx), by_value);
}

int main(int argc, char **argv)
{
	static const uint32_t stages[] = { KH_STAGE_SOURCE_READ, KH_STAGE_PHASE1_TRIGGERS,
					   KH_STAGE_HOT_PATTERNS, KH_STAGE_DECODE };
	static const char *const outlier_names[] = { "no outlier", "one base run 1.9x",
						     "one candidate run 1.9x" };
	int draws = argc > 2 ? atoi(argv[2]) : 400;
	struct kh_diff_options opts;
	size_t idx[2 * MAX_SIDE];

	if (argc > 3)
		SIDE = atoi(argv[3]) < 2 ? 2 : atoi(argv[3]) > MAX_SIDE ? MAX_SIDE : atoi(argv[3]);
	if (argc < 2 || load_dir(argv[1]) || record_count < (size_t)(2 * SIDE)) {
		fprintf(stderr, "usage: diff_rates DIR [DRAWS [SIDE]] (DIR: 2 x SIDE records)\n");
		return 2;
	}
	diff_options__init(&opts);
	/* Trying other defaults: DIFF_RATES_P99=PCT. */
	if (getenv("DIFF_RATES_P99"))
		opts.p99.pct = atof(getenv("DIFF_RATES_P99"));
	printf("records: %zu; draws: %d; %d runs a side\n", record_count, draws, SIDE);
	for (int alt = 1; alt >= 0; alt--) {
		int failed = 0;

		for (int k = 0; k < draws; k++) {
			draw(idx);
			failed += compare(idx, alt, -1, NONE, &opts);
		}
		printf("identical builds, %s: %d of %d failed (%.2f%%)\n",
		       alt ? "alternated" : "back to back", failed, draws, 100.0 * failed / draws);
	}
	for (size_t s = 0; s < sizeof(stages) / sizeof(stages[0]); s++)
		for (int o = NONE; o <= CAND_OUTLIER; o++)
			for (int alt = 1; alt >= 0; alt--) {
				int caught = 0;

				for (int k = 0; k < draws; k++) {
					draw(idx);
					caught += compare(idx, alt, (int)stages[s], (enum outlier)o,
							  &opts);
				}
				printf("%s +33%%, %s, %s: caught %d of %d (%.1f%%)\n",
				       kh_stage__name(stages[s]), outlier_names[o],
				       alt ? "alternated" : "back to back", caught, draws,
				       100.0 * caught / draws);
			}
	/*
	 * Every stage 33% slower (every span of the program): caught when any
	 * gating item regressed.  The speed-adjusted items cannot see it.
	 */
	for (int alt = 1; alt >= 0; alt--) {
		int caught = 0;

		for (int k = 0; k < draws; k++) {
			draw(idx);
			caught += compare(idx, alt, KH_STAGE_COUNT, NONE, &opts);
		}
		printf("every stage +33%%, %s: caught %d of %d (%.1f%%)\n",
		       alt ? "alternated" : "back to back", caught, draws, 100.0 * caught / draws);
	}
	return 0;
}
