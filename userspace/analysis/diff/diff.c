// SPDX-License-Identifier: MIT
/*
 * Comparing two sets of records for CI.  Times only say something about a
 * change when the runs did the same work under the same conditions, so the
 * identities of all records are bound first; then each item's medians are
 * compared, and with several runs per side a Mann-Whitney interval of the
 * shift decides whether a change beyond the threshold stands out of the
 * run-to-run noise.  The rules are in docs/CI.md; keep the two in step.
 *
 * This file holds the items and the verdict; the settings are in
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
	case KH_DIFF_VERDICT_TOO_FEW_RUNS:
		return "too-few-runs";
	}
	return NULL;
}

const char *diff_mark__name(enum kh_diff_mark mark)
{
	static const char *const names[] = {
		[KH_DIFF_OK] = "ok",		 [KH_DIFF_REGRESSED] = "regressed",
		[KH_DIFF_IMPROVED] = "improved", [KH_DIFF_NOISY] = "noisy",
		[KH_DIFF_SAME] = "same",	 [KH_DIFF_CHANGED] = "changed",
		[KH_DIFF_OFF] = "off",
	};

	return (size_t)mark < sizeof(names) / sizeof(names[0]) ? names[mark] : NULL;
}

const char *diff_metric__name(enum kh_diff_metric metric)
{
	static const char *const names[] = {
		[KH_DIFF_M_WALL] = "wall",	   [KH_DIFF_M_THROUGHPUT] = "throughput",
		[KH_DIFF_M_PEAK_RSS] = "peak_rss", [KH_DIFF_M_ELAPSED] = "elapsed",
		[KH_DIFF_M_CALLS] = "calls",	   [KH_DIFF_M_PER_CALL] = "per_call",
		[KH_DIFF_M_P50] = "p50",	   [KH_DIFF_M_P99] = "p99",
		[KH_DIFF_M_OFF_CPU] = "off_cpu",   [KH_DIFF_M_DECODED] = "decoded",
		[KH_DIFF_M_STATE_WALL] = "state_wall", [KH_DIFF_M_STATE_CPU] = "state_cpu",
	};

	return (size_t)metric < sizeof(names) / sizeof(names[0]) ? names[metric] : NULL;
}

/* --- items -------------------------------------------------------------- */

static const struct kh_state_measurement *find_state(const struct kh_profile *p, uint32_t state)
{
	for (size_t i = 0; i < p->state_count; i++)
		if (p->states[i].state == state)
			return &p->states[i];
	return NULL;
}

/*
 * A state's CPU time in ns from the extension's samples (kernel-read, one
 * per resource sample), for the first window of that state as find_state
 * finds it among the seed's windows(2); false when a sample lacks its ns
 * (an older record): the seed's whole milliseconds then.
 */
static bool state_cpu_ns(const struct kh_profile *p, uint32_t state, uint64_t *out)
{
	size_t n = p->transition_count < p->resource_sample_count ? p->transition_count
								   : p->resource_sample_count;

	if (p->ext.sample_count != p->resource_sample_count)
		return false;
	for (size_t i = 0; i + 1 < n; i++) {
		const struct kh_opt_u64 a = p->ext.samples[i].cpu_time_ns,
					b = p->ext.samples[i + 1].cpu_time_ns;

		if (p->transitions[i + 1].elapsed_ns < p->transitions[i].elapsed_ns ||
		    p->transitions[i].state != state)
			continue;
		if (!a.present || !b.present || b.value < a.value)
			return false;
		*out = b.value - a.value;
		return true;
	}
	return false;
}

/*
 * The latency and state items.  Percentiles need the stage's distribution,
 * off-CPU a record that measured it; a stage a record lacks spent no time
 * off CPU or on decoded content.
 */
