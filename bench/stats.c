/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Statistics of the samples: the median, quartiles and extremes of the
 * repetitions of a row, and any quantile, linear between neighbours.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "bench.h"

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Quantile q of sorted samples, linear between neighbours. */
double quantile(const double *s, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t lo = (size_t)pos;

	if (lo + 1 >= n)
		return s[n - 1];
	return s[lo] + (s[lo + 1] - s[lo]) * (pos - (double)lo);
}

void summarize(double *s, size_t n, double *median, double *min, double *max,
	       double *q1, double *q3)
{
	qsort(s, n, sizeof(*s), cmp_double);
	*median = quantile(s, n, 0.5);
	*min = s[0];
	*max = s[n - 1];
	*q1 = quantile(s, n, 0.25);
	*q3 = quantile(s, n, 0.75);
}
