// SPDX-License-Identifier: MIT
/*
 * Integration tests: trace real workloads (tests/workloads/, built only
 * against include/keyhog_profile.h) with build/khprof and check the records
 * against what the workload knows about itself.  They need root (BPF); they
 * skip with a message elsewhere, and never skip when CI=true.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "json.h"
#include "khchild.h"
#include "record.h"

#define WORKLOAD "build/workloads/workload"

/* build/khprof, or $KH_KHPROF; set in main(). */
static char *khprof;

/* This run's records, under $TMPDIR; made and removed by run_root_tests(). */
static char *tmpdir;

/* khtest.h's record_run with this test's khprof. */
#define record_workload(mode, out, p, ...) record_run(khprof, mode, out, p, __VA_ARGS__)

static const char *const modes[] = { "span", "pair", "batch" };

static void check_nested(const char *mode)
{
	char out[PATH_MAX];
	struct kh_profile p;
	struct run_result r;
	static const uint32_t expected_states[] = { KH_STATE_CREATED, KH_STATE_ACQUIRING,
						    KH_STATE_SCANNING, KH_STATE_REPORTING,
						    KH_STATE_COMPLETED };

	path_in(out, sizeof(out), tmpdir, "nested-%s.json", mode);
	r = record_workload(mode, out, &p, "--", WORKLOAD, "nested", "50", NULL);
	assert_non_null(strstr(r.out, "nested n=50"));
	/* The text report goes to stderr. */
	assert_non_null(strstr(r.err, "KeyHog profile "));

	assert_string_equal(p.schema, "keyhog-profile-v1");
	assert_int_equal(p.status, KH_STATE_COMPLETED);
	assert_int_equal(calls_of(&p, KH_STAGE_SOURCE_WALK), 1);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 50);
	assert_int_equal(calls_of(&p, KH_STAGE_ENTROPY), 100);
	assert_int_equal(calls_of(&p, KH_STAGE_DECODE), 50);
	assert_int_equal(calls_of(&p, KH_STAGE_REPORTING), 1);
	assert_int_equal(p.stage_count, 5);
	/* Nesting: each span counts its own full time, so outer covers inner. */
	if (elapsed_of(&p, KH_STAGE_HOT_PATTERNS) <= elapsed_of(&p, KH_STAGE_ENTROPY))
		fail_msg("%s mode: hot-patterns %" PRIu64 " ns, its entropy spans %" PRIu64
			 " ns (span bias %" PRIu64 " ns, latency max %" PRIu64 " and %" PRIu64 ")",
			 mode, elapsed_of(&p, KH_STAGE_HOT_PATTERNS),
			 elapsed_of(&p, KH_STAGE_ENTROPY), p.ext.span_bias_ns,
			 p.ext.latency.stages[KH_STAGE_HOT_PATTERNS].max_ns,
			 p.ext.latency.stages[KH_STAGE_ENTROPY].max_ns);
	/* Attribution: only decode ran under Decoded. */
	assert_int_equal(profile__find_stage(&p, KH_STAGE_DECODE)->attributed_ns,
			 profile__find_stage(&p, KH_STAGE_DECODE)->elapsed_ns);
	assert_int_equal(profile__find_stage(&p, KH_STAGE_ENTROPY)->attributed_ns, 0);
	assert_int_equal(p.input_bytes, 50 * 4096);
	assert_int_equal(p.input_units, 50);

	assert_int_equal(p.transition_count, 5);
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(p.transitions[i].state, expected_states[i]);
		if (i > 0)
			assert_true(p.transitions[i].elapsed_ns >= p.transitions[i - 1].elapsed_ns);
	}
	assert_int_equal(p.state_count, 4);
	assert_int_equal(p.wall_time_ns, p.transitions[4].elapsed_ns);

	assert_string_equal(p.identity.binary_version, "workload 1.0");
	assert_string_equal(p.identity.backend_selected, "cpu");
	assert_int_equal(p.identity.cache_state, KH_CACHE_COLD);
	assert_int_equal(p.identity.scanner_threads, 4); /* latest value wins */
	assert_true(p.identity.reader_threads.present);
	assert_int_equal(p.identity.reader_threads.value, 1);
	assert_true(p.ext.present);
	assert_int_equal(p.ext.drops[KH_DROP_UNMATCHED_EXIT], 0);
	profile__free(&p);
	assert_seed_conformance_of(khprof, out);
	run_result_free(&r);
}

