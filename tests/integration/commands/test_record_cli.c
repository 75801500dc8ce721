// SPDX-License-Identifier: MIT
/*
 * khprof record's command line with real tracing: a rerun replaces an
 * earlier run's records, a shell wrapper gets the hint about children, and
 * `report DIR` prints what `record --repeat` printed, and the helper
 * processes khprof leaves behind keep none of its output open, and the
 * CO-RE target cache is written, used, and rebuilt when it does not load,
 * and each mode loads only its own programs.
 * Needs root; never skips when CI=true.
 */
#include <errno.h>
#include <glob.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "khtest.h"
#include "record.h"

#define WORKLOAD "build/workloads/workload"

static char *khprof;
static char *tmpdir;

/*
 * 4 sessions, then 4 again and 2 to the same -o: the records written again
 * are replaced without a word, and p.3/p.4 of the first run, which the
 * third does not write again, are said to be removed and are gone.
 */
static void test_rerun_replaces_earlier_series(void **state)
{
	char out[PATH_MAX], second[PATH_MAX], third[PATH_MAX], fourth[PATH_MAX];
	char *four[] = { khprof, "record", "-q", "-o", out, "--", WORKLOAD, "sessions", "4", NULL };
	char *two[] = { khprof, "record", "-q", "-o", out, "--", WORKLOAD, "sessions", "2", NULL };
	char expected[3 * PATH_MAX + 128];
	struct run_result r;
	struct kh_profile p;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "p.json");
	path_in(second, sizeof(second), tmpdir, "p.2.json");
	path_in(third, sizeof(third), tmpdir, "p.3.json");
	path_in(fourth, sizeof(fourth), tmpdir, "p.4.json");
	r = run_here(four);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(access(fourth, F_OK), 0);
	assert_null(strstr(r.err, "removed"));
	run_result_free(&r);
	r = run_here(four);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(access(fourth, F_OK), 0);
	assert_null(strstr(r.err, "removed"));
	run_result_free(&r);

	r = run_here(two);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(access(third, F_OK), -1);
	assert_int_equal(access(fourth, F_OK), -1);
	snprintf(expected, sizeof(expected),
		 "khprof: note: removed 2 records ('%s' to '%s') left by an earlier run "
		 "beyond this run's 2\n", third, fourth);
	assert_non_null(strstr(r.err, expected));
	/* The second record is this run's. */
	load_record(second, &p);
	assert_string_equal(p.identity.binary_version, "session-1");
	assert_int_equal(profile__find_stage(&p, KH_STAGE_PREPROCESS)->calls, 2);
	profile__free(&p);
	run_result_free(&r);
}

/*
 * A shell that forks the scanner, told not to follow it: untraced, with
 * the hint; exec fixes it.  (Followed by default: test_workflows.c.)
 */
static void test_shell_wrapper_hint(void **state)
{
	char out[PATH_MAX];
	char *forks[] = { khprof, "record", "-q", "--no-follow-forks", "--", "/bin/sh", "-c",
			  WORKLOAD " sessions 1; true", NULL };
	char *execs[] = { khprof, "record", "-q", "--mode", "span", "-o", out, "--", "/bin/sh",
			  "-c", "exec " WORKLOAD " sessions 1", NULL };
	struct run_result r;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "exec.json");
	r = run_here(forks);
	assert_int_equal(r.exit_code, 0);
	/* The last line (a note on the clocksource may come first, by machine). */
	assert_true(has_suffix(r.err, "khprof: warning: '/bin/sh' and its libraries have no "
				      "keyhog probes: it ran untraced (the children it forks are "
				      "followed unless --no-follow-forks; a shell may also 'exec' the "
				      "instrumented program)\n"));
	assert_int_equal(count_lines(strstr(r.err, "khprof: warning:")), 1);
	assert_null(strstr(r.err, "record written"));
	run_result_free(&r);
	r = run_here(execs);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(access(out, F_OK), 0);
	run_result_free(&r);
}

