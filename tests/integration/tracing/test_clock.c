// SPDX-License-Identifier: MIT
/*
 * Integration tests of the span clock (userspace/capture/clock/span_clock.h):
 * the record names the clock that timed its spans and why; spans that move
 * between CPUs are counted and lie between the program's own clock
 * readings in every mode, with the clock this machine's evidence chose and
 * with CLOCK_MONOTONIC forced; an untrustworthy TSC (simulated through the
 * KHPROF_TEST_TSC=untrusted hook) makes batch mode ask the program for
 * CLOCK_MONOTONIC and says so once.  Nothing here depends on which clock
 * this machine's evidence picks.  They need root (BPF); they skip with a
 * message elsewhere, and never skip when CI=true.
 */
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "counter.h"
#include "khchild.h"
#include "record.h"

#define WORKLOAD "build/workloads/workload"

static char *khprof;
static char *tmpdir;

static const char *const modes[] = { "span", "pair", "batch" };

/* khtest.h's record_run with this test's khprof. */
#define record(mode, out, p, ...) record_run(khprof, mode, out, p, __VA_ARGS__)

static long number_after(const char *text, const char *key)
{
	const char *at = strstr(text, key);

	assert_non_null(at);
	return atol(at + strlen(key));
}

static size_t count_of(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *at = text; (at = strstr(at, needle)); at += strlen(needle))
		n++;
	return n;
}

static int allowed_cpus(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

#define NOTE "khprof: note: batch mode times spans with CLOCK_MONOTONIC"

/*
 * Default mode: batch, with the clock the evidence chose, named with a
 * reason; the program was asked for CLOCK_MONOTONIC exactly when the record
 * says so.  Span and pair mode time with CLOCK_MONOTONIC and say why.
 */
static void test_record_names_the_clock(void **state)
{
	char out[PATH_MAX];
	struct kh_profile p;
	struct run_result r;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "default.json");
	r = record(NULL, out, &p, "-q", "--", WORKLOAD, "migrate", "4", "100", NULL);
	assert_string_equal(p.ext.mode, "batch");
	assert_non_null(p.ext.span_clock);
	assert_non_null(p.ext.span_clock_reason);
	assert_true(strlen(p.ext.span_clock_reason) > 10);
	/* The machine's counter: "tsc" on x86-64, "cntvct" on aarch64 (counter.h). */
	if (strcmp(p.ext.span_clock, counter__clock()) == 0)
		assert_int_equal(number_after(r.out, "monotonic_clock="), 0);
	else if (strcmp(p.ext.span_clock, "monotonic") == 0)
		assert_int_equal(number_after(r.out, "monotonic_clock="), 1);
	else
		fail_msg("span_clock '%s' is neither %s nor monotonic", p.ext.span_clock,
			 counter__clock());
	/* -q: no note, whichever clock. */
	assert_null(strstr(r.err, "khprof: note:"));
	profile__free(&p);
	run_result_free(&r);
	/* The seed's own reader still reads the record, the clock members in it. */
	assert_seed_conformance_of(khprof, out);

	for (size_t i = 0; i < 2; i++) {
		path_in(out, sizeof(out), tmpdir, "named-%s.json", modes[i]);
		r = record(modes[i], out, &p, "-q", "--", WORKLOAD, "migrate", "4", "100", NULL);
		assert_string_equal(p.ext.span_clock, "monotonic");
		assert_non_null(strstr(p.ext.span_clock_reason, modes[i]));
		assert_int_equal(number_after(r.out, "monotonic_clock="), 0);
		profile__free(&p);
		run_result_free(&r);
	}
}

/*
 * Spans that start on one CPU and end on another: all counted, each
 * between the program's inner and outer readings of its own clock, in
 * every mode, with the evidence's clock and with CLOCK_MONOTONIC forced.
 */