static void test_nested_all_modes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		check_nested(modes[i]);
}

static void test_two_threads(void **state)
{
	struct kh_profile p;
	struct run_result r;
	char out[PATH_MAX];

	(void)state;
	path_in(out, sizeof(out), tmpdir, "threads.json");
	r = record_workload(NULL, out, &p, "--", WORKLOAD, "threads", "2000", NULL);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 2000);
	assert_int_equal(calls_of(&p, KH_STAGE_GENERIC_DETECTION), 2000);
	assert_int_equal(p.input_bytes, 2 * 2000 * 10);
	assert_int_equal(p.input_units, 2);
	profile__free(&p);
	run_result_free(&r);
}

static void test_several_sessions(void **state)
{
	char out[PATH_MAX], path[PATH_MAX];
	char *argv[] = { khprof, "record", "-o", out, "--", WORKLOAD, "sessions", "3", NULL };
	struct run_result r;
	char pid_prefix[32] = "";

	(void)state;
	path_in(out, sizeof(out), tmpdir, "multi.json");
	r = run_here(argv);
	assert_int_equal(r.exit_code, 0);
	for (int s = 0; s < 3; s++) {
		struct kh_profile p;
		char version[32], suffix[16];
		const char *run_id;

		if (s == 0)
			snprintf(path, sizeof(path), "%s", out);
		else
			path_in(path, sizeof(path), tmpdir, "multi.%d.json", s + 1);
		load_record(path, &p);
		snprintf(version, sizeof(version), "session-%d", s);
		assert_string_equal(p.identity.binary_version, version);
		assert_int_equal(calls_of(&p, KH_STAGE_PREPROCESS), s + 1);
		assert_int_equal(p.status, s % 2 ? KH_STATE_FAILED : KH_STATE_COMPLETED);
		/* run_id = {pid}-{unix ns}-{sequence}; one pid for all three. */
		run_id = p.identity.run_id;
		snprintf(suffix, sizeof(suffix), "-%d", s);
		assert_string_equal(run_id + strlen(run_id) - strlen(suffix), suffix);
		if (s == 0)
			snprintf(pid_prefix, sizeof(pid_prefix), "%.*s-",
				 (int)strcspn(run_id, "-"), run_id);
		else
			assert_int_equal(strncmp(run_id, pid_prefix, strlen(pid_prefix)), 0);
		profile__free(&p);
		assert_seed_conformance_of(khprof, path);
	}
	run_result_free(&r);
}

static void check_timed(const char *mode, const char *span_us, uint64_t spans)
{
	char out[PATH_MAX], what[64];
	struct kh_profile p;
	struct run_result r;

	path_in(out, sizeof(out), tmpdir, "timed-%s-%s.json", mode, span_us);
	r = record_workload(mode, out, &p, "--", WORKLOAD, "timed", span_us, "200", NULL);
	assert_int_equal(r.exit_code, 0);
	snprintf(what, sizeof(what), "%s mode, %s us spans", mode, span_us);
	assert_between_own_clocks(what, &p, r.out, spans);
	profile__free(&p);
	run_result_free(&r);
}

static void test_times_match_workload_clock(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		check_timed(modes[i], "100", 200);
		check_timed(modes[i], "10", 200);
	}
}

/*
 * --interval: the series sums to the record's totals (calls exactly,
 * elapsed within 1 %), covers the session without gaps, and each sampled
 * interval printed its live line; the last interval, closed by the
 * session's end, has none.
 */