static bool latency_value(const struct kh_profile *p, enum kh_diff_metric metric,
			  uint32_t stage, double *out)
{
	const struct kh_latency *l = &p->ext.latency;
	const struct kh_stage_dist *d = stage < KH_STAGE_COUNT ? &l->stages[stage] : NULL;
	const struct kh_state_measurement *st;
	const struct kh_stage_measurement *s;
	uint64_t ns;

	switch (metric) {
	case KH_DIFF_M_P50:
	case KH_DIFF_M_P99:
		if (!d || !d->present)
			return false;
		*out = (double)kh_dist__percentile(d, metric == KH_DIFF_M_P50 ? 500 : 990,
						   p->ext.span_bias_ns);
		return true;
	case KH_DIFF_M_OFF_CPU:
		if (!l->present || !l->off_cpu || !d)
			return false;
		*out = d->present ? (double)d->off_cpu_ns : 0;
		return true;
	case KH_DIFF_M_DECODED:
		s = profile__find_stage(p, stage);
		*out = s ? (double)s->attributed_ns : 0;
		return true;
	case KH_DIFF_M_STATE_WALL:
		st = find_state(p, stage);
		*out = st ? (double)st->elapsed_ns : 0;
		return st != NULL;
	case KH_DIFF_M_STATE_CPU:
		st = find_state(p, stage);
		if (st && state_cpu_ns(p, stage, &ns)) {
			*out = (double)ns;
			return true;
		}
		if (!st || !st->cpu_time_ms.present)
			return false;
		*out = (double)st->cpu_time_ms.value * 1e6;
		return true;
	default:
		return false;
	}
}

/* One record's value of an item; false when the record has none. */
static bool record_value(const struct kh_profile *p, enum kh_diff_metric metric, uint32_t stage,
			 double *out)
{
	const struct kh_stage_measurement *s;

	switch (metric) {
	case KH_DIFF_M_WALL:
		*out = (double)p->wall_time_ns;
		return true;
	case KH_DIFF_M_THROUGHPUT:
		if (!p->wall_time_ns)
			return false;
		*out = (double)p->input_bytes * 1e9 / (double)p->wall_time_ns;
		return true;
	case KH_DIFF_M_PEAK_RSS:
		*out = (double)p->resources.max_observed_resident_bytes.value;
		return p->resources.max_observed_resident_bytes.present;
	case KH_DIFF_M_ELAPSED:
	case KH_DIFF_M_CALLS:
	case KH_DIFF_M_PER_CALL:
		/* A stage a record lacks took no time in that run. */
		s = profile__find_stage(p, stage);
		if (!s)
			*out = 0;
		else if (metric == KH_DIFF_M_ELAPSED)
			*out = (double)s->elapsed_ns;
		else if (metric == KH_DIFF_M_CALLS)
			*out = (double)s->calls;
		else
			*out = s->calls ? (double)s->elapsed_ns / (double)s->calls : 0;
		return true;
	default:
		return latency_value(p, metric, stage, out);
	}
}

static size_t side_values(const struct kh_diff_side *s, enum kh_diff_metric metric,
			  uint32_t stage, double *out)
{
	size_t n = 0;

	for (size_t i = 0; i < s->count; i++)
		if (record_value(&s->records[i], metric, stage, &out[n]))
			n++;
	return n;
}

/*
 * Runs each side leaves out of an item's interval: its farthest from the
 * median; a quarter for the median span of a stage of many spans a run.
 */
static size_t item__trim(const struct kh_diff_item *it, size_t n)
{
	if (it->metric == KH_DIFF_M_P50 && it->speed_adjusted &&
	    n / DIFF_TRIM_P50_DIVISOR > 1)
		return n / DIFF_TRIM_P50_DIVISOR;
	return 1;
}

/*
 * The item's interval of the shift, of the nb and nc values given (those
 * of item__run_values); none with fewer than two values on a side (a
 * single run says nothing about the spread) or too few for the
 * confidence.  For the latency and state items, with 5 runs or more a
 * side, each side's runs farthest from its median are left out first (one,
 * a quarter for the median spans), so that disturbed runs cannot hide a
 * regression; the older items keep every run, which failed identical
 * builds less often (docs/CI.md).
 */
