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

#endif /* KHPROF_STATS_H */
