// SPDX-License-Identifier: MIT
/*
 * Integration tests of khprof.latency: per-stage percentiles and the
 * on-CPU/off-CPU split, in every mode, against what the workload measured
 * itself (tests/workloads/workload.c, own_span).  The workload times each
 * span from inside the probes and from outside them, and reads its thread's
 * CPU time so that its inner off-CPU figure can only be too low and its
 * outer one too high: the record must lie between them, up to the stated
 * error bounds, so no timing threshold can flake.  They need root (BPF).
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hist.h"
#include "khtest.h"
#include "record.h"

#define WORKLOAD "build/workloads/workload"

static char *khprof;
static char *tmpdir;
static const char *const modes[] = { "span", "pair", "batch" };

/* khprof record --mode MODE -o TMPDIR/NAME -- WORKLOAD ARGS...; loads the record. */
static struct run_result record(const char *mode, const char *name, struct kh_profile *p,
				char *a1, char *a2, char *a3)
{
	char out[PATH_MAX];
	char *argv[] = { khprof, "record", "-q", "--mode", (char *)mode, "-o", out, "--",
			 WORKLOAD, a1, a2, a3, NULL };
	struct run_result r;

	snprintf(out, sizeof(out), "%s/%s-%s.json", tmpdir, name, mode);
	r = run_cmd(NULL, -1, argv);
	if (r.exit_code != 0)
		fail_msg("khprof record --mode %s %s exited %d: %s", mode, a1, r.exit_code, r.err);
	load_record(out, p);
	return r;
}

static const struct kh_stage_dist *dist_of(const struct kh_profile *p, uint32_t stage)
{
	assert_true(p->ext.latency.present);
	assert_true(p->ext.latency.stages[stage].present);
	return &p->ext.latency.stages[stage];
}

/*
 * Each recorded span lies between the workload's inner and outer times of
 * it, less the calibrated bias, so the k-th shortest does too; the record's
 * percentile is within half a bucket (1/64) of that, and batch mode's TSC
 * rate adds at most 1/1000.
 */
static void check_mix(const char *mode)
{
	static const unsigned int permille[] = { 500, 900, 990, 999, 1000 };
	unsigned long long inner[5], outer[5];
	struct kh_profile p;
	struct run_result r = record(mode, "mix", &p, "mix", "1000", NULL);
	const struct kh_stage_dist *d = dist_of(&p, KH_STAGE_CONFIRMED_PATTERNS);
	const char *line = strstr(r.out, "outer ");

	assert_int_equal(sscanf(r.out, "inner %llu %llu %llu %llu %llu", &inner[0], &inner[1],
				&inner[2], &inner[3], &inner[4]), 5);
	assert_non_null(line);
	assert_int_equal(sscanf(line, "outer %llu %llu %llu %llu %llu", &outer[0], &outer[1],
				&outer[2], &outer[3], &outer[4]), 5);
	assert_int_equal(d->spans, 1000);
	for (int q = 0; q < 5; q++) {
		uint64_t got = kh_dist__percentile(d, permille[q], p.ext.span_bias_ns);
		uint64_t slack = outer[q] / 64 + outer[q] / 1000 + 2;
		uint64_t low = inner[q] > p.ext.span_bias_ns + slack
				       ? inner[q] - p.ext.span_bias_ns - slack : 0;

		if (got < low || got > outer[q] + slack)
			fail_msg("%s mode: p%.1f %llu ns not within [%llu, %llu] (own clock: inner "
				 "%llu, outer %llu, bias %llu)", mode, permille[q] / 10.0,
				 (unsigned long long)got, (unsigned long long)low,
				 (unsigned long long)(outer[q] + slack), inner[q], outer[q],
				 (unsigned long long)p.ext.span_bias_ns);
	}
	/* The exact maximum is kept beside the buckets. */
	assert_true(d->max_ns == kh_dist__percentile(d, 1000, p.ext.span_bias_ns));
	profile__free(&p);
	run_result_free(&r);
}

