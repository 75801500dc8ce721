// SPDX-License-Identifier: MIT
/*
 * Comparing two sets of records for CI.  Times only say something about a
 * change when the runs did the same work under the same conditions, so the
 * identities of all records are bound first; then, for each item, one
 * estimator, the Hodges-Lehmann shift between the two sides' runs, gives
 * the change shown and the Mann-Whitney interval that decides whether it
 * stands out of the run-to-run noise.  A stage is judged on what its code
 * spent, its time on CPU; waiting for a CPU is the machine's.  The rules
 * are in docs/CI.md; keep the two in step.
 *
 * This file holds the items and the verdict; each record's values are in
 * diff_values.c, the runs' conditions in diff_runs.c, the settings in
 * diff_options.c, the identity binding and warnings in diff_bind.c, the
 * output in diff_text.c and diff_json.c, the statistics in stats.c.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "diff_internal.h"
#include "stats.h"

/* --- names -------------------------------------------------------------- */

const char *diff_verdict__name(enum kh_diff_verdict verdict)
{
	switch (verdict) {
	case KH_DIFF_VERDICT_OK:
		return "ok";
	case KH_DIFF_VERDICT_REGRESSED:
		return "regressed";
	case KH_DIFF_VERDICT_NOT_COMPARABLE:
		return "not-comparable";
	case KH_DIFF_VERDICT_CANNOT_JUDGE:
		return "cannot-judge";
	}
	return NULL;
}

const char *diff_mark__name(enum kh_diff_mark mark)
{
	static const char *const names[] = {
		[KH_DIFF_OK] = "ok",		 [KH_DIFF_REGRESSED] = "regressed",
		[KH_DIFF_IMPROVED] = "improved", [KH_DIFF_NOISY] = "noisy",
		[KH_DIFF_SAME] = "same",	 [KH_DIFF_CHANGED] = "changed",
		[KH_DIFF_OFF] = "off",		 [KH_DIFF_UNJUDGED] = "unjudged",
		[KH_DIFF_MACHINE] = "machine",
	};

	return (size_t)mark < sizeof(names) / sizeof(names[0]) ? names[mark] : NULL;
}

const char *diff_metric__name(enum kh_diff_metric metric)
{
	static const char *const names[] = {
		[KH_DIFF_M_WALL] = "wall",	   [KH_DIFF_M_THROUGHPUT] = "throughput",
		[KH_DIFF_M_PEAK_RSS] = "peak_rss", [KH_DIFF_M_ELAPSED] = "elapsed",
		[KH_DIFF_M_CALLS] = "calls",	   [KH_DIFF_M_PER_CALL] = "per_call",
		[KH_DIFF_M_ON_CPU] = "on_cpu",	   [KH_DIFF_M_ON_CPU_PER_CALL] = "on_cpu_per_call",
		[KH_DIFF_M_OWN] = "own",
		[KH_DIFF_M_BLOCKED] = "blocked",   [KH_DIFF_M_RUNNABLE] = "runnable",
		[KH_DIFF_M_P50] = "p50",	   [KH_DIFF_M_P99] = "p99",
		[KH_DIFF_M_DECODED] = "decoded",
		[KH_DIFF_M_STATE_WALL] = "state_wall", [KH_DIFF_M_STATE_CPU] = "state_cpu",
	};

	return (size_t)metric < sizeof(names) / sizeof(names[0]) ? names[metric] : NULL;
}

/* --- items -------------------------------------------------------------- */

/*
 * What the items of one comparison share: the two sides, scratch room for
 * one value per record, the runs starved of CPU, and the stage whose items
 * are being added.
 */
struct diff_ctx {
	struct kh_diff *d;
	const struct kh_diff_side *side[2];
	double *value[2];      /* each record's value of the item */
	bool *has[2];          /* whether the record has one */
	bool *used[2];         /* whether it is judged */
	double *work[2];       /* the judged values, packed */
	bool *starved[2];      /* runs starved of CPU, over all their stages */
	bool *stage_starved[2]; /* the current stage's runs that waited for a CPU far longer */
	enum kh_diff_metric gate; /* the current stage's gating figure: on_cpu, own or elapsed */
	double calls[2];       /* the current stage's median calls, per side */
};