static void check_interval(const char *mode, bool quiet)
{
	char out[PATH_MAX];
	struct kh_profile p;
	struct run_result r;
	const struct kh_series *s;
	uint64_t calls = 0, elapsed = 0, total;
	size_t lines;

	path_in(out, sizeof(out), tmpdir, "interval-%s-%d.json", mode, quiet);
	if (quiet)
		r = record_workload(mode, out, &p, "--interval", "10ms", "-q", "--", WORKLOAD,
				    "timed", "1000", "60", NULL);
	else
		r = record_workload(mode, out, &p, "--interval", "10ms", "--", WORKLOAD, "timed",
				    "1000", "60", NULL);
	s = &p.ext.series;
	assert_int_equal(s->interval_ns, 10000000);
	assert_true(s->count >= 1);
	for (size_t i = 0; i < s->count; i++) {
		calls += s->intervals[i].calls[KH_STAGE_CONFIRMED_PATTERNS];
		elapsed += s->intervals[i].elapsed_ns[KH_STAGE_CONFIRMED_PATTERNS];
		assert_int_equal(s->intervals[i].start_ns,
				 i ? s->intervals[i - 1].start_ns + s->intervals[i - 1].duration_ns : 0);
	}
	assert_int_equal(calls, 60);
	assert_int_equal(calls, calls_of(&p, KH_STAGE_CONFIRMED_PATTERNS));
	total = elapsed_of(&p, KH_STAGE_CONFIRMED_PATTERNS);
	if (elapsed > total + total / 100 || elapsed + total / 100 < total)
		fail_msg("%s: series %" PRIu64 " ns, total %" PRIu64 " ns", mode, elapsed, total);
	assert_int_equal(s->intervals[s->count - 1].start_ns + s->intervals[s->count - 1].duration_ns,
			 p.wall_time_ns);
	assert_int_equal(s->intervals[s->count - 1].state, KH_STATE_COMPLETED);
	lines = 0;
	for (const char *l = r.err; (l = strstr(l, "khprof: ")); l++)
		lines += strncmp(l, "khprof: warning", 15) && strncmp(l, "khprof: note", 12);
	assert_int_equal(lines, quiet ? 0 : s->count - 1 + s->merged);
	profile__free(&p);
	run_result_free(&r);
}

static void test_interval_series(void **state)
{
	char out[PATH_MAX], *text;
	char *bad[] = { khprof, "record", "--interval", "5ms", "--", WORKLOAD, "nested", "1", NULL };
	struct kh_profile p;
	struct run_result r;
	size_t len;

	(void)state;
	check_interval("span", false);
	check_interval("batch", false);
	check_interval("span", true);
	/* Without --interval the record is what it was: no series member. */
	path_in(out, sizeof(out), tmpdir, "no-interval.json");
	r = record_workload("span", out, &p, "--", WORKLOAD, "timed", "100", "20", NULL);
	assert_int_equal(p.ext.series.interval_ns, 0);
	assert_int_equal(file__read_all(out, &text, &len), 0);
	assert_null(strstr(text, "series"));
	free(text);
	profile__free(&p);
	run_result_free(&r);
	/* Below 10 ms is refused, saying how to write one. */
	assert_run_exits(bad, 2, "bad interval '5ms': expected a duration, 10ms to 1h");
}

static void test_shared_library_and_dlopen(void **state)
{
	struct kh_profile p;
	struct run_result r;
	char out[PATH_MAX];

	(void)state;
	path_in(out, sizeof(out), tmpdir, "library.json");
	/*
	 * --stop-limit none: the dlopen'ed library's spans are counted only if
	 * the program waits at the loader until they are attached, however long
	 * that takes on this machine (under TCG in the kernel matrix).
	 */
	r = record_workload(NULL, out, &p, "--stop-limit", "none", "--", WORKLOAD, "library", "20",
			    NULL);
	/* 20 from the linked library, 20 from the one opened with dlopen. */
	assert_int_equal(calls_of(&p, KH_STAGE_ENTROPY), 40);
	profile__free(&p);
	run_result_free(&r);
}

