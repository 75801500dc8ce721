// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <stdbool.h>
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

/*
 * Probabilities of U = 0..top for samples of sizes m and n (pmf has top + 1
 * slots).  Row i holds p(i, j, .) for j = 0..n; row i needs only row i - 1
 * and itself, so two rows are kept.  Values of U above top never feed
 * those at or below it (the recurrence only lowers u), so the rows stop at
 * top.  U has the same distribution for (m, n) and (n, m): the rows run
 * over the smaller side.
 */
static int mann_whitney_pmf(size_t m, size_t n, size_t top, double *pmf)
{
	size_t width = top + 1, cells;
	double *prev, *cur, *swap;

	if (m < n) {
		size_t t = m;

		m = n;
		n = t;
	}
	if (__builtin_mul_overflow(n + 1, width, &cells))
		return -ENOMEM;
	prev = calloc(cells, sizeof(*prev));
	cur = calloc(cells, sizeof(*cur));
	if (!prev || !cur) {
		free(prev);
		free(cur);
		return -ENOMEM;
	}
	for (size_t j = 0; j <= n; j++)
		prev[j * width] = 1; /* p(0, j, 0) */
	for (size_t i = 1; i <= m; i++) {
		cur[0] = 1; /* p(i, 0, 0) */
		for (size_t j = 1; j <= n; j++) {
			const double *up = prev + j * width, *left = cur + (j - 1) * width;
			double *out = cur + j * width;
			double wi = (double)i / (double)(i + j), wj = (double)j / (double)(i + j);
			/* Above i j the row is 0, and stays 0 from the smaller rows before. */
			size_t last = i * j < top ? i * j : top;

			for (size_t u = 0; u <= last; u++)
				out[u] = wj * left[u] + (u >= j ? wi * up[u - j] : 0.0);
		}
		swap = prev;
		prev = cur;
		cur = swap;
	}
	memcpy(pmf, prev + n * width, width * sizeof(*pmf));
	free(prev);
	free(cur);
	return 0;
}

int stats__mann_whitney_cdf(size_t m, size_t n, size_t u, double *p)
{
	size_t mn, top;
	double *pmf, sum = 0;
	int err;

	if (!m || !n)
		return -EINVAL;
	if (__builtin_mul_overflow(m, n, &mn))
		return -ENOMEM;
	if (u >= mn) {
		*p = 1;
		return 0;
	}
	top = u;
	pmf = malloc((top + 1) * sizeof(*pmf));
	if (!pmf)
		return -ENOMEM;
	err = mann_whitney_pmf(m, n, top, pmf);
	for (size_t i = 0; !err && i <= top; i++)
		sum += pmf[i];
	free(pmf);
	if (!err)
		*p = sum;
	return err;
}

/*
 * Acklam's rational approximation (relative error below 1.2e-9), then one
 * Halley step on erfc, which brings it to double precision: the normal
 * ranks are floors, and a quantile a hair off would move one.
 */
double stats__normal_quantile(double p)
{
	static const double a[] = { -3.969683028665376e+01, 2.209460984245205e+02,
				    -2.759285104469687e+02, 1.383577518672690e+02,
				    -3.066479806614716e+01, 2.506628277459239e+00 };
	static const double b[] = { -5.447609879822406e+01, 1.615858368580409e+02,
				    -1.556989798598866e+02, 6.680131188771972e+01,
				    -1.328068155288572e+01 };
	static const double c[] = { -7.784894002430293e-03, -3.223964580411365e-01,
				    -2.400758277161838e+00, -2.549732539343734e+00,
				    4.374664141464968e+00,  2.938163982698783e+00 };
	static const double d[] = { 7.784695709041462e-03, 3.224671290700398e-01,
				    2.445134137142996e+00, 3.754408661907416e+00 };
	const double tail = 0.02425;
	double q, r, x, e, step;

	if (!(p > 0 && p < 1))
		return NAN;
	if (p < tail || p > 1 - tail) {
		/* The tails, by symmetry from the lower one. */
		q = sqrt(-2 * log(p < tail ? p : 1 - p));
		x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
		    ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
		if (p > tail)
			x = -x;
	} else {
		q = p - 0.5;
		r = q * q;
		x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
		    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
	}
	e = 0.5 * erfc(-x / M_SQRT2) - p;
	step = e * sqrt(2 * M_PI) * exp(x * x / 2);
	return x - step / (1 + x * step / 2);
}

