// SPDX-License-Identifier: MIT
/*
 * Many processes on one machine: `khprof attach --exe PATH` traces every
 * process running an executable or with a library loaded, those running
 * when it starts and those that start later, one record per process and
 * session, named by the process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "khchild.h"
#include "khtest.h"
#include "record.h"

#define WORKLOAD "build/workloads/workload"
#define LIBRARY "build/workloads/libkhwork.so"

static char *khprof;
static char *tmpdir;

/* `khprof attach --exe target ...`, once it watches. */
static struct child start_watch(const char *target, const char *out, bool from_start)
{
	char *argv[] = { khprof, "attach", "--exe", (char *)target, "--mode", "span", "-q", "-o",
			 (char *)out, from_start ? "--from-start" : NULL, NULL };
	struct child k = child_spawn(argv, true);

	child_wait_for_line(&k, "watching");
	return k;
}

/* SIGTERM ends the watch; khprof exits 0. */
static void stop_watch(struct child *k)
{
	assert_int_equal(kill(k->pid, SIGTERM), 0);
	assert_int_equal(child_wait(k), 0);
}

/* The record of process pid: out with ".PID" before the extension. */
static void load_process_record(const char *dir, pid_t pid, struct kh_profile *p)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/exe.%d.json", dir, pid);
	load_record(path, p);
	assert_int_equal(p->ext.traced_pid, (uint64_t)pid);
}

static void test_running_and_later_processes(void **state)
{
	char out[512], needle[64];
	struct child k, early, late;
	struct kh_profile p;

	(void)state;
	snprintf(out, sizeof(out), "%s/exe.json", tmpdir);
	early = serve_loop_start(WORKLOAD);
	k = start_watch(WORKLOAD, out, false);
	snprintf(needle, sizeof(needle), "attached to PID %d ", early.pid);
	child_wait_for_line(&k, needle);
	late = serve_loop_start(WORKLOAD);
	snprintf(needle, sizeof(needle), "attached to PID %d ", late.pid);
	child_wait_for_line(&k, needle);

	serve_loop_command(&early, "session\n");
	serve_loop_command(&late, "session\n");
	serve_loop_command(&late, "session\n");
	serve_loop_stop(&early);
	serve_loop_stop(&late);
	stop_watch(&k);

	load_process_record(tmpdir, early.pid, &p);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 10);
	assert_int_equal(calls_of(&p, KH_STAGE_ENTROPY), 20);
	assert_false(p.ext.started_mid_session);
	profile__free(&p);
	/* Each session of a process is a record of its own: .PID, then .PID.2. */
	load_process_record(tmpdir, late.pid, &p);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 10);
	assert_int_equal(p.input_bytes, 10 * 4096);
	profile__free(&p);
	snprintf(out, sizeof(out), "%s/exe.%d.2.json", tmpdir, late.pid);
	load_record(out, &p);
	assert_int_equal(calls_of(&p, KH_STAGE_DECODE), 10);
	profile__free(&p);
}

/* The one record a watch wrote into dir, loaded. */
static void load_only_record(const char *dir, struct kh_profile *p)
{
	char pattern[600];
	glob_t found;

	snprintf(pattern, sizeof(pattern), "%s/*.json", dir);
	assert_int_equal(glob(pattern, 0, NULL, &found), 0);
	assert_int_equal(found.gl_pathc, 1);
	load_record(found.gl_pathv[0], p);
	globfree(&found);
}

/*
 * --from-start: a process that starts its session at once and runs only
 * milliseconds is stopped at its first instruction until it is traced, so
 * its record is whole.
 */
static void check_from_start(const char *target, const char *name)
{
	char dir[512], out[600];
	char *argv[] = { WORKLOAD, "timed", "200", "10", NULL };
	struct kh_profile p;
	struct child k;

	snprintf(dir, sizeof(dir), "%s/%s", tmpdir, name);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(out, sizeof(out), "%s/exe.json", dir);
	k = start_watch(target, out, true);
	assert_run_exits(argv, 0, NULL);
	stop_watch(&k);

	load_only_record(dir, &p);
	assert_false(p.ext.started_mid_session);
	assert_false(p.ext.ended_mid_session);
	assert_int_equal(p.status, KH_STATE_COMPLETED);
	assert_int_equal(calls_of(&p, KH_STAGE_CONFIRMED_PATTERNS), 10);
	profile__free(&p);
}

/*
 * Without a flag: three short runs started after the watch began, each
 * stopped at its start until traced, give three whole records.
 */
