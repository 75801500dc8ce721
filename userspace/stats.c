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
