// SPDX-License-Identifier: MIT
/*
 * khprof record as CI jobs and operators run it: an -o that cannot be
 * written is refused before the command runs, the default record file
 * (khprof.json, the previous one kept as .old) that `report` reads back,
 * SIGINT sent to khprof alone, and attach --duration in the syntax of
 * --interval.  Needs root; never skips when CI=true.
 */
#include <errno.h>
#include <glob.h>
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
#include <unistd.h>

#include <cmocka.h>

#include "khchild.h"
#include "khtest.h"
#include "record.h"

static char *khprof;   /* absolute: some tests run in their own directory */
static char *workload; /* absolute, likewise */
static char *tmpdir;

/*
 * -o into a missing directory, onto a directory or into a read-only one:
 * one line and exit 2 before COMMAND ran (its marker file is absent).
 */
static void test_bad_output_refused_before_the_command_runs(void **state)
{
	char marker[PATH_MAX], script[PATH_MAX + 64], missing[PATH_MAX], locked[PATH_MAX];
	char in_locked[PATH_MAX + 16], expected[2 * PATH_MAX + 128];
	char *into_missing[] = { khprof, "record", "-q", "-o", missing, "--", "/bin/sh", "-c",
				 script, NULL };
	char *onto_dir[] = { khprof, "record", "-q", "-o", tmpdir, "--", "/bin/sh", "-c", script,
			     NULL };
	char *into_locked[] = { khprof, "record", "-q", "-o", in_locked, "--", "/bin/sh", "-c",
				script, NULL };
	char *attach[] = { khprof, "attach", "-p", "1", "-o", missing, NULL };
	struct run_result r;

	(void)state;
	path_in(marker, sizeof(marker), tmpdir, "marker");
	snprintf(script, sizeof(script), "touch %s; exec %s sessions 1", marker, workload);
	path_in(missing, sizeof(missing), tmpdir, "nodir/sub/r.json");
	r = run_here(into_missing);
	assert_int_equal(r.exit_code, 2);
	snprintf(expected, sizeof(expected), "khprof: cannot write record '%s': directory "
		 "'%s/nodir/sub' does not exist (create it first)\n", missing, tmpdir);
	assert_string_equal(r.err, expected);
	assert_int_equal(access(marker, F_OK), -1);
	run_result_free(&r);

	r = run_here(onto_dir);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "it is a directory"));
	assert_int_equal(access(marker, F_OK), -1);
	run_result_free(&r);

	/* A path through a file (root may write anywhere else). */
	path_in(locked, sizeof(locked), tmpdir, "file");
	assert_int_equal(file__write_atomic(locked, "x", 1), 0);
	snprintf(in_locked, sizeof(in_locked), "%s/r.json", locked);
	r = run_here(into_locked);
	assert_int_equal(r.exit_code, 2);
	snprintf(expected, sizeof(expected), "khprof: cannot write record '%s': Not a "
		 "directory\n", in_locked);
	assert_string_equal(r.err, expected);
	assert_int_equal(access(marker, F_OK), -1);
	run_result_free(&r);

	/* attach checks -o before it attaches, too. */
	r = run_here(attach);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "does not exist (create it first)"));
	assert_int_equal(count_lines(r.err), 1);
	run_result_free(&r);
}

/*
 * Without -o, record writes khprof.json here and says so; a second run
 * keeps the first as khprof.json.old; report with no PATH reads it.
 */
