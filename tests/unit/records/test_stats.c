// SPDX-License-Identifier: MIT
/* Order statistics and the spread table of `record --repeat`. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "spread.h"
#include "stats.h"

static void test_median_odd_even_and_empty(void **state)
{
	const double odd[] = { 9, 1, 5 };
	const double even[] = { 4, 1, 3, 2 };

	(void)state;
	assert_true(stats__median(odd, 3) == 5);
	assert_true(stats__median(even, 4) == 2.5);
	assert_true(isnan(stats__median(NULL, 0)));
	/* The caller's order is kept: runs stay in file order. */
	assert_true(odd[0] == 9 && even[0] == 4);
}

static void test_median_of_many_values(void **state)
{
	double values[101];

	(void)state;
	for (int i = 0; i < 101; i++)
		values[i] = (i * 37) % 101; /* 0..100 shuffled */
	assert_true(stats__median(values, 101) == 50);
}

static void test_spread_min_max_mad(void **state)
{
	const double values[] = { 100, 104, 98, 250, 101 };
	struct kh_spread s;

	(void)state;
	assert_int_equal(stats__spread(values, 5, &s), 0);
	assert_int_equal(s.n, 5);
	assert_true(s.min == 98 && s.max == 250 && s.median == 101);
	/* Deviations 1, 3, 3, 149, 0: the outlier does not move the MAD. */
	assert_true(s.mad == 3);
	assert_true(fabs(spread__mad_pct(&s) - 300.0 / 101) < 1e-9);
}

static void add_stage(struct kh_profile *p, uint32_t stage, uint64_t ns)
{
	assert_int_equal(profile__set_stage(p, stage, ns, 1, 0), 0);
}

static char *line_of(const char *text, const char *start)
{
	const char *at = strstr(text, start);
	const char *end;

	if (!at)
		return NULL;
	end = strchr(at, '\n');
	return strndup(at, end ? (size_t)(end - at) : strlen(at));
}

static void test_spread_table_rows(void **state)
{
	struct kh_profile runs[3];
	const uint64_t walls[] = { 40000000, 50000000, 45000000 };
	char *table, *line;

	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(profile__init(&runs[i]), 0);
		runs[i].wall_time_ns = walls[i];
		runs[i].input_bytes = 45 << 20;
		add_stage(&runs[i], KH_STAGE_DECODE, 1000000 * (uint64_t)(i + 1));
	}
	/* A stage one run lacks counts as zero there. */
	add_stage(&runs[2], KH_STAGE_ENTROPY, 3000000);
	table = runs__render_spread(runs, 3);
	assert_non_null(table);

	line = line_of(table, "wall ");
	assert_non_null(line);
	assert_non_null(strstr(line, "45.000       40.000       50.000    11.1%  ms"));
	free(line);
	line = line_of(table, "throughput ");
	assert_non_null(strstr(line, "1000.000      900.000     1125.000"));
	free(line);
	line = line_of(table, "stage decode ");
	assert_non_null(strstr(line, "2.000        1.000        3.000    50.0%  ms"));
	free(line);
	line = line_of(table, "stage entropy ");
	assert_non_null(strstr(line, "0.000        0.000        3.000"));
	free(line);
	/* No record has resource samples: no peak RSS row. */
	assert_null(strstr(table, "peak_rss"));
	/* Stages in the seed's wire order: entropy (14) before decode (16). */
	assert_true(strstr(table, "stage entropy") < strstr(table, "stage decode"));
	free(table);
	for (int i = 0; i < 3; i++)
		profile__free(&runs[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_median_odd_even_and_empty),
		cmocka_unit_test(test_median_of_many_values),
		cmocka_unit_test(test_spread_min_max_mad),
		cmocka_unit_test(test_spread_table_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
