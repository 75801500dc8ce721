// SPDX-License-Identifier: MIT
/*
 * khprof diff: the pure comparison over records built here, then the
 * command itself run as a program on the fixtures in tests/golden/diff/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "diff.h"
#include "golden.h"

#define MS 1000000ull

/* --- records built in the test ------------------------------------------ */

/* A like-for-like run: same identity on both sides unless a test changes it. */
static void profile_make(struct kh_profile *p, const char *run_id, uint64_t wall_ns)
{
	assert_int_equal(profile__init(p), 0);
	assert_int_equal(identity__set(&p->identity, "run_id", run_id), 0);
	assert_int_equal(identity__set(&p->identity, "binary_version", run_id), 0);
	assert_int_equal(identity__set(&p->identity, "detector_digest", "det-abc"), 0);
	assert_int_equal(identity__set(&p->identity, "config_digest", "cfg-def"), 0);
	assert_int_equal(identity__set(&p->identity, "source_kind", "filesystem"), 0);
	assert_int_equal(identity__set(&p->identity, "backend_selected", "cpu"), 0);
	assert_int_equal(identity__set(&p->identity, "scanner_threads", "2"), 0);
	assert_int_equal(identity__set(&p->identity, "logical_cpus", "2"), 0);
	p->status = KH_STATE_COMPLETED;
	p->wall_time_ns = wall_ns;
	p->input_bytes = 100 * MS;
	p->input_units = 10;
}

static void stage(struct kh_profile *p, uint32_t s, uint64_t elapsed_ns, uint64_t calls)
{
	assert_int_equal(profile__set_stage(p, s, elapsed_ns, calls, 0), 0);
}

/* Macro states from (state, elapsed) pairs, derived as the seed derives them. */
static void states(struct kh_profile *p, size_t n, const uint32_t *state, const uint64_t *ns)
{
	uint64_t at = 0;

	for (size_t i = 0; i < n; i++) {
		assert_int_equal(profile__add_transition(p, state[i], at, NULL), 0);
		at += ns[i];
	}
	assert_int_equal(profile__add_transition(p, KH_STATE_COMPLETED, at, NULL), 0);
	assert_int_equal(profile__finish(p, KH_STATE_COMPLETED, p->wall_time_ns), 0);
}

static struct kh_diff compare(const struct kh_profile *base, const struct kh_profile *new,
			      double threshold, uint64_t min_ns, bool strict)
{
	struct kh_diff_options opts;
	struct kh_diff d;

	diff_options__init(&opts);
	opts.threshold_pct = threshold;
	opts.min_ns = min_ns;
	opts.strict = strict;
	opts.base_name = "a.json";
	opts.new_name = "b.json";
	assert_int_equal(diff__compare(base, new, &opts, &d), 0);
	return d;
}

static const struct kh_diff_item *find_item(const struct kh_diff *d, enum kh_diff_kind kind,
					    uint32_t id)
{
	for (size_t i = 0; i < d->item_count; i++)
		if (d->items[i].kind == kind && d->items[i].id == id)
			return &d->items[i];
	return NULL;
}

static const struct kh_diff_warning *find_warning(const struct kh_diff *d,
						  enum kh_diff_warning_kind kind,
						  const char *field)
{
	for (size_t i = 0; i < d->warning_count; i++)
		if (d->warnings[i].kind == kind &&
		    (!field || (d->warnings[i].field && !strcmp(d->warnings[i].field, field))))
			return &d->warnings[i];
	return NULL;
}

/* The line of text that starts with prefix, without its newline; malloc'd. */
static char *line_starting(const char *text, const char *prefix)
{
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (!strncmp(line, prefix, strlen(prefix)))
			return strndup(line, len);
		line = end ? end + 1 : NULL;
	}
	return NULL;
}

/* --- judging -------------------------------------------------------------- */

static void test_stage_regression_over_threshold(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;
	const struct kh_diff_item *it;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 100 * MS);
	stage(&a, KH_STAGE_HOT_PATTERNS, 50 * MS, 100);
	stage(&b, KH_STAGE_HOT_PATTERNS, 60 * MS, 100);

	d = compare(&a, &b, 10, MS, false);
	it = find_item(&d, KH_DIFF_STAGE, KH_STAGE_HOT_PATTERNS);
	assert_non_null(it);
	assert_int_equal(it->mark, KH_DIFF_REGRESSED);
	assert_true(it->has_delta);
	assert_true(fabs(it->delta_pct - 20.0) < 1e-9);
	assert_int_equal(d.regression_count, 1);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_REGRESSED);
	diff__free(&d);

	/* The same change under a looser threshold passes. */
	d = compare(&a, &b, 25, MS, false);
	assert_int_equal(find_item(&d, KH_DIFF_STAGE, KH_STAGE_HOT_PATTERNS)->mark,
			 KH_DIFF_UNCHANGED);
	assert_int_equal(d.regression_count, 0);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

