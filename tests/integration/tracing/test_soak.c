// SPDX-License-Identifier: MIT
/*
 * The thread-end soak (issue 29): programs whose threads end in waves with
 * partly filled batch buffers (joined, scoped or signalled and not joined,
 * pooled across sessions, ending while the main thread finishes the
 * session, unwinding through a span), recorded again and again in every
 * mode, each record holding exactly the spans and input the program says
 * its session ran, with no drop counted.  Before probe ABI 7 a thread's
 * last batch that reached khprof after its session ended went to no
 * session, a loss no counter showed; such a race shows in a few runs of
 * many, hence the repetition.
 *
 * tests/workloads/waves.c is the C program, `workload-rs waves` its Rust
 * twin (tests/workloads-rs/src/waves.rs).  KH_SOAK_RUNS records each in
 * each mode (make test: DEFAULT_RUNS; make soak: thousands); the kernel
 * matrix runs test_soak_brief.  They need root; they skip with a message
 * elsewhere, and never skip when CI=true.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "khtest.h"
#include "record.h"

#define WAVES_C "build/workloads/waves"
#define WAVES_RS "build/workloads/workload-rs"
/*
 * Records per workload and mode in make test: 240 records in all, about a
 * minute and a half here, each of 3 sessions of 5 waves of 4 threads (60
 * thread ends, every shape 3 times).
 */
#define DEFAULT_RUNS 40
/*
 * The kernel matrix's: a record of each program in each mode, every shape
 * of thread end three times; about 75 s a kernel under TCG (each record is
 * mostly khprof's start, ~6 s there).
 */
#define BRIEF_RUNS 1
#define SESSIONS 3

static char *khprof;
static char *tmpdir;

static const char *const modes[] = { "batch", "span", "pair" };
#define N_MODES (sizeof(modes) / sizeof(modes[0]))

struct session_counts {
	unsigned long long hot, entropy, decode, bytes, units;
};

/* The "session S ..." lines the workload printed, in order. */
static void parse_sessions(const char *out, struct session_counts *want, size_t n)
{
	const char *line = out;

	for (size_t s = 0; s < n; s++) {
		unsigned long index;

		line = line ? strstr(line, "session ") : NULL;
		if (!line || sscanf(line, "session %lu hot-patterns=%llu entropy=%llu decode=%llu "
				    "input_bytes=%llu input_units=%llu", &index, &want[s].hot,
				    &want[s].entropy, &want[s].decode, &want[s].bytes,
				    &want[s].units) != 6 || index != s)
			fail_msg("the workload did not print session %zu's counts: %s", s, out);
		line++;
	}
}

/* The number N of khprof's line "khprof: warning: N ...what...", 0 without one. */
static uint64_t said_count(const char *err, const char *what)
{
	const char *line = strstr(err, what);
	unsigned long long n = 0;

	while (line && line > err && line[-1] != '\n')
		line--;
	if (line && sscanf(line, "khprof: warning: %llu ", &n) != 1)
		fail_msg("cannot read the count of the line saying '%s': %s", what, err);
	return n;
}

/*
 * The threads whose buffers khprof said it could not read and counted as
 * exit_unknown: threads that ended unseen (the kernel ran none of its
 * thread-end programs for them), live threads a session's start or end
 * met unreadable (a page being moved, as by THP's collapses on 6.1), and
 * threads whose end found their memory gone (6.1 on arm64, without fentry).
 */
static uint64_t said_unseen(const char *err)
{
	return said_count(err, "ended unseen") + said_count(err, "could not read a live thread") +
	       said_count(err, "ended with a buffer khprof could not read");
}

/*
 * Record run of workload in mode; every session's record exactly as the
 * workload says.  One drop is allowed: a buffer khprof could not read
 * (a thread's end the kernel ran none of khprof's programs for, as
 * preempted runs held them on that CPU on Linux 7.x; a live thread's page
 * being moved at a session's end), counted as exit_unknown, as long as
 * khprof said so of that many; the counts must be exact even then (such
 * a buffer was empty, or its spans would be missing).  Returns
 * ENDED_UNSEEN when khprof said threads ended unseen, UNREADABLE when it
 * said a session's event could not read a live thread's buffer.
 */