/* The Mann-Whitney interval exists for sides of these sizes at the confidence. */
static bool interval_exists(size_t m, size_t n, double confidence)
{
	size_t k;

	return m >= 2 && n >= 2 && stats__shift_rank(m, n, confidence, STATS_RANK_AUTO, &k) == 0;
}

/* Median input of a side, in bytes; 0 when unknown. */
static double side_input_bytes(const struct kh_diff_side *s)
{
	double *v = malloc(s->count * sizeof(*v)), median;

	if (!v)
		return 0;
	for (size_t i = 0; i < s->count; i++)
		v[i] = (double)s->records[i].input_bytes;
	median = stats__median(v, s->count);
	free(v);
	return isnan(median) ? 0 : median;
}

/* The shift under which an item is never judged (docs/CI.md, "Minimum change"). */
static bool item__below_floor(const struct kh_diff *d, const struct kh_diff_item *it,
			      const struct kh_diff_side *base)
{
	double change = fabs(it->shift), min_ns = (double)d->opts.min_change_ns, n;

	switch (it->metric) {
	case KH_DIFF_M_THROUGHPUT: {
		/*
		 * A throughput change is judged by the time it makes: how much
		 * longer or shorter the base's input takes at the candidate's
		 * throughput (the wall time change, when inputs are equal).
		 */
		double b = it->base_median, c = it->base_median + it->shift;

		if (b <= 0 || c <= 0)
			return b == c;
		return side_input_bytes(base) * fabs(1.0 / c - 1.0 / b) * 1e9 < min_ns;
	}
	case KH_DIFF_M_PEAK_RSS:
		return change < (double)KH_DIFF_RSS_MIN_CHANGE_BYTES;
	case KH_DIFF_M_PER_CALL:
	case KH_DIFF_M_ON_CPU_PER_CALL:
	case KH_DIFF_M_P50:
	case KH_DIFF_M_P99:
		/*
		 * The floor is for the stage's whole time: a per-call change
		 * counts when, over the calls of the busier side, it adds up to
		 * the floor; p99 over the slowest 1 % of them.
		 */
		n = fmax(it->calls_base, it->calls_cand);
		if (it->metric == KH_DIFF_M_P99)
			n /= 100.0;
		return change < (n > 1 ? min_ns / n : min_ns);
	default:
		return change < min_ns;
	}
}

/*
 * The rules of docs/CI.md, on the judged values vb and vc.  The
 * comparisons multiply out the percentage so that a shift of exactly the
 * threshold is not beyond it, whatever rounding a division would bring,
 * and so that from a base of 0 any increase is beyond every threshold.
 */