/*
 * alpha / 2 as the probability that the rank may leave in each tail.  The
 * slack accepts attainable levels that equal it exactly (3 and 3 at 90 %:
 * P(U <= 0) is 1/20, alpha / 2 is 0.05) whatever the last bit of either
 * computation.
 */
static double tail_allowed(double confidence)
{
	return (100.0 - confidence) / 200.0 * (1 + 1e-9);
}

static int exact_rank(size_t m, size_t n, double confidence, size_t *k)
{
	size_t mn, top;
	double *pmf, allowed = tail_allowed(confidence), cum = 0;
	int err;

	if (__builtin_mul_overflow(m, n, &mn))
		return -ENOMEM;
	/* alpha / 2 < 1/2 <= P(U <= mn/2), so the rank is found by mn/2. */
	top = mn / 2;
	pmf = malloc((top + 1) * sizeof(*pmf));
	if (!pmf)
		return -ENOMEM;
	err = mann_whitney_pmf(m, n, top, pmf);
	*k = 0;
	for (size_t u = 0; !err && u <= top; u++) {
		cum += pmf[u];
		if (cum > allowed)
			break;
		*k = u + 1;
	}
	free(pmf);
	if (!err && !*k)
		err = -ERANGE;
	return err;
}

static size_t normal_rank(size_t m, size_t n, double confidence)
{
	double mn = (double)m * (double)n;
	double z = stats__normal_quantile(1 - (100.0 - confidence) / 200.0);
	double k = floor(mn / 2 - z * sqrt(mn * ((double)m + (double)n + 1) / 12));

	return k < 1 ? 1 : (size_t)k;
}

int stats__shift_rank(size_t m, size_t n, double confidence, enum stats_rank_method how,
		      size_t *k)
{
	if (!m || !n || !(confidence > 0 && confidence < 100))
		return -EINVAL;
	if (how == STATS_RANK_AUTO)
		how = m <= STATS_EXACT_MAX && n <= STATS_EXACT_MAX ? STATS_RANK_EXACT
								   : STATS_RANK_NORMAL;
	if (how == STATS_RANK_EXACT)
		return exact_rank(m, n, confidence, k);
	*k = normal_rank(m, n, confidence);
	return 0;
}

/*
 * Selection in the implicit sorted matrix D[i][j] = c[j] - b[i] (b and c
 * sorted: rows rise with j, columns fall with i), after Johnson and
 * Mitchell: each row keeps a window [lo, hi) of the columns that may
 * still hold the answer; the weighted median of the windows' middles is
 * the pivot, and a two-pointer count of the differences below it (rows
 * in order, since a row's count never falls as b grows) drops at least a
 * quarter of the candidates.  The last few are sorted.  Forming all m n
 * differences made 'khprof diff' of 10,000 runs a side take 297 s and
 * 2.2 GB; this takes O(m + n) memory.  Subtraction is monotone in both
 * operands under rounding, so the counts agree with the sorted list.
 */
struct weighted {
	double v;
	size_t w;
};

static int compare_weighted(const void *a, const void *b)
{
	return compare_double(&((const struct weighted *)a)->v, &((const struct weighted *)b)->v);
}

