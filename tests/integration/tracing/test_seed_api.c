// SPDX-License-Identifier: MIT
/*
 * The seed's whole API on the Rust probe crate (issue #30).  One program,
 * tests/seed-api, written against the seed's API -- its build.rs generates
 * a use of every public item with the seed's signature from the seed's own
 * source -- is built against the seed (build/seed-api-seed, by
 * scripts/build-seed-render.sh) and against rust/keyhog-probes under the
 * seed's name (build/workloads/seed-api-rs, and with Debian's rustc 1.63
 * build/rust-debian/seed-api-rs, by scripts/build-rust.sh), the dependency
 * line alone differing.  Here:
 *
 * - both builds run the same workload in process, each checks its own
 *   record (counts it knows, every time between its own clock readings
 *   around the call, the derived fields recomputed), and each judges the
 *   other's: equal transcripts, the other's record read by its own types
 *   and rendered, as text and JSON, to exactly what the other wrote, the
 *   two records equal field by field but for times and the machine's
 *   figures;
 * - khprof records the crate's build in every mode while it profiles
 *   itself in process: the program's own checks still pass, its record
 *   still matches the seed's, and khprof's record of the session agrees
 *   with the in-process one on every count, a span straddling the
 *   session's start and one straddling its finish included;
 * - a C program's span straddling KH_SESSION_START, in every mode, is not
 *   the session's either (the seed's rule), and is counted apart.
 *
 * Without ../shared/seed the Rust program cannot be built: those tests say
 * so and pass, except under CI=true.  They need root for khprof.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "khtest.h"
#include "record.h"

#define SEED_LIB "../shared/seed/keyhog_profile_lib.rs"
#define API_SEED "build/seed-api-seed"
#define API_RS "build/workloads/seed-api-rs"
#define API_RS_DEBIAN "build/rust-debian/seed-api-rs"
#define DEBIAN_RUSTC "/usr/bin/rustc"
#define WORKLOAD "build/workloads/workload"

static char *khprof;
static char *tmpdir;

static const char *const modes[] = { "batch", "span", "pair" };
#define N_MODES (sizeof(modes) / sizeof(modes[0]))

/* Whether the seed is here to build against; fails in CI without it. */
static bool seed_present(void)
{
	if (access(SEED_LIB, R_OK) == 0)
		return true;
	if (running_in_ci())
		fail_msg("%s is missing and CI=true: the seed's API cannot be checked", SEED_LIB);
	print_message("no %s: the seed's API is not checked\n", SEED_LIB);
	return false;
}

static void require_binary(const char *path, const char *built_by)
{
	if (access(path, X_OK) != 0)
		fail_msg("%s is missing although the seed is there (%s builds it)", path, built_by);
}

/* A fresh folder under tmpdir for one run's profile.json, profile.txt, transcript.txt. */
static void run_dir(char *buf, size_t len, const char *name)
{
	path_in(buf, len, tmpdir, "%s", name);
	if (mkdir(buf, 0755) != 0)
		fail_msg("cannot make '%s'", buf);
}

/* PROGRAM run DIR, which must pass its own checks. */
static void run_workload(const char *program, const char *dir)
{
	char *argv[] = { (char *)program, "run", (char *)dir, NULL };
	struct run_result r = run_here(argv);

	if (r.exit_code != 0)
		fail_msg("%s run exited %d: %s", program, r.exit_code, r.err);
	run_result_free(&r);
}

/* JUDGE check [--traced] MINE OTHER: the judge's build reads and compares OTHER's run. */
static void judge(const char *judge_program, const char *mine, const char *other, bool traced)
{
	char *argv[] = { (char *)judge_program, "check", (char *)mine, (char *)other, NULL };
	char *traced_argv[] = { (char *)judge_program, "check", "--traced", (char *)mine,
				(char *)other, NULL };
	struct run_result r = run_here(traced ? traced_argv : argv);

	if (r.exit_code != 0)
		fail_msg("%s check %s %s exited %d:\n%s", judge_program, mine, other, r.exit_code,
			 r.err);
	assert_non_null(strstr(r.out, " agree\n"));
	run_result_free(&r);
}

/*
 * The same workload on the seed and on the crate, untraced: each run is
 * right by its own clocks, and each build finds the other's equal.
 */
static void check_against_seed(const char *program, const char *name)
{
	char seed_dir[PATH_MAX], dir[PATH_MAX], seed_name[64];

	snprintf(seed_name, sizeof(seed_name), "seed-for-%s", name);
	run_dir(seed_dir, sizeof(seed_dir), seed_name);
	run_dir(dir, sizeof(dir), name);
	run_workload(API_SEED, seed_dir);
	run_workload(program, dir);
	judge(API_SEED, seed_dir, dir, false);
	judge(program, dir, seed_dir, false);
}