/* "More than" the threshold: exactly 10 % passes, one nanosecond more fails. */
static void test_threshold_boundary_is_exclusive(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 110 * MS);
	d = compare(&a, &b, 10, MS, false);
	assert_int_equal(find_item(&d, KH_DIFF_WALL, 0)->mark, KH_DIFF_UNCHANGED);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	diff__free(&d);

	b.wall_time_ns = 110 * MS + 1;
	d = compare(&a, &b, 10, MS, false);
	assert_int_equal(find_item(&d, KH_DIFF_WALL, 0)->mark, KH_DIFF_REGRESSED);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_REGRESSED);
	diff__free(&d);

	/* Threshold 0: any growth at all regresses. */
	b.wall_time_ns = 100 * MS + 1;
	d = compare(&a, &b, 0, MS, false);
	assert_int_equal(find_item(&d, KH_DIFF_WALL, 0)->mark, KH_DIFF_REGRESSED);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

static void test_improvement_is_marked_not_counted(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 80 * MS);
	stage(&a, KH_STAGE_DECODE, 10 * MS, 100);
	stage(&b, KH_STAGE_DECODE, 8 * MS, 100);
	d = compare(&a, &b, 10, MS, false);
	assert_int_equal(find_item(&d, KH_DIFF_WALL, 0)->mark, KH_DIFF_IMPROVED);
	assert_int_equal(find_item(&d, KH_DIFF_STAGE, KH_STAGE_DECODE)->mark, KH_DIFF_IMPROVED);
	assert_int_equal(d.regression_count, 0);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

static void test_min_ms_noise_floor(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;
	const struct kh_diff_item *walk, *read;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 100 * MS);
	/* Doubles, but both sides are under 1 ms. */
	stage(&a, KH_STAGE_SOURCE_WALK, 400000, 1);
	stage(&b, KH_STAGE_SOURCE_WALK, 800000, 1);
	/* Grows across the floor: one side above it is enough to judge. */
	stage(&a, KH_STAGE_SOURCE_READ, 900000, 1);
	stage(&b, KH_STAGE_SOURCE_READ, 1200000, 1);

	d = compare(&a, &b, 10, MS, false);
	walk = find_item(&d, KH_DIFF_STAGE, KH_STAGE_SOURCE_WALK);
	read = find_item(&d, KH_DIFF_STAGE, KH_STAGE_SOURCE_READ);
	assert_true(walk->below_floor);
	assert_int_equal(walk->mark, KH_DIFF_UNCHANGED);
	assert_false(read->below_floor);
	assert_int_equal(read->mark, KH_DIFF_REGRESSED);
	assert_int_equal(d.regression_count, 1);
	diff__free(&d);

	/* No floor: the tiny stage counts as well. */
	d = compare(&a, &b, 10, 0, false);
	walk = find_item(&d, KH_DIFF_STAGE, KH_STAGE_SOURCE_WALK);
	assert_false(walk->below_floor);
	assert_int_equal(walk->mark, KH_DIFF_REGRESSED);
	assert_int_equal(d.regression_count, 2);
	diff__free(&d);

	/* A higher floor silences both. */
	d = compare(&a, &b, 10, 2 * MS, false);
	assert_int_equal(d.regression_count, 0);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

