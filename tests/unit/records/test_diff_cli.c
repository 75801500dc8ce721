// SPDX-License-Identifier: MIT
/*
 * khprof diff, the command end to end: run as a program on the record sets
 * of tests/common/diff_sets.h written to a temporary directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "diff.h"
#include "diff_sets.h"
#include "json.h"
#include "khtest.h"
#include "stats.h"

/* --- the command, end to end ------------------------------------------------ */

static const char *khprof_path(void)
{
	static char *path;

	if (!path)
		path = tool_path("KH_KHPROF", "build/khprof");
	if (access(path, X_OK) == 0)
		return path;
	if (running_in_ci())
		fail_msg("%s is missing and CI=true: run `make build/khprof`", path);
	print_message("%s not built: skipping the end-to-end diff tests\n", path);
	skip();
	return NULL;
}

/* Runs khprof diff with args (NULL-terminated). */
static struct run_result run_diff(const char *first, ...)
{
	char *argv[20];
	int argc = 0;
	va_list ap;

	argv[argc++] = (char *)khprof_path();
	argv[argc++] = "diff";
	argv[argc++] = (char *)first;
	va_start(ap, first);
	while (argc < 19 && (argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	return run_cmd(NULL, -1, argv);
}

/* fx->dir/name, created as a directory when mkdir is true; malloc'd. */
static char *fx_path(struct fx *fx, const char *name, bool mkdir_it)
{
	char *path;

	if (!fx->dir) {
		fx->dir = make_temp_dir("khprof-diff");
		assert_non_null(fx->dir);
	}
	assert_true(asprintf(&path, "%s/%s", fx->dir, name) > 0);
	if (mkdir_it)
		assert_int_equal(mkdir(path, 0755), 0);
	return path;
}

static void write_file(const char *dir, const char *name, const char *text, size_t len)
{
	char *path;

	assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
	assert_int_equal(file__write_atomic(path, text, len), 0);
	free(path);
}

/* The set as dir/run-001.json...; returns dir (malloc'd). */
static char *set_write(struct fx *fx, const struct set *s, const char *dir_name)
{
	char *dir = fx_path(fx, dir_name, true);

	for (size_t i = 0; i < s->n; i++) {
		char *json = profile__to_json(&s->rec[i]);

		assert_non_null(json);
		write_file(dir, s->names[i], json, strlen(json));
		free(json);
	}
	/* Not records: ignored. */
	write_file(dir, "notes.txt", "x", 1);
	return dir;
}

/* The regression case on disk: base/ and cand/ under fx->dir. */
static void write_regression(struct fx *fx, char **base, char **cand)
{
	set_make(&fx->base, plain(RUNS, steady));
	set_make(&fx->cand, scaled(RUNS, shuffled, KH_STAGE_HOT_PATTERNS, 1.2));
	*base = set_write(fx, &fx->base, "base");
	*cand = set_write(fx, &fx->cand, "cand");
}

/* The line of text that starts with prefix, without its newline; malloc'd. */
static char *line_starting(const char *text, const char *prefix)
{
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (!strncmp(line, prefix, strlen(prefix)))
			return strndup(line, len);
		line = end ? end + 1 : NULL;
	}
	return NULL;
}

static void assert_line(const char *text, const char *prefix, const char *contains)
{
	char *line = line_starting(text, prefix);

	if (!line || !strstr(line, contains))
		fail_msg("no line '%s...' with '%s' in:\n%s", prefix, contains, text);
	free(line);
}

static void test_cli_regression_and_determinism(void **state)
{
	struct fx *fx = *state;
	char *base, *cand;
	struct run_result r, again;

	write_regression(fx, &base, &cand);
	r = run_diff(base, cand, NULL);
	assert_int_equal(r.exit_code, 1);
	/* The verdict leads, then the header, then only what changed, largest first. */
	assert_true(!strncmp(r.out, "diff: 1 regression: hot-patterns.elapsed +20.0%\n"
				    "khprof diff: base '", 67));
	assert_non_null(strstr(r.out, "(5 records); change: Hodges-Lehmann shift, interval: its "
				      "Mann-Whitney 95% interval\n"));
	assert_line(r.out, "hot-patterns.elapsed ", "+20.0%");
	assert_line(r.out, "hot-patterns.elapsed ", "  regressed");
	assert_line(r.out, "hot-patterns.per_call ", "regressed*");
	assert_null(strstr(r.out, "REGRESSED"));
	assert_null(line_starting(r.out, "decode.elapsed "));
	assert_non_null(strstr(r.out, "more items within their thresholds (--all lists them)\n"));
	assert_non_null(strstr(r.out, "\n* regressed in an item that does not fail the job"));
	assert_string_equal(r.err, "");
	again = run_diff(base, cand, "--all", NULL);
	assert_int_equal(again.exit_code, 1);
	assert_line(again.out, "decode.elapsed ", "ok");
	assert_null(strstr(again.out, "--all lists them"));
	run_result_free(&again);

	/* CI results must be reproducible: the same inputs, the same bytes. */
	again = run_diff(base, cand, NULL);
	assert_int_equal(again.exit_code, 1);
	assert_string_equal(again.out, r.out);
	run_result_free(&again);
	run_result_free(&r);

	/* One record per side: nothing judged, no interval. */
	free(base);
	free(cand);
	base = fx_path(fx, "base/run-002.json", false);
	cand = fx_path(fx, "cand/run-002.json", false);
	r = run_diff(base, cand, "--threshold", "hot-patterns=30", "--all", NULL);
	assert_int_equal(r.exit_code, 4);
	assert_non_null(strstr(r.out, "(1 record); single runs: nothing judged\n"));
	assert_line(r.out, "hot-patterns.elapsed ", "30%  unjudged");
	assert_null(strstr(r.out, "["));
	run_result_free(&r);
	/*
	 * The same build's single runs 20 % apart: no list of regressions and
	 * no exit 1, but what moved and a plain word that one run cannot judge.
	 */
	r = run_diff(base, cand, NULL);
	assert_int_equal(r.exit_code, 4);
	assert_true(!strncmp(r.out, "diff: cannot judge: too few runs (1 base, 1 candidate "
				    "record; 4 a side needed for a 95% interval): 1 item beyond its "
				    "threshold, not judged\n", 139));
	assert_line(r.out, "hot-patterns.elapsed ", "worse, unjudged");
	assert_null(strstr(r.out, "regressed"));
	/* One line on stderr says why, and what to do. */
	assert_string_equal(r.err, "khprof: warning: cannot judge: too few runs (1 base, 1 "
				   "candidate record; 4 a side needed for a 95% interval) (record "
				   "10 runs a side: 'khprof record --repeat 10', docs/CI.md)\n");
	run_result_free(&r);
	free(base);
	free(cand);
}

static void test_cli_thresholds_and_config(void **state)
{
	struct fx *fx = *state;
	char *base, *cand, *conf = fx_path(fx, "gate.conf", false);
	char *bad = fx_path(fx, "bad.conf", false);
	struct run_result r;

	write_regression(fx, &base, &cand);
	r = run_diff(base, cand, "--threshold", "hot-patterns=off", "--all", NULL);
	assert_int_equal(r.exit_code, 0);
	assert_line(r.out, "hot-patterns.elapsed ", "off");
	run_result_free(&r);
	r = run_diff(base, cand, "--threshold", "scan-regex=5", NULL);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "khprof: bad --threshold 'scan-regex=5': unknown item "
				      "'scan-regex'"));
	run_result_free(&r);

	assert_int_equal(file__write_atomic(conf, "threshold.hot-patterns 30 # known\n", 34), 0);
	r = run_diff("--config", conf, base, cand, NULL);
	assert_int_equal(r.exit_code, 0);
	run_result_free(&r);
	/* The flag wins, though the file comes after it. */
	r = run_diff(base, cand, "--threshold", "hot-patterns=10", "--config", conf, NULL);
	assert_int_equal(r.exit_code, 1);
	run_result_free(&r);

	assert_int_equal(file__write_atomic(bad, "threshold 5\nthreshold.wall fast\n", 32), 0);
	r = run_diff(base, cand, "--config", bad, NULL);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.out, "");
	assert_true(!strncmp(r.err, "khprof: bad config '", 20));
	assert_non_null(strstr(r.err, "bad.conf' line 2: bad threshold 'fast'"));
	assert_int_equal(count_lines(r.err), 1);
	run_result_free(&r);
	free(conf);
	free(bad);
	free(base);
	free(cand);
}