static int item__judge(struct kh_diff *d, struct kh_diff_item *it, const double *vb, size_t nb,
		       const double *vc, size_t nc, const struct kh_diff_side *base)
{
	const struct kh_diff_options *o = &d->opts;
	const struct kh_diff_threshold *t = diff_options__threshold(o, it->metric, it->stage);
	int bad = it->metric == KH_DIFF_M_THROUGHPUT ? -1 : 1;
	double b, limit, least_bad, most_bad;
	int err;

	it->base_used = nb;
	it->cand_used = nc;
	if (nb && nc) {
		it->base_median = stats__median(vb, nb);
		it->cand_median = stats__median(vc, nc);
		err = stats__hodges_lehmann(vb, nb, vc, nc, &it->shift);
		if (err)
			return err;
		if (isnan(it->base_median) || isnan(it->cand_median))
			return -ENOMEM;
	} else {
		it->base_median = it->recorded_base;
		it->cand_median = it->recorded_cand;
	}
	b = it->base_median;
	it->has_change = nb && nc && b != 0;
	it->change_pct = it->has_change ? 100.0 * it->shift / b : 0.0;
	if (!t) {
		it->verdict = it->recorded_base == it->recorded_cand ? KH_DIFF_SAME : KH_DIFF_CHANGED;
		return 0;
	}
	it->has_threshold = true;
	it->threshold_off = t->off;
	it->threshold_pct = t->pct;
	if (nb && nc && interval_exists(nb, nc, o->confidence)) {
		err = stats__shift_interval(vb, nb, vc, nc, o->confidence, &it->interval_low,
					    &it->interval_high);
		if (err)
			return err;
		it->has_interval = true;
		if (it->has_change) {
			it->interval_low_pct = 100.0 * it->interval_low / b;
			it->interval_high_pct = 100.0 * it->interval_high / b;
		}
		it->noise = stats__pooled_mad(vb, nb, vc, nc);
	}
	limit = t->pct * fabs(b);
	if (nb && nc)
		it->beyond = bad * it->shift * 100.0 > limit ? 1 : -bad * it->shift * 100.0 > limit ? -1 : 0;
	it->below_floor = nb && nc && item__below_floor(d, it, base);
	if (t->off) {
		it->verdict = KH_DIFF_OFF;
		return 0;
	}
	if (it->below_floor) {
		it->verdict = KH_DIFF_OK;
		it->floor_only = it->beyond != 0;
		return 0;
	}
	if (!it->has_interval) {
		it->verdict = KH_DIFF_UNJUDGED;
		it->unjudged = it->left_out == KH_DIFF_LEFT_STARVED &&
					       interval_exists(it->base_n, it->cand_n, o->confidence)
				       ? KH_DIFF_STARVED
				       : KH_DIFF_FEW_RUNS;
		return 0;
	}
	/*
	 * Sure of a change beyond the budget, not merely of some change: the
	 * whole interval must lie beyond the threshold, and beyond
	 * DIFF_NOISE_K (for the wall times DIFF_NOISE_K_WALL) pooled MADs of
	 * the runs, so that an item whose runs spread widely needs a change as
	 * wide to fail.
	 */
	least_bad = bad > 0 ? it->interval_low : -it->interval_high;
	most_bad = bad > 0 ? it->interval_high : -it->interval_low;
	if (!isnan(it->noise) && b != 0) {
		it->noise_pct = 100.0 *
				(diff_metric__is_wall(it->metric) ? DIFF_NOISE_K_WALL : DIFF_NOISE_K) *
				it->noise / fabs(b);
		limit = fmax(limit, it->noise_pct * fabs(b));
	}
	if (least_bad * 100.0 > limit)
		it->verdict = KH_DIFF_REGRESSED;
	else if (-most_bad * 100.0 > limit)
		it->verdict = KH_DIFF_IMPROVED;
	else
		it->verdict = it->beyond ? KH_DIFF_NOISY : KH_DIFF_OK;
	/* Waiting for a CPU is the machine's, whichever way it moved. */
	if (it->metric == KH_DIFF_M_RUNNABLE && it->verdict != KH_DIFF_OK)
		it->verdict = KH_DIFF_MACHINE;
	return 0;
}

/*
 * Which records' values an item judges (ctx->used), and for the wall
 * times each value's wait factor: 1 / (1 - the run's runnable share),
 * against its median over the judged runs of both sides, so that a run
 * that waited as usual keeps its value (docs/CI.md, "Runs the machine
 * slowed").  Fills ctx->work and the counts.  0 or -ENOMEM.
 */