static void test_known_mix_percentiles_all_modes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		check_mix(modes[i]);
}

struct own_split {
	unsigned int stage;
	unsigned long long inner_ns, outer_ns, off_low_ns, off_high_ns, slept_ns;
};

static const char *parse_split(const char *text, struct own_split *s)
{
	const char *line = strstr(text, "stage=");

	assert_non_null(line);
	assert_int_equal(sscanf(line, "stage=%u inner_ns=%llu outer_ns=%llu off_low_ns=%llu "
				"off_high_ns=%llu slept_ns=%llu", &s->stage, &s->inner_ns,
				&s->outer_ns, &s->off_low_ns, &s->off_high_ns, &s->slept_ns), 6);
	return line + 1;
}

/*
 * The stated accuracy: off-CPU time within 2% of the elapsed time of the
 * workload's bounds.  A sleep is blocked time at least as long as asked for
 * (nanosleep's guarantee), less the same 2%.  Below, one interval more: on
 * the shared development machine, under load, about one run in fifteen
 * of this file lost one switch whose events never reached khprof's
 * programs (docs/SCHEMA.md, khprof.latency).  The kernel's own switch
 * count shows it (missed_switches) when the thread switches again or
 * exits inside the session, but not when that happens after it; so one
 * sleep of the workload, or a scheduler slice (4 ms) of a computing span.
 */
static void check_split(const char *mode, const struct kh_profile *p, const struct own_split *s,
			uint64_t one_interval_ns)
{
	const struct kh_stage_dist *d = dist_of(p, s->stage);
	uint64_t tolerance = s->outer_ns / 50;
	uint64_t low_tolerance = tolerance + one_interval_ns;
	uint64_t blocked = d->off_cpu_ns - d->runnable_ns;

	assert_true(p->ext.latency.off_cpu);
	assert_int_equal(d->offcpu_truncated, 0);
	assert_true(d->runnable_ns <= d->off_cpu_ns);
	if (p->ext.latency.missed_switches) {
		/*
		 * The record says a switch's other half was not seen (rare; the
		 * kernel skipped a scheduler event): its off-CPU time is then a
		 * lower bound, and only the upper bound can be checked.
		 */
		if (d->off_cpu_ns > s->off_high_ns + tolerance)
			fail_msg("%s mode, stage %u: off-CPU %llu ns above %llu", mode, s->stage,
				 (unsigned long long)d->off_cpu_ns, s->off_high_ns);
		return;
	}
	if (d->off_cpu_ns + low_tolerance < s->off_low_ns ||
	    d->off_cpu_ns > s->off_high_ns + tolerance)
		fail_msg("%s mode, stage %u: off-CPU %llu ns not within 2%% of [%llu, %llu]", mode,
			 s->stage, (unsigned long long)d->off_cpu_ns, s->off_low_ns, s->off_high_ns);
	if (blocked + low_tolerance < s->slept_ns)
		fail_msg("%s mode, stage %u: blocked %llu ns, but the workload slept %llu ns", mode,
			 s->stage, (unsigned long long)blocked, s->slept_ns);
	if (s->slept_ns == 0 && blocked > tolerance)
		fail_msg("%s mode, stage %u: %llu ns blocked in pure computation", mode, s->stage,
			 (unsigned long long)blocked);
}

static void check_split_run(const char *mode, const char *name, char *a1, char *a2, char *a3,
			    int threads, uint64_t one_interval_ns)
{
	struct kh_profile p;
	struct run_result r = record(mode, name, &p, a1, a2, a3);
	const char *at = r.out;

	for (int t = 0; t < threads; t++) {
		struct own_split s;

		at = parse_split(at, &s);
		check_split(mode, &p, &s, one_interval_ns);
	}
	profile__free(&p);
	run_result_free(&r);
}