static int item__interval(struct kh_diff_item *it, const struct kh_diff_options *o,
			  const double *vb, size_t nb, const double *vc, size_t nc)
{
	double *tb = NULL, *tc = NULL;
	int err;

	if (nb < 2 || nc < 2)
		return 0;
	it->base_used = nb;
	it->cand_used = nc;
	/* The spread of all runs: one outlier hardly moves a MAD. */
	it->noise = stats__pooled_mad(vb, nb, vc, nc);
	if (nb >= DIFF_TRIM_MIN_RUNS && nc >= DIFF_TRIM_MIN_RUNS &&
	    diff_metric__trims(it->metric) && !it->few_spans) {
		tb = malloc(nb * sizeof(*tb));
		tc = malloc(nc * sizeof(*tc));
		if (!tb || !tc) {
			free(tb);
			free(tc);
			return -ENOMEM;
		}
		it->base_used = stats__drop_farthest_k(vb, nb, item__trim(it, nb), tb);
		it->cand_used = stats__drop_farthest_k(vc, nc, item__trim(it, nc), tc);
		vb = tb;
		vc = tc;
	}
	/*
	 * For the adjusted median spans, the spread of the runs the interval
	 * uses: with two disturbed runs among 8, a MAD of all of them hid a
	 * +33 % change.  A stage of a few spans a run keeps the spread of all
	 * runs, for its one span is often slow (docs/CI.md).
	 */
	if (it->speed_adjusted && it->metric == KH_DIFF_M_P50)
		it->noise = stats__pooled_mad(vb, it->base_used, vc, it->cand_used);
	err = stats__shift_interval(vb, it->base_used, vc, it->cand_used, o->confidence,
				    &it->interval_low, &it->interval_high);
	free(tb);
	free(tc);
	if (err == -ERANGE)
		return 0;
	if (err)
		return err;
	it->has_interval = true;
	if (it->has_change) {
		it->interval_low_pct = 100.0 * it->interval_low / it->base_median;
		it->interval_high_pct = 100.0 * it->interval_high / it->base_median;
	}
	return 0;
}

/*
 * The rules of docs/CI.md.  The comparisons multiply out the percentage so
 * that a change of exactly the threshold is not beyond it, whatever
 * rounding a division would bring, and so that from a base of 0 any
 * increase is beyond every threshold.
 */
