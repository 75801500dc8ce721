/* SPDX-License-Identifier: MIT */
/*
 * diff_sets.h - the record sets the khprof diff tests compare
 * (tests/unit/records/test_diff.c, the pure comparison; test_diff_cli.c, the
 * command run on the same sets written out), and the fixture holding a
 * pair of them.  Noise patterns are fixed, so every verdict is
 * deterministic.
 */
#ifndef KHPROF_TEST_DIFF_SETS_H
#define KHPROF_TEST_DIFF_SETS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "diff.h"
#include "khtest.h"

#define MS 1000000ull
#define MIB (1024.0 * 1024.0)
#define RUNS 5
#define MAX_RUNS 8

/* Run-to-run factors.  steady: ±2 %, median exactly 1. */
static const double steady[RUNS] = { 1.00, 1.02, 0.98, 1.01, 0.99 };
/* The same spread in another order, as another batch of runs gives it. */
static const double shuffled[RUNS] = { 0.99, 1.01, 1.00, 0.98, 1.02 };
/* Median 1.01: a shift, but well inside every threshold. */
static const double drift[RUNS] = { 1.03, 0.99, 1.01, 1.00, 1.02 };
/* ±30 %: too wide to tell 8 % from no change. */
static const double wide[RUNS] = { 0.70, 1.30, 1.00, 0.85, 1.15 };
static const double wide_shuffled[RUNS] = { 1.15, 0.85, 1.30, 1.00, 0.70 };
/*
 * suppression.elapsed in two series of 5 runs of the same kh-scan binary,
 * over the base's median (2.83 ms): the medians came out 16 % apart, and
 * the bootstrap this interval replaced called it a regression.
 */
static const double aa_base[RUNS] = { 0.979, 0.993, 1.004, 1.000, 1.134 };
static const double aa_cand[RUNS] = { 1.042, 1.382, 1.163, 1.198, 1.053 };

/* The workload every set runs, before noise. */
static const struct {
	uint32_t stage;
	uint64_t ns, calls;
} workload[] = {
	{ KH_STAGE_SOURCE_READ, 20 * MS, 100 },
	{ KH_STAGE_HOT_PATTERNS, 50 * MS, 100 },
	{ KH_STAGE_ENTROPY, 20000, 10 }, /* 20 µs: a stage too short to judge */
	{ KH_STAGE_DECODE, 10 * MS, 50 },
};

static const char *const like_identity[][2] = {
	{ "binary_version", "kh-scan 1.0" }, { "detector_digest", "det-abc" },
	{ "config_digest", "cfg-def" },      { "source_kind", "filesystem" },
	{ "workload_class", "ci-seed7" },    { "backend_selected", "pcre2-jit" },
	{ "cache_state", "cold" },	     { "scanner_threads", "2" },
	{ "logical_cpus", "2" },
};

/* How a set departs from the workload. */
struct shape {
	size_t runs;
	const double *noise; /* RUNS factors; NULL for none */
	uint32_t stage;      /* scaled by factor when factor is not 0 */
	double factor;
	const double *stage_noise; /* RUNS factors of that stage alone, for the noise */
};

struct set {
	size_t n;
	struct kh_profile rec[MAX_RUNS];
	char *names[MAX_RUNS];
};

/* Each item takes the noise from another offset, so that items do not move in step. */
static inline double noise_at(const struct shape *sh, size_t run, size_t offset)
{
	return sh->noise ? sh->noise[(run + offset) % RUNS] : 1.0;
}

static inline void set_make(struct set *s, struct shape sh)
{
	s->n = sh.runs;
	for (size_t i = 0; i < s->n; i++) {
		struct kh_profile *p = &s->rec[i];

		assert_int_equal(profile__init(p), 0);
		for (size_t k = 0; k < sizeof(like_identity) / sizeof(like_identity[0]); k++)
			assert_int_equal(identity__set(&p->identity, like_identity[k][0],
						       like_identity[k][1]), 0);
		assert_int_equal(profile__set_mode(p, KH_MODE_BATCH), 0);
		p->status = KH_STATE_COMPLETED;
		p->wall_time_ns = llround(100.0 * MS * noise_at(&sh, i, 0));
		p->input_bytes = 128 << 20;
		p->input_units = 64;
		p->resources.max_observed_resident_bytes.present = true;
		p->resources.max_observed_resident_bytes.value =
			llround(64 * MIB * noise_at(&sh, i, 1));
		for (size_t k = 0; k < sizeof(workload) / sizeof(workload[0]); k++) {
			double f = noise_at(&sh, i, k + 2);

			if (sh.stage_noise && workload[k].stage == sh.stage)
				f = sh.stage_noise[i % RUNS];
			if (sh.factor && workload[k].stage == sh.stage)
				f *= sh.factor;
			assert_int_equal(profile__set_stage(p, workload[k].stage,
							    llround((double)workload[k].ns * f),
							    workload[k].calls, 0), 0);
		}
		assert_true(asprintf(&s->names[i], "run-%03zu.json", i + 1) > 0);
	}
}