static void test_default_record_file(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], old[PATH_MAX + 32], second[PATH_MAX + 16];
	uint64_t first_pid;
	char *once[] = { khprof, "record", "-q", "--", workload, "sessions", "1", NULL };
	char *twice[] = { khprof, "record", "-q", "--", workload, "sessions", "2", NULL };
	char *none[] = { khprof, "record", "-q", "--", "/bin/true", NULL };
	char *report[] = { khprof, "report", "--format", "seed", NULL };
	struct run_result r;
	struct kh_profile p;

	(void)state;
	path_in(dir, sizeof(dir), tmpdir, "default");
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/khprof.json", dir);
	snprintf(old, sizeof(old), "%s/khprof.json.old", dir);
	snprintf(second, sizeof(second), "%s/khprof.2.json", dir);

	r = run_cmd(dir, -1, once);
	assert_int_equal(r.exit_code, 0);
	assert_non_null(strstr(r.err, "khprof: note: record written to 'khprof.json'\n"));
	assert_int_equal(access(old, F_OK), -1);
	load_record(path, &p);
	assert_string_equal(p.identity.binary_version, "session-0");
	first_pid = p.ext.traced_pid;
	profile__free(&p);
	run_result_free(&r);

	/* Two sessions: khprof.json and khprof.2.json; the first run's is .old. */
	r = run_cmd(dir, -1, twice);
	assert_int_equal(r.exit_code, 0);
	assert_non_null(strstr(r.err, "khprof: note: record written to 'khprof.json' (the "
				      "previous one is now 'khprof.json.old')\n"));
	assert_non_null(strstr(r.err, "khprof: note: record written to 'khprof.2.json'\n"));
	load_record(old, &p);
	assert_int_equal(p.ext.traced_pid, first_pid);
	profile__free(&p);
	load_record(path, &p);
	assert_int_not_equal(p.ext.traced_pid, first_pid);
	profile__free(&p);
	load_record(second, &p);
	assert_int_equal(calls_of(&p, KH_STAGE_PREPROCESS), 2);
	profile__free(&p);
	run_result_free(&r);

	/* A run without a record leaves both as they were. */
	r = run_cmd(dir, -1, none);
	assert_int_equal(r.exit_code, 0);
	assert_null(strstr(r.err, "record written to"));
	load_record(old, &p);
	assert_int_equal(p.ext.traced_pid, first_pid);
	profile__free(&p);
	run_result_free(&r);

	r = run_cmd(dir, -1, report);
	assert_int_equal(r.exit_code, 0);
	assert_non_null(strstr(r.out, "KeyHog profile "));
	assert_non_null(strstr(r.out, "version=session-0 "));
	run_result_free(&r);
}

/*
 * SIGINT sent to khprof alone (not the terminal's, which reaches the whole
 * group) is passed on to COMMAND, as SIGTERM is: the command ends, and its
 * record, ended by the signal, is written with every span it completed.
 */
static void test_sigint_to_khprof_alone(void **state)
{
	char out[PATH_MAX];
	char *argv[] = { khprof, "record", "-q", "--mode", "span", "-o", out, "--", workload,
			 "serve", NULL };
	struct child k;
	struct kh_profile p;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "sigint.json");
	k = child_spawn(argv, false); /* the workload's stdin and stdout */
	child_wait_for_line(&k, "ready");
	child_send(&k, "begin\n");
	child_wait_for_line(&k, "done");
	child_send(&k, "spans\n");
	child_wait_for_line(&k, "done");
	/* The workload keeps running until khprof passes SIGINT on. */
	assert_int_equal(kill(k.pid, SIGINT), 0);
	assert_int_equal(child_wait(&k), 128 + SIGINT);
	load_record(out, &p);
	assert_string_equal(p.ext.process_end, "signal");
	assert_true(p.ext.exit_signal.present);
	assert_int_equal(p.ext.exit_signal.value, SIGINT);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 5);
	profile__free(&p);
}