static int item__judge(struct kh_diff_item *it, const struct kh_diff_options *o,
		       const double *vb, size_t nb, const double *vc, size_t nc)
{
	const struct kh_diff_threshold *t = diff_options__threshold(o, it->metric, it->stage);
	double b = it->base_median, c = it->cand_median, limit, least_bad, most_bad;
	int bad = it->metric == KH_DIFF_M_THROUGHPUT ? -1 : 1;
	bool worse, better;
	int err;

	it->has_change = b != 0;
	it->change_pct = it->has_change ? (c / b - 1.0) * 100.0 : 0.0;
	if (!t) {
		it->verdict = b == c ? KH_DIFF_SAME : KH_DIFF_CHANGED;
		return 0;
	}
	it->has_threshold = true;
	it->threshold_off = t->off;
	it->threshold_pct = t->pct;
	/*
	 * Judged but informative: per-call times (elapsed says it), off-CPU
	 * and CPU time, which move with the machine's load more than with the
	 * program (docs/CI.md: gating them failed identical builds 3% of the
	 * time here).
	 */
	it->gating = it->metric != KH_DIFF_M_PER_CALL && it->metric != KH_DIFF_M_OFF_CPU &&
		     it->metric != KH_DIFF_M_STATE_CPU;
	err = item__interval(it, o, vb, nb, vc, nc);
	if (err)
		return err;
	if (t->off) {
		it->verdict = KH_DIFF_OFF;
		return 0;
	}
	limit = t->pct * b;
	worse = bad * (c - b) * 100.0 > limit;
	better = -bad * (c - b) * 100.0 > limit;
	if (it->below_floor) {
		it->verdict = KH_DIFF_OK;
		it->floor_only = worse || better;
		return 0;
	}
	if (it->starved_out) {
		it->verdict = worse || better ? KH_DIFF_NOISY : KH_DIFF_OK;
		return 0;
	}
	if (!it->has_interval) {
		it->verdict = worse ? KH_DIFF_REGRESSED : better ? KH_DIFF_IMPROVED : KH_DIFF_OK;
		return 0;
	}
	/*
	 * Sure of a change beyond the budget, not merely of some change: the
	 * whole interval must lie beyond the threshold.  A gate that fails on
	 * any confident movement fails identical builds, with ~18 items a
	 * comparison and stages that spread by 15 % a run.
	 */
	least_bad = bad > 0 ? it->interval_low : -it->interval_high;
	most_bad = bad > 0 ? it->interval_high : -it->interval_low;
	/*
	 * Noise-aware: the interval must also clear DIFF_NOISE_K pooled MADs
	 * of the runs it used, so that an item whose runs spread widely needs
	 * a change as wide to fail (docs/CI.md, "False alarms and detection").
	 */
	if (!isnan(it->noise) && b != 0) {
		it->noise_pct = 100.0 * DIFF_NOISE_K * it->noise / fabs(b);
		if (it->noise_pct * b > limit)
			limit = it->noise_pct * fabs(b);
	}
	if (least_bad * 100.0 > limit)
		it->verdict = KH_DIFF_REGRESSED;
	else if (-most_bad * 100.0 > limit)
		it->verdict = KH_DIFF_IMPROVED;
	else
		it->verdict = worse || better ? KH_DIFF_NOISY : KH_DIFF_OK;
	return 0;
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

/* The absolute change under which an item is never judged. */
static bool item__below_floor(const struct kh_diff *d, const struct kh_diff_item *it,
			      const struct kh_diff_side *base)
{
	double change = fabs(it->cand_median - it->base_median);
	double min_ns = (double)d->opts.min_change_ns;

	switch (it->metric) {
	case KH_DIFF_M_THROUGHPUT: {
		/*
		 * A throughput change is judged by the time it makes: how much
		 * longer or shorter the base's input takes at the candidate's
		 * throughput (the wall time change, when inputs are equal).
		 */
		double b = it->base_median, c = it->cand_median;

		if (b <= 0 || c <= 0)
			return b == c;
		return side_input_bytes(base) * fabs(1.0 / c - 1.0 / b) * 1e9 < min_ns;
	}
	case KH_DIFF_M_PEAK_RSS:
		return change < (double)KH_DIFF_RSS_MIN_CHANGE_BYTES;
	case KH_DIFF_M_PER_CALL: {
		/*
		 * The floor is for the stage's whole time: a per-call change
		 * counts when, over the calls of the busier side, it adds up to
		 * the floor.  The calls item comes just before.
		 */
		const struct kh_diff_item *calls = &d->items[d->item_count - 1];
		double n = fmax(calls->base_median, calls->cand_median);

		return change < (n > 1 ? min_ns / n : min_ns);
	}
	case KH_DIFF_M_P50:
	case KH_DIFF_M_P99: {
		/*
		 * A span percentile counts when the spans it stands for add up
		 * to the floor: all calls for the median (as per_call), the
		 * slowest 1% for p99.
		 */
		double n = fmax(it->calls_base, it->calls_cand);

		if (it->metric == KH_DIFF_M_P99)
			n /= 100.0;
		return change < (n > 1 ? min_ns / n : min_ns);
	}
	default:
		return change < min_ns;
	}
}

/*
 * The wall times' factor for the time a run's threads waited for a CPU:
 * 1 / (1 - runnable share), against the median over both sides' runs
 * used, so that a run that waited as usual keeps its value.  factor[s][i]
 * is multiplied by it.  0 or -ENOMEM.
 */
static int wait_factors(const struct kh_diff_side *const sides[2], const size_t *index[2],
			const size_t n[2], double *factor[2])
{
	double *w = malloc((n[0] + n[1] + 1) * sizeof(*w)), median;
	size_t k = 0;

	if (!w)
		return -ENOMEM;
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < n[s]; i++)
			w[k++] = diff_run__wait_factor(&sides[s]->records[index[s][i]]);
	median = k ? stats__median(w, k) : 1.0;
	k = 0;
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < n[s]; i++)
			factor[s][i] *= median > 0 ? w[k++] / median : 1.0;
	free(w);
	return 0;
}