/* A run that went back to scanning: its two scanning spells add up. */
static void test_states_summed_and_judged(void **state)
{
	static const uint32_t order[] = { KH_STATE_CREATED, KH_STATE_SCANNING,
					  KH_STATE_RESOLVING, KH_STATE_SCANNING };
	static const uint64_t base_ns[] = { 1 * MS, 30 * MS, 5 * MS, 30 * MS };
	static const uint64_t new_ns[] = { 1 * MS, 30 * MS, 5 * MS, 40 * MS };
	struct kh_profile a, b;
	struct kh_diff d;
	const struct kh_diff_item *scanning, *resolving;

	(void)state;
	profile_make(&a, "a", 66 * MS);
	profile_make(&b, "b", 66 * MS);
	states(&a, 4, order, base_ns);
	states(&b, 4, order, new_ns);
	d = compare(&a, &b, 10, MS, false);
	scanning = find_item(&d, KH_DIFF_STATE, KH_STATE_SCANNING);
	resolving = find_item(&d, KH_DIFF_STATE, KH_STATE_RESOLVING);
	assert_non_null(scanning);
	assert_true(scanning->base == 60.0 * MS);
	assert_true(scanning->new == 70.0 * MS);
	assert_int_equal(scanning->mark, KH_DIFF_REGRESSED);
	assert_int_equal(resolving->mark, KH_DIFF_UNCHANGED);
	/* States neither record reached are not listed. */
	assert_null(find_item(&d, KH_DIFF_STATE, KH_STATE_VERIFYING));
	assert_int_equal(d.regression_count, 1);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

static void test_stage_on_one_side_only(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;
	const struct kh_diff_item *gone, *added, *tiny;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 100 * MS);
	stage(&a, KH_STAGE_REPORTING, 5 * MS, 1);
	stage(&b, KH_STAGE_ENTROPY, 3 * MS, 100);
	stage(&b, KH_STAGE_MACHINE_LEARNING, 100000, 4);

	d = compare(&a, &b, 10, MS, false);
	gone = find_item(&d, KH_DIFF_STAGE, KH_STAGE_REPORTING);
	added = find_item(&d, KH_DIFF_STAGE, KH_STAGE_ENTROPY);
	tiny = find_item(&d, KH_DIFF_STAGE, KH_STAGE_MACHINE_LEARNING);
	assert_non_null(gone);
	assert_non_null(added);
	assert_non_null(tiny);

	assert_true(gone->base_present);
	assert_false(gone->new_present);
	assert_true(fabs(gone->delta_pct + 100.0) < 1e-9);
	assert_int_equal(gone->mark, KH_DIFF_IMPROVED);
	assert_true(gone->calls_changed);

	/* New work of 3 ms is an unbounded increase, so it regresses. */
	assert_false(added->base_present);
	assert_true(added->new_present);
	assert_false(added->has_delta);
	assert_int_equal(added->mark, KH_DIFF_REGRESSED);
	assert_int_equal(added->base_calls, 0);
	assert_int_equal(added->new_calls, 100);

	/* New but under the floor: noise. */
	assert_int_equal(tiny->mark, KH_DIFF_UNCHANGED);
	assert_int_equal(d.regression_count, 1);
	assert_int_equal(d.calls_changed_count, 3);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

static void test_calls_change_reported_not_regression(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;
	const struct kh_diff_item *it;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 100 * MS);
	stage(&a, KH_STAGE_SOURCE_READ, 20 * MS, 100);
	stage(&b, KH_STAGE_SOURCE_READ, 20 * MS, 200);
	stage(&a, KH_STAGE_DECODE, 10 * MS, 50);
	stage(&b, KH_STAGE_DECODE, 10 * MS, 50);

	d = compare(&a, &b, 10, MS, false);
	it = find_item(&d, KH_DIFF_STAGE, KH_STAGE_SOURCE_READ);
	assert_true(it->calls_changed);
	assert_int_equal(it->base_calls, 100);
	assert_int_equal(it->new_calls, 200);
	assert_int_equal(it->mark, KH_DIFF_UNCHANGED);
	assert_false(find_item(&d, KH_DIFF_STAGE, KH_STAGE_DECODE)->calls_changed);
	assert_int_equal(d.calls_changed_count, 1);
	assert_int_equal(d.regression_count, 0);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

/* Wall, throughput, states, then stages in wire order whatever the record's order. */
static void test_items_in_report_order(void **state)
{
	static const uint32_t order[] = { KH_STATE_SCANNING, KH_STATE_CREATED };
	static const uint64_t ns[] = { 2 * MS, 1 * MS };
	static const uint32_t expected_stages[] = { KH_STAGE_SOURCE_READ, KH_STAGE_ENTROPY,
						    KH_STAGE_REPORTING };
	struct kh_profile a, b;
	struct kh_diff d;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 100 * MS);
	states(&a, 2, order, ns);
	/* A record read from JSON keeps the file's order, which may be any. */
	a.stages[0] = (struct kh_stage_measurement){ KH_STAGE_REPORTING, MS, 1, 0 };
	a.stages[1] = (struct kh_stage_measurement){ KH_STAGE_SOURCE_READ, MS, 1, 0 };
	a.stage_count = 2;
	stage(&b, KH_STAGE_ENTROPY, MS, 1);

	d = compare(&a, &b, 10, MS, false);
	assert_int_equal(d.item_count, 2 + 2 + 3);
	assert_int_equal(d.items[0].kind, KH_DIFF_WALL);
	assert_int_equal(d.items[1].kind, KH_DIFF_THROUGHPUT);
	assert_int_equal(d.items[2].kind, KH_DIFF_STATE);
	assert_int_equal(d.items[2].id, KH_STATE_CREATED);
	assert_int_equal(d.items[3].id, KH_STATE_SCANNING);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(d.items[4 + i].kind, KH_DIFF_STAGE);
		assert_int_equal(d.items[4 + i].id, expected_stages[i]);
	}
	assert_string_equal(d.items[6].name, "reporting");
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