#define ENDED_UNSEEN 1
#define UNREADABLE 2
static int soak_run(const char *what, char *const workload[], const char *mode, unsigned run)
{
	struct session_counts want[SESSIONS];
	struct run_result r;
	char out[512];
	uint64_t unseen, unknown = 0;
	int said;

	path_in(out, sizeof(out), tmpdir, "%s-%s.json", what, mode);
	r = record_workload(khprof, mode, out, workload);
	unseen = said_unseen(r.err);
	parse_sessions(r.out, want, SESSIONS);
	for (size_t s = 0; s < SESSIONS; s++) {
		char path[512];
		struct kh_profile p;
		uint64_t dropped = 0;
		char why[256] = "";

		if (s == 0)
			snprintf(path, sizeof(path), "%s", out);
		else
			path_in(path, sizeof(path), tmpdir, "%s-%s.%zu.json", what, mode, s + 1);
		load_record(path, &p);
		unknown += p.ext.drops[KH_DROP_EXIT_UNKNOWN];
		for (uint32_t d = 0; d < KH_DROP_COUNT; d++) {
			if (d != KH_DROP_EXIT_UNKNOWN || unknown > unseen)
				dropped += p.ext.drops[d];
			if (p.ext.drops[d])
				snprintf(why + strlen(why), sizeof(why) - strlen(why), " %s=%" PRIu64,
					 kh_drop__name(d), p.ext.drops[d]);
		}
		if (dropped)
			fprintf(stderr, "%s, %s mode, run %u: khprof said:\n%s", what, mode, run, r.err);
		if (p.status != KH_STATE_COMPLETED || calls_of(&p, KH_STAGE_HOT_PATTERNS) != want[s].hot ||
		    calls_of(&p, KH_STAGE_ENTROPY) != want[s].entropy ||
		    calls_of(&p, KH_STAGE_DECODE) != want[s].decode ||
		    p.input_bytes != want[s].bytes || p.input_units != want[s].units || dropped)
			fail_msg("%s, %s mode, run %u, session %zu: hot-patterns=%" PRIu64
				 " entropy=%" PRIu64 " decode=%" PRIu64 " input_bytes=%" PRIu64
				 " input_units=%" PRIu64 " with %" PRIu64 " dropped (%s), where the program "
				 "ran hot-patterns=%llu entropy=%llu decode=%llu input_bytes=%llu "
				 "input_units=%llu; khprof said: %s", what, mode, run, s,
				 calls_of(&p, KH_STAGE_HOT_PATTERNS), calls_of(&p, KH_STAGE_ENTROPY),
				 calls_of(&p, KH_STAGE_DECODE), p.input_bytes, p.input_units, dropped, why,
				 want[s].hot, want[s].entropy, want[s].decode, want[s].bytes,
				 want[s].units, r.err);
		profile__free(&p);
	}
	said = (said_count(r.err, "ended unseen") ? ENDED_UNSEEN : 0) |
	       (said_count(r.err, "could not read a live thread") ? UNREADABLE : 0);
	run_result_free(&r);
	return said;
}

static unsigned soak_runs(void)
{
	const char *env = getenv("KH_SOAK_RUNS");
	char *end;
	unsigned long n;

	if (!env || !*env)
		return DEFAULT_RUNS;
	errno = 0;
	n = strtoul(env, &end, 10);
	if (errno || *end || n < 1 || n > 1000000)
		fail_msg("KH_SOAK_RUNS='%s': a number of records from 1 to 1000000", env);
	return (unsigned)n;
}

/* runs records of workload in each mode, alternating the modes. */
static void soak(const char *what, char *const workload[], unsigned runs)
{
	unsigned unseen = 0;

	for (unsigned run = 1; run <= runs; run++)
		for (size_t m = 0; m < N_MODES; m++)
			unseen += !!soak_run(what, workload, modes[m], run);
	printf("%s: %u records in each mode, every session exact", what, runs);
	if (unseen)
		printf(" (%u with buffers khprof could not read, said and counted)", unseen);
	printf("\n");
}

static char *waves_c[] = { WAVES_C, "3", "5", "4", "300", NULL };
static char *waves_rs[] = { WAVES_RS, "waves", "3", "5", "4", "300", NULL };

static void test_soak_c_waves(void **state)
{
	(void)state;
	soak("waves", waves_c, soak_runs());
}

static void test_soak_rust_waves(void **state)
{
	(void)state;
	soak("workload-rs-waves", waves_rs, soak_runs());
}

/*
 * Thread ends the kernel skipped (KHPROF_TEST_SKIP_THREAD_EXITS, all three
 * programs, from Linux 6.16; before, the hook has no program to skip): the
 * dead threads stay listed, and the C library gives their stacks to the
 * threads of the next waves.  Every session still exact, no buffer counted
 * twice through a dead thread's entry (bpf/buffers.bpf.h, state_owners),
 * and the unseen ends said and counted as exit_unknown.
 */