static int item__select(struct diff_ctx *ctx, struct kh_diff_item *it, size_t n[2])
{
	double *w[2] = { NULL, NULL }, median = 1.0;
	size_t k = 0;
	int err = 0;

	for (int s = 0; s < 2; s++) {
		const struct kh_diff_side *side = ctx->side[s];

		n[s] = 0;
		for (size_t i = 0; i < side->count; i++) {
			bool out = false;

			if (!ctx->has[s][i]) {
				ctx->used[s][i] = false;
				continue;
			}
			if (diff_metric__is_wall(it->metric) && ctx->starved[s][i])
				out = true;
			if ((it->metric == KH_DIFF_M_ON_CPU || it->metric == KH_DIFF_M_ON_CPU_PER_CALL ||
			     it->metric == KH_DIFF_M_OWN) &&
			    !diff_run__split_complete(&side->records[i], it->stage)) {
				out = true;
				it->left_out = KH_DIFF_LEFT_INCOMPLETE;
			}
			if (it->metric == KH_DIFF_M_ELAPSED && it->gating && ctx->stage_starved[s][i])
				out = true;
			if (out && it->left_out == KH_DIFF_ALL_RUNS)
				it->left_out = KH_DIFF_LEFT_STARVED;
			ctx->used[s][i] = !out;
			if (!out)
				ctx->work[s][n[s]++] = ctx->value[s][i];
		}
	}
	if (!diff_metric__is_wall(it->metric))
		return 0;
	for (int s = 0; s < 2 && !err; s++)
		if (!(w[s] = malloc((ctx->side[s]->count + 1) * sizeof(double))))
			err = -ENOMEM;
	for (int s = 0; s < 2 && !err; s++)
		for (size_t i = 0, j = 0; i < ctx->side[s]->count; i++) {
			if (!ctx->used[s][i])
				continue;
			it->wait_adjusted |= diff_run__starved_share(&ctx->side[s]->records[i]) >= 0;
			w[s][j++] = diff_run__wait_factor(&ctx->side[s]->records[i]);
		}
	if (!err && it->wait_adjusted) {
		double *all = malloc((n[0] + n[1] + 1) * sizeof(*all));

		if (!all) {
			err = -ENOMEM;
		} else {
			for (int s = 0; s < 2; s++)
				for (size_t i = 0; i < n[s]; i++)
					all[k++] = w[s][i];
			median = k ? stats__median(all, k) : 1.0;
			free(all);
			for (int s = 0; s < 2; s++)
				for (size_t i = 0; i < n[s]; i++) {
					double f = median > 0 ? w[s][i] / median : 1.0;

					ctx->work[s][i] = it->metric == KH_DIFF_M_THROUGHPUT
								  ? ctx->work[s][i] * f
								  : ctx->work[s][i] / f;
				}
		}
	}
	free(w[0]);
	free(w[1]);
	return err;
}

/*
 * An item the starved runs left unjudged, whose shift over every run, the
 * starved ones included, is below the floor: it moved too little to
 * matter however long the runs waited (a state of 80 us), so it is ok.
 */
static int item__floor_of_all(struct kh_diff *d, struct diff_ctx *ctx, struct kh_diff_item *it)
{
	struct kh_diff_item all = *it;
	size_t n[2] = { 0, 0 };
	int err;

	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < ctx->side[s]->count; i++)
			if (ctx->has[s][i])
				ctx->work[s][n[s]++] = ctx->value[s][i];
	all.base_median = it->recorded_base;
	err = stats__hodges_lehmann(ctx->work[0], n[0], ctx->work[1], n[1], &all.shift);
	if (err || !item__below_floor(d, &all, ctx->side[0]))
		return err;
	it->verdict = KH_DIFF_OK;
	it->unjudged = KH_DIFF_JUDGED;
	it->below_floor = true;
	return 0;
}

/* Whether a stage's item gates: one figure per stage (docs/CI.md). */
static bool item__gating(const struct diff_ctx *ctx, enum kh_diff_metric metric)
{
	switch (metric) {
	case KH_DIFF_M_ELAPSED:
	case KH_DIFF_M_ON_CPU:
	case KH_DIFF_M_OWN:
		return metric == ctx->gate;
	case KH_DIFF_M_WALL:
	case KH_DIFF_M_THROUGHPUT:
	case KH_DIFF_M_PEAK_RSS:
		return true;
	default:
		return false;
	}
}

