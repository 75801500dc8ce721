/* SPDX-License-Identifier: MIT */
/*
 * stats.h - order statistics over small samples of repeated runs.
 *
 * Shared by `record --repeat` (the spread it prints) and `diff` (medians and
 * the Mann-Whitney interval that decides whether a change is beyond noise).
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

/* Sizes up to which the null distribution of U is computed exactly. */
#define STATS_EXACT_MAX 50

/*
 * P(U <= u) under the null hypothesis that both samples come from one
 * continuous distribution, where U is the Mann-Whitney statistic of
 * samples of sizes m and n (the number of pairs in which the first
 * sample's value is the larger).  Exact at any size, by the recurrence on
 * probabilities p(i, j, u) = i/(i+j) p(i-1, j, u-j) + j/(i+j) p(i, j-1, u)
 * (the largest of the i + j values comes from either sample), which never
 * overflows and never subtracts; it costs O(m n min(u, mn)) time, and
 * memory for two rows of i.  0, -EINVAL (m or n is 0) or -ENOMEM.
 */
int stats__mann_whitney_cdf(size_t m, size_t n, size_t u, double *p);

enum stats_rank_method {
	STATS_RANK_AUTO = 0, /* exact up to STATS_EXACT_MAX a side, else normal */
	STATS_RANK_EXACT,
	STATS_RANK_NORMAL,
};

/*
 * The rank k of the shift interval below: the largest k >= 1 with
 * P(U <= k - 1) <= alpha / 2, alpha = 1 - confidence / 100.  The normal
 * approximation takes floor(mn/2 - z sqrt(mn (m+n+1) / 12)), z the
 * two-sided normal quantile, and never goes below 1.  0, -EINVAL (m or n
 * is 0, confidence outside (0, 100)), -ERANGE (no k: too few values for
 * that confidence, such as 3 and 3 at 95, whose smallest attainable
 * two-sided alpha is 2 / 20) or -ENOMEM.
 */
int stats__shift_rank(size_t m, size_t n, double confidence, enum stats_rank_method how,
		      size_t *k);

/*
 * Distribution-free confidence interval of the shift between two samples
 * (the interval that goes with the Hodges-Lehmann estimate, inverting the
 * Mann-Whitney U test): of the m n differences cand[j] - base[i], sorted,
 * the k-th smallest and the k-th largest, with k from stats__shift_rank.
 * At m = n = 5 and 95 %, k = 3 (P(U <= 2) = 4/252 <= 0.025 < 7/252), so
 * the interval runs from the 3rd to the 23rd of the 25 differences.  It
 * covers the true shift with at least the stated probability whatever
 * the distribution, when the candidate's runs are the base's moved by a
 * constant.  *low and *high are in the values' unit.  Deterministic.
 * 0, -EINVAL (an empty side, confidence outside (0, 100)), -ERANGE (too
 * few values for that confidence) or -ENOMEM.
 */
/*
 * The k-th smallest (k from 1 to m n) of the differences cand[j] - base[i],
 * exactly, in O((m + n) log(m n)) time and O(m + n) memory rather than
 * forming and sorting all m n of them.  0, -EINVAL or -ENOMEM.
 */
int stats__kth_difference(const double *base, size_t m, const double *cand, size_t n,
			  size_t k, double *out);

int stats__shift_interval(const double *base, size_t m, const double *cand, size_t n,
			  double confidence, double *low, double *high);

/*
 * The Hodges-Lehmann estimate of the shift: the median of the m n
 * differences cand[j] - base[i] (the mean of the middle two for an even
 * count).  It lies inside stats__shift_interval's interval at any
 * confidence, whose k never passes the middle.  0, -EINVAL (an empty side)
 * or -ENOMEM.
 */
int stats__hodges_lehmann(const double *base, size_t m, const double *cand, size_t n,
			  double *shift);

/*
 * The smallest number of values per side, equal on both sides, for which
 * the interval exists at that confidence (4 at 95, 7 at 99.9); 0 when the
 * confidence is outside (0, 100).
 */
size_t stats__shift_runs_needed(double confidence);

/*
 * The pooled median absolute deviation of two samples: the median of
 * every value's distance from its own sample's median.  NAN when a sample
 * is empty or there is no memory.
 */
double stats__pooled_mad(const double *a, size_t m, const double *b, size_t n);

/* The standard normal quantile: x with P(Z <= x) = p; NAN outside (0, 1). */
double stats__normal_quantile(double p);

#endif /* KHPROF_STATS_H */
