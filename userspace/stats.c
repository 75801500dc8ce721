// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

#define STACK_VALUES 64

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of values sorted in place. */
static double sorted_median(double *values, size_t n)
{
	qsort(values, n, sizeof(*values), compare_double);
	return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double stats__median(const double *values, size_t n)
{
	double stack[STACK_VALUES], *copy = stack, median;

	if (n == 0)
		return NAN;
	if (n > STACK_VALUES && !(copy = malloc(n * sizeof(*copy))))
		return NAN;
	memcpy(copy, values, n * sizeof(*copy));
	median = sorted_median(copy, n);
	if (copy != stack)
		free(copy);
	return median;
}

int stats__spread(const double *values, size_t n, struct kh_spread *out)
{
	double *work;

	out->n = n;
	out->min = out->median = out->max = out->mad = NAN;
	if (n == 0)
		return 0;
	work = malloc(n * sizeof(*work));
	if (!work)
		return -ENOMEM;
	memcpy(work, values, n * sizeof(*work));
	out->median = sorted_median(work, n);
	out->min = work[0];
	out->max = work[n - 1];
	for (size_t i = 0; i < n; i++)
		work[i] = fabs(work[i] - out->median);
	out->mad = sorted_median(work, n);
	free(work);
	return 0;
}

double spread__mad_pct(const struct kh_spread *s)
{
	return s->median ? 100.0 * s->mad / s->median : NAN;
}

uint64_t stats__splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Lemire's multiply-shift; the rare rejection removes the bias. */
uint64_t stats__uniform(uint64_t *state, uint64_t bound)
{
	unsigned __int128 m = (unsigned __int128)stats__splitmix64(state) * bound;
	uint64_t low = (uint64_t)m;

	if (low < bound) {
		uint64_t floor = -bound % bound;

		while (low < floor) {
			m = (unsigned __int128)stats__splitmix64(state) * bound;
			low = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

/*
 * Median of one resample of sorted[0..n).  Counting how often each index
 * was drawn and walking the counts finds the middle ranks in O(n), where
 * sorting every resample would cost O(n log n) ten thousand times over.
 */
static double resample_median(const double *sorted, size_t n, size_t *counts, uint64_t *rng)
{
	size_t lo_rank = (n - 1) / 2, hi_rank = n / 2, seen = 0;
	double lo = NAN;

	memset(counts, 0, n * sizeof(*counts));
	for (size_t i = 0; i < n; i++)
		counts[stats__uniform(rng, n)]++;
	for (size_t i = 0; i < n; i++) {
		if (!counts[i])
			continue;
		if (seen <= lo_rank && lo_rank < seen + counts[i])
			lo = sorted[i];
		if (seen <= hi_rank && hi_rank < seen + counts[i])
			return (lo + sorted[i]) / 2;
		seen += counts[i];
	}
	return lo; /* not reached: hi_rank < n */
}

static double median_ratio(double base, double cand)
{
	if (base == 0)
		return cand == 0 ? 1.0 : INFINITY;
	return cand / base;
}

int stats__bootstrap_ratio(const double *base, size_t nb, const double *cand, size_t nc,
			   size_t resamples, double confidence, uint64_t seed, double *low,
			   double *high)
{
	double *sb = NULL, *sc = NULL, *ratios = NULL;
	size_t *counts = NULL, tail;
	uint64_t rng = seed;
	int err = -ENOMEM;

	if (!nb || !nc || !resamples || !(confidence > 0 && confidence < 100))
		return -EINVAL;
	sb = malloc(nb * sizeof(*sb));
	sc = malloc(nc * sizeof(*sc));
	counts = malloc((nb > nc ? nb : nc) * sizeof(*counts));
	ratios = malloc(resamples * sizeof(*ratios));
	if (!sb || !sc || !counts || !ratios)
		goto out;
	memcpy(sb, base, nb * sizeof(*sb));
	memcpy(sc, cand, nc * sizeof(*sc));
	qsort(sb, nb, sizeof(*sb), compare_double);
	qsort(sc, nc, sizeof(*sc), compare_double);
	for (size_t r = 0; r < resamples; r++) {
		double mb = resample_median(sb, nb, counts, &rng);
		double mc = resample_median(sc, nc, counts, &rng);

		ratios[r] = median_ratio(mb, mc);
	}
	qsort(ratios, resamples, sizeof(*ratios), compare_double);
	/* The epsilon keeps 95 % of 10000 at 250, whatever (100 - 95) / 200 rounds to. */
	tail = (size_t)floor((100.0 - confidence) / 200.0 * (double)resamples + 1e-9);
	if (tail > (resamples - 1) / 2)
		tail = (resamples - 1) / 2;
	*low = ratios[tail];
	*high = ratios[resamples - 1 - tail];
	err = 0;
out:
	free(sb);
	free(sc);
	free(counts);
	free(ratios);
	return err;
}
