// SPDX-License-Identifier: MIT
/*
 * The khprof command line without BPF: probes listing (our binaries and a
 * third-party library), report, help texts and the one-line errors with
 * their documented exit codes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fileio.h"
#include "khtest.h"

/* build/khprof, or $KH_KHPROF; set in main(). */
static char *khprof;

/* Runs argv as this user, from here. */
static struct run_result run(char *const argv[])
{
	return run_cmd(NULL, -1, argv);
}

static void test_probes_lists_keyhog_sites(void **state)
{
	char *argv[] = { khprof, "probes", "build/workloads/workload", NULL };
	struct run_result r = run(argv);
	char *line;

	(void)state;
	assert_int_equal(r.exit_code, 0);
	assert_non_null(strstr(r.out, "PROVIDER"));
	/* Span probes carry the semaphore; session probes have none. */
	line = strstr(r.out, "keyhog     span_enter");
	assert_non_null(line);
	assert_non_null(strstr(line, " 0x"));
	line = strstr(r.out, "keyhog     session_start");
	assert_non_null(line);
	assert_non_null(strstr(line, " -  "));
	assert_non_null(strstr(r.out, "keyhog     batch"));
	assert_non_null(strstr(r.out, "keyhog     span "));
	assert_non_null(strstr(r.out, "keyhog     identity"));
	run_result_free(&r);
}

static void test_probes_reads_third_party_binaries(void **state)
{
	char path[512];
	FILE *p = popen("gcc -print-file-name=libstdc++.so.6", "r");
	char *argv[] = { khprof, "probes", path, NULL };
	struct run_result r;

	(void)state;
	assert_non_null(p);
	assert_non_null(fgets(path, sizeof(path), p));
	pclose(p);
	path[strcspn(path, "\n")] = '\0';
	r = run(argv);
	assert_int_equal(r.exit_code, 0);
	/* libstdc++ ships stapsdt probes of its own (provider libstdcxx). */
	assert_non_null(strstr(r.out, "libstdcxx  throw"));
	assert_non_null(strstr(r.out, "libstdcxx  catch"));
	run_result_free(&r);
}

static void test_probes_errors(void **state)
{
	char *not_elf[] = { khprof, "probes", "README.md", NULL };
	char *missing[] = { khprof, "probes", "/no/such/file", NULL };
	char *in_data[] = { khprof, "probes", "build/fixtures/usdt_note_in_data", NULL };
	struct run_result r;

	(void)state;
	r = run(not_elf);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err, "khprof: cannot read probes of 'README.md': not an ELF file\n");
	run_result_free(&r);
	r = run(missing);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "'/no/such/file'"));
	run_result_free(&r);
	r = run(in_data);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err, "khprof: cannot read probes of 'build/fixtures/usdt_note_in_data': "
			    "malformed stapsdt note (truncated, or a probe outside executable code)\n");
	run_result_free(&r);
}

static void test_report_prints_the_seed_text(void **state)
{
	char *argv[] = { khprof, "report", "tests/golden/seed_workload.json", NULL };
	char *expected = NULL;
	size_t len;
	struct run_result r;

	(void)state;
	assert_int_equal(file__read_all("tests/golden/seed_workload.txt", &expected, &len), 0);
	r = run(argv);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out, expected);
	free(expected);
	run_result_free(&r);
}

static void test_report_rejects_bad_records(void **state)
{
	char *path = write_temp("{\"schema\": 3}");
	char *argv[] = { khprof, "report", path, NULL };
	char *missing[] = { khprof, "report", "/no/such/record.json", NULL };
	struct run_result r;

	(void)state;
	assert_non_null(path);
	r = run(argv);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "khprof: cannot read record '"));
	assert_string_equal(r.out, "");
	run_result_free(&r);
	unlink(path);
	free(path);

	r = run(missing);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	run_result_free(&r);
}

static void test_every_command_has_help(void **state)
{
	static const char *const commands[] = { "record", "attach", "report", "probes", "diff" };

	(void)state;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char *argv[] = { khprof, (char *)commands[i], "--help", NULL };
		struct run_result r = run(argv);

		assert_int_equal(r.exit_code, 0);
		assert_non_null(strstr(r.out, "usage: khprof "));
		assert_non_null(strstr(r.out, "examples:"));
		run_result_free(&r);
	}
}

static void test_usage_errors(void **state)
{
	char *unknown[] = { khprof, "frobnicate", NULL };
	char *no_command[] = { khprof, "record", NULL };
	char *bad_mode[] = { khprof, "record", "--mode", "fast", "--", "/bin/true", NULL };
	struct run_result r;

	(void)state;
	r = run(unknown);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err,
			    "khprof: 'frobnicate' is not a khprof command (see 'khprof --help')\n");
	run_result_free(&r);
	r = run(no_command);
	assert_int_equal(r.exit_code, 2);
	run_result_free(&r);
	r = run(bad_mode);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "unknown mode 'fast'"));
	run_result_free(&r);
}

/* Tracing without privileges fails with one line and a hint. */
static void test_unprivileged_tracing_is_refused(void **state)
{
	char *record[] = { khprof, "record", "--", "/bin/true", NULL };
	char *report[] = { khprof, "report", "tests/golden/seed_workload.json", NULL };
	struct run_result r;

	(void)state;
	if (geteuid() != 0)
		skip(); /* needs root to become another user */
	r = run_cmd(NULL, 65534, record);
	assert_int_equal(r.exit_code, 1);
	assert_string_equal(r.err, "khprof: cannot record: permission denied (run as root or "
				   "grant CAP_BPF and CAP_PERFMON)\n");
	run_result_free(&r);
	/* report never needs root. */
	r = run_cmd(NULL, 65534, report);
	assert_int_equal(r.exit_code, 0);
	run_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probes_lists_keyhog_sites),
		cmocka_unit_test(test_probes_reads_third_party_binaries),
		cmocka_unit_test(test_probes_errors),
		cmocka_unit_test(test_report_prints_the_seed_text),
		cmocka_unit_test(test_report_rejects_bad_records),
		cmocka_unit_test(test_every_command_has_help),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_unprivileged_tracing_is_refused),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