static void test_throughput_shown_not_judged(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;
	const struct kh_diff_item *it;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 200 * MS);
	d = compare(&a, &b, 10, MS, false);
	it = find_item(&d, KH_DIFF_THROUGHPUT, 0);
	/* 100 MB in 0.1 s, then in 0.2 s. */
	assert_true(fabs(it->base - 1e9) < 1e-3);
	assert_true(fabs(it->new - 5e8) < 1e-3);
	assert_true(fabs(it->delta_pct + 50.0) < 1e-9);
	assert_int_equal(it->mark, KH_DIFF_UNCHANGED);
	/* Only the wall time counts. */
	assert_int_equal(d.regression_count, 1);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

static void test_bad_threshold_rejected(void **state)
{
	struct kh_diff_options opts;
	struct kh_profile a;
	struct kh_diff d;

	(void)state;
	profile_make(&a, "a", MS);
	diff_options__init(&opts);
	opts.threshold_pct = -1;
	assert_int_equal(diff__compare(&a, &a, &opts, &d), -EINVAL);
	opts.threshold_pct = NAN;
	assert_int_equal(diff__compare(&a, &a, &opts, &d), -EINVAL);
	opts.threshold_pct = INFINITY;
	assert_int_equal(diff__compare(&a, &a, &opts, &d), -EINVAL);
	profile__free(&a);
}

/* --- comparability -------------------------------------------------------- */

static void test_like_runs_have_no_warnings(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;

	(void)state;
	/* run_id and binary_version always differ between the runs CI compares. */
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 100 * MS);
	d = compare(&a, &b, 10, MS, true);
	assert_int_equal(d.warning_count, 0);
	assert_int_equal(d.mismatch_count, 0);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

static void test_identity_mismatch_warnings(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;
	const struct kh_diff_warning *w;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 100 * MS);
	assert_int_equal(identity__set(&b.identity, "detector_digest", "det-xyz"), 0);
	assert_int_equal(identity__set(&b.identity, "backend_selected", "null"), 0);
	assert_int_equal(identity__set(&b.identity, "reader_threads", "3"), 0);
	assert_int_equal(identity__set(&b.identity, "cache_state", "warm"), 0);
	b.input_units = 11;

	d = compare(&a, &b, 10, MS, false);
	assert_int_equal(d.mismatch_count, 5);
	assert_int_equal(d.warning_count, 5);
	w = find_warning(&d, KH_DIFF_WARN_IDENTITY, "detector_digest");
	assert_non_null(w);
	assert_string_equal(w->base_value, "det-abc");
	assert_string_equal(w->new_value, "det-xyz");
	assert_string_equal(w->message, "records differ in 'detector_digest': 'det-abc' in "
					"a.json, 'det-xyz' in b.json");
	w = find_warning(&d, KH_DIFF_WARN_IDENTITY, "backend_selected");
	assert_non_null(w);
	assert_string_equal(w->new_value, "unselected");
	w = find_warning(&d, KH_DIFF_WARN_IDENTITY, "reader_threads");
	assert_non_null(w);
	assert_string_equal(w->base_value, "auto");
	assert_string_equal(w->new_value, "3");
	w = find_warning(&d, KH_DIFF_WARN_IDENTITY, "cache_state");
	assert_non_null(w);
	assert_string_equal(w->new_value, "warm");
	w = find_warning(&d, KH_DIFF_WARN_INPUT, "input_units");
	assert_non_null(w);
	assert_string_equal(w->base_value, "10");
	assert_string_equal(w->new_value, "11");
	assert_null(find_warning(&d, KH_DIFF_WARN_IDENTITY, "config_digest"));
	/* Warnings alone do not fail the comparison. */
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

/* --strict: a mismatch outranks even a regression. */
static void test_strict_mismatch_is_not_comparable(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 200 * MS);
	assert_int_equal(identity__set(&b.identity, "logical_cpus", "4"), 0);

	d = compare(&a, &b, 10, MS, true);
	assert_int_equal(d.mismatch_count, 1);
	assert_non_null(find_warning(&d, KH_DIFF_WARN_IDENTITY, "logical_cpus"));
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_NOT_COMPARABLE);
	diff__free(&d);

	d = compare(&a, &b, 10, MS, false);
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_REGRESSED);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