/* report DIR prints the very table the series printed after its runs. */
static void test_report_dir_prints_the_series_spread(void **state)
{
	char dir[PATH_MAX], heading[PATH_MAX + 32];
	char *series[] = { khprof, "record", "--repeat", "2", "-o", dir, "--", WORKLOAD,
			   "sessions", "1", NULL };
	char *report[] = { khprof, "report", dir, NULL };
	char *json[] = { khprof, "report", "--format", "json", dir, NULL };
	struct run_result rec, rep;
	const char *table;

	(void)state;
	path_in(dir, sizeof(dir), tmpdir, "runs");
	rec = run_here(series);
	assert_int_equal(rec.exit_code, 0);
	rep = run_here(report);
	assert_int_equal(rep.exit_code, 0);
	assert_string_equal(rep.err, "");
	snprintf(heading, sizeof(heading), "2 runs in '%s':\n", dir);
	assert_int_equal(strncmp(rep.out, heading, strlen(heading)), 0);
	table = rep.out + strlen(heading);
	assert_true(strlen(table) > 0);
	/* The series printed the same table after its note line. */
	assert_true(has_suffix(rec.err, table));
	run_result_free(&rec);
	run_result_free(&rep);

	rep = run_here(json);
	assert_int_equal(rep.exit_code, 2);
	assert_int_equal(count_lines(rep.err), 1);
	run_result_free(&rep);
}

/*
 * khprof's helpers outlive it (the start-up's uprobe warmer, the process
 * that releases the probe links): once khprof has exited, a pipe that was
 * its stdout and stderr must be at EOF, or whoever reads khprof's output
 * (a shell's $(...), a CI step) waits for the helpers too.
 */