/* Adds one item when both sides have a value for it; 0 or -errno. */
static int diff__add_item(struct diff_ctx *ctx, enum kh_diff_metric metric, uint32_t stage)
{
	struct kh_diff *d = ctx->d;
	struct kh_diff_item *it = &d->items[d->item_count];
	size_t n[2], have[2] = { 0, 0 };
	int err;

	memset(it, 0, sizeof(*it));
	it->metric = metric;
	it->stage = stage;
	it->name = diff_metric__is_stage(metric) ? kh_stage__name(stage)
		   : diff_metric__is_state(metric) ? kh_run_state__name(stage)
		   : diff_metric__name(metric);
	it->calls_base = ctx->calls[0];
	it->calls_cand = ctx->calls[1];
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < ctx->side[s]->count; i++) {
			ctx->has[s][i] = diff_record__value(&ctx->side[s]->records[i], metric, stage,
							    &ctx->value[s][i]);
			if (ctx->has[s][i])
				ctx->work[s][have[s]++] = ctx->value[s][i];
		}
	if (!have[0] || !have[1])
		return 0;
	it->base_n = have[0];
	it->cand_n = have[1];
	it->recorded_base = stats__median(ctx->work[0], have[0]);
	it->recorded_cand = stats__median(ctx->work[1], have[1]);
	if (isnan(it->recorded_base) || isnan(it->recorded_cand))
		return -ENOMEM;
	/* The threshold decides whether it is an item that is judged; gating, whether it counts. */
	it->gating = item__gating(ctx, metric) && diff_options__threshold(&d->opts, metric, stage);
	err = item__select(ctx, it, n);
	if (!err)
		err = item__judge(d, it, ctx->work[0], n[0], ctx->work[1], n[1], ctx->side[0]);
	if (!err && it->unjudged == KH_DIFF_STARVED)
		err = item__floor_of_all(d, ctx, it);
	if (err)
		return err;
	d->item_count++;
	if (metric == KH_DIFF_M_CALLS)
		d->calls_changed_count += it->verdict == KH_DIFF_CHANGED;
	if (!it->gating)
		return 0;
	d->regression_count += it->verdict == KH_DIFF_REGRESSED;
	d->improved_count += it->verdict == KH_DIFF_IMPROVED;
	d->noisy_count += it->verdict == KH_DIFF_NOISY;
	d->unjudged_count += it->verdict == KH_DIFF_UNJUDGED;
	return 0;
}

static bool any_record(const struct kh_diff_side *s, bool (*pred)(const struct kh_profile *,
								  uint32_t),
		       uint32_t arg)
{
	for (size_t i = 0; i < s->count; i++)
		if (pred(&s->records[i], arg))
			return true;
	return false;
}

static bool has_input(const struct kh_profile *p, uint32_t unused)
{
	(void)unused;
	return p->input_bytes != 0;
}

static bool has_stage(const struct kh_profile *p, uint32_t stage)
{
	return profile__find_stage(p, stage) != NULL;
}

static bool has_decoded(const struct kh_profile *p, uint32_t stage)
{
	const struct kh_stage_measurement *s = profile__find_stage(p, stage);

	return s && s->attributed_ns;
}

/*
 * What the stage's items share: its median calls per side (for the per-call
 * floors), and its gating figure: its time on CPU, or for a stage that
 * blocks (DIFF_BLOCKING_SHARE of its own time in the median run) its own
 * time, on CPU or blocked, when enough runs of both sides split it
 * completely; else its elapsed time, leaving out the runs in which that
 * stage waited for a CPU far longer than usual.  Read from this stage's
 * spans alone, so that no other stage moves them.
 */
static int diff__stage_ctx(struct diff_ctx *ctx, uint32_t stage)
{
	double *share[2] = { ctx->work[0], ctx->work[1] }, blocked, own, *blocking;
	size_t complete[2] = { 0, 0 }, count[2], k = 0;
	const size_t n[2] = { ctx->side[0]->count, ctx->side[1]->count };
	int err;

	blocking = malloc((n[0] + n[1] + 1) * sizeof(*blocking));
	if (!blocking)
		return -ENOMEM;
	for (int s = 0; s < 2; s++) {
		size_t calls = 0;

		for (size_t i = 0; i < n[s]; i++) {
			const struct kh_profile *p = &ctx->side[s]->records[i];

			if (diff_record__value(p, KH_DIFF_M_CALLS, stage, &ctx->value[s][calls]))
				calls++;
			complete[s] += diff_run__split_complete(p, stage);
			if (diff_record__value(p, KH_DIFF_M_BLOCKED, stage, &blocked) &&
			    diff_record__value(p, KH_DIFF_M_OWN, stage, &own) && own > 0)
				blocking[k++] = blocked / own;
		}
		ctx->calls[s] = calls ? stats__median(ctx->value[s], calls) : 0;
		for (size_t i = 0; i < n[s]; i++)
			share[s][i] = diff_run__stage_share(&ctx->side[s]->records[i], stage);
	}
	ctx->gate = !interval_exists(complete[0], complete[1], ctx->d->opts.confidence)
			    ? KH_DIFF_M_ELAPSED
		    : k && stats__median(blocking, k) >= DIFF_BLOCKING_SHARE ? KH_DIFF_M_OWN
									    : KH_DIFF_M_ON_CPU;
	free(blocking);
	err = diff_runs__starved((const double *const *)share, n, ctx->stage_starved, count);
	return err;
}