static void test_incomplete_records_warn_but_stay_comparable(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;
	const struct kh_diff_warning *w;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 100 * MS);
	assert_int_equal(profile__set_mode(&a, KH_MODE_BATCH), 0);
	assert_int_equal(profile__set_mode(&b, KH_MODE_SPAN), 0);
	b.ext.drops[KH_DROP_RINGBUF_FULL] = 3;
	b.ext.drops[KH_DROP_UNMATCHED_EXIT] = 1;
	b.ext.started_mid_session = true;
	a.ext.ended_mid_session = true;

	d = compare(&a, &b, 10, MS, true);
	assert_int_equal(d.mismatch_count, 0);
	assert_int_equal(d.warning_count, 4);
	w = find_warning(&d, KH_DIFF_WARN_MODE, NULL);
	assert_non_null(w);
	assert_string_equal(w->base_value, "batch");
	assert_string_equal(w->new_value, "span");
	w = find_warning(&d, KH_DIFF_WARN_DROPS, NULL);
	assert_non_null(w);
	assert_non_null(strstr(w->message, "record 'b.json'"));
	assert_non_null(strstr(w->message, "1 unmatched_exit, 3 ringbuf_full"));
	w = find_warning(&d, KH_DIFF_WARN_STARTED_MID, NULL);
	assert_non_null(w);
	assert_non_null(strstr(w->message, "'b.json' started mid-session"));
	w = find_warning(&d, KH_DIFF_WARN_ENDED_MID, NULL);
	assert_non_null(w);
	assert_non_null(strstr(w->message, "'a.json' ended mid-session"));
	assert_int_equal(d.verdict, KH_DIFF_VERDICT_OK);
	diff__free(&d);

	/* A record without khprof's extension has no mode: that differs too. */
	free(b.ext.mode);
	b.ext.mode = NULL;
	d = compare(&a, &b, 10, MS, false);
	w = find_warning(&d, KH_DIFF_WARN_MODE, NULL);
	assert_non_null(w);
	assert_string_equal(w->new_value, "none");
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

/* --- output --------------------------------------------------------------- */

static void test_text_table_and_summary(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;
	char *text, *line;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 105 * MS);
	stage(&a, KH_STAGE_HOT_PATTERNS, 50 * MS, 100);
	stage(&b, KH_STAGE_HOT_PATTERNS, 60 * MS, 100);
	stage(&a, KH_STAGE_DECODE, 10 * MS, 100);
	stage(&b, KH_STAGE_DECODE, 8 * MS, 80);
	stage(&b, KH_STAGE_ENTROPY, 3 * MS, 7);

	d = compare(&a, &b, 10, MS, false);
	text = diff__render_text(&d);
	assert_non_null(text);

	line = line_starting(text, "wall ");
	assert_string_equal(line, "wall                              100.000 ms      105.000 ms"
				  "    +5.0%");
	free(line);
	line = line_starting(text, "stage hot-patterns ");
	assert_string_equal(line, "stage hot-patterns                 50.000 ms       60.000 ms"
				  "   +20.0%  REGRESSED  calls=100 per_call_us=500.000->600.000");
	free(line);
	line = line_starting(text, "stage decode ");
	assert_string_equal(line, "stage decode                       10.000 ms        8.000 ms"
				  "   -20.0%  improved   calls=100->80 per_call_us=100.000->100.000");
	free(line);
	line = line_starting(text, "stage entropy ");
	assert_string_equal(line, "stage entropy                              -        3.000 ms"
				  "      new  REGRESSED  calls=0->7 per_call_us=n/a->428.571");
	free(line);
	line = line_starting(text, "diff: ");
	assert_string_equal(line, "diff: 2 regressions over 10% (wall +5.0%)");
	free(line);
	/* The summary is the last line. */
	assert_true(has_suffix(text, "(wall +5.0%)\n"));
	/* Wire order: hot-patterns (6) before entropy (14) before decode (16). */
	assert_true(strstr(text, "stage hot-patterns") < strstr(text, "stage entropy"));
	assert_true(strstr(text, "stage entropy") < strstr(text, "stage decode"));
	free(text);
	diff__free(&d);

	d = compare(&a, &a, 2.5, MS, false);
	text = diff__render_text(&d);
	line = line_starting(text, "diff: ");
	assert_string_equal(line, "diff: 0 regressions over 2.5% (wall +0.0%)");
	free(line);
	free(text);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