static inline void set_free(struct set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		profile__free(&s->rec[i]);
		free(s->names[i]);
	}
	s->n = 0;
}

static inline void set_identity(struct set *s, size_t first, const char *key, const char *value)
{
	for (size_t i = first; i < s->n; i++)
		assert_int_equal(identity__set(&s->rec[i].identity, key, value), 0);
}

/* --- fixture ---------------------------------------------------------------- */

struct fx {
	struct set base, cand;
	struct kh_diff_options opts;
	struct kh_diff d;
	char *dir; /* for the command tests */
};

static inline int fx_setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	diff_options__init(&fx->opts);
	*state = fx;
	return 0;
}

static inline int fx_teardown(void **state)
{
	struct fx *fx = *state;

	diff__free(&fx->d);
	set_free(&fx->base);
	set_free(&fx->cand);
	if (fx->dir)
		remove_tree(fx->dir);
	free(fx->dir);
	free(fx);
	return 0;
}

static inline struct kh_diff_side side_of(const struct set *s, const char *path)
{
	return (struct kh_diff_side){ path, s->rec, (const char *const *)s->names, s->n };
}

/* Compares fx->cand with fx->base under fx->opts into fx->d. */
static inline struct kh_diff *compare(struct fx *fx)
{
	struct kh_diff_side b = side_of(&fx->base, "base"), c = side_of(&fx->cand, "cand");

	diff__free(&fx->d);
	assert_int_equal(diff__compare(&b, &c, &fx->opts, &fx->d), 0);
	return &fx->d;
}

/* Both sides from shapes, then compared. */
static inline struct kh_diff *compare_shapes(struct fx *fx, struct shape base, struct shape cand)
{
	set_free(&fx->base);
	set_free(&fx->cand);
	set_make(&fx->base, base);
	set_make(&fx->cand, cand);
	return compare(fx);
}

static inline const struct kh_diff_item *item(const struct kh_diff *d, enum kh_diff_metric metric,
				       uint32_t stage)
{
	for (size_t i = 0; i < d->item_count; i++)
		if (d->items[i].metric == metric &&
		    (d->items[i].metric < KH_DIFF_M_ELAPSED || d->items[i].stage == stage))
			return &d->items[i];
	fail_msg("no item %s of stage %u", diff_metric__name(metric), stage);
	return NULL;
}

static inline void assert_summary(const struct kh_diff *d, const char *expected)
{
	char *summary = diff__summary(d);

	assert_non_null(summary);
	assert_string_equal(summary, expected);
	free(summary);
}

/* Every gating item except the one named is ok. */
static inline void assert_others_ok(const struct kh_diff *d, const struct kh_diff_item *except)
{
	for (size_t i = 0; i < d->item_count; i++)
		if (&d->items[i] != except && d->items[i].gating)
			assert_int_equal(d->items[i].verdict, KH_DIFF_OK);
}

static inline struct shape plain(size_t runs, const double *noise)
{
	return (struct shape){ runs, noise, 0, 0, NULL };
}

static inline struct shape scaled(size_t runs, const double *noise, uint32_t stage, double factor)
{
	return (struct shape){ runs, noise, stage, factor, NULL };
}

/* Steady everywhere but in one stage, whose runs spread as stage_noise says. */
static inline struct shape one_noisy_stage(const double *stage_noise, uint32_t stage)
{
	return (struct shape){ RUNS, steady, stage, 0, stage_noise };
}


#define FX_TEST(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)

#endif /* KHPROF_TEST_DIFF_SETS_H */