static void test_later_short_processes_by_default(void **state)
{
	char dir[512], out[600];
	char *argv[] = { WORKLOAD, "timed", "200", "10", NULL };
	char *watch[] = { khprof, "attach", "--exe", WORKLOAD, "--mode", "span", "-q", "-o", out,
			  NULL };
	pid_t pids[3];
	struct kh_profile p;
	struct child k;
	glob_t found;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/later-short", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(out, sizeof(out), "%s/exe.json", dir);
	k = child_spawn(watch, true);
	child_wait_for_line(&k, "watching");
	for (int i = 0; i < 3; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			execv(argv[0], argv);
			_exit(RUN_EXEC_FAILED);
		}
		assert_int_equal(wait_exit(pids[i]), 0);
	}
	stop_watch(&k);

	snprintf(out, sizeof(out), "%s/*.json", dir);
	assert_int_equal(glob(out, 0, NULL, &found), 0);
	assert_int_equal(found.gl_pathc, 3);
	globfree(&found);
	for (int i = 0; i < 3; i++) {
		load_process_record(dir, pids[i], &p);
		assert_false(p.ext.started_mid_session);
		assert_false(p.ext.ended_mid_session);
		assert_int_equal(p.status, KH_STATE_COMPLETED);
		assert_int_equal(calls_of(&p, KH_STAGE_CONFIRMED_PATTERNS), 10);
		profile__free(&p);
	}
}

static void test_from_start_executable(void **state)
{
	(void)state;
	check_from_start(WORKLOAD, "from-start-exe");
}

/* A library's DT_INIT is its start: the workload links libkhwork.so. */
static void test_from_start_library(void **state)
{
	(void)state;
	check_from_start(LIBRARY, "from-start-lib");
}

/*
 * attach --exe --interval: each process's open session is sampled by the
 * watch's own event loop (an interval line while the session runs), and
 * its record carries the series.  --duration only ends a broken watch that
 * never samples, so that the test fails instead of waiting forever.
 */
static void test_exe_interval(void **state)
{
	char dir[512], out[600], needle[64];
	char *argv[] = { khprof, "attach", "--exe", WORKLOAD, "--mode", "span", "--interval",
			 "10ms", "--duration", "60", "-o", out, NULL };
	struct child k, w;
	struct kh_profile p;
	uint64_t calls = 0;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/interval", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(out, sizeof(out), "%s/exe.json", dir);
	w = serve_loop_start(WORKLOAD);
	k = child_spawn(argv, true);
	snprintf(needle, sizeof(needle), "attached to PID %d ", w.pid);
	child_wait_for_line(&k, needle);
	serve_loop_command(&w, "begin\n");
	/* An interval line ("khprof: 0.01s scanning ...") while the session is open. */
	child_wait_for_line(&k, "s scanning ");
	serve_loop_command(&w, "spans\n");
	serve_loop_command(&w, "end\n");
	serve_loop_stop(&w);
	stop_watch(&k);

	load_process_record(dir, w.pid, &p);
	assert_int_equal(p.ext.series.interval_ns, 10000000);
	assert_true(p.ext.series.count >= 2);
	for (size_t j = 0; j < p.ext.series.count; j++)
		calls += p.ext.series.intervals[j].calls[KH_STAGE_HOT_PATTERNS];
	assert_int_equal(calls, 5);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 5);
	profile__free(&p);
}

/*
 * --keep 1: of two processes' records only one stays, and khprof says
 * that it removed the other (which one: whichever it wrote first).
 */
static void test_exe_keep(void **state)
{
	char dir[512], out[600];
	char *argv[] = { WORKLOAD, "timed", "200", "3", NULL };
	char *watch[] = { khprof, "attach", "--exe", WORKLOAD, "--mode", "span", "--keep", "1",
			  "-o", out, NULL };
	char *no_output[] = { khprof, "attach", "--exe", WORKLOAD, "--keep", "1", NULL };
	struct kh_profile p;
	struct child k;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/keep", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(out, sizeof(out), "%s/exe.json", dir);
	k = child_spawn(watch, true);
	child_wait_for_line(&k, "watching");
	assert_run_exits(argv, 0, NULL);
	assert_run_exits(argv, 0, NULL);
	assert_int_equal(kill(k.pid, SIGTERM), 0);
	child_wait_for_line(&k, "removed 1 older record to keep the newest 1 (--keep)");
	assert_int_equal(child_wait(&k), 0);
	load_only_record(dir, &p);
	assert_int_equal(calls_of(&p, KH_STAGE_CONFIRMED_PATTERNS), 3);
	profile__free(&p);
	assert_run_exits(no_output, 2, "--keep needs --exe or --all, and -o");
}

