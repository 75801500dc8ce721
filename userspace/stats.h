/* SPDX-License-Identifier: MIT */
/*
 * stats.h - order statistics over small samples of repeated runs.
 *
 * Shared by `record --repeat` (the spread it prints) and `diff` (medians and
 * the bootstrap interval that decides whether a change is beyond noise).
 * Inputs are never reordered: callers keep their runs in file order.
 */
#ifndef KHPROF_STATS_H
#define KHPROF_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Spread of one measurement over n runs; all NAN when n is 0. */
struct kh_spread {
	size_t n;
	double min, median, max;
	double mad; /* median absolute deviation from the median */
};

/*
 * Median, the mean of the middle two for even n.  NAN when n is 0, or when
 * more than 64 values need a heap copy and there is no memory.
 */
double stats__median(const double *values, size_t n);

/* Fills *out from values; 0, or -ENOMEM. */
int stats__spread(const double *values, size_t n, struct kh_spread *out);

/* MAD relative to the median, in percent; NAN when the median is 0. */
double spread__mad_pct(const struct kh_spread *s);

/*
 * splitmix64: a small, fast generator whose whole state is one word, so
 * that a fixed seed gives the same stream on every machine and libc.
 */
uint64_t stats__splitmix64(uint64_t *state);

/* Uniform in [0, bound) without modulo bias; bound must not be 0. */
uint64_t stats__uniform(uint64_t *state, uint64_t bound);

/*
 * Percentile bootstrap interval of median(cand) / median(base).  Each
 * resample draws nb values from base and nc from cand with replacement,
 * and the ratio of their medians is kept; *low and *high are the
 * (100 - confidence) / 2 percent tails of the sorted ratios (with 10000
 * resamples at 95, the 251st smallest and the 251st largest).  A resample
 * whose base median is 0 has ratio 1 when its candidate median is 0 too,
 * else +INFINITY.  Values must be non-negative and finite.  The same
 * inputs and seed always give the same interval.
 * 0, -EINVAL (an empty side, no resamples, confidence outside (0, 100)),
 * or -ENOMEM.
 */
int stats__bootstrap_ratio(const double *base, size_t nb, const double *cand, size_t nc,
			   size_t resamples, double confidence, uint64_t seed, double *low,
			   double *high);

#endif /* KHPROF_STATS_H */