/* 10 spans of 1 ms of work and a 10 ms sleep: ~10 ms of 11 off CPU, blocked. */
static void test_sleep_inside_span_all_modes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		check_split_run(modes[i], "sleep", "sleep", "10", "10", 1, 11000000);
}

/* Pure computation: off CPU only when preempted, never blocked. */
static void test_compute_only_all_modes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		check_split_run(modes[i], "compute", "compute", "20", "2000", 1, 4000000);
}

/* Two threads, one stage each: each span's split is its own thread's. */
static void test_two_threads_split_all_modes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		check_split_run(modes[i], "sleep2", "sleep2", "10", "10", 2, 11000000);
}

/*
 * Batch mode timed with CLOCK_MONOTONIC (the TSC distrusted through the
 * test hook): its spans' starts are in ns, and the off-CPU pass a batch
 * takes only when one of them began before a switch must still find them.
 */
static void test_split_batch_monotonic(void **state)
{
	struct kh_profile p;
	struct run_result r;

	(void)state;
	setenv("KHPROF_TEST_TSC", "untrusted", 1);
	check_split_run("batch", "sleep-mono", "sleep", "10", "10", 1, 11000000);
	check_split_run("batch", "sleep2-mono", "sleep2", "10", "10", 2, 11000000);
	r = record("batch", "clock-mono", &p, "sleep", "2", "1");
	assert_string_equal(p.ext.span_clock, "monotonic");
	profile__free(&p);
	run_result_free(&r);
	unsetenv("KHPROF_TEST_TSC");
}

/*
 * Spans that each block once, as a scanner's waits on its queue: a batch of
 * 256 needs 256 logged switches for its off-CPU split, which the log of 64
 * before did not hold (the demo's queue-wait spans got lower bounds and a
 * warning).  Every span's off-CPU time is whole, in every mode.
 */
static void test_queue_waits_exact_all_modes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct kh_profile p;
		struct run_result r = record(modes[i], "waits", &p, "waits", "600", NULL);
		const struct kh_stage_dist *d = dist_of(&p, KH_STAGE_SCANNER_QUEUE_WAIT);

		assert_non_null(strstr(r.out, "waits n=600"));
		assert_int_equal(calls_of(&p, KH_STAGE_SCANNER_QUEUE_WAIT), 600);
		if (d->offcpu_truncated)
			fail_msg("%s mode: %" PRIu64 " of 600 queue waits with a lower bound for "
				 "their off-CPU time", modes[i], d->offcpu_truncated);
		assert_true(d->off_cpu_ns > 0);
		assert_true(d->runnable_ns <= d->off_cpu_ns);
		assert_true(d->off_cpu_ns <= elapsed_of(&p, KH_STAGE_SCANNER_QUEUE_WAIT) +
						  600 * p.ext.span_bias_ns);
		assert_null(strstr(r.err, "only partly known"));
		profile__free(&p);
		run_result_free(&r);
	}
}

static int group_setup(void **state)
{
	(void)state;
	tmpdir = make_temp_dir("khprof-latency");
	return tmpdir ? 0 : -1;
}

static int group_teardown(void **state)
{
	int err = remove_tree(tmpdir);

	(void)state;
	free(tmpdir);
	return err;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_mix_percentiles_all_modes),
		cmocka_unit_test(test_sleep_inside_span_all_modes),
		cmocka_unit_test(test_compute_only_all_modes),
		cmocka_unit_test(test_two_threads_split_all_modes),
		cmocka_unit_test(test_split_batch_monotonic),
		cmocka_unit_test(test_queue_waits_exact_all_modes),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	if (geteuid() != 0) {
		if (running_in_ci()) {
			fprintf(stderr, "test_latency: BPF tests need root and CI=true forbids "
					"skipping them\n");
			return 1;
		}
		printf("test_latency: skipped: BPF integration tests need root (CAP_BPF, "
		       "CAP_PERFMON)\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
