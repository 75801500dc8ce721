// SPDX-License-Identifier: MIT
/*
 * The khprof command line without BPF: probes listing (our binaries and a
 * third-party library), report, help texts and the one-line errors with
 * their documented exit codes.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fileio.h"

#define KHPROF "build/khprof"

struct result {
	int code;
	char *out;
	char *err;
};

static char *slurp(FILE *f)
{
	size_t cap = 1 << 16, len;
	char *buf = malloc(cap);

	rewind(f);
	len = fread(buf, 1, cap - 1, f);
	buf[len] = '\0';
	return buf;
}

/* Runs khprof with argv, as uid when uid >= 0. */
static struct result run_as(int uid, char *const argv[])
{
	FILE *out = tmpfile(), *err = tmpfile();
	struct result r;
	int status;
	pid_t pid;

	assert_non_null(out);
	assert_non_null(err);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fileno(out), 1);
		dup2(fileno(err), 2);
		if (uid >= 0 && setuid(uid) != 0)
			_exit(122);
		execv(argv[0], argv);
		_exit(121);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	r.out = slurp(out);
	r.err = slurp(err);
	fclose(out);
	fclose(err);
	return r;
}

static struct result run(char *const argv[])
{
	return run_as(-1, argv);
}

static void result_free(struct result *r)
{
	free(r->out);
	free(r->err);
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_probes_lists_keyhog_sites(void **state)
{
	char *argv[] = { KHPROF, "probes", "build/workloads/workload", NULL };
	struct result r = run(argv);
	char *line;

	(void)state;
	assert_int_equal(r.code, 0);
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
	result_free(&r);
}

static void test_probes_reads_third_party_binaries(void **state)
{
	char path[512];
	FILE *p = popen("gcc -print-file-name=libstdc++.so.6", "r");
	char *argv[] = { KHPROF, "probes", path, NULL };
	struct result r;

	(void)state;
	assert_non_null(p);
	assert_non_null(fgets(path, sizeof(path), p));
	pclose(p);
	path[strcspn(path, "\n")] = '\0';
	r = run(argv);
	assert_int_equal(r.code, 0);
	/* libstdc++ ships stapsdt probes of its own (provider libstdcxx). */
	assert_non_null(strstr(r.out, "libstdcxx  throw"));
	assert_non_null(strstr(r.out, "libstdcxx  catch"));
	result_free(&r);
}

static void test_probes_errors(void **state)
{
	char *not_elf[] = { KHPROF, "probes", "README.md", NULL };
	char *missing[] = { KHPROF, "probes", "/no/such/file", NULL };
	struct result r;

	(void)state;
	r = run(not_elf);
	assert_int_equal(r.code, 2);
	assert_string_equal(r.err, "khprof: cannot read probes of 'README.md': not an ELF file\n");
	result_free(&r);
	r = run(missing);
	assert_int_equal(r.code, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "'/no/such/file'"));
	result_free(&r);
}

static void test_report_prints_the_seed_text(void **state)
{
	char *argv[] = { KHPROF, "report", "tests/golden/seed_workload.json", NULL };
	char *expected = NULL;
	size_t len;
	struct result r;

	(void)state;
	assert_int_equal(file__read_all("tests/golden/seed_workload.txt", &expected, &len), 0);
	r = run(argv);
	assert_int_equal(r.code, 0);
	assert_string_equal(r.out, expected);
	free(expected);
	result_free(&r);
}

static void test_report_rejects_bad_records(void **state)
{
	char path[] = "/tmp/khprof-bad-XXXXXX";
	int fd = mkstemp(path);
	char *argv[] = { KHPROF, "report", path, NULL };
	char *missing[] = { KHPROF, "report", "/no/such/record.json", NULL };
	struct result r;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"schema\": 3}", 13), 13);
	close(fd);
	r = run(argv);
	assert_int_equal(r.code, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "khprof: cannot read record '"));
	assert_string_equal(r.out, "");
	result_free(&r);
	unlink(path);

	r = run(missing);
	assert_int_equal(r.code, 2);
	assert_int_equal(count_lines(r.err), 1);
	result_free(&r);
}

static void test_every_command_has_help(void **state)
{
	static const char *const commands[] = { "record", "attach", "report", "probes", "diff" };

	(void)state;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char *argv[] = { KHPROF, (char *)commands[i], "--help", NULL };
		struct result r = run(argv);

		assert_int_equal(r.code, 0);
		assert_non_null(strstr(r.out, "usage: khprof "));
		assert_non_null(strstr(r.out, "examples:"));
		result_free(&r);
	}
}

static void test_usage_errors(void **state)
{
	char *unknown[] = { KHPROF, "frobnicate", NULL };
	char *no_command[] = { KHPROF, "record", NULL };
	char *bad_mode[] = { KHPROF, "record", "--mode", "fast", "--", "/bin/true", NULL };
	struct result r;

	(void)state;
	r = run(unknown);
	assert_int_equal(r.code, 2);
	assert_string_equal(r.err,
			    "khprof: 'frobnicate' is not a khprof command (see 'khprof --help')\n");
	result_free(&r);
	r = run(no_command);
	assert_int_equal(r.code, 2);
	result_free(&r);
	r = run(bad_mode);
	assert_int_equal(r.code, 2);
	assert_non_null(strstr(r.err, "unknown mode 'fast'"));
	result_free(&r);
}

/* Tracing without privileges fails with one line and a hint. */
static void test_unprivileged_tracing_is_refused(void **state)
{
	char *record[] = { KHPROF, "record", "--", "/bin/true", NULL };
	char *report[] = { KHPROF, "report", "tests/golden/seed_workload.json", NULL };
	struct result r;

	(void)state;
	if (geteuid() != 0)
		skip(); /* needs root to become another user */
	r = run_as(65534, record);
	assert_int_equal(r.code, 1);
	assert_string_equal(r.err, "khprof: cannot record: permission denied (run as root or "
				   "grant CAP_BPF and CAP_PERFMON)\n");
	result_free(&r);
	/* report never needs root. */
	r = run_as(65534, report);
	assert_int_equal(r.code, 0);
	result_free(&r);
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

	return cmocka_run_group_tests(tests, NULL, NULL);
}