static void soak_unseen(const char *what, char *const workload[])
{
	int said;

	setenv("KHPROF_TEST_SKIP_THREAD_EXITS", "3", 1);
	said = soak_run(what, workload, "batch", 1);
	unsetenv("KHPROF_TEST_SKIP_THREAD_EXITS");
	if (khprof_has_feature(khprof, "exit_before_mm") && !(said & ENDED_UNSEEN))
		fail_msg("%s: every thread's end skipped, and khprof did not say so", what);
	printf("%s: thread ends skipped, every session exact\n", what);
}

/*
 * Other threads' entries unreadable when a session starts or ends
 * (KHPROF_TEST_UNREAD_ENTRIES; a page the kernel is moving, as when it
 * collapses memory into huge pages): the spans they held belong to the
 * ending session all the same, counted there as exit_unread and not again
 * by the thread's next batch, whose session they are not.  Their input,
 * read with the count, still counts.  Pool workers hold spans at every
 * session's end here, so some are unread.
 */
static void soak_unread(const char *what, char *const workload[])
{
	struct session_counts want[SESSIONS];
	struct run_result r;
	char out[512];
	uint64_t unread = 0;

	/* The classic object (Linux 5.10) traces in span mode: no buffers to read. */
	if (!khprof_has_feature(khprof, "bpf_loop")) {
		printf("%s: no batch path on this kernel, no buffers to read\n", what);
		return;
	}
	path_in(out, sizeof(out), tmpdir, "%s-unread.json", what);
	setenv("KHPROF_TEST_UNREAD_ENTRIES", "1", 1);
	r = record_workload(khprof, "batch", out, workload);
	unsetenv("KHPROF_TEST_UNREAD_ENTRIES");
	parse_sessions(r.out, want, SESSIONS);
	for (size_t s = 0; s < SESSIONS; s++) {
		char path[512];
		struct kh_profile p;
		uint64_t spans, others = 0;

		if (s == 0)
			snprintf(path, sizeof(path), "%s", out);
		else
			path_in(path, sizeof(path), tmpdir, "%s-unread.%zu.json", what, s + 1);
		load_record(path, &p);
		spans = calls_of(&p, KH_STAGE_HOT_PATTERNS) + calls_of(&p, KH_STAGE_ENTROPY) +
			calls_of(&p, KH_STAGE_DECODE);
		for (uint32_t d = 0; d < KH_DROP_COUNT; d++)
			if (d != KH_DROP_EXIT_UNREAD && d != KH_DROP_EXIT_UNKNOWN)
				others += p.ext.drops[d];
		unread += p.ext.drops[KH_DROP_EXIT_UNREAD];
		if (spans + p.ext.drops[KH_DROP_EXIT_UNREAD] != want[s].hot + want[s].entropy + want[s].decode ||
		    p.input_bytes != want[s].bytes || p.input_units != want[s].units || others ||
		    p.ext.drops[KH_DROP_EXIT_UNKNOWN] > said_unseen(r.err))
			fail_msg("%s, unreadable entries, session %zu: %" PRIu64 " spans and %" PRIu64
				 " unread, input_bytes=%" PRIu64 " input_units=%" PRIu64 ", %" PRIu64
				 " other drops, where the program ran %llu spans, input_bytes=%llu "
				 "input_units=%llu; khprof said: %s", what, s, spans,
				 p.ext.drops[KH_DROP_EXIT_UNREAD], p.input_bytes, p.input_units, others,
				 want[s].hot + want[s].entropy + want[s].decode, want[s].bytes,
				 want[s].units, r.err);
		profile__free(&p);
	}
	if (!unread)
		fail_msg("%s, unreadable entries: no session's end held another thread's spans", what);
	if (!said_count(r.err, "could not read a live thread"))
		fail_msg("%s, unreadable entries: khprof did not say so: %s", what, r.err);
	printf("%s: entries unreadable at session ends, %" PRIu64 " spans counted as unread\n",
	       what, unread);
	run_result_free(&r);
}

/* The kernel matrix's shorter soak: both programs, a record a mode each. */
static void test_soak_brief(void **state)
{
	(void)state;
	soak("waves", waves_c, BRIEF_RUNS);
	soak("workload-rs-waves", waves_rs, BRIEF_RUNS);
	soak_unseen("waves", waves_c);
	soak_unseen("workload-rs-waves", waves_rs);
	soak_unread("waves", waves_c);
	soak_unread("workload-rs-waves", waves_rs);
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_soak",
		.need = "BPF integration tests need root (CAP_BPF, CAP_PERFMON)",
		.tmp_prefix = "khprof-soak-test",
		.tmpdir = &tmpdir,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soak_brief),
		cmocka_unit_test(test_soak_c_waves),
		cmocka_unit_test(test_soak_rust_waves),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