/* Appends a warning after the items; takes message (NULL: out of memory), even on failure. */
static int diff__push_warning(struct kh_diff *d, enum kh_diff_warning_kind kind, char *message)
{
	struct kh_diff_warning *w = message ? realloc(d->warnings, (d->warning_count + 1) *
							      sizeof(*w)) : NULL;

	if (!w) {
		free(message);
		return -ENOMEM;
	}
	d->warnings = w;
	d->warnings[d->warning_count++] = (struct kh_diff_warning){ kind, message };
	return 0;
}

/* The stages whose split too few runs had complete: judged on elapsed time instead. */
static int diff__warn_incomplete(struct kh_diff *d, const uint32_t *stages, size_t n)
{
	char list[512] = "";
	size_t used = 0;
	char *message;

	if (!n)
		return 0;
	for (size_t i = 0; i < n && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
					 kh_stage__name(stages[i]));
	message = diff__format("the off-CPU split of %zu stage%s is incomplete in some runs (a "
			       "thread left its CPU more often within one batch of spans than "
			       "khprof's log holds): %s, judged on elapsed time, which includes "
			       "waiting for a CPU",
			       n, n == 1 ? "" : "s", list);
	return diff__push_warning(d, KH_DIFF_WARN_INCOMPLETE, message);
}

/*
 * One warning naming the runs starved of CPU, which the wall times leave
 * out, after the items: it says when too few were left to judge them.
 */
static int diff__warn_starved(struct kh_diff *d, const struct kh_diff_side *base,
			      const struct kh_diff_side *cand)
{
	bool unjudged = false;
	char *message;

	if (!d->starved[0] && !d->starved[1])
		return 0;
	for (size_t i = 0; i < d->item_count; i++)
		unjudged |= d->items[i].unjudged == KH_DIFF_STARVED &&
			    diff_metric__is_wall(d->items[i].metric);
	message = diff__format("%zu of %zu base and %zu of %zu candidate runs were starved of CPU "
			       "(waiting for a CPU over %.1f times as long as usual): left out of "
			       "the wall, throughput and state wall times%s",
			       d->starved[0], base->count, d->starved[1], cand->count,
			       DIFF_STARVED_FACTOR,
			       unjudged ? ", too few left to judge them" : "");
	return diff__push_warning(d, KH_DIFF_WARN_STARVED, message);
}

/*
 * A span's time loses the calibrated bias of the mode (span_bias_ns): 9 ns
 * in batch mode here, 525 ns in span and 677 ns in pair mode, where the
 * bias is most of a 10 us span's error (make bench row 5: +5.88 % raw,
 * +0.76 % corrected, and 6-7 % on a loaded machine, where the calibration
 * itself moves).  A per-span figure that moved by no more than that bias
 * moved within what the mode can tell apart: the text says so.
 */
static void diff__mark_span_error(struct kh_diff *d, const struct kh_diff_side *base,
				  const struct kh_diff_side *cand)
{
	uint64_t bias = 0;

	for (size_t i = 0; i < base->count; i++)
		if (base->records[i].ext.span_bias_ns > bias)
			bias = base->records[i].ext.span_bias_ns;
	for (size_t i = 0; i < cand->count; i++)
		if (cand->records[i].ext.span_bias_ns > bias)
			bias = cand->records[i].ext.span_bias_ns;
	for (size_t i = 0; bias && i < d->item_count; i++) {
		struct kh_diff_item *it = &d->items[i];

		if (it->metric != KH_DIFF_M_P50 && it->metric != KH_DIFF_M_P99 &&
		    it->metric != KH_DIFF_M_PER_CALL && it->metric != KH_DIFF_M_ON_CPU_PER_CALL)
			continue;
		it->span_error_ns = (double)bias;
		it->within_span_error = fabs(it->shift) <= (double)bias;
	}
}