static void test_migrating_spans_are_bounded(void **state)
{
	char out[PATH_MAX], what[96];
	struct kh_profile p;
	struct run_result r;

	(void)state;
	for (int forced = 0; forced < 2; forced++) {
		if (forced)
			setenv("KHPROF_TEST_TSC", "untrusted", 1);
		for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
			path_in(out, sizeof(out), tmpdir, "migrate-%s-%d.json", modes[i], forced);
			r = record(modes[i], out, &p, "-q", "--", WORKLOAD, "migrate", "60", "200",
				   NULL);
			snprintf(what, sizeof(what), "%s mode, %s clock, migrating spans", modes[i],
				 p.ext.span_clock);
			assert_between_own_clocks(what, &p, r.out, 60);
			/* Where two CPUs are allowed, every span did move. */
			if (allowed_cpus() > 1)
				assert_int_equal(number_after(r.out, "migrated="), 60);
			if (forced)
				assert_string_equal(p.ext.span_clock, "monotonic");
			/* The program was asked for CLOCK_MONOTONIC exactly when batch mode's record says so. */
			if (number_after(r.out, "monotonic_clock=") !=
			    (strcmp(modes[i], "batch") == 0 && strcmp(p.ext.span_clock, "monotonic") == 0))
				fail_msg("%s: the program's clock word disagrees with the record: %s", what,
					 r.out);
			profile__free(&p);
			run_result_free(&r);
		}
		unsetenv("KHPROF_TEST_TSC");
	}
}

/*
 * A TSC the evidence does not trust (simulated) keeps batch mode, with
 * CLOCK_MONOTONIC: the record says why, stderr says it once per command
 * however many runs it makes, and -q silences it.
 */
static void test_untrusted_tsc_falls_back_and_says_so(void **state)
{
	char out[PATH_MAX], dir[PATH_MAX];
	char *series[] = { khprof, "record", "--repeat", "2", "--warmup", "1", "-o", dir, "--",
			   WORKLOAD, "migrate", "4", "100", NULL };
	struct kh_profile p;
	struct run_result r;

	(void)state;
	setenv("KHPROF_TEST_TSC", "untrusted", 1);
	path_in(out, sizeof(out), tmpdir, "untrusted.json");
	r = record(NULL, out, &p, "--", WORKLOAD, "migrate", "4", "100", NULL);
	assert_string_equal(p.ext.mode, "batch");
	assert_string_equal(p.ext.span_clock, "monotonic");
	assert_non_null(strstr(p.ext.span_clock_reason, "KHPROF_TEST_TSC=untrusted"));
	assert_int_equal(number_after(r.out, "monotonic_clock="), 1);
	assert_int_equal(count_of(r.err, NOTE), 1);
	assert_non_null(strstr(r.err, "KHPROF_TEST_TSC=untrusted"));
	assert_int_equal(calls_of(&p, KH_STAGE_CONFIRMED_PATTERNS), 4);
	profile__free(&p);
	run_result_free(&r);

	path_in(out, sizeof(out), tmpdir, "untrusted-q.json");
	r = record(NULL, out, &p, "-q", "--", WORKLOAD, "migrate", "4", "100", NULL);
	assert_null(strstr(r.err, "khprof: note:"));
	profile__free(&p);
	run_result_free(&r);

	/* Three traced runs, one note. */
	path_in(dir, sizeof(dir), tmpdir, "untrusted-runs");
	r = run_here(series);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(count_of(r.err, NOTE), 1);
	run_result_free(&r);
	unsetenv("KHPROF_TEST_TSC");
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_clock",
		.need = "BPF integration tests need root (CAP_BPF, CAP_PERFMON)",
		.tmp_prefix = "khprof-clock",
		.tmpdir = &tmpdir,
		.seed_checked = true,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_names_the_clock),
		cmocka_unit_test(test_migrating_spans_are_bounded),
		cmocka_unit_test(test_untrusted_tsc_falls_back_and_says_so),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