static cJSON *json_item(cJSON *items, const char *kind, const char *name)
{
	cJSON *it;

	cJSON_ArrayForEach(it, items)
		if (!strcmp(cJSON_GetObjectItem(it, "kind")->valuestring, kind) &&
		    !strcmp(cJSON_GetObjectItem(it, "name")->valuestring, name))
			return it;
	return NULL;
}

static void test_json_output_has_verdict(void **state)
{
	struct kh_profile a, b;
	struct kh_diff d;
	cJSON *root, *items, *it, *warnings;
	char *json;

	(void)state;
	profile_make(&a, "a", 100 * MS);
	profile_make(&b, "b", 100 * MS);
	stage(&a, KH_STAGE_HOT_PATTERNS, 50 * MS, 100);
	stage(&b, KH_STAGE_HOT_PATTERNS, 60 * MS, 120);
	stage(&b, KH_STAGE_ENTROPY, 3 * MS, 7);
	assert_int_equal(identity__set(&b.identity, "workload_class", "nightly"), 0);

	d = compare(&a, &b, 10, MS, false);
	json = diff__to_json(&d, "a.json", "b.json");
	assert_non_null(json);
	root = cJSON_Parse(json);
	assert_non_null(root);
	assert_string_equal(cJSON_GetObjectItem(root, "schema")->valuestring, "khprof-diff-v1");
	assert_string_equal(cJSON_GetObjectItem(root, "verdict")->valuestring, "regressed");
	assert_string_equal(cJSON_GetObjectItem(root, "base")->valuestring, "a.json");
	assert_int_equal(cJSON_GetObjectItem(root, "regressions")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(root, "mismatches")->valueint, 1);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(root, "comparable")));
	assert_true(cJSON_GetObjectItem(root, "threshold_pct")->valuedouble == 10.0);
	assert_true(cJSON_GetObjectItem(root, "min_ms")->valuedouble == 1.0);
	assert_true(cJSON_GetObjectItem(root, "wall_delta_pct")->valuedouble == 0.0);

	warnings = cJSON_GetObjectItem(root, "warnings");
	assert_int_equal(cJSON_GetArraySize(warnings), 1);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(warnings, 0), "field")
				    ->valuestring, "workload_class");

	items = cJSON_GetObjectItem(root, "items");
	assert_int_equal(cJSON_GetArraySize(items), (int)d.item_count);
	it = json_item(items, "stage", "hot-patterns");
	assert_non_null(it);
	assert_string_equal(cJSON_GetObjectItem(it, "mark")->valuestring, "regressed");
	assert_true(cJSON_GetObjectItem(it, "base")->valuedouble == 50.0 * MS);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(it, "calls_changed")));
	assert_int_equal(cJSON_GetObjectItem(it, "new_calls")->valueint, 120);
	it = json_item(items, "stage", "entropy");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(it, "base")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(it, "delta_pct")));
	it = json_item(items, "throughput", "throughput");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(it, "mark")));
	cJSON_Delete(root);
	free(json);
	diff__free(&d);

	/* Strict with that mismatch: the verdict CI reads says so. */
	d = compare(&a, &b, 10, MS, true);
	json = diff__to_json(&d, NULL, NULL);
	root = cJSON_Parse(json);
	assert_non_null(root);
	assert_string_equal(cJSON_GetObjectItem(root, "verdict")->valuestring, "not-comparable");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(root, "base")));
	cJSON_Delete(root);
	free(json);
	diff__free(&d);
	profile__free(&a);
	profile__free(&b);
}

/* --- the command, end to end ---------------------------------------------- */

struct run {
	int status;
	char *out, *err;
};

static const char *khprof_path(void)
{
	static char *path;
	const char *env = getenv("KH_KHPROF");

	if (!path && env && *env)
		path = strdup(env);
	else if (!path && asprintf(&path, "%s/build/khprof", test_repo_root()) < 0)
		abort();
	if (access(path, X_OK) == 0)
		return path;
	if (running_in_ci())
		fail_msg("%s is missing and CI=true: run `make build/khprof`", path);
	print_message("%s not built: skipping the end-to-end diff tests\n", path);
	skip();
	return NULL;
}

static char *fixture(const char *name)
{
	char *path;

	if (asprintf(&path, "%s/diff/%s", golden_dir(), name) < 0)
		abort();
	return path;
}

static char *read_and_unlink(char *path)
{
	char *text = NULL;
	size_t len;

	assert_int_equal(file__read_all(path, &text, &len), 0);
	unlink(path);
	free(path);
	return text;
}