static void diff_ctx__free(struct diff_ctx *ctx)
{
	for (int s = 0; s < 2; s++) {
		free(ctx->value[s]);
		free(ctx->has[s]);
		free(ctx->used[s]);
		free(ctx->work[s]);
		free(ctx->starved[s]);
		free(ctx->stage_starved[s]);
	}
}

static int diff_ctx__init(struct diff_ctx *ctx, struct kh_diff *d,
			  const struct kh_diff_side *base, const struct kh_diff_side *cand)
{
	size_t n[2] = { base->count, cand->count };
	double *share[2];

	memset(ctx, 0, sizeof(*ctx));
	ctx->d = d;
	ctx->side[0] = base;
	ctx->side[1] = cand;
	for (int s = 0; s < 2; s++) {
		ctx->value[s] = calloc(n[s] + 1, sizeof(double));
		ctx->work[s] = calloc(n[s] + 1, sizeof(double));
		ctx->has[s] = calloc(n[s] + 1, sizeof(bool));
		ctx->used[s] = calloc(n[s] + 1, sizeof(bool));
		ctx->starved[s] = calloc(n[s] + 1, sizeof(bool));
		ctx->stage_starved[s] = calloc(n[s] + 1, sizeof(bool));
		if (!ctx->value[s] || !ctx->work[s] || !ctx->has[s] || !ctx->used[s] ||
		    !ctx->starved[s] || !ctx->stage_starved[s])
			return -ENOMEM;
		for (size_t i = 0; i < n[s]; i++)
			ctx->work[s][i] = diff_run__starved_share(&ctx->side[s]->records[i]);
		share[s] = ctx->work[s];
	}
	return diff_runs__starved((const double *const *)share, n, ctx->starved, d->starved);
}

static int diff__items(struct kh_diff *d, const struct kh_diff_side *base,
		       const struct kh_diff_side *cand)
{
	static const enum kh_diff_metric per_stage[] = {
		KH_DIFF_M_ELAPSED, KH_DIFF_M_CALLS,    KH_DIFF_M_PER_CALL, KH_DIFF_M_ON_CPU,
		KH_DIFF_M_ON_CPU_PER_CALL, KH_DIFF_M_OWN, KH_DIFF_M_BLOCKED, KH_DIFF_M_RUNNABLE,
		KH_DIFF_M_P50,	   KH_DIFF_M_P99,
	};
	uint32_t incomplete[KH_STAGE_COUNT];
	size_t incomplete_count = 0;
	struct diff_ctx ctx;
	int err = diff_ctx__init(&ctx, d, base, cand);

	if (!err)
		err = diff__add_item(&ctx, KH_DIFF_M_WALL, 0);
	if (!err && (any_record(base, has_input, 0) || any_record(cand, has_input, 0)))
		err = diff__add_item(&ctx, KH_DIFF_M_THROUGHPUT, 0);
	if (!err)
		err = diff__add_item(&ctx, KH_DIFF_M_PEAK_RSS, 0);
	for (uint32_t s = 0; !err && s < KH_STAGE_COUNT; s++) {
		size_t first = d->item_count;

		if (!any_record(base, has_stage, s) && !any_record(cand, has_stage, s))
			continue;
		err = diff__stage_ctx(&ctx, s);
		for (size_t m = 0; !err && m < sizeof(per_stage) / sizeof(per_stage[0]); m++)
			err = diff__add_item(&ctx, per_stage[m], s);
		if (!err && (any_record(base, has_decoded, s) || any_record(cand, has_decoded, s)))
			err = diff__add_item(&ctx, KH_DIFF_M_DECODED, s);
		/* Split, but too few runs split it completely: elapsed decides. */
		for (size_t i = first; !err && i < d->item_count; i++)
			if (d->items[i].metric == KH_DIFF_M_ON_CPU && ctx.gate == KH_DIFF_M_ELAPSED &&
			    !diff_stage__is_queue_wait(s))
				incomplete[incomplete_count++] = s;
	}
	ctx.calls[0] = ctx.calls[1] = 0;
	for (uint32_t st = 0; !err && st < KH_STATE_COUNT; st++) {
		if (!any_record(base, diff_record__has_state, st) ||
		    !any_record(cand, diff_record__has_state, st))
			continue;
		err = diff__add_item(&ctx, KH_DIFF_M_STATE_WALL, st);
		if (!err)
			err = diff__add_item(&ctx, KH_DIFF_M_STATE_CPU, st);
	}
	if (!err)
		err = diff__warn_starved(d, base, cand);
	if (!err)
		err = diff__warn_incomplete(d, incomplete, incomplete_count);
	if (!err)
		diff__mark_span_error(d, base, cand);
	diff_ctx__free(&ctx);
	return err;
}