static void test_red_zone_leaf_unchanged(void **state)
{
	char out[PATH_MAX];
	char *untraced_argv[] = { WORKLOAD, "redzone", "100000", NULL };
	struct run_result r, untraced;
	struct kh_profile p;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "redzone.json");
	untraced = run_here(untraced_argv);
	r = record_workload(NULL, out, &p, "--", WORKLOAD, "redzone", "100000", NULL);
	assert_string_equal(untraced.out, "wrong=0 of 100000\n");
	assert_string_equal(r.out, untraced.out);
	assert_int_equal(r.exit_code, 0);
	/* The probe sites inside the leaf really fired while traced. */
	assert_int_equal(p.input_bytes, 100000);
	assert_int_equal(p.input_units, 100000);
	profile__free(&p);
	run_result_free(&r);
	run_result_free(&untraced);
}

static void test_program_without_sessions(void **state)
{
	struct kh_profile p;
	struct run_result r;
	char out[PATH_MAX];

	(void)state;
	path_in(out, sizeof(out), tmpdir, "nosession.json");
	r = record_workload(NULL, out, &p, "--", WORKLOAD, "nosession", "100", NULL);
	assert_int_equal(calls_of(&p, KH_STAGE_SUPPRESSION), 100);
	assert_int_equal(p.status, KH_STATE_COMPLETED);
	profile__free(&p);
	assert_seed_conformance_of(khprof, out);
	run_result_free(&r);
}

/*
 * 40 nested spans: 32 fit the span stacks (the program's, and the kernel's
 * in pair mode); the 8 deeper ones are counted as dropped, never lost
 * silently, in every mode.
 */
static void test_deep_nesting_is_counted(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		char out[PATH_MAX];
		uint64_t dropped;
		struct kh_profile p;
		struct run_result r;

		path_in(out, sizeof(out), tmpdir, "deep-%s.json", modes[i]);
		r = record_workload(modes[i], out, &p, "--", WORKLOAD, "deep", "40", NULL);
		assert_int_equal(r.exit_code, 0);
		assert_int_equal(calls_of(&p, KH_STAGE_PHASE2_WHOLE_CHUNK), 32);
		dropped = p.ext.drops[KH_DROP_STACK_OVERFLOW] + p.ext.drops[KH_DROP_UNMATCHED_EXIT];
		assert_int_equal(dropped, 8);
		assert_non_null(strstr(r.err, "khprof: warning: 8 "));
		profile__free(&p);
		run_result_free(&r);
	}
}

static void test_identity_override(void **state)
{
	char out[PATH_MAX];
	char *bad_argv[] = { khprof, "record", "--identity", "colour=blue", "--", WORKLOAD,
			     "nested", "2", NULL };
	struct kh_profile p;
	struct run_result r, bad;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "override.json");
	r = record_workload(NULL, out, &p, "--identity", "workload_class=nightly", "--identity",
			    "daemon_state=worker", "--", WORKLOAD, "nested", "2", NULL);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(p.identity.workload_class, "nightly");
	assert_int_equal(p.identity.daemon_state, KH_DAEMON_WORKER);
	assert_string_equal(p.identity.binary_version, "workload 1.0");
	profile__free(&p);
	bad = run_here(bad_argv);
	assert_int_equal(bad.exit_code, 2);
	assert_non_null(strstr(bad.err, "colour"));
	run_result_free(&r);
	run_result_free(&bad);
}