/*
 * The values an item's interval uses, in vb and vc (which hold the plain
 * values on entry), and their counts (docs/CI.md, "Runs the machine
 * slowed").  Speed-adjusted items divide each run's value by its speed
 * index raised to the stage's sensitivity; the wall times, which span
 * every stage, by the index and by their wait factor, leave out runs
 * starved of CPU, and are not judged when too few runs are left for an
 * interval.
 */
static int item__run_values(struct kh_diff_item *it, const struct diff_runs *runs,
			    const struct kh_diff_side *base, const struct kh_diff_side *cand,
			    const struct kh_diff_options *o, double *vb, size_t *nb, double *vc,
			    size_t *nc)
{
	const struct kh_diff_side *const sides[2] = { base, cand };
	bool leave_starved = diff_metric__leaves_starved(it->metric);
	double *v[2] = { vb, vc }, *speed[2], *used[2], beta = 1.0;
	size_t n[2] = { 0, 0 }, *index[2], k;
	int err = 0;

	*nb = it->base_n;
	*nc = it->cand_n;
	/*
	 * A percentile of a few spans a run is one slow span or not, as noisy
	 * as the stage's elapsed time, and judged like it: every run, no
	 * adjustment (reporting.p50 failed 4 % of identical comparisons with
	 * runs left out, docs/CI.md).
	 */
	it->few_spans = (it->metric == KH_DIFF_M_P50 || it->metric == KH_DIFF_M_P99) &&
			!diff_runs__many_spans(runs, it->stage);
	if (!diff_metric__speed_adjusted(it->metric) || it->few_spans)
		return 0;
	speed[0] = malloc(base->count * sizeof(double));
	speed[1] = malloc(cand->count * sizeof(double));
	used[0] = malloc(base->count * sizeof(double));
	used[1] = malloc(cand->count * sizeof(double));
	index[0] = malloc(base->count * sizeof(size_t));
	index[1] = malloc(cand->count * sizeof(size_t));
	if (!speed[0] || !speed[1] || !used[0] || !used[1] || !index[0] || !index[1]) {
		err = -ENOMEM;
		goto out;
	}
	for (int s = 0; s < 2; s++) {
		/* A stage's own spans stay out of the index its median span is divided by. */
		uint32_t skip = it->metric == KH_DIFF_M_P50 ? it->stage : KH_STAGE_COUNT;

		diff_runs__speed(runs, sides[s], skip, speed[s]);
		for (size_t i = 0; i < sides[s]->count; i++) {
			double x;

			if (leave_starved && runs->starved[s][i])
				continue;
			if (!record_value(&sides[s]->records[i], it->metric, it->stage, &x))
				continue;
			v[s][n[s]] = x;
			index[s][n[s]] = i;
			used[s][n[s]++] = speed[s][i];
		}
	}
	if (it->metric == KH_DIFF_M_P50)
		beta = diff_run__sensitivity(v[0], used[0], n[0], v[1], used[1], n[1]);
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < n[s]; i++)
			used[s][i] = pow(used[s][i], beta);
	if (leave_starved) {
		err = wait_factors(sides, (const size_t **)index, n, used);
		if (err)
			goto out;
	}
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < n[s]; i++) {
			double f = used[s][i];

			v[s][i] = it->metric == KH_DIFF_M_THROUGHPUT ? v[s][i] * f : v[s][i] / f;
		}
	it->speed_adjusted = true;
	*nb = n[0];
	*nc = n[1];
	if (leave_starved && runs->starved_count[0] + runs->starved_count[1] &&
	    (n[0] < 2 || n[1] < 2 ||
	     stats__shift_rank(n[0], n[1], o->confidence, STATS_RANK_AUTO, &k) == -ERANGE))
		it->starved_out = true;