static void test_cli_not_comparable(void **state)
{
	struct fx *fx = *state;
	char *base, *build, *mixed, *expected;
	struct run_result r;
	cJSON *root;

	/* Another build of the same workload, then one of its runs with other rules too. */
	set_make(&fx->base, plain(2, NULL));
	set_make(&fx->cand, plain(2, NULL));
	set_identity(&fx->cand, 0, "binary_version", "kh-scan 1.1");
	base = set_write(fx, &fx->base, "base");
	build = set_write(fx, &fx->cand, "build");
	set_identity(&fx->cand, 1, "detector_digest", "det-new");
	mixed = set_write(fx, &fx->cand, "mixed");

	r = run_diff(base, build, NULL);
	assert_int_equal(r.exit_code, 3);
	assert_string_equal(r.out, "");
	assert_true(asprintf(&expected, "khprof: error: records differ in 'binary_version': "
				       "'kh-scan 1.0' in '%s/run-001.json', 'kh-scan 1.1' in "
				       "'%s/run-001.json'\n", base, build) > 0);
	assert_true(!strncmp(r.err, expected, strlen(expected)));
	free(expected);
	assert_non_null(strstr(r.err, "(if that is intended, add --allow-mismatch "
				      "binary_version)\n"));
	assert_int_equal(count_lines(r.err), 2);
	run_result_free(&r);

	/* Two builds on purpose: compared, but two runs a side cannot be judged. */
	r = run_diff(base, build, "--allow-mismatch", "binary_version", NULL);
	assert_int_equal(r.exit_code, 4);
	assert_non_null(strstr(r.out, "diff: cannot judge: too few runs (2 base, 2 candidate "
				      "records; 4 a side needed for a 95% interval)"));
	assert_non_null(strstr(r.err, "khprof: note: records differ in 'binary_version'"));
	/* Said on both streams. */
	assert_non_null(strstr(r.out, "(2 records); too few runs for a 95% interval (4 per side "
				      "needed): nothing judged\n"));
	assert_non_null(strstr(r.err, "khprof: warning: cannot judge: too few runs (2 base, 2 "
				      "candidate records; 4 a side needed for a 95% interval)"));
	run_result_free(&r);

	/* Every differing field is listed, and JSON still tells CI why. */
	r = run_diff(base, mixed, "--format", "json", NULL);
	assert_int_equal(r.exit_code, 3);
	assert_non_null(strstr(r.err, "add --allow-mismatch binary_version,detector_digest)\n"));
	root = cJSON_Parse(r.out);
	assert_non_null(root);
	assert_string_equal(cJSON_GetObjectItem(root, "verdict")->valuestring, "not-comparable");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "mismatches")), 2);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "items")), 0);
	cJSON_Delete(root);
	run_result_free(&r);

	/* A directory whose own records differ is not comparable with anything. */
	r = run_diff(mixed, mixed, "--allow-mismatch=binary_version", NULL);
	assert_int_equal(r.exit_code, 3);
	assert_true(asprintf(&expected, "'det-abc' in '%s/run-001.json', 'det-new' in "
				       "'%s/run-002.json'\n", mixed, mixed) > 0);
	assert_non_null(strstr(r.err, expected));
	free(expected);
	run_result_free(&r);
	r = run_diff(base, build, "--allow-mismatch", "mode,checksum", NULL);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "unknown field 'checksum'"));
	run_result_free(&r);
	free(base);
	free(build);
	free(mixed);
}