static void test_exit_status_and_errors(void **state)
{
	char *not_found[] = { khprof, "record", "--", "no-such-command-khprof", NULL };
	char *status3[] = { khprof, "record", "--", "/bin/sh", "-c", "exit 3", NULL };
	char *killed[] = { khprof, "record", "--", "/bin/sh", "-c", "kill -TERM $$", NULL };
	char *no_probes[] = { khprof, "record", "--", "/bin/true", NULL };
	struct run_result r;

	(void)state;
	r = run_here(not_found);
	assert_int_equal(r.exit_code, 127);
	assert_string_equal(r.err,
			    "khprof: cannot run 'no-such-command-khprof': command not found\n");
	run_result_free(&r);

	assert_run_exits(status3, 3, NULL);

	assert_run_exits(killed, 128 + SIGTERM, NULL);

	assert_run_exits(no_probes, 0, "no keyhog probes");
}

/* --repeat: N fresh traced runs, warm-ups unrecorded, a spread table, no overwrite. */
static void test_repeat_series(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	char *argv[] = { khprof, "record", "--repeat", "3", "--warmup", "1", "-o", dir, "--",
			 WORKLOAD, "nested", "20", NULL };
	char *no_probes[] = { khprof, "record", "--repeat", "2", "-o", dir, "--", "/bin/true",
			      NULL };
	char *bad_count[] = { khprof, "record", "--repeat", "0", "-o", dir, "--", WORKLOAD,
			      NULL };
	char *no_dir[] = { khprof, "record", "--repeat", "2", "--", WORKLOAD, NULL };
	char *lone_warmup[] = { khprof, "record", "--warmup", "1", "--", WORKLOAD, NULL };
	char *lone_append[] = { khprof, "record", "--append", "-o", dir, "--", WORKLOAD, NULL };
	char *append[] = { khprof, "record", "--repeat", "1", "--append", "-o", dir, "--",
			   WORKLOAD, "nested", "20", NULL };
	char **usage_errors[] = { bad_count, no_dir, lone_warmup, lone_append };
	struct kh_profile p;
	struct run_result r;

	(void)state;
	path_in(dir, sizeof(dir), tmpdir, "series");
	r = run_here(argv);
	if (r.exit_code != 0)
		fail_msg("record --repeat exited %d: %s", r.exit_code, r.err);
	assert_non_null(strstr(r.err, "3 runs of '" WORKLOAD "' recorded in '"));
	assert_non_null(strstr(r.err, "\nstage hot-patterns "));
	assert_null(strstr(r.err, "KeyHog profile ")); /* per-run reports left out */
	for (int i = 1; i <= 3; i++) {
		snprintf(path, sizeof(path), "%s/run-%03d.json", dir, i);
		load_record(path, &p);
		assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 20);
		assert_int_equal(p.status, KH_STATE_COMPLETED);
		profile__free(&p);
	}
	/* The warm-up run wrote nothing: three records, no fourth. */
	snprintf(path, sizeof(path), "%s/run-004.json", dir);
	assert_int_equal(access(path, F_OK), -1);
	run_result_free(&r);

	/* A second series must not mix with the first, unless it says so. */
	r = run_here(argv);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "already holds run-*.json"));
	assert_int_equal(access(path, F_OK), -1);
	run_result_free(&r);
	r = run_here(append);
	if (r.exit_code != 0)
		fail_msg("record --append exited %d: %s", r.exit_code, r.err);
	assert_non_null(strstr(r.err, "4 runs of '" WORKLOAD "' recorded in '"));
	load_record(path, &p); /* run-004.json */
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 20);
	profile__free(&p);
	snprintf(path, sizeof(path), "%s/run-005.json", dir);
	assert_int_equal(access(path, F_OK), -1);
	run_result_free(&r);

	path_in(dir, sizeof(dir), tmpdir, "series-untraced");
	assert_run_exits(no_probes, 1, "run 1 of '/bin/true' wrote no record");

	for (size_t i = 0; i < sizeof(usage_errors) / sizeof(usage_errors[0]); i++) {
		assert_run_exits(usage_errors[i], 2, "khprof: ");
	}
}

/*
 * Span mode, so that these tests check what they are about with one kernel
 * entry per span; batch mode's detach is checked in test_faults.c.
 */