static void test_exe_errors(void **state)
{
	char *missing[] = { khprof, "attach", "--exe", "/nonexistent/scanner", NULL };
	char *both[] = { khprof, "attach", "-p", "1", "--exe", WORKLOAD, NULL };
	char *lone[] = { khprof, "attach", "-p", "1", "--from-start", NULL };
	char *lone_no_stop[] = { khprof, "attach", "-p", "1", "--no-stop", NULL };
	char *both_stops[] = { khprof, "attach", "--exe", WORKLOAD, "--from-start", "--no-stop",
			       NULL };
	char *record[] = { khprof, "record", "--exe", WORKLOAD, "--", "/bin/true", NULL };
	char *all_and_pid[] = { khprof, "attach", "--all", "-p", "1", NULL };
	char *lone_container[] = { khprof, "attach", "-p", "1", "--container", "1", NULL };
	char *bad_container[] = { khprof, "attach", "--exe", WORKLOAD, "--container", "kt3", NULL };
	char *no_container[] = { khprof, "attach", "--exe", WORKLOAD, "--container", "999999999",
				 NULL };
	char self[16], needle[96];
	char *not_inside[] = { khprof, "attach", "--exe", "/nonexistent/scanner", "--container",
			       self, NULL };
	char *record_all[] = { khprof, "record", "--all", "--", "/bin/true", NULL };

	(void)state;
	assert_run_exits(all_and_pid, 2, "one of -p PID, --exe PATH and --all");
	assert_run_exits(lone_container, 2, "--container needs --exe PATH");
	assert_run_exits(bad_container, 2, "bad --container 'kt3'");
	assert_run_exits(no_container, 1, "cannot find container '999999999'");
	/* This test's root is the host's: the path is missing there as anywhere. */
	snprintf(self, sizeof(self), "%d", (int)getpid());
	snprintf(needle, sizeof(needle), "cannot watch '/nonexistent/scanner' in container '%s'",
		 self);
	assert_run_exits(not_inside, 2, needle);
	assert_run_exits(record_all, 2, NULL);
	assert_run_exits(missing, 2, "cannot watch '/nonexistent/scanner'");
	assert_run_exits(both, 2, "one of -p PID, --exe PATH and --all");
	assert_run_exits(lone, 2, "--from-start needs --exe");
	assert_run_exits(lone_no_stop, 2, "--no-stop needs --exe");
	assert_run_exits(both_stops, 2, "--from-start and --no-stop contradict each other");
	assert_run_exits(record, 2, NULL);
}

/*
 * A file that is not ELF, or a cut one, is bad input (2) for attach --exe
 * as for probes and record, said as probes says it.
 */
static void test_exe_bad_files(void **state)
{
	char cut[600], *text = NULL;
	size_t len;
	char *not_elf[] = { khprof, "attach", "--exe", "README.md", "--duration", "1", NULL };
	char *malformed[] = { khprof, "attach", "--exe", cut, "--duration", "1", NULL };
	struct run_result r;

	(void)state;
	r = run_here(not_elf);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "/README.md': not an ELF file\n"));
	run_result_free(&r);

	snprintf(cut, sizeof(cut), "%s/cut-workload", tmpdir);
	assert_int_equal(file__read_all(WORKLOAD, &text, &len), 0);
	assert_int_equal(file__write_atomic(cut, text, 3000), 0);
	free(text);
	r = run_here(malformed);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "cut-workload': malformed ELF file: "));
	run_result_free(&r);
}

/* The watch says where its records go, and that without -o there are none. */
static void test_exe_says_where_records_go(void **state)
{
	char out[600], line[512], expected[700];
	char *bare[] = { khprof, "attach", "--exe", WORKLOAD, "--mode", "span", NULL };
	char *named[] = { khprof, "attach", "--exe", WORKLOAD, "--mode", "span", "-q", "-o", out,
			  NULL };
	struct child k;

	(void)state;
	k = child_spawn(bare, true);
	child_read_line(&k, "watching", line, sizeof(line));
	assert_non_null(strstr(line, "; their reports go to stderr, no record is written "
				     "without -o (-o PATH writes PATH.PID.json per process); "));
	stop_watch(&k);

	snprintf(out, sizeof(out), "%s/where.json", tmpdir);
	k = child_spawn(named, true);
	child_read_line(&k, "watching", line, sizeof(line));
	snprintf(expected, sizeof(expected), ", their records to '%s/where.PID.json'; ", tmpdir);
	assert_non_null(strstr(line, expected));
	stop_watch(&k);
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_processes",
		.need = "BPF integration tests need root (CAP_BPF, CAP_PERFMON)",
		.tmp_prefix = "khprof-processes",
		.tmpdir = &tmpdir,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_running_and_later_processes),
		cmocka_unit_test(test_later_short_processes_by_default),
		cmocka_unit_test(test_from_start_executable),
		cmocka_unit_test(test_from_start_library),
		cmocka_unit_test(test_exe_interval),
		cmocka_unit_test(test_exe_keep),
		cmocka_unit_test(test_exe_errors),
		cmocka_unit_test(test_exe_bad_files),
		cmocka_unit_test(test_exe_says_where_records_go),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