static void test_cli_bad_input(void **state)
{
	struct fx *fx = *state;
	char *base, *json, *half, *broken, *empty = fx_path(fx, "empty", true);
	char *missing = fx_path(fx, "no-such-record.json", false);
	struct run_result r;

	set_make(&fx->base, plain(2, NULL));
	base = set_write(fx, &fx->base, "base");
	json = profile__to_json(&fx->base.rec[0]);
	/* A record cut in half, and one that is not JSON at all, each among good ones. */
	half = set_write(fx, &fx->base, "half");
	write_file(half, "run-002.json", json, strlen(json) / 2);
	broken = set_write(fx, &fx->base, "broken");
	write_file(broken, "run-000.json", "{ \"schema\": keyhog", 18);

	const struct {
		const char *base, *cand, *named;
	} cases[] = {
		{ base, half, "half/run-002.json'" },
		{ broken, base, "broken/run-000.json'" },
		{ base, empty, "empty': no *.json record" },
		{ missing, base, "no-such-record.json': No such file" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = run_diff(cases[i].base, cases[i].cand, "--format", "json", NULL);
		assert_int_equal(r.exit_code, 2);
		assert_string_equal(r.out, "");
		assert_int_equal(count_lines(r.err), 1);
		assert_true(!strncmp(r.err, "khprof: cannot read record", 26));
		if (!strstr(r.err, cases[i].named))
			fail_msg("expected '%s' in: %s", cases[i].named, r.err);
		run_result_free(&r);
	}
	free(json);
	free(base);
	free(half);
	free(broken);
	free(empty);
	free(missing);
}

static cJSON *json_item(cJSON *items, const char *name)
{
	cJSON *it;

	cJSON_ArrayForEach(it, items)
		if (!strcmp(cJSON_GetObjectItem(it, "name")->valuestring, name))
			return it;
	fail_msg("no item '%s'", name);
	return NULL;
}

static void test_cli_markdown_and_json(void **state)
{
	struct fx *fx = *state;
	char *base, *cand;
	cJSON *root, *items, *it, *interval;
	struct run_result r;

	write_regression(fx, &base, &cand);
	r = run_diff(base, cand, "--format", "markdown", NULL);
	assert_int_equal(r.exit_code, 1);
	assert_true(!strncmp(r.out, "**diff: 1 regression: hot-patterns.elapsed +20.0%**\n\n"
				    "**khprof diff**: base `", 75));
	assert_non_null(strstr(r.out, "\n| item | base | candidate | change | interval | "
				      "threshold | verdict |\n|:--|--:|--:|--:|:--|--:|:--|\n"
				      "| hot-patterns.elapsed |"));
	assert_line(r.out, "| hot-patterns.elapsed |", "| 5% | **regressed** |");
	run_result_free(&r);

	r = run_diff(base, cand, "--format", "json", "--confidence", "90", NULL);
	assert_int_equal(r.exit_code, 1);
	root = cJSON_Parse(r.out);
	assert_non_null(root);
	assert_string_equal(cJSON_GetObjectItem(root, "schema")->valuestring, "khprof-diff-v1");
	assert_string_equal(cJSON_GetObjectItem(root, "verdict")->valuestring, "regressed");
	assert_int_equal(cJSON_GetObjectItem(root, "regressions")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "base"), "records")
				 ->valueint, RUNS);
	assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "options"), "confidence")
			    ->valuedouble == 90);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "options"), "method")
				    ->valuestring, "hodges-lehmann");
	items = cJSON_GetObjectItem(root, "items");
	it = json_item(items, "hot-patterns.elapsed");
	assert_string_equal(cJSON_GetObjectItem(it, "verdict")->valuestring, "regressed");
	assert_string_equal(cJSON_GetObjectItem(it, "stage")->valuestring, "hot-patterns");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(it, "gating")));
	interval = cJSON_GetObjectItem(it, "interval_pct");
	assert_int_equal(cJSON_GetArraySize(interval), 2);
	assert_true(cJSON_GetArrayItem(interval, 0)->valuedouble > 5);
	/* One estimator: the change lies inside its interval. */
	assert_true(cJSON_GetArrayItem(interval, 0)->valuedouble <=
		    cJSON_GetObjectItem(it, "change_pct")->valuedouble);
	assert_true(cJSON_GetArrayItem(interval, 1)->valuedouble >=
		    cJSON_GetObjectItem(it, "change_pct")->valuedouble);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(it, "adjusted")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(it, "unjudged")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(root, "cannot_judge")));
	/* The same bounds in nanoseconds: the shift of a 50 ms stage by 5 % or more. */
	interval = cJSON_GetObjectItem(it, "interval");
	assert_int_equal(cJSON_GetArraySize(interval), 2);
	assert_true(cJSON_GetArrayItem(interval, 0)->valuedouble > 2.5 * MS);
	it = json_item(items, "hot-patterns.calls");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(it, "threshold_pct")));
	assert_string_equal(cJSON_GetObjectItem(it, "verdict")->valuestring, "same");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(json_item(items, "wall"), "stage")));
	cJSON_Delete(root);
	run_result_free(&r);
	free(base);
	free(cand);
}

