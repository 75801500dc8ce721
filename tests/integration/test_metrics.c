// SPDX-License-Identifier: MIT
/*
 * Metrics for Prometheus: `khprof export` of finished records, checked by
 * Prometheus's own promtool.
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

#define PROMTOOL "/usr/bin/promtool"

/* build/khprof, or $KH_KHPROF; set in main(). */
static char *khprof;
static char *tmpdir;

static struct run_result run(char *const argv[])
{
	return run_cmd(NULL, -1, argv);
}

static char *golden(const char *name)
{
	char *path;

	if (asprintf(&path, "%s/tests/golden/%s", test_repo_root(), name) < 0)
		abort();
	return path;
}

/* promtool check metrics < path: exit 0 means no error and no lint problem. */
static void assert_promtool_accepts(const char *path)
{
	char *script;
	char *argv[] = { "/bin/sh", "-c", NULL, NULL };
	struct run_result r;

	if (asprintf(&script, "exec %s check metrics < '%s'", PROMTOOL, path) < 0)
		abort();
	argv[2] = script;
	r = run(argv);
	if (r.exit_code != 0)
		fail_msg("promtool check metrics rejects %s (exit %d): %s%s", path, r.exit_code,
			 r.out, r.err);
	run_result_free(&r);
	free(script);
}

static void test_export_prometheus_text_passes_promtool(void **state)
{
	char out[512];
	char *a = golden("seed_workload.json"), *b = golden("identity_variety.json");
	char *c = golden("huge.json");
	char *argv[] = { khprof, "export", "--format", "prometheus", "-o", out, a, b, c, NULL };
	struct run_result r;
	char *text = NULL;
	size_t len;

	(void)state;
	snprintf(out, sizeof(out), "%s/export.prom", tmpdir);
	r = run(argv);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out, "");
	assert_int_equal(file__read_all(out, &text, &len), 0);
	/* Three sessions; identity_variety's values need escaping. */
	assert_non_null(strstr(text, "khprof_sessions_started_total 3\n"));
	assert_non_null(strstr(text, "binary_version=\"v\tx\\ny\r\""));
	assert_promtool_accepts(out);
	free(text);
	run_result_free(&r);
	free(a);
	free(b);
	free(c);
}

static void test_export_openmetrics_to_stdout(void **state)
{
	char *a = golden("seed_workload.json");
	char *argv[] = { khprof, "export", a, NULL };
	struct run_result r;

	(void)state;
	r = run(argv);
	assert_int_equal(r.exit_code, 0);
	assert_true(has_suffix(r.out, "\n# EOF\n"));
	assert_non_null(strstr(r.out, "# TYPE khprof_stage_calls counter\n"));
	assert_non_null(strstr(r.out, "# TYPE khprof_run info\n"));
	assert_non_null(strstr(r.out, "khprof_sessions_started_total 1\n"));
	run_result_free(&r);
	free(a);
}

static void test_export_bad_input(void **state)
{
	char *good = golden("seed_workload.json");
	char *missing[] = { khprof, "export", good, "/nonexistent.json", NULL };
	char *format[] = { khprof, "export", "--format", "xml", good, NULL };
	char *none[] = { khprof, "export", NULL };
	char *bad_path = write_temp("{\"schema\": 5}");
	char *malformed[] = { khprof, "export", bad_path, NULL };
	struct run_result r;

	(void)state;
	r = run(missing);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "cannot read record '/nonexistent.json'"));
	assert_string_equal(r.out, ""); /* nothing half-written */
	run_result_free(&r);
	r = run(malformed);
	assert_int_equal(r.exit_code, 2);
	run_result_free(&r);
	r = run(format);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "unknown format 'xml'"));
	run_result_free(&r);
	r = run(none);
	assert_int_equal(r.exit_code, 2);
	run_result_free(&r);
	unlink(bad_path);
	free(bad_path);
	free(good);
}

static int group_setup(void **state)
{
	(void)state;
	khprof = tool_path("KH_KHPROF", "build/khprof");
	tmpdir = make_temp_dir("khprof-metrics");
	return tmpdir ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	remove_tree(tmpdir);
	free(tmpdir);
	free(khprof);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_export_prometheus_text_passes_promtool),
		cmocka_unit_test(test_export_openmetrics_to_stdout),
		cmocka_unit_test(test_export_bad_input),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