static void test_helpers_keep_no_output_open(void **state)
{
	char out_path[PATH_MAX];
	char *argv[] = { khprof, "record", "-o", out_path, "--", WORKLOAD, "sessions", "1", NULL };
	char buf[4096];
	int out[2], status;
	ssize_t n;
	pid_t pid;

	(void)state;
	path_in(out_path, sizeof(out_path), tmpdir, "helpers.json");
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (dup2(out[1], STDOUT_FILENO) < 0 || dup2(out[1], STDERR_FILENO) < 0)
			_exit(RUN_SETUP_FAILED);
		execv(argv[0], argv);
		_exit(RUN_EXEC_FAILED);
	}
	close(out[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(exit_code_of_status(status), 0);
	/* Everything khprof wrote is in the pipe; then EOF, not "try again". */
	assert_int_equal(fcntl(out[0], F_SETFL, O_NONBLOCK), 0);
	while ((n = read(out[0], buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		fail_msg("khprof's output is still open after it exited: %s", strerror(errno));
	close(out[0]);
}

/* Waits for every process left behind (this process is their subreaper). */
static void reap_helpers(void)
{
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
}

/* The number of cache files (*.btf) in dir. */
static size_t cached_btf_files(const char *dir)
{
	char pattern[PATH_MAX + 8];
	glob_t found;
	size_t n;

	snprintf(pattern, sizeof(pattern), "%s/*.btf", dir);
	if (glob(pattern, 0, NULL, &found) != 0)
		return 0;
	n = found.gl_pathc;
	globfree(&found);
	return n;
}

/*
 * One traced run of the workload; its record's calls must be the first
 * run's.  Returns whether it loaded with the cache.
 */
static bool traced_run(const char *out, const struct kh_profile *first, bool *fell_back)
{
	char *argv[] = { khprof, "record", "-v", "-q", "-o", (char *)out, "--", WORKLOAD,
			 "sessions", "1", NULL };
	struct run_result r = run_here(argv);
	struct kh_profile p;
	bool cached;

	if (r.exit_code != 0)
		fail_msg("khprof exited %d: %s", r.exit_code, r.err);
	cached = strstr(r.err, "(CO-RE targets from the cache)") != NULL;
	*fell_back = strstr(r.err, "failed: loading without it") != NULL;
	load_record(out, &p);
	for (uint32_t stage = 0; first && stage < KH_STAGE_COUNT; stage++)
		assert_int_equal(calls_of(&p, stage), calls_of(first, stage));
	profile__free(&p);
	run_result_free(&r);
	reap_helpers();
	return cached;
}

/*
 * The first run on a kernel writes the cache as it closes, the next ones
 * load with it, a cache that does not load is dropped and written again,
 * and a directory others may write is neither read nor written.
 */
static void test_btf_cache(void **state)
{
	char dir[PATH_MAX / 2], out[PATH_MAX / 2], btf[PATH_MAX];
	struct kh_profile first;
	const char *outer = getenv("KHPROF_CACHE_DIR");
	char *saved = outer ? strdup(outer) : NULL;
	bool fell_back;
	glob_t found;
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/cache", tmpdir);
	snprintf(out, sizeof(out), "%s/cached.json", tmpdir);
	assert_int_equal(setenv("KHPROF_CACHE_DIR", dir, 1), 0);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);

	assert_false(traced_run(out, NULL, &fell_back));
	load_record(out, &first);
	assert_int_equal(cached_btf_files(dir), 1);
	assert_true(traced_run(out, &first, &fell_back));

	/* A cache that does not load: this run falls back, the next is cached again. */
	snprintf(btf, sizeof(btf), "%s/*.btf", dir);
	assert_int_equal(glob(btf, 0, NULL, &found), 0);
	f = fopen(found.gl_pathv[0], "w");
	assert_non_null(f);
	fputs("not BTF\n", f);
	fclose(f);
	globfree(&found);
	assert_false(traced_run(out, &first, &fell_back));
	assert_true(fell_back);
	assert_true(traced_run(out, &first, &fell_back));

	/* Writable by others: not trusted, so neither used nor written. */
	assert_int_equal(remove_tree(dir), 0);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chmod(dir, 0777), 0);
	assert_false(traced_run(out, &first, &fell_back));
	assert_int_equal(cached_btf_files(dir), 0);

	profile__free(&first);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
	assert_int_equal(saved ? setenv("KHPROF_CACHE_DIR", saved, 1) : unsetenv("KHPROF_CACHE_DIR"), 0);
	free(saved);
}

/*
 * The line of -v that names the programs a tracer loaded, copied to line;
 * fails without one.
 */
static void loaded_programs(const char *err, char *line, size_t len)
{
	const char *at = strstr(err, "programs loaded for ");
	const char *end = at ? strchr(at, '\n') : NULL;

	if (!at)
		fail_msg("khprof -v names no programs loaded: %s", err);
	snprintf(line, len, "%.*s", end ? (int)(end - at) : (int)strlen(at), at);
}

/*
 * Each mode loads only what it attaches (capture/kernel/load.c): kh_usdt
 * keeps only the paths of the mode the record names, whose spans are all
 * counted, and the fork-following programs load with --follow-forks only.
 */
static void test_each_mode_loads_its_programs(void **state)
{
	static const char *const modes[] = { "span", "pair", "batch" };
	char out[PATH_MAX], line[1024], mode[16];

	(void)state;
	path_in(out, sizeof(out), tmpdir, "programs.json");
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		char *argv[] = { khprof, "record", "-v", "-q", "--mode", (char *)modes[i], "-o",
				 out, "--", WORKLOAD, "sessions", "1", NULL };
		struct run_result r = run_here(argv);
		struct kh_profile p;

		if (r.exit_code != 0)
			fail_msg("khprof exited %d: %s", r.exit_code, r.err);
		loaded_programs(r.err, line, sizeof(line));
		assert_int_equal(sscanf(line, "programs loaded for %15s mode:", mode), 1);
		load_record(out, &p);
		assert_true(p.ext.present);
		/* The mode kh_usdt kept is the record's (span where a kernel has no bpf_loop). */
		assert_string_equal(mode, p.ext.mode);
		assert_int_equal(calls_of(&p, KH_STAGE_PREPROCESS), 1);
		assert_non_null(strstr(line, " kh_usdt "));
		assert_null(strstr(line, "kh_follow_exec"));
		profile__free(&p);
		run_result_free(&r);
	}
	{
		char *argv[] = { khprof, "record", "-v", "-q", "--follow-forks", "-o", out, "--",
				 WORKLOAD, "sessions", "1", NULL };
		struct run_result r = run_here(argv);

		if (r.exit_code != 0)
			fail_msg("khprof exited %d: %s", r.exit_code, r.err);
		loaded_programs(r.err, line, sizeof(line));
		assert_non_null(strstr(line, " kh_follow_fork"));
		assert_non_null(strstr(line, " kh_follow_exec"));
		/* Followed children get tracers of their own: none is made safe. */
		assert_null(strstr(line, "kh_untraced"));
		run_result_free(&r);
	}
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_record_cli",
		.need = "BPF integration tests need root",
		.tmp_prefix = "khprof-record-cli",
		.tmpdir = &tmpdir,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rerun_replaces_earlier_series),
		cmocka_unit_test(test_shell_wrapper_hint),
		cmocka_unit_test(test_report_dir_prints_the_series_spread),
		cmocka_unit_test(test_helpers_keep_no_output_open),
		cmocka_unit_test(test_btf_cache),
		cmocka_unit_test(test_each_mode_loads_its_programs),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