static void test_cli_usage(void **state)
{
	static const char *const bad[][3] = {
		{ "--format", "xml", "unknown format 'xml'" },
		{ "--confidence", "40", "bad --confidence '40'" },
		{ "--min-change-ms", "-1", "bad --min-change-ms '-1'" },
		{ "--strict", NULL, "unknown option '--strict'" },
	};
	struct run_result r;

	(void)state;
	r = run_diff("--help", NULL);
	assert_int_equal(r.exit_code, 0);
	assert_true(!strncmp(r.out, "usage: khprof diff BASE CANDIDATE", 33));
	assert_non_null(strstr(r.out, "\nexamples:\n"));
	run_result_free(&r);
	r = run_diff("a.json", NULL);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "diff needs BASE and CANDIDATE"));
	run_result_free(&r);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = run_diff("a.json", "b.json", bad[i][0], bad[i][1], NULL);
		assert_int_equal(r.exit_code, 2);
		if (!strstr(r.err, bad[i][2]))
			fail_msg("expected '%s' in: %s", bad[i][2], r.err);
		run_result_free(&r);
	}
}


int main(void)
{
	const struct CMUnitTest tests[] = {
		FX_TEST(test_cli_regression_and_determinism),
		FX_TEST(test_cli_thresholds_and_config),
		FX_TEST(test_cli_not_comparable),
		FX_TEST(test_cli_bad_input),
		FX_TEST(test_cli_markdown_and_json),
		cmocka_unit_test(test_cli_usage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