/* --- the comparison ----------------------------------------------------- */

static int side_info__copy(struct kh_diff_side_info *info, const struct kh_diff_side *s)
{
	info->path = strdup(s->path ? s->path : "");
	info->names = calloc(s->count, sizeof(*info->names));
	if (!info->path || !info->names)
		return -ENOMEM;
	info->count = s->count;
	for (size_t i = 0; i < s->count; i++)
		if (!(info->names[i] = strdup(diff_side__name(s, i))))
			return -ENOMEM;
	return 0;
}

/* The method for sides of these sizes; items with fewer values may fall back. */
static int diff__method(struct kh_diff *d, size_t nb, size_t nc)
{
	size_t k;
	int err;

	d->runs_needed = stats__shift_runs_needed(d->opts.confidence);
	if (nb < 2 || nc < 2) {
		d->method = KH_DIFF_METHOD_SINGLE;
		return 0;
	}
	err = stats__shift_rank(nb, nc, d->opts.confidence, STATS_RANK_AUTO, &k);
	if (err && err != -ERANGE)
		return err;
	d->method = err ? KH_DIFF_METHOD_FEW_RUNS : KH_DIFF_METHOD_MANN_WHITNEY;
	return 0;
}

int diff__compare(const struct kh_diff_side *base, const struct kh_diff_side *cand,
		  const struct kh_diff_options *opts, struct kh_diff *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (!base->count || !cand->count || !diff_options__valid(opts))
		return -EINVAL;
	out->opts = *opts;
	err = diff__method(out, base->count, cand->count);
	if (!err)
		err = side_info__copy(&out->base, base);
	if (!err)
		err = side_info__copy(&out->cand, cand);
	if (!err)
		err = diff__bind(out, base, cand);
	/* Medians of unlike runs mean nothing: no items to misread then. */
	if (!err && !out->blocking_count)
		err = diff__items(out, base, cand);
	if (err) {
		diff__free(out);
		return err;
	}
	if (out->blocking_count) {
		out->verdict = KH_DIFF_VERDICT_NOT_COMPARABLE;
	} else if (out->regression_count) {
		/* Whatever could not be judged, what was judged is sure. */
		out->verdict = KH_DIFF_VERDICT_REGRESSED;
	} else if (out->method != KH_DIFF_METHOD_MANN_WHITNEY) {
		/* Two single runs of one build came out 23 % apart here (docs/CI.md). */
		out->verdict = KH_DIFF_VERDICT_CANNOT_JUDGE;
		out->cannot = KH_DIFF_FEW_RUNS;
	} else if (out->unjudged_count) {
		out->verdict = KH_DIFF_VERDICT_CANNOT_JUDGE;
		out->cannot = KH_DIFF_FEW_RUNS;
		for (size_t i = 0; i < out->item_count; i++)
			if (out->items[i].gating && out->items[i].unjudged == KH_DIFF_STARVED)
				out->cannot = KH_DIFF_STARVED;
	} else {
		out->verdict = KH_DIFF_VERDICT_OK;
	}
	return 0;
}

static void side_info__free(struct kh_diff_side_info *info)
{
	for (size_t i = 0; info->names && i < info->count; i++)
		free(info->names[i]);
	free(info->names);
	free(info->path);
}

void diff__free(struct kh_diff *d)
{
	for (size_t i = 0; i < d->mismatch_count; i++) {
		struct kh_diff_mismatch *m = &d->mismatches[i];

		free(m->base_value);
		free(m->cand_value);
		free(m->base_file);
		free(m->cand_file);
		free(m->message);
	}
	for (size_t i = 0; i < d->warning_count; i++)
		free(d->warnings[i].message);
	free(d->mismatches);
	free(d->warnings);
	side_info__free(&d->base);
	side_info__free(&d->cand);
	memset(d, 0, sizeof(*d));
}
