// SPDX-License-Identifier: MIT
/*
 * The table of output formats that report, diff and export read: each
 * command has one default, unique names, a writer for every row, and its
 * usage names, error and --help list come from the same rows; the writers
 * write what the writers they stand for write.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "json.h"
#include "latency_text.h"
#include "openmetrics.h"
#include "output_formats.h"
#include "text.h"

static const char *const report_names[] = { "text", "seed", "json", "html", "perfetto",
					    "folded", "pprof", NULL };
static const char *const report_dir_names[] = { "text", "html", NULL };
static const char *const diff_names[] = { "text", "markdown", "json", "html", NULL };
static const char *const export_names[] = { "prometheus", "openmetrics", NULL };

static const char *const *const names_of[FORMAT_COMMANDS] = {
	[FORMAT_REPORT] = report_names,
	[FORMAT_REPORT_DIR] = report_dir_names,
	[FORMAT_DIFF] = diff_names,
	[FORMAT_EXPORT] = export_names,
};

/* Each command accepts exactly its names, each with its command's writer. */
static void test_each_command_has_its_formats(void **state)
{
	(void)state;
	for (int c = 0; c < FORMAT_COMMANDS; c++) {
		const struct output_format *def = output_format__default(c);

		assert_non_null(def);
		assert_string_equal(def->name, names_of[c][0]);
		for (const char *const *n = names_of[c]; *n; n++) {
			const struct output_format *f = output_format__find(c, *n);

			assert_non_null(f);
			assert_int_equal(f->command, c);
			assert_true(f == def || !(f->flags & FORMAT_DEFAULT));
			assert_true(c != FORMAT_REPORT || f->of_record);
			assert_true(c != FORMAT_REPORT_DIR || f->of_runs);
			assert_true(c != FORMAT_DIFF || f->of_diff);
			assert_true(!(f->flags & FORMAT_NEEDS_STACKS) || f->what);
			assert_non_null(f->writes);
		}
		assert_null(output_format__find(c, "xml"));
		assert_null(output_format__find(c, ""));
	}
	/* report checks a name against PATH's formats before it knows PATH is a DIR. */
	for (const char *const *n = report_dir_names; *n; n++)
		assert_non_null(output_format__find(FORMAT_REPORT, *n));
	assert_int_equal(output_format__find(FORMAT_EXPORT, "openmetrics")->metrics,
			 OM_FORMAT_OPENMETRICS);
	assert_int_equal(output_format__find(FORMAT_EXPORT, "prometheus")->metrics,
			 OM_FORMAT_PROMETHEUS);
}

/* Usage lines and errors list the rows in order, and cut short to fit. */
static void test_names_joined(void **state)
{
	char out[128];

	(void)state;
	output_format__names(FORMAT_REPORT, "|", "|", out, sizeof(out));
	assert_string_equal(out, "text|seed|json|html|perfetto|folded|pprof");
	output_format__names(FORMAT_DIFF, ", ", " or ", out, sizeof(out));
	assert_string_equal(out, "text, markdown, json or html");
	output_format__names(FORMAT_EXPORT, ", ", " or ", out, sizeof(out));
	assert_string_equal(out, "prometheus or openmetrics");
	output_format__names(FORMAT_REPORT, "|", "|", out, 8);
	assert_string_equal(out, "text|se");
	assert_null(output_format__pick(FORMAT_DIFF, "xml"));
	assert_non_null(output_format__pick(FORMAT_DIFF, "markdown"));
}

/* --help lists every row under "--format NAME", within 80 columns. */
static void test_help_lists_every_format(void **state)
{
	(void)state;
	for (int c = 0; c < FORMAT_COMMANDS; c++) {
		char *text = NULL, *line, *save = NULL;
		size_t len = 0, lines = 0, count = 0;
		FILE *out = open_memstream(&text, &len);
		int column = c == FORMAT_DIFF ? 28 : 24;

		assert_non_null(out);
		output_format__print_help(out, c, column);
		fclose(out);
		for (const char *const *n = names_of[c]; *n; n++) {
			char want[64];

			snprintf(want, sizeof(want), "   --format %-*s ", column - 13, *n);
			assert_non_null(strstr(text, want));
			count++;
		}
		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			assert_true(strlen(line) <= 80);
			assert_true(strlen(line) > (size_t)column);
			lines++;
		}
		assert_true(lines >= count);
		free(text);
	}
}

/* A report row writes what the writer it stands for writes, byte for byte. */
static void test_report_writers(void **state)
{
	const struct output_format *text = output_format__find(FORMAT_REPORT, "text");
	const struct output_format *seed = output_format__find(FORMAT_REPORT, "seed");
	const struct output_format *json = output_format__find(FORMAT_REPORT, "json");
	struct kh_profile p;
	unsigned char *got;
	char *want;
	size_t len = 0;

	(void)state;
	golden_load("assembled", ".json", &p);
	got = text->of_record(&p, &len);
	want = profile__render_report(&p);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(got, want, len);
	free(got);
	free(want);
	got = seed->of_record(&p, &len);
	want = profile__render_text(&p);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(got, want, len);
	free(got);
	free(want);
	got = json->of_record(&p, &len);
	want = profile__to_json(&p);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(got, want, len);
	free(got);
	free(want);
	profile__free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_command_has_its_formats),
		cmocka_unit_test(test_names_joined),
		cmocka_unit_test(test_help_lists_every_format),
		cmocka_unit_test(test_report_writers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