/* Runs khprof with args (NULL-terminated); stdout and stderr go to files, not pipes,
 * so that neither can fill up while the other is read. */
static struct run run_khprof(const char *first, ...)
{
	char *argv[16], *out_path = write_temp(""), *err_path = write_temp("");
	struct run r = { .status = -1 };
	int argc = 0, wstatus;
	va_list ap;
	pid_t pid;

	assert_non_null(out_path);
	assert_non_null(err_path);
	argv[argc++] = (char *)khprof_path();
	argv[argc++] = (char *)first;
	va_start(ap, first);
	while (argc < 15 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int out = open(out_path, O_WRONLY | O_TRUNC);
		int err = open(err_path, O_WRONLY | O_TRUNC);

		if (out < 0 || err < 0)
			_exit(125);
		dup2(out, STDOUT_FILENO);
		dup2(err, STDERR_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(wstatus))
		r.status = WEXITSTATUS(wstatus);
	r.out = read_and_unlink(out_path);
	r.err = read_and_unlink(err_path);
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static void test_cli_regression_exits_1(void **state)
{
	char *base = fixture("base.json"), *slower = fixture("slower.json");
	struct run r;
	char *line;

	(void)state;
	r = run_khprof("diff", base, slower, NULL);
	assert_int_equal(r.status, 1);
	line = line_starting(r.out, "stage hot-patterns ");
	assert_non_null(line);
	assert_non_null(strstr(line, "+20.0%  REGRESSED"));
	free(line);
	line = line_starting(r.out, "stage decode ");
	assert_non_null(strstr(line, "improved"));
	free(line);
	line = line_starting(r.out, "stage source-walk ");
	assert_null(strstr(line, "REGRESSED")); /* +100 %, but under 1 ms */
	free(line);
	line = line_starting(r.out, "diff: ");
	assert_string_equal(line, "diff: 4 regressions over 10% (wall +12.0%)");
	free(line);
	assert_non_null(strstr(r.err, "khprof: note: call counts differ in 3 stages"));
	assert_null(strstr(r.err, "warning"));
	run_free(&r);

	/* Looser threshold and no floor: other verdicts from the same records. */
	r = run_khprof("diff", base, slower, "--threshold", "25", "--min-ms", "0", NULL);
	assert_int_equal(r.status, 1);
	line = line_starting(r.out, "diff: ");
	assert_string_equal(line, "diff: 2 regressions over 25% (wall +12.0%)");
	free(line);
	run_free(&r);
	/* With 5 ms of floor the new 3 ms stage is noise, and 25 % covers the rest. */
	r = run_khprof("diff", base, slower, "--threshold=25%", "--min-ms=5", NULL);
	assert_int_equal(r.status, 0);
	run_free(&r);
	free(base);
	free(slower);
}

static void test_cli_within_threshold_exits_0(void **state)
{
	char *base = fixture("base.json"), *same = fixture("same.json");
	struct run r;
	char *line;

	(void)state;
	r = run_khprof("diff", base, same, NULL);
	assert_int_equal(r.status, 0);
	line = line_starting(r.out, "diff: ");
	assert_string_equal(line, "diff: 0 regressions over 10% (wall +4.0%)");
	free(line);
	assert_null(strstr(r.out, "REGRESSED"));
	assert_string_equal(r.err, "");
	run_free(&r);
	free(base);
	free(same);
}

static void test_cli_mismatch_warns_and_strict_exits_4(void **state)
{
	char *base = fixture("base.json"), *other = fixture("other_identity.json");
	struct run r;

	(void)state;
	r = run_khprof("diff", base, other, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "khprof: warning: records differ in 'detector_digest': "
				      "'det-abc' in "));
	assert_non_null(strstr(r.err, "khprof: warning: records differ in 'scanner_threads'"));
	assert_non_null(strstr(r.err, "khprof: warning: tracing modes differ: 'batch'"));
	assert_non_null(strstr(r.err, "lost spans or events: 3 ringbuf_full"));
	assert_non_null(strstr(r.err, "started mid-session"));
	assert_non_null(strstr(r.out, "\ndiff: 0 regressions over 10% (wall +0.0%)\n"));
	run_free(&r);

	r = run_khprof("diff", "--strict", base, other, NULL);
	assert_int_equal(r.status, 3);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "khprof: records differ in 'detector_digest'"));
	assert_non_null(strstr(r.err, "2 identity or input differences"));
	/* Incomplete records stay warnings, even under --strict. */
	assert_non_null(strstr(r.err, "khprof: warning: tracing modes differ"));
	run_free(&r);
	free(base);
	free(other);
}