out:
	for (int s = 0; s < 2; s++) {
		free(speed[s]);
		free(used[s]);
		free(index[s]);
	}
	return err;
}

/* Adds one item when both sides have a value for it; 0 or -errno. */
static int diff__add_item(struct kh_diff *d, const struct diff_runs *runs,
			  const struct kh_diff_side *base, const struct kh_diff_side *cand,
			  enum kh_diff_metric metric, uint32_t stage, double *vb, double *vc)
{
	struct kh_diff_item *it = &d->items[d->item_count], adjusted;
	size_t nb, nc;
	int err;

	memset(it, 0, sizeof(*it));
	it->metric = metric;
	it->stage = stage;
	it->name = diff_metric__is_stage(metric) ? kh_stage__name(stage)
		   : diff_metric__is_state(metric) ? kh_run_state__name(stage)
		   : diff_metric__name(metric);
	if (metric == KH_DIFF_M_P50 || metric == KH_DIFF_M_P99) {
		size_t nb = side_values(base, KH_DIFF_M_CALLS, stage, vb);
		size_t nc = side_values(cand, KH_DIFF_M_CALLS, stage, vc);

		it->calls_base = nb ? stats__median(vb, nb) : 0;
		it->calls_cand = nc ? stats__median(vc, nc) : 0;
	}
	it->base_n = side_values(base, metric, stage, vb);
	it->cand_n = side_values(cand, metric, stage, vc);
	if (!it->base_n || !it->cand_n)
		return 0;
	it->base_median = stats__median(vb, it->base_n);
	it->cand_median = stats__median(vc, it->cand_n);
	if (isnan(it->base_median) || isnan(it->cand_median))
		return -ENOMEM;
	err = item__run_values(it, runs, base, cand, &d->opts, vb, &nb, vc, &nc);
	if (err)
		return err;
	/*
	 * The floor, like the interval, reads the values the interval uses;
	 * those of all runs when too few were left to judge.
	 */
	adjusted = *it;
	if (it->speed_adjusted && !it->starved_out && nb && nc) {
		adjusted.base_median = stats__median(vb, nb);
		adjusted.cand_median = stats__median(vc, nc);
	}
	it->below_floor = metric != KH_DIFF_M_CALLS && item__below_floor(d, &adjusted, base);
	err = item__judge(it, &d->opts, vb, nb, vc, nc);
	if (err)
		return err;
	d->item_count++;
	if (!it->gating)
		d->calls_changed_count += it->verdict == KH_DIFF_CHANGED;
	else if (it->verdict == KH_DIFF_REGRESSED)
		d->regression_count++;
	else if (it->verdict == KH_DIFF_IMPROVED)
		d->improved_count++;
	else if (it->verdict == KH_DIFF_NOISY)
		d->noisy_count++;
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

static bool has_state(const struct kh_profile *p, uint32_t state)
{
	return find_state(p, state) != NULL;
}

/*
 * One warning naming the runs starved of CPU, which the wall times leave
 * out, after the items: it says when too few were left to judge them.
 */
static int diff__warn_starved(struct kh_diff *d, const struct diff_runs *runs,
			      const struct kh_diff_side *base, const struct kh_diff_side *cand)
{
	struct kh_diff_warning *w;
	bool unjudged = false;
	char *message;

	if (!runs->starved_count[0] && !runs->starved_count[1])
		return 0;
	for (size_t i = 0; i < d->item_count; i++)
		unjudged |= d->items[i].starved_out;
	message = diff__format("%zu of %zu base and %zu of %zu candidate runs were starved of CPU "
			       "(waiting for a CPU over %.1f times as long as usual): left out of "
			       "the wall, throughput and state wall times%s",
			       runs->starved_count[0], base->count, runs->starved_count[1],
			       cand->count, DIFF_STARVED_FACTOR,
			       unjudged ? ", too few left to judge them (noisy at most)" : "");
	w = message ? realloc(d->warnings, (d->warning_count + 1) * sizeof(*w)) : NULL;
	if (!w) {
		free(message);
		return -ENOMEM;
	}
	d->warnings = w;
	d->warnings[d->warning_count++] = (struct kh_diff_warning){ KH_DIFF_WARN_STARVED, message };
	return 0;
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
		    it->metric != KH_DIFF_M_PER_CALL)
			continue;
		it->span_error_ns = (double)bias;
		it->within_span_error = fabs(it->cand_median - it->base_median) <= (double)bias;
	}
}

