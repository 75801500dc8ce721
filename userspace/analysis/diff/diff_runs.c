// SPDX-License-Identifier: MIT
/*
 * The conditions each run of a comparison was recorded under, as the
 * records themselves show them, so that `khprof diff` can tell a run the
 * machine slowed from a stage a code change slowed (docs/CI.md, "Runs the
 * machine slowed"):
 *
 * - a run's speed index: how much slower than usual its spans were across
 *   the stages, from the per-run latency histograms;
 * - whether it was starved of CPU: its threads waited for a CPU for a much
 *   larger share of their span time than usual (the off-CPU split).
 *
 * Both are computed from both sides' runs pooled, symmetrically, so that
 * identical builds stay alike; nothing here is random.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"
#include "hist.h"
#include "stats.h"

/* A stage's median span in one record; false when too few spans give it. */
static bool run_p50(const struct kh_profile *p, uint32_t stage, double *out)
{
	const struct kh_stage_dist *d = &p->ext.latency.stages[stage];

	if (!p->ext.latency.present || !d->present || d->spans < DIFF_SPEED_MIN_SPANS)
		return false;
	*out = (double)kh_dist__percentile(d, 500, p->ext.span_bias_ns);
	return *out > 0;
}

/* A median span of the stage in every record of both sides. */
static bool many_spans(const struct kh_diff_side *const sides[2], uint32_t stage)
{
	double v;

	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < sides[s]->count; i++)
			if (!run_p50(&sides[s]->records[i], stage, &v))
				return false;
	return true;
}

double diff_run__starved_share(const struct kh_profile *p)
{
	const struct kh_latency *l = &p->ext.latency;
	double runnable = 0, total = 0;

	if (!l->present || !l->off_cpu)
		return -1;
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_measurement *m = profile__find_stage(p, st);

		if (!l->stages[st].present || !m)
			continue;
		runnable += (double)l->stages[st].runnable_ns;
		total += (double)m->elapsed_ns;
	}
	return total > 0 ? runnable / total : -1;
}

double diff_run__wait_factor(const struct kh_profile *p)
{
	double share = diff_run__starved_share(p);

	return share >= 0 && share < 1 ? 1.0 / (1.0 - share) : 1.0;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * Starved runs: a share of runnable time above DIFF_STARVED_FACTOR times
 * the lower quartile of both sides' shares (the quartile, not the median,
 * so that a series mostly starved still has a usual level to compare to).
 */
static int runs__starved(struct diff_runs *r, const struct kh_diff_side *const sides[2])
{
	size_t total = sides[0]->count + sides[1]->count, n = 0;
	double *share = malloc(total * sizeof(*share)), *sorted = malloc(total * sizeof(*sorted));
	double quartile;

	if (!share || !sorted) {
		free(share);
		free(sorted);
		return -ENOMEM;
	}
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < sides[s]->count; i++) {
			double x = diff_run__starved_share(&sides[s]->records[i]);

			share[s ? sides[0]->count + i : i] = x;
			if (x >= 0)
				sorted[n++] = x;
		}
	qsort(sorted, n, sizeof(*sorted), compare_double);
	quartile = n ? sorted[(n - 1) / 4] : 0;
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < sides[s]->count; i++) {
			double x = share[s ? sides[0]->count + i : i];

			r->starved[s][i] = quartile > 0 && x > DIFF_STARVED_FACTOR * quartile;
			r->starved_count[s] += r->starved[s][i];
		}
	free(share);
	free(sorted);
	return 0;
}

int diff_runs__init(struct diff_runs *r, const struct kh_diff_side *base,
		    const struct kh_diff_side *cand)
{
	const struct kh_diff_side *const sides[2] = { base, cand };
	double *v = malloc((base->count + cand->count) * sizeof(*v));
	int err;

	memset(r, 0, sizeof(*r));
	r->starved[0] = calloc(base->count, sizeof(bool));
	r->starved[1] = calloc(cand->count, sizeof(bool));
	if (!v || !r->starved[0] || !r->starved[1]) {
		free(v);
		diff_runs__free(r);
		return -ENOMEM;
	}
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++) {
		size_t n = 0;

		r->many_spans[st] = many_spans(sides, st);
		/* Queue waits' spans measure scheduling, not code. */
		r->reference[st] = r->many_spans[st] && !diff_stage__is_queue_wait(st);
		if (!r->reference[st])
			continue;
		for (int s = 0; s < 2; s++)
			for (size_t i = 0; i < sides[s]->count; i++)
				n += run_p50(&sides[s]->records[i], st, &v[n]);
		r->median[st] = stats__median(v, n);
		r->reference_count++;
	}
	free(v);
	err = runs__starved(r, sides);
	if (err)
		diff_runs__free(r);
	return err;
}

bool diff_runs__many_spans(const struct diff_runs *r, uint32_t stage)
{
	return stage < KH_STAGE_COUNT && r->many_spans[stage];
}

void diff_runs__free(struct diff_runs *r)
{
	free(r->starved[0]);
	free(r->starved[1]);
	memset(r, 0, sizeof(*r));
}

void diff_runs__speed(const struct diff_runs *r, const struct kh_diff_side *s, uint32_t skip,
		      double *speed)
{
	for (size_t i = 0; i < s->count; i++) {
		double ratio[KH_STAGE_COUNT], x;
		size_t n = 0;

		for (uint32_t st = 0; st < KH_STAGE_COUNT; st++)
			if (r->reference[st] && st != skip && run_p50(&s->records[i], st, &x))
				ratio[n++] = x / r->median[st];
		speed[i] = n >= DIFF_SPEED_MIN_STAGES ? stats__median(ratio, n) : 1.0;
		if (!(speed[i] > 0))
			speed[i] = 1.0;
	}
}

double diff_run__sensitivity(const double *vb, const double *ub, size_t m, const double *vc,
			     const double *uc, size_t n)
{
	size_t cap = (m * m + n * n) / 2 + 1, k = 0;
	double *slope = malloc(cap * sizeof(*slope)), beta;

	if (!slope)
		return 1.0;
	for (int side = 0; side < 2; side++) {
		const double *v = side ? vc : vb, *u = side ? uc : ub;
		size_t count = side ? n : m;

		for (size_t i = 0; i < count; i++)
			for (size_t j = i + 1; j < count; j++) {
				double du = log(u[j]) - log(u[i]);

				if (fabs(du) > log1p(DIFF_SPEED_MIN_SPREAD) && v[i] > 0 && v[j] > 0)
					slope[k++] = (log(v[j]) - log(v[i])) / du;
			}
	}
	beta = k ? stats__median(slope, k) : 1.0;
	free(slope);
	if (isnan(beta))
		return 1.0;
	return beta < 0 ? 0 : beta > DIFF_SENSITIVITY_MAX ? DIFF_SENSITIVITY_MAX : beta;
}