/* The records dir/GLOB, exactly want of them, each one session of `workload sessions 1`. */
static void assert_one_session_records(const char *dir, const char *glob_name, size_t want)
{
	char pattern[PATH_MAX];
	uint64_t pids[8] = { 0 };
	struct kh_profile p;
	glob_t found;

	path_in(pattern, sizeof(pattern), dir, "%s", glob_name);
	assert_int_equal(glob(pattern, 0, NULL, &found), want ? 0 : GLOB_NOMATCH);
	assert_int_equal(found.gl_pathc, want);
	for (size_t i = 0; i < found.gl_pathc; i++) {
		load_record(found.gl_pathv[i], &p);
		assert_string_equal(p.identity.binary_version, "session-0");
		assert_int_equal(calls_of(&p, KH_STAGE_PREPROCESS), 1);
		assert_int_equal(p.status, KH_STATE_COMPLETED);
		assert_false(p.ext.started_mid_session);
		/* One record per process, named after it. */
		pids[i] = p.ext.traced_pid;
		for (size_t j = 0; j < i; j++)
			assert_int_not_equal(pids[j], pids[i]);
		{
			char tag[32];

			snprintf(tag, sizeof(tag), ".%" PRIu64 ".json", p.ext.traced_pid);
			assert_true(has_suffix(found.gl_pathv[i], tag));
		}
		profile__free(&p);
		assert_seed_conformance_of(khprof, found.gl_pathv[i]);
	}
	globfree(&found);
}

/*
 * A CI job's scanner run through a script (dash, which vforks), a bash
 * test runner (which forks) and a Makefile target: each instrumented
 * process the wrapper starts gets its record, PATH.PID.json, without a
 * flag; --no-follow-forks records none.
 */
static void test_wrappers_are_followed(void **state)
{
	char dir[PATH_MAX], out[PATH_MAX + 16], script[2 * PATH_MAX], makefile[PATH_MAX + 16];
	char runner[2 * PATH_MAX], expected[PATH_MAX + 128], text[PATH_MAX + 64];
	char *sh[] = { khprof, "record", "-q", "-o", out, "--", "/bin/sh", "-c", script, NULL };
	char *bash[] = { khprof, "record", "-q", "-o", out, "--", "/bin/bash", "-c", runner, NULL };
	char *make[] = { khprof, "record", "-q", "-o", out, "--", "/usr/bin/make", "-s", "-C", dir,
			 "scan", NULL };
	char *none[] = { khprof, "record", "-q", "--no-follow-forks", "-o", out, "--", "/bin/sh",
			 "-c", script, NULL };
	struct run_result r;

	(void)state;
	snprintf(script, sizeof(script), "%s sessions 1; %s sessions 1; true", workload,
		 workload);
	snprintf(runner, sizeof(runner), "for t in 1 2 3; do ( %s sessions 1 ) || exit 1; done",
		 workload);

	path_in(dir, sizeof(dir), tmpdir, "script");
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(out, sizeof(out), "%s/scan.json", dir);
	r = run_here(sh);
	assert_int_equal(r.exit_code, 0);
	snprintf(expected, sizeof(expected), "khprof: note: 2 records of the processes '/bin/sh' "
		 "started written as '%s/scan.PID.json'\n", dir);
	assert_non_null(strstr(r.err, expected));
	assert_int_equal(access(out, F_OK), -1); /* the shell itself has no probes */
	run_result_free(&r);
	assert_one_session_records(dir, "scan.*.json", 2);

	path_in(dir, sizeof(dir), tmpdir, "runner");
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(out, sizeof(out), "%s/scan.json", dir);
	r = run_here(bash);
	assert_int_equal(r.exit_code, 0);
	run_result_free(&r);
	assert_one_session_records(dir, "scan.*.json", 3);

	path_in(dir, sizeof(dir), tmpdir, "make");
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(makefile, sizeof(makefile), "%s/Makefile", dir);
	snprintf(text, sizeof(text), "scan:\n\t%s sessions 1\n\t%s sessions 1\n", workload,
		 workload);
	assert_int_equal(file__write_atomic(makefile, text, strlen(text)), 0);
	snprintf(out, sizeof(out), "%s/scan.json", dir);
	r = run_here(make);
	assert_int_equal(r.exit_code, 0);
	run_result_free(&r);
	assert_one_session_records(dir, "scan.*.json", 2);

	path_in(dir, sizeof(dir), tmpdir, "unfollowed");
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(out, sizeof(out), "%s/scan.json", dir);
	r = run_here(none);
	assert_int_equal(r.exit_code, 0);
	assert_non_null(strstr(r.err, "it ran untraced"));
	run_result_free(&r);
	assert_one_session_records(dir, "scan*.json", 0);
}