static void test_in_process_profile_equals_the_seeds(void **state)
{
	(void)state;
	if (!seed_present())
		return;
	require_binary(API_SEED, "make seed-render");
	require_binary(API_RS, "make");
	check_against_seed(API_RS, "crate");
}

/* The crate built by Debian 12's own rustc 1.63 has the seed's API too. */
static void test_debian_rustc_build_equals_the_seed(void **state)
{
	(void)state;
	if (!seed_present())
		return;
	if (access(DEBIAN_RUSTC, X_OK) != 0) {
		print_message("no %s on this machine: the 1.63 build is not checked\n",
			      DEBIAN_RUSTC);
		return;
	}
	require_binary(API_SEED, "make seed-render");
	require_binary(API_RS_DEBIAN, "make");
	check_against_seed(API_RS_DEBIAN, "crate-1.63");
}

/*
 * The workload's one span that straddles the session's start
 * (incremental-lookup: entered before Session::start, left inside), and
 * its mirror (live-verification: entered inside, left after the finish).
 * The seed counts a span for a session only when the session was open at
 * its enter, and only until the finish takes the counts: neither is the
 * session's.  khprof leaves both out too (bpf/khprof.bpf.c, span_drop),
 * the first counted in its extension's begun_before_session.
 */
#define STRADDLING_STAGE KH_STAGE_INCREMENTAL_LOOKUP
#define LATE_STAGE KH_STAGE_LIVE_VERIFICATION

/* Every count of khprof's record of a session equals the in-process record's. */
static void assert_counts_agree(const struct kh_profile *traced, const struct kh_profile *local)
{
	assert_string_equal(traced->schema, local->schema);
	assert_int_equal(traced->status, local->status);
	assert_int_equal(traced->input_bytes, local->input_bytes);
	assert_int_equal(traced->input_units, local->input_units);
	assert_null(profile__find_stage(local, STRADDLING_STAGE));
	assert_null(profile__find_stage(local, LATE_STAGE));
	assert_int_equal(traced->stage_count, local->stage_count);
	assert_int_equal(traced->ext.begun_before_session, 1);
	for (uint32_t s = 0; s < KH_STAGE_COUNT; s++) {
		const struct kh_stage_measurement *t = profile__find_stage(traced, s);
		const struct kh_stage_measurement *l = profile__find_stage(local, s);

		assert_int_equal(t != NULL, l != NULL);
		if (!t)
			continue;
		assert_int_equal(t->calls, l->calls);
		/* Each stage ran all decoded or all root, in both. */
		assert_int_equal(t->attributed_ns == t->elapsed_ns, l->attributed_ns == l->elapsed_ns);
		assert_int_equal(t->attributed_ns == 0, l->attributed_ns == 0);
	}
	assert_int_equal(traced->transition_count, local->transition_count);
	for (size_t i = 0; i < traced->transition_count; i++)
		assert_int_equal(traced->transitions[i].state, local->transitions[i].state);
	assert_int_equal(traced->state_count, local->state_count);
	for (size_t i = 0; i < traced->state_count; i++)
		assert_int_equal(traced->states[i].state, local->states[i].state);
	assert_string_equal(traced->identity.binary_version, local->identity.binary_version);
	assert_string_equal(traced->identity.detector_digest, local->identity.detector_digest);
	assert_string_equal(traced->identity.config_digest, local->identity.config_digest);
	assert_string_equal(traced->identity.source_kind, local->identity.source_kind);
	assert_string_equal(traced->identity.workload_class, local->identity.workload_class);
	assert_string_equal(traced->identity.backend_requested, local->identity.backend_requested);
	assert_string_equal(traced->identity.backend_selected, local->identity.backend_selected);
	assert_int_equal(traced->identity.cache_state, local->identity.cache_state);
	assert_int_equal(traced->identity.daemon_state, local->identity.daemon_state);
	assert_int_equal(traced->identity.scanner_threads, local->identity.scanner_threads);
	assert_int_equal(traced->identity.reader_threads.present,
			 local->identity.reader_threads.present);
	assert_int_equal(traced->identity.reader_threads.value, local->identity.reader_threads.value);
	assert_int_equal(traced->identity.logical_cpus, local->identity.logical_cpus);
}

/*
 * khprof records the crate's build in each mode while the program profiles
 * itself: both at once.  The program's sessions are one dropped unfinished
 * (khprof's first record, failed; the seed discards its counts) and the
 * one it writes; khprof's record of the latter agrees with it.
 */