static int diff__items(struct kh_diff *d, const struct kh_diff_side *base,
		       const struct kh_diff_side *cand)
{
	static const enum kh_diff_metric per_stage[] = { KH_DIFF_M_ELAPSED, KH_DIFF_M_CALLS,
							 KH_DIFF_M_PER_CALL, KH_DIFF_M_P50,
							 KH_DIFF_M_P99, KH_DIFF_M_OFF_CPU };
	double *vb = malloc(base->count * sizeof(*vb)), *vc = malloc(cand->count * sizeof(*vc));
	struct diff_runs runs;
	int err = vb && vc ? 0 : -ENOMEM;

	if (!err)
		err = diff_runs__init(&runs, base, cand);
	if (err) {
		free(vb);
		free(vc);
		return err;
	}
	err = diff__add_item(d, &runs, base, cand, KH_DIFF_M_WALL, 0, vb, vc);
	if (!err && (any_record(base, has_input, 0) || any_record(cand, has_input, 0)))
		err = diff__add_item(d, &runs, base, cand, KH_DIFF_M_THROUGHPUT, 0, vb, vc);
	if (!err)
		err = diff__add_item(d, &runs, base, cand, KH_DIFF_M_PEAK_RSS, 0, vb, vc);
	for (uint32_t s = 0; !err && s < KH_STAGE_COUNT; s++) {
		if (!any_record(base, has_stage, s) && !any_record(cand, has_stage, s))
			continue;
		for (size_t m = 0; !err && m < sizeof(per_stage) / sizeof(per_stage[0]); m++)
			err = diff__add_item(d, &runs, base, cand, per_stage[m], s, vb, vc);
		if (!err && (any_record(base, has_decoded, s) || any_record(cand, has_decoded, s)))
			err = diff__add_item(d, &runs, base, cand, KH_DIFF_M_DECODED, s, vb, vc);
	}
	for (uint32_t st = 0; !err && st < KH_STATE_COUNT; st++) {
		if (!any_record(base, has_state, st) || !any_record(cand, has_state, st))
			continue;
		err = diff__add_item(d, &runs, base, cand, KH_DIFF_M_STATE_WALL, st, vb, vc);
		if (!err)
			err = diff__add_item(d, &runs, base, cand, KH_DIFF_M_STATE_CPU, st, vb, vc);
	}
	if (!err)
		err = diff__warn_starved(d, &runs, base, cand);
	if (!err)
		diff__mark_span_error(d, base, cand);
	diff_runs__free(&runs);
	free(vb);
	free(vc);
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
	if (out->blocking_count)
		out->verdict = KH_DIFF_VERDICT_NOT_COMPARABLE;
	else if (out->method == KH_DIFF_METHOD_SINGLE)
		/* Two single runs of one build came out 23 % apart here (docs/CI.md). */
		out->verdict = KH_DIFF_VERDICT_TOO_FEW_RUNS;
	else if (out->regression_count)
		out->verdict = KH_DIFF_VERDICT_REGRESSED;
	else
		out->verdict = KH_DIFF_VERDICT_OK;
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