/* attach -p PID -o out, once its probes are live. */
static struct child attach_to(const char *pid_text, const char *out)
{
	char *argv[] = { khprof, "attach", "-q", "--mode", "span", "-p", (char *)pid_text, "-o",
			 (char *)out, NULL };

	return attach_spawn(argv);
}

/*
 * Attaching mid-session keeps the identity the program set before khprof
 * was there (its kh_identity_table), a value from a stack buffer and the
 * latest value of a key included; the next session starts without it.
 */
static void test_mid_session_attach_keeps_identity(void **state)
{
	char out[PATH_MAX], second[PATH_MAX], pid_text[16];
	struct child w, k;
	struct kh_profile p;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "mid-identity.json");
	path_in(second, sizeof(second), tmpdir, "mid-identity-next.json");
	w = serve_loop_start_pid(workload, pid_text, sizeof(pid_text));
	serve_loop_command(&w, "begin\n");
	serve_loop_command(&w, "identity\n");
	k = attach_to(pid_text, out);
	serve_loop_command(&w, "spans\n");
	serve_loop_command(&w, "end\n");
	assert_int_equal(kill(k.pid, SIGTERM), 0);
	assert_int_equal(child_wait(&k), 0);

	load_record(out, &p);
	assert_true(p.ext.started_mid_session);
	assert_int_equal(p.status, KH_STATE_COMPLETED);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 5);
	assert_string_equal(p.identity.binary_version, "serve 2.1");
	assert_string_equal(p.identity.source_kind, "git");
	assert_int_equal(p.identity.scanner_threads, 4);
	profile__free(&p);
	assert_seed_conformance_of(khprof, out);

	/* A session begun after that one has no identity yet: none is carried over. */
	serve_loop_command(&w, "begin\n");
	k = attach_to(pid_text, second);
	serve_loop_command(&w, "spans\n");
	serve_loop_command(&w, "end\n");
	assert_int_equal(kill(k.pid, SIGTERM), 0);
	assert_int_equal(child_wait(&k), 0);
	load_record(second, &p);
	assert_true(p.ext.started_mid_session);
	assert_string_equal(p.identity.binary_version, "unknown");
	assert_int_equal(p.identity.scanner_threads, 0);
	profile__free(&p);
	serve_loop_stop(&w);
}

/*
 * `khprof probes` and `attach -p` give one count of the sites attach
 * attaches in batch mode: probes' figure without clock_monotonic, and
 * with it, which attach links only where batched spans are timed with
 * CLOCK_MONOTONIC (forced here through the untrusted-TSC hook, else as
 * this machine's evidence says, which the record names).  attach counts
 * the executable's sites and its libraries' (the workload's libkhwork.so).
 */