static struct child start_attach(const char *pid_text, const char *out)
{
	char *argv[] = { khprof, "attach", "--mode", "span", "-p", (char *)pid_text, "-o",
			 (char *)out, NULL };

	return attach_spawn(argv);
}

/* SIGTERM to a series reaches the running command and ends the series there. */
static void test_repeat_series_stops_on_sigterm(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	char *argv[] = { khprof, "record", "--repeat", "3", "-o", dir, "--", WORKLOAD, "serve",
			 NULL };
	struct child series;

	(void)state;
	path_in(dir, sizeof(dir), tmpdir, "series-stopped");
	series = child_spawn(argv, false);
	child_wait_for_line(&series, "ready"); /* run 1 is up, traced */
	assert_int_equal(kill(series.pid, SIGTERM), 0);
	/* Were the series to go on, the next runs would see EOF and end on their own. */
	child_close(&series);
	assert_int_equal(wait_exit(series.pid), 128 + SIGTERM);
	snprintf(path, sizeof(path), "%s/run-002.json", dir);
	assert_int_equal(access(path, F_OK), -1);
}

static void test_attach_running_process(void **state)
{
	char out[PATH_MAX], pid_text[16];
	struct child w, k;
	struct kh_profile p;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "attach.json");
	w = serve_loop_start_pid(WORKLOAD, pid_text, sizeof(pid_text));
	k = start_attach(pid_text, out);
	serve_loop_command(&w, "session\n");
	kill(k.pid, SIGINT);
	assert_int_equal(wait_exit(k.pid), 0);
	serve_loop_stop(&w);

	load_record(out, &p);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 10);
	assert_int_equal(calls_of(&p, KH_STAGE_ENTROPY), 20);
	assert_int_equal(p.status, KH_STATE_COMPLETED);
	assert_false(p.ext.started_mid_session);
	profile__free(&p);
	assert_seed_conformance_of(khprof, out);
	child_close(&k);
}

static void test_attach_mid_session(void **state)
{
	char out[PATH_MAX], pid_text[16];
	struct child w, k;
	struct kh_profile p;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "midsession.json");
	w = serve_loop_start_pid(WORKLOAD, pid_text, sizeof(pid_text));
	serve_loop_command(&w, "begin\n");
	k = start_attach(pid_text, out);
	serve_loop_command(&w, "spans\n");
	serve_loop_command(&w, "end\n");
	serve_loop_stop(&w);
	/* khprof stops by itself when the process exits. */
	assert_int_equal(wait_exit(k.pid), 0);

	load_record(out, &p);
	assert_true(p.ext.started_mid_session);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 5);
	assert_int_equal(p.status, KH_STATE_COMPLETED);
	profile__free(&p);
	assert_seed_conformance_of(khprof, out);
	child_close(&k);
}

/* SIGTERM ends the trace with the session still open: a partial record. */
static void test_attach_sigterm_ends_mid_session(void **state)
{
	char out[PATH_MAX], pid_text[16];
	struct kh_profile p;
	struct child w, k;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "sigterm.json");
	w = serve_loop_start_pid(WORKLOAD, pid_text, sizeof(pid_text));
	serve_loop_command(&w, "begin\n");
	k = start_attach(pid_text, out);
	serve_loop_command(&w, "spans\n");
	kill(k.pid, SIGTERM);
	child_wait_for_line(&k, "profile ended mid-session");
	assert_int_equal(wait_exit(k.pid), 0);
	serve_loop_stop(&w);

	load_record(out, &p);
	assert_true(p.ext.started_mid_session);
	assert_true(p.ext.ended_mid_session);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 5);
	/*
	 * No transition was seen since attaching: the process was running spans,
	 * so khprof records the state as scanning (docs/SCHEMA.md).
	 */
	assert_int_equal(p.status, KH_STATE_SCANNING);
	profile__free(&p);
	assert_seed_conformance_of(khprof, out);
	child_close(&k);
}

