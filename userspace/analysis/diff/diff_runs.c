// SPDX-License-Identifier: MIT
/*
 * The conditions each run of a comparison was recorded under, as the
 * records' off-CPU split shows them, so that `khprof diff` can tell what
 * the machine cost a run from what its code did (docs/CI.md, "Runs the
 * machine slowed"):
 *
 * - whether the record split a stage's time completely into on CPU,
 *   blocked and runnable (waiting for a CPU);
 * - whether a run, or one stage of it, was starved of CPU: its threads
 *   waited for a CPU for a much larger share of their span time than usual;
 * - the wall time's wait factor.
 *
 * Nothing here reads one stage to judge another: a stage's figures come
 * from that stage's own spans, and only the wall times, which span the
 * whole program, read all of them.  Shares are pooled over both sides'
 * runs, symmetrically, so that identical builds stay alike.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_internal.h"
#include "hist.h"
#include "stats.h"

static bool measured(const struct kh_profile *p)
{
	return p->ext.latency.present && p->ext.latency.off_cpu;
}

double diff_run__starved_share(const struct kh_profile *p)
{
	const struct kh_latency *l = &p->ext.latency;
	double runnable = 0, total = 0;

	if (!measured(p))
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

double diff_run__stage_share(const struct kh_profile *p, uint32_t stage)
{
	const struct kh_stage_measurement *m = profile__find_stage(p, stage);
	const struct kh_stage_dist *d = &p->ext.latency.stages[stage];

	if (!measured(p) || !m || !d->present || !m->elapsed_ns)
		return -1;
	return (double)d->runnable_ns / (double)m->elapsed_ns;
}

double diff_run__wait_factor(const struct kh_profile *p)
{
	double share = diff_run__starved_share(p);

	return share >= 0 && share < 1 ? 1.0 / (1.0 - share) : 1.0;
}

bool diff_run__split_complete(const struct kh_profile *p, uint32_t stage)
{
	const struct kh_stage_dist *d = &p->ext.latency.stages[stage];

	if (!measured(p))
		return false;
	if (!profile__find_stage(p, stage))
		return true;
	return d->present && !d->offcpu_truncated;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * A share above both DIFF_STARVED_FACTOR times the lower quartile of both
 * sides' shares and DIFF_STARVED_POINTS above it (the quartile, not the
 * median, so that a series mostly starved still has a usual level to
 * compare to; the points, so that a program that hardly ever waits is not
 * starved by a millisecond's wait).
 */
int diff_runs__starved(const double *const share[2], const size_t n[2], bool *const starved[2],
		       size_t count[2])
{
	double *sorted = malloc((n[0] + n[1] + 1) * sizeof(*sorted)), quartile, limit;
	size_t k = 0;

	if (!sorted)
		return -ENOMEM;
	for (int s = 0; s < 2; s++)
		for (size_t i = 0; i < n[s]; i++)
			if (share[s][i] >= 0)
				sorted[k++] = share[s][i];
	qsort(sorted, k, sizeof(*sorted), compare_double);
	quartile = k ? sorted[(k - 1) / 4] : 0;
	limit = fmax(DIFF_STARVED_FACTOR * quartile, quartile + DIFF_STARVED_POINTS);
	for (int s = 0; s < 2; s++) {
		count[s] = 0;
		for (size_t i = 0; i < n[s]; i++) {
			starved[s][i] = k && share[s][i] > limit;
			count[s] += starved[s][i];
		}
	}
	free(sorted);
	return 0;
}