static void test_probes_counts_what_attach_attaches(void **state)
{
	char out[PATH_MAX], pid_text[16], line[512], library[PATH_MAX];
	size_t plain = 0, with_clock = 0;

	(void)state;
	snprintf(library, sizeof(library), "%.*s/libkhwork.so",
		 (int)(strrchr(workload, '/') - workload), workload);
	for (int i = 0; i < 2; i++) {
		char *probes[] = { khprof, "probes", i ? library : workload, NULL };
		struct run_result r = run_here(probes);
		char *note = strstr(r.err, "attach counts ");
		size_t a, b;

		assert_int_equal(r.exit_code, 0);
		assert_non_null(note);
		assert_int_equal(sscanf(note, "attach counts %zu in batch mode, the default (%zu "
					"with clock_monotonic, attached where khprof times batched "
					"spans with CLOCK_MONOTONIC)", &a, &b), 2);
		assert_int_equal(b, a + 1);
		plain += a;
		with_clock += b;
		run_result_free(&r);
	}

	for (int forced = 0; forced < 2; forced++) {
		char *attach[] = { khprof, "attach", "-q", "-p", pid_text, "-o", out, NULL };
		struct kh_profile p;
		struct child w, k;
		size_t attached;

		if (forced)
			setenv("KHPROF_TEST_TSC", "untrusted", 1);
		path_in(out, sizeof(out), tmpdir, "counted-%d.json", forced);
		w = serve_loop_start_pid(workload, pid_text, sizeof(pid_text));
		k = child_spawn(attach, true);
		child_read_line(&k, "attached to PID", line, sizeof(line));
		assert_int_equal(sscanf(strstr(line, "attached to PID"), "attached to PID %*d (%zu "
					"probe sites)", &attached), 1);
		serve_loop_command(&w, "session\n");
		assert_int_equal(kill(k.pid, SIGTERM), 0);
		assert_int_equal(child_wait(&k), 0);
		serve_loop_stop(&w);
		unsetenv("KHPROF_TEST_TSC");
		load_record(out, &p);
		if (!strcmp(p.ext.span_clock, "monotonic"))
			assert_int_equal(attached, with_clock);
		else
			assert_int_equal(attached, plain);
		if (forced)
			assert_string_equal(p.ext.span_clock, "monotonic");
		profile__free(&p);
	}
}

/* The text between the first line that is start and the next line "```". */
static char *fenced_block(const char *page, const char *start)
{
	const char *from = strstr(page, start), *end;

	assert_non_null(from);
	from += strlen(start);
	end = strstr(from, "\n```\n");
	assert_non_null(end);
	return strndup(from, (size_t)(end - from) + 1);
}

/*
 * docs/INSTRUMENTING.md's scanner, built with the page's own build line
 * (run as it is written, khprof/ a link to this tree), then recorded: its
 * spans, input, identity and states are in the record as the page says.
 */
static void test_instrumenting_page_builds_and_records(void **state)
{
	char dir[PATH_MAX], source[PATH_MAX], link[PATH_MAX], scanner[PATH_MAX], out[PATH_MAX];
	char readme[PATH_MAX], probes_md[PATH_MAX], root[PATH_MAX], *page, *program, *build;
	char *sh[] = { "/bin/sh", "-c", NULL, NULL };
	size_t len, chunks = 0;
	struct run_result r;
	struct kh_profile p;
	struct stat st;

	(void)state;
	assert_int_equal(file__read_all("docs/INSTRUMENTING.md", &page, &len), 0);
	program = fenced_block(page, "```c\n");
	build = fenced_block(page, "```sh\n");
	*strchr(build, '\n') = '\0'; /* the first line: cc ... */
	assert_int_equal(strncmp(build, "cc ", 3), 0);
	path_in(dir, sizeof(dir), tmpdir, "instrumenting");
	assert_int_equal(mkdir(dir, 0755), 0);
	path_in(source, sizeof(source), dir, "scanner.c");
	assert_int_equal(file__write_atomic(source, program, strlen(program)), 0);
	assert_non_null(realpath(".", root));
	path_in(link, sizeof(link), dir, "khprof");
	assert_int_equal(symlink(root, link), 0);
	r = run_cmd(dir, -1, (sh[2] = build, sh));
	if (r.exit_code != 0)
		fail_msg("'%s' failed: %s", build, r.err);
	assert_string_equal(r.err, ""); /* no warning either */
	run_result_free(&r);

	path_in(scanner, sizeof(scanner), dir, "scanner");
	path_in(out, sizeof(out), dir, "run.json");
	path_in(readme, sizeof(readme), root, "README.md");
	path_in(probes_md, sizeof(probes_md), root, "docs/PROBES.md");
	r = record_run(khprof, NULL, out, &p, "-q", "--", scanner, readme, probes_md, NULL);
	assert_non_null(strstr(r.out, " candidates\n"));
	run_result_free(&r);
	assert_int_equal(p.status, KH_STATE_COMPLETED);
	assert_string_equal(p.identity.binary_version, "scanner 2.1");
	assert_string_equal(p.identity.source_kind, "filesystem");
	assert_int_equal(p.identity.scanner_threads, 1);
	assert_int_equal(p.input_units, 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(stat(i ? probes_md : readme, &st), 0);
		chunks += ((size_t)st.st_size + 65535) / 65536;
		p.input_bytes -= (uint64_t)st.st_size;
	}
	assert_int_equal(p.input_bytes, 0);
	assert_int_equal(calls_of(&p, KH_STAGE_SOURCE_ACQUIRE), 2);
	assert_int_equal(calls_of(&p, KH_STAGE_SOURCE_READ), chunks + 2); /* and each EOF */
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 2 * chunks);
	assert_int_equal(calls_of(&p, KH_STAGE_DECODE), chunks);
	assert_true(profile__find_stage(&p, KH_STAGE_DECODE)->attributed_ns > 0);
	assert_int_equal(calls_of(&p, KH_STAGE_REPORTING), 1);
	assert_int_equal(p.state_count, 3); /* created, scanning, reporting */
	assert_int_equal(p.states[2].state, KH_STATE_REPORTING);
	profile__free(&p);
	assert_seed_conformance_of(khprof, out);
	free(build);
	free(program);
	free(page);
}