static void test_traced_record_agrees_with_in_process(void **state)
{
	char seed_dir[PATH_MAX];

	(void)state;
	if (!seed_present())
		return;
	require_binary(API_SEED, "make seed-render");
	require_binary(API_RS, "make");
	run_dir(seed_dir, sizeof(seed_dir), "traced-seed");
	run_workload(API_SEED, seed_dir);
	for (size_t m = 0; m < N_MODES; m++) {
		char dir[PATH_MAX], name[32], out[PATH_MAX], second[PATH_MAX], third[PATH_MAX];
		char local_json[PATH_MAX];
		char *argv[] = { khprof, "record", "--mode", (char *)modes[m], "-o", out,
				 "--", API_RS, "run", dir, NULL };
		struct kh_profile dropped, traced, local, again;
		struct run_result r;

		snprintf(name, sizeof(name), "traced-%s", modes[m]);
		run_dir(dir, sizeof(dir), name);
		path_in(out, sizeof(out), tmpdir, "traced-%s.json", modes[m]);
		path_in(second, sizeof(second), tmpdir, "traced-%s.2.json", modes[m]);
		path_in(third, sizeof(third), tmpdir, "traced-%s.3.json", modes[m]);
		r = run_here(argv);
		if (r.exit_code != 0)
			fail_msg("khprof record --mode %s of seed-api exited %d: %s", modes[m],
				 r.exit_code, r.err);
		run_result_free(&r);

		/* The in-process record made while traced is still the seed's. */
		judge(API_SEED, seed_dir, dir, true);

		load_record(out, &dropped);
		assert_int_equal(dropped.status, KH_STATE_FAILED);
		assert_int_equal(calls_of(&dropped, KH_STAGE_SUPPRESSION), 1);
		assert_int_equal(dropped.input_bytes, 5);
		profile__free(&dropped);

		path_in(local_json, sizeof(local_json), dir, "profile.json");
		load_record(second, &traced);
		load_record(local_json, &local);
		assert_counts_agree(&traced, &local);
		assert_true(traced.ext.present);
		for (uint32_t d = 0; d < KH_DROP_COUNT; d++)
			assert_int_equal(traced.ext.drops[d], 0);
		profile__free(&traced);
		profile__free(&local);
		assert_seed_conformance_of(khprof, second);

		/* The next session has none of the span left after the finish, as the seed's. */
		load_record(third, &again);
		assert_int_equal(again.stage_count, 0);
		assert_int_equal(again.ext.begun_before_session, 0);
		profile__free(&again);
	}
}

/*
 * The same for a C program (include/keyhog_profile.h): a span entered
 * before KH_SESSION_START and left in the session is not the session's,
 * nor one entered in it and left after KH_SESSION_FINISH, in every mode;
 * the first is counted as begun_before_session, never as a drop.  Needs
 * no seed: the rule is the seed's Span (session_recording, set at its
 * enter).
 */
static void test_span_begun_before_the_session_is_not_its(void **state)
{
	(void)state;
	for (size_t m = 0; m < N_MODES; m++) {
		char out[PATH_MAX], second[PATH_MAX];
		char *argv[] = { khprof, "record", "--mode", (char *)modes[m], "-o", out,
				 "--", WORKLOAD, "straddle", NULL };
		struct kh_profile p;
		struct run_result r;

		path_in(out, sizeof(out), tmpdir, "straddle-%s.json", modes[m]);
		path_in(second, sizeof(second), tmpdir, "straddle-%s.2.json", modes[m]);
		r = run_here(argv);
		if (r.exit_code != 0)
			fail_msg("khprof record --mode %s of the straddle workload exited %d: %s",
				 modes[m], r.exit_code, r.err);
		run_result_free(&r);
		/* One session, one record. */
		assert_int_not_equal(access(second, F_OK), 0);
		load_record(out, &p);
		assert_int_equal(p.status, KH_STATE_COMPLETED);
		assert_int_equal(calls_of(&p, KH_STAGE_PREPROCESS), 1);
		assert_null(profile__find_stage(&p, STRADDLING_STAGE));
		assert_null(profile__find_stage(&p, LATE_STAGE));
		assert_int_equal(p.stage_count, 1);
		assert_int_equal(p.ext.begun_before_session, 1);
		/* Set aside, not lost: no drop, so no drop's warning. */
		for (uint32_t d = 0; d < KH_DROP_COUNT; d++)
			assert_int_equal(p.ext.drops[d], 0);
		profile__free(&p);
		assert_seed_conformance_of(khprof, out);
	}
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_seed_api",
		.need = "khprof records the Rust program as root (CAP_BPF, CAP_PERFMON)",
		.tmp_prefix = "khprof-seed-api-test",
		.tmpdir = &tmpdir,
		.seed_checked = true,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_process_profile_equals_the_seeds),
		cmocka_unit_test(test_debian_rustc_build_equals_the_seed),
		cmocka_unit_test(test_traced_record_agrees_with_in_process),
		cmocka_unit_test(test_span_begun_before_the_session_is_not_its),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
