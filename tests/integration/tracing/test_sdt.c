// SPDX-License-Identifier: MIT
/*
 * A program instrumented with the standard <sys/sdt.h> macros instead of
 * keyhog_profile.h (tests/workloads/sdt.c, with and without semaphores):
 * recorded in pair and span mode, and by default, with exact counts,
 * attribution and identity; its semaphores set for the attached probes
 * only; --mode batch, which needs the header's per-thread buffer, warned
 * about.  Needs root; never skips when CI=true.
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

#include "khtest.h"
#include "record.h"

#define SDT "build/workloads/sdt"
#define SDT_NOSEM "build/workloads/sdt-nosem"
#define ROOT_SPANS 7
#define DECODED_SPANS 5

static char *khprof;
static char *tmpdir;

/* khprof record [--mode MODE] of program; the record in *p, the run's output returned. */
static struct run_result record_sdt(const char *program, const char *mode, struct kh_profile *p)
{
	char out[PATH_MAX];
	char *argv[] = { khprof, "record", "-q", "-o", out, "--mode", (char *)mode, "--",
			 (char *)program, "spans", "7", "5", NULL };
	struct run_result r;

	path_in(out, sizeof(out), tmpdir, "%s-%s.json", strrchr(program, '/') + 1,
		mode ? mode : "default");
	if (!mode) /* no --mode: the default */
		memmove(&argv[5], &argv[7], 6 * sizeof(argv[0]));
	r = run_here(argv);
	if (r.exit_code != 0)
		fail_msg("khprof record %s exited %d: %s", program, r.exit_code, r.err);
	load_record(out, p);
	assert_seed_conformance_of(khprof, out);
	return r;
}

/* Every span, in the stages and attribution the program gave, and its identity. */
static void assert_whole_record(const struct kh_profile *p, const char *mode)
{
	const struct kh_stage_measurement *decode = profile__find_stage(p, KH_STAGE_DECODE);

	assert_string_equal(p->ext.mode, mode);
	assert_int_equal(calls_of(p, KH_STAGE_HOT_PATTERNS), ROOT_SPANS);
	assert_int_equal(calls_of(p, KH_STAGE_DECODE), DECODED_SPANS);
	assert_non_null(decode);
	/* Decoded spans are attributed to decoded content, root ones not. */
	assert_int_equal(decode->attributed_ns, decode->elapsed_ns);
	assert_int_equal(profile__find_stage(p, KH_STAGE_HOT_PATTERNS)->attributed_ns, 0);
	assert_string_equal(p->identity.binary_version, "sdt-scanner 1.2");
	assert_string_equal(p->identity.source_kind, "filesystem");
	assert_int_equal(p->identity.scanner_threads, 3);
	assert_int_equal(p->status, KH_STATE_COMPLETED);
	assert_int_equal(p->ext.drops[KH_DROP_UNMATCHED_EXIT], 0);
}

static void check_mode(const char *program, const char *mode, const char *semaphores)
{
	struct kh_profile p;
	struct run_result r = record_sdt(program, mode, &p);

	assert_whole_record(&p, mode);
	/* The kernel sets the semaphores of the attached probes, and only theirs. */
	assert_string_equal(r.out, semaphores);
	profile__free(&p);
	run_result_free(&r);
}

static void test_pair_mode(void **state)
{
	(void)state;
	check_mode(SDT, "pair", "semaphores span_enter=1 span_exit=1 span=0\n");
	check_mode(SDT_NOSEM, "pair", "semaphores span_enter=1 span_exit=1 span=1\n");
}

static void test_span_mode(void **state)
{
	(void)state;
	check_mode(SDT, "span", "semaphores span_enter=0 span_exit=0 span=1\n");
	check_mode(SDT_NOSEM, "span", "semaphores span_enter=1 span_exit=1 span=1\n");
}

/* No batch probe: the default turns to span mode, saying why; untraced, no semaphore is set. */
static void test_default_is_span_mode(void **state)
{
	char *untraced[] = { SDT, "spans", "7", "5", NULL };
	struct kh_profile p;
	struct run_result r;

	(void)state;
	r = record_sdt(SDT, NULL, &p);
	assert_whole_record(&p, "span");
	assert_non_null(strstr(r.err, "has span probes but no batch probe (not built with "
				      "keyhog_profile.h): tracing in span mode"));
	profile__free(&p);
	run_result_free(&r);

	r = run_here(untraced);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out, "semaphores span_enter=0 span_exit=0 span=0\n");
	run_result_free(&r);
}

/* --mode batch on it: recorded without spans, as the warning says, identity kept. */
static void test_batch_mode_warned(void **state)
{
	struct kh_profile p;
	struct run_result r;

	(void)state;
	r = record_sdt(SDT, "batch", &p);
	assert_non_null(strstr(r.err, "has span probes but no batch probe (not built with "
				      "keyhog_profile.h): --mode batch sees none of its spans (--mode "
				      "span or pair does)"));
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 0);
	assert_int_equal(calls_of(&p, KH_STAGE_DECODE), 0);
	assert_string_equal(p.identity.binary_version, "sdt-scanner 1.2");
	assert_string_equal(r.out, "semaphores span_enter=0 span_exit=0 span=0\n");
	profile__free(&p);
	run_result_free(&r);
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_sdt",
		.need = "BPF integration tests need root",
		.tmp_prefix = "khprof-sdt",
		.tmpdir = &tmpdir,
		.seed_checked = true,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pair_mode),
		cmocka_unit_test(test_span_mode),
		cmocka_unit_test(test_default_is_span_mode),
		cmocka_unit_test(test_batch_mode_warned),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