/* attach --duration takes --interval's syntax: "1s", "500ms", or seconds. */
static void test_duration_syntax(void **state)
{
	char pid_text[16], out[PATH_MAX];
	char *bad[] = { khprof, "attach", "-p", "1", "--duration", "5x", NULL };
	char *zero[] = { khprof, "attach", "-p", "1", "--duration", "0", NULL };
	struct child w;

	(void)state;
	assert_run_exits(bad, 2, "bad duration '5x': expected a duration, 1ms to 1000h");
	assert_run_exits(zero, 2, "bad duration '0'");
	path_in(out, sizeof(out), tmpdir, "duration.json");
	w = serve_loop_start_pid(workload, pid_text, sizeof(pid_text));
	{
		const char *durations[] = { "300ms", "0.3", "1s" };

		for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
			char *argv[] = { khprof, "attach", "-q", "-p", pid_text, "--duration",
					 (char *)durations[i], "-o", out, NULL };
			struct run_result r = run_here(argv);

			/* The deadline ended it, and the serve loop still runs. */
			if (r.exit_code != 0)
				fail_msg("--duration %s: exit %d: %s", durations[i], r.exit_code,
					 r.err);
			assert_int_equal(kill(w.pid, 0), 0);
			run_result_free(&r);
		}
	}
	serve_loop_stop(&w);
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_workflows",
		.need = "BPF integration tests need root",
		.tmp_prefix = "khprof-workflows",
		.tmpdir = &tmpdir,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_output_refused_before_the_command_runs),
		cmocka_unit_test(test_default_record_file),
		cmocka_unit_test(test_sigint_to_khprof_alone),
		cmocka_unit_test(test_duration_syntax),
		cmocka_unit_test(test_mid_session_attach_keeps_identity),
		cmocka_unit_test(test_probes_counts_what_attach_attaches),
		cmocka_unit_test(test_instrumenting_page_builds_and_records),
		cmocka_unit_test(test_wrappers_are_followed),
	};
	char *k = tool_path("KH_KHPROF", "build/khprof"), *w = tool_path("KH_WORKLOAD",
									"build/workloads/workload");

	khprof = realpath(k, NULL);
	workload = realpath(w, NULL);
	if (!khprof || !workload) {
		fprintf(stderr, "test_workflows: cannot find %s or %s: %s\n", k, w, strerror(errno));
		return 1;
	}
	free(k);
	free(w);
	/*
	 * A launcher that ignores SIGINT (`nohup sh -c '...' &`, a background
	 * job of a non-interactive shell) passes that on through khprof to the
	 * workload, as khprof must; the test of SIGINT needs the default.
	 */
	signal(SIGINT, SIG_DFL);
	return run_root_tests(&rt, tests);
}