static void test_cli_json_format(void **state)
{
	char *base = fixture("base.json"), *slower = fixture("slower.json");
	cJSON *root, *items;
	struct run r;

	(void)state;
	r = run_khprof("diff", base, slower, "--format", "json", NULL);
	assert_int_equal(r.status, 1);
	root = cJSON_Parse(r.out);
	assert_non_null(root);
	assert_string_equal(cJSON_GetObjectItem(root, "verdict")->valuestring, "regressed");
	assert_int_equal(cJSON_GetObjectItem(root, "regressions")->valueint, 4);
	assert_string_equal(cJSON_GetObjectItem(root, "new")->valuestring, slower);
	items = cJSON_GetObjectItem(root, "items");
	assert_string_equal(cJSON_GetObjectItem(json_item(items, "stage", "entropy"), "mark")
				    ->valuestring, "regressed");
	cJSON_Delete(root);
	run_free(&r);
	free(base);
	free(slower);
}

static void test_cli_bad_input_exits_3(void **state)
{
	char *base = fixture("base.json"), *truncated = fixture("truncated.json");
	char *missing = fixture("no-such-record.json");
	char *expected;
	struct run r;

	(void)state;
	r = run_khprof("diff", base, truncated, NULL);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.out, "");
	if (asprintf(&expected, "khprof: cannot read record '%s': ", truncated) < 0)
		abort();
	assert_true(!strncmp(r.err, expected, strlen(expected)));
	/* One line: the file and the problem, nothing else. */
	assert_ptr_equal(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	free(expected);
	run_free(&r);

	r = run_khprof("diff", missing, base, NULL);
	assert_int_equal(r.status, 2);
	if (asprintf(&expected, "khprof: cannot read record '%s': No such file or directory\n",
		     missing) < 0)
		abort();
	assert_string_equal(r.err, expected);
	free(expected);
	run_free(&r);
	free(base);
	free(truncated);
	free(missing);
}

static void test_cli_usage_errors_exit_2(void **state)
{
	char *base = fixture("base.json");
	struct run r;

	(void)state;
	r = run_khprof("diff", base, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "diff needs two records"));
	run_free(&r);
	r = run_khprof("diff", base, base, "--threshold", "-5", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "bad --threshold '-5'"));
	run_free(&r);
	r = run_khprof("diff", base, base, "--min-ms", "nan", NULL);
	assert_int_equal(r.status, 2);
	run_free(&r);
	r = run_khprof("diff", base, base, "--format", "xml", NULL);
	assert_int_equal(r.status, 2);
	run_free(&r);
	r = run_khprof("diff", base, base, "--threshold", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "option '--threshold' needs a value"));
	run_free(&r);

	r = run_khprof("diff", "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_true(!strncmp(r.out, "usage: khprof diff BASE NEW", 27));
	assert_non_null(strstr(r.out, "1 regression found"));
	run_free(&r);
	r = run_khprof("--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "   diff     compare two records and flag regressions\n"));
	run_free(&r);
	free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stage_regression_over_threshold),
		cmocka_unit_test(test_threshold_boundary_is_exclusive),
		cmocka_unit_test(test_improvement_is_marked_not_counted),
		cmocka_unit_test(test_min_ms_noise_floor),
		cmocka_unit_test(test_states_summed_and_judged),
		cmocka_unit_test(test_stage_on_one_side_only),
		cmocka_unit_test(test_calls_change_reported_not_regression),
		cmocka_unit_test(test_items_in_report_order),
		cmocka_unit_test(test_throughput_shown_not_judged),
		cmocka_unit_test(test_bad_threshold_rejected),
		cmocka_unit_test(test_like_runs_have_no_warnings),
		cmocka_unit_test(test_identity_mismatch_warnings),
		cmocka_unit_test(test_strict_mismatch_is_not_comparable),
		cmocka_unit_test(test_incomplete_records_warn_but_stay_comparable),
		cmocka_unit_test(test_text_table_and_summary),
		cmocka_unit_test(test_json_output_has_verdict),
		cmocka_unit_test(test_cli_regression_exits_1),
		cmocka_unit_test(test_cli_within_threshold_exits_0),
		cmocka_unit_test(test_cli_mismatch_warns_and_strict_exits_4),
		cmocka_unit_test(test_cli_json_format),
		cmocka_unit_test(test_cli_bad_input_exits_3),
		cmocka_unit_test(test_cli_usage_errors_exit_2),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