/* attach --interval: both sessions, the one joined mid-way too, carry their series. */
static void test_attach_interval(void **state)
{
	char out[PATH_MAX], out2[PATH_MAX], pid_text[16];
	char *argv[] = { khprof, "attach", "--mode", "span", "--interval", "10ms", "-p", pid_text,
			 "-o", out, NULL };
	const char *paths[] = { out, out2 };
	struct child w, k;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "attach-interval.json");
	path_in(out2, sizeof(out2), tmpdir, "attach-interval.2.json");
	w = serve_loop_start_pid(WORKLOAD, pid_text, sizeof(pid_text));
	serve_loop_command(&w, "begin\n");
	k = attach_spawn(argv);
	serve_loop_command(&w, "spans\n");
	serve_loop_command(&w, "end\n");
	serve_loop_command(&w, "begin\n");
	serve_loop_command(&w, "spans\n");
	serve_loop_command(&w, "end\n");
	serve_loop_stop(&w);
	assert_int_equal(wait_exit(k.pid), 0);
	for (int i = 0; i < 2; i++) {
		struct kh_profile p;
		uint64_t calls = 0;

		load_record(paths[i], &p);
		assert_int_equal(p.ext.started_mid_session, i == 0);
		assert_int_equal(p.ext.series.interval_ns, 10000000);
		assert_true(p.ext.series.count >= 1);
		for (size_t j = 0; j < p.ext.series.count; j++)
			calls += p.ext.series.intervals[j].calls[KH_STAGE_HOT_PATTERNS];
		assert_int_equal(calls, 5);
		assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 5);
		profile__free(&p);
		assert_seed_conformance_of(khprof, paths[i]);
	}
	child_close(&k);
}

/* --duration stops khprof by itself; an idle process gives no record. */
static void test_attach_duration_on_idle_process(void **state)
{
	char out[PATH_MAX], pid_text[16];
	char *argv[] = { khprof, "attach", "-p", pid_text, "--duration", "0.1", "-o", out, NULL };
	struct run_result r;
	struct child w;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "idle.json");
	w = serve_loop_start_pid(WORKLOAD, pid_text, sizeof(pid_text));
	r = run_here(argv);
	assert_int_equal(r.exit_code, 0);
	assert_non_null(strstr(r.err, "no keyhog activity seen"));
	assert_int_equal(access(out, F_OK), -1);
	serve_loop_stop(&w);
	run_result_free(&r);
}

static void test_attach_missing_pid(void **state)
{
	char *argv[] = { khprof, "attach", "-p", "999999999", NULL };

	(void)state;
	assert_run_exits(argv, 1, "no such process");
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_trace",
		.need = "BPF integration tests need root (CAP_BPF, CAP_PERFMON)",
		.tmp_prefix = "khprof-itest",
		.tmpdir = &tmpdir,
		.seed_checked = true,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nested_all_modes),
		cmocka_unit_test(test_two_threads),
		cmocka_unit_test(test_several_sessions),
		cmocka_unit_test(test_times_match_workload_clock),
		cmocka_unit_test(test_interval_series),
		cmocka_unit_test(test_shared_library_and_dlopen),
		cmocka_unit_test(test_red_zone_leaf_unchanged),
		cmocka_unit_test(test_program_without_sessions),
		cmocka_unit_test(test_deep_nesting_is_counted),
		cmocka_unit_test(test_identity_override),
		cmocka_unit_test(test_exit_status_and_errors),
		cmocka_unit_test(test_repeat_series),
		cmocka_unit_test(test_repeat_series_stops_on_sigterm),
		cmocka_unit_test(test_attach_running_process),
		cmocka_unit_test(test_attach_mid_session),
		cmocka_unit_test(test_attach_sigterm_ends_mid_session),
		cmocka_unit_test(test_attach_interval),
		cmocka_unit_test(test_attach_duration_on_idle_process),
		cmocka_unit_test(test_attach_missing_pid),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