static int kth_sorted(const double *b, size_t m, const double *c, size_t n, size_t k,
		      double *out)
{
	size_t *lo = calloc(m, sizeof(*lo)), *hi = malloc(m * sizeof(*hi));
	size_t *lt = malloc(m * sizeof(*lt)), *le = malloc(m * sizeof(*le));
	struct weighted *mid = malloc(m * sizeof(*mid));
	int err = lo && hi && lt && le && mid ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < m; i++)
		hi[i] = n;
	while (!err) {
		size_t cand = 0, below = 0, rows = 0, acc = 0, nlt = 0, nle = 0, p = 0, q = 0;
		double pivot;

		for (size_t i = 0; i < m; i++) {
			cand += hi[i] - lo[i];
			below += lo[i];
		}
		if (cand <= 4 * (m + n) + 64) {
			double *left = malloc((cand ? cand : 1) * sizeof(*left));
			size_t at = 0;

			if (!left) {
				err = -ENOMEM;
				break;
			}
			for (size_t i = 0; i < m; i++)
				for (size_t j = lo[i]; j < hi[i]; j++)
					left[at++] = c[j] - b[i];
			qsort(left, cand, sizeof(*left), compare_double);
			*out = left[k - 1 - below];
			free(left);
			break;
		}
		for (size_t i = 0; i < m; i++)
			if (hi[i] > lo[i])
				mid[rows++] = (struct weighted){ c[lo[i] + (hi[i] - lo[i]) / 2] - b[i],
								 hi[i] - lo[i] };
		qsort(mid, rows, sizeof(*mid), compare_weighted);
		for (size_t r = 0;; r++) {
			acc += mid[r].w;
			if (2 * acc >= cand) {
				pivot = mid[r].v;
				break;
			}
		}
		for (size_t i = 0; i < m; i++) {
			while (p < n && c[p] - b[i] < pivot)
				p++;
			if (q < p)
				q = p;
			while (q < n && c[q] - b[i] <= pivot)
				q++;
			lt[i] = p;
			le[i] = q;
			nlt += p;
			nle += q;
		}
		if (k <= nlt) {
			for (size_t i = 0; i < m; i++) {
				hi[i] = hi[i] < lt[i] ? hi[i] : lt[i];
				lo[i] = lo[i] < hi[i] ? lo[i] : hi[i];
			}
		} else if (k > nle) {
			for (size_t i = 0; i < m; i++) {
				lo[i] = lo[i] > le[i] ? lo[i] : le[i];
				hi[i] = hi[i] > lo[i] ? hi[i] : lo[i];
			}
		} else {
			*out = pivot;
			break;
		}
	}
	free(lo);
	free(hi);
	free(lt);
	free(le);
	free(mid);
	return err;
}

static double *sorted_copy(const double *v, size_t n)
{
	double *copy = malloc((n ? n : 1) * sizeof(*copy));

	if (copy) {
		memcpy(copy, v, n * sizeof(*copy));
		qsort(copy, n, sizeof(*copy), compare_double);
	}
	return copy;
}

int stats__kth_difference(const double *base, size_t m, const double *cand, size_t n,
			  size_t k, double *out)
{
	double *b, *c;
	size_t mn;
	int err;

	if (!m || !n || __builtin_mul_overflow(m, n, &mn) || k < 1 || k > mn)
		return -EINVAL;
	b = sorted_copy(base, m);
	c = sorted_copy(cand, n);
	err = b && c ? kth_sorted(b, m, c, n, k, out) : -ENOMEM;
	free(b);
	free(c);
	return err;
}

int stats__shift_interval(const double *base, size_t m, const double *cand, size_t n,
			  double confidence, double *low, double *high)
{
	size_t k;
	int err;

	err = stats__shift_rank(m, n, confidence, STATS_RANK_AUTO, &k);
	if (err)
		return err;
	err = stats__kth_difference(base, m, cand, n, k, low);
	if (!err)
		err = stats__kth_difference(base, m, cand, n, m * n - k + 1, high);
	return err;
}

int stats__hodges_lehmann(const double *base, size_t m, const double *cand, size_t n,
			  double *shift)
{
	double lo, hi;
	size_t mn;
	int err;

	if (!m || !n || __builtin_mul_overflow(m, n, &mn))
		return -EINVAL;
	err = stats__kth_difference(base, m, cand, n, (mn + 1) / 2, &lo);
	if (!err && mn % 2 == 0)
		err = stats__kth_difference(base, m, cand, n, mn / 2 + 1, &hi);
	if (!err)
		*shift = mn % 2 ? lo : (lo + hi) / 2;
	return err;
}

size_t stats__shift_runs_needed(double confidence)
{
	size_t k;

	/* Beyond STATS_EXACT_MAX the normal rank always exists: the loop ends. */
	for (size_t n = 1;; n++) {
		int err = stats__shift_rank(n, n, confidence, STATS_RANK_AUTO, &k);

		if (!err)
			return n;
		if (err != -ERANGE)
			return 0;
	}
}

double stats__pooled_mad(const double *a, size_t m, const double *b, size_t n)
{
	double ma = stats__median(a, m), mb = stats__median(b, n), mad;
	double *dev = malloc((m + n) * sizeof(*dev));

	if (!dev || isnan(ma) || isnan(mb)) {
		free(dev);
		return NAN;
	}
	for (size_t i = 0; i < m; i++)
		dev[i] = fabs(a[i] - ma);
	for (size_t i = 0; i < n; i++)
		dev[m + i] = fabs(b[i] - mb);
	mad = stats__median(dev, m + n);
	free(dev);
	return mad;
}
