// SPDX-License-Identifier: MIT
/*
 * The khprof command line without BPF: probes listing (our binaries and a
 * third-party library), report, help texts and the one-line errors with
 * their documented exit codes.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fileio.h"
#include "khtest.h"
#include "record.h"

/* build/khprof, or $KH_KHPROF; set in main(). */
static char *khprof;

static void test_probes_lists_keyhog_sites(void **state)
{
	char *argv[] = { khprof, "probes", "build/workloads/workload", NULL };
	struct run_result r = run_here(argv);
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
	r = run_here(argv);
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
	r = run_here(not_elf);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err, "khprof: cannot read probes of 'README.md': not an ELF file\n");
	run_result_free(&r);
	r = run_here(missing);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "'/no/such/file'"));
	run_result_free(&r);
	r = run_here(in_data);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.err, "khprof: note: skipped 1 probe note(s) of "
			    "'build/fixtures/usdt_note_in_data' outside executable code (sites the "
			    "linker discarded); they are never attached\n"
			    "khprof: note: 'build/fixtures/usdt_note_in_data' has no USDT probes\n");
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
	r = run_here(argv);
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
	r = run_here(argv);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "khprof: cannot read record '"));
	assert_string_equal(r.out, "");
	run_result_free(&r);
	unlink(path);
	free(path);

	r = run_here(missing);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	run_result_free(&r);
}

/*
 * Every command main.c's table lists in 'khprof --help' has a --help of its
 * own: the list is read from the table's output, so a new command is checked.
 */
static void test_every_command_has_help(void **state)
{
	char *top[] = { khprof, "--help", NULL };
	struct run_result list = run_here(top);
	size_t checked = 0;
	char *line, *save = NULL;

	(void)state;
	assert_int_equal(list.exit_code, 0);
	for (line = strtok_r(list.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[32];
		struct run_result r;
		char *argv[] = { khprof, name, "--help", NULL };

		/* "   record   (root) run a command ...": a command's row. */
		if (strncmp(line, "   ", 3) || line[3] == ' ' || sscanf(line, "%31s", name) != 1 ||
		    !strcmp(name, "khprof"))
			continue;
		r = run_here(argv);
		if (r.exit_code != 0 || !strstr(r.out, "usage: khprof ") ||
		    !strstr(r.out, "example"))
			fail_msg("'khprof %s --help' exited %d without usage and an example", name,
				 r.exit_code);
		run_result_free(&r);
		checked++;
	}
	run_result_free(&list);
	/* record attach report diff probes export features help */
	assert_int_equal(checked, 8);
}

static void test_usage_errors(void **state)
{
	char *unknown[] = { khprof, "frobnicate", NULL };
	char *no_command[] = { khprof, "record", NULL };
	char *bad_mode[] = { khprof, "record", "--mode", "fast", "--", "/bin/true", NULL };
	struct run_result r;

	(void)state;
	r = run_here(unknown);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err,
			    "khprof: 'frobnicate' is not a khprof command (see 'khprof --help')\n");
	run_result_free(&r);
	assert_run_exits(no_command, 2, NULL);
	assert_run_exits(bad_mode, 2, "unknown mode 'fast'");
}

/* --version names the probe ABI and record schema; help works as git's. */
static void test_version_and_help_command(void **state)
{
	char *version[] = { khprof, "--version", NULL };
	char *help[] = { khprof, "help", NULL };
	char *help_record[] = { khprof, "help", "record", NULL };
	char *record_help[] = { khprof, "record", "--help", NULL };
	char *help_bad[] = { khprof, "help", "frobnicate", NULL };
	struct run_result r, direct;
	char abi[32];

	(void)state;
	r = run_here(version);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(strncmp(r.out, "khprof version ", 15), 0);
	snprintf(abi, sizeof(abi), "\nprobe ABI %d ", KH_PROBE_ABI_VERSION);
	assert_non_null(strstr(r.out, abi));
	assert_non_null(strstr(r.out, "\nrecord schema keyhog-profile-v1\n"));
	run_result_free(&r);

	r = run_here(help);
	assert_int_equal(r.exit_code, 0);
	assert_non_null(strstr(r.out, "usage: khprof "));
	/* The table says which commands need root. */
	assert_non_null(strstr(r.out, "   record   (root) "));
	assert_non_null(strstr(r.out, "   report          "));
	run_result_free(&r);

	r = run_here(help_record);
	direct = run_here(record_help);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out, direct.out);
	run_result_free(&r);
	run_result_free(&direct);

	r = run_here(help_bad);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	run_result_free(&r);
}

/* `-o -- ./scanner`: the path was forgotten; refused, no file named "--". */
static void test_option_value_that_looks_like_an_option(void **state)
{
	char *dir = make_temp_dir("khprof-cli"), *tool = realpath(khprof, NULL);
	char *dash_dash[] = { tool, "record", "-o", "--", "/bin/true", NULL };
	char *option[] = { tool, "record", "--output", "--quiet", "--", "/bin/true", NULL };
	char *report[] = { tool, "report", "--format", "-x", "record.json", NULL };
	char *diff[] = { tool, "diff", "--config", "--", "a.json", "b.json", NULL };
	char stray[512];
	struct run_result r;

	(void)state;
	assert_non_null(dir);
	assert_non_null(tool);
	r = run_cmd(dir, -1, dash_dash);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err, "khprof: option '-o' needs a value, not '--' (was the value "
				   "forgotten?)\n");
	snprintf(stray, sizeof(stray), "%s/--", dir);
	assert_int_equal(access(stray, F_OK), -1);
	run_result_free(&r);

	r = run_cmd(dir, -1, option);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err, "khprof: option '--output' needs a value, not '--quiet' "
				   "(write --output=--quiet if that is meant)\n");
	run_result_free(&r);

	r = run_cmd(dir, -1, report);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "option '--format' needs a value, not '-x'"));
	run_result_free(&r);

	r = run_cmd(dir, -1, diff);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err, "khprof: option '--config' needs a value, not '--' (was the "
				   "value forgotten?)\n");
	run_result_free(&r);
	assert_int_equal(remove_tree(dir), 0);
	free(dir);
	free(tool);
}

/* report DIR on runs of record --repeat: the spread table, on stdout. */
static void test_report_directory_of_runs(void **state)
{
	char *dir = make_temp_dir("khprof-cli");
	char *argv[] = { khprof, "report", dir, NULL };
	char *empty[] = { khprof, "report", NULL, NULL };
	char *record = NULL, path[512], heading[600];
	size_t len;
	struct run_result r;

	(void)state;
	assert_non_null(dir);
	empty[2] = dir;
	r = run_here(empty);
	assert_int_equal(r.exit_code, 2);
	assert_int_equal(count_lines(r.err), 1);
	assert_non_null(strstr(r.err, "no run-NNN.json"));
	run_result_free(&r);

	assert_int_equal(file__read_all("tests/golden/seed_workload.json", &record, &len), 0);
	for (int i = 1; i <= 2; i++) {
		snprintf(path, sizeof(path), "%s/run-%03d.json", dir, i);
		assert_int_equal(file__write_atomic(path, record, len), 0);
	}
	r = run_here(argv);
	assert_int_equal(r.exit_code, 0);
	snprintf(heading, sizeof(heading), "2 runs in '%s':\n", dir);
	assert_int_equal(strncmp(r.out, heading, strlen(heading)), 0);
	assert_non_null(strstr(r.out, "median"));
	run_result_free(&r);
	free(record);
	assert_int_equal(remove_tree(dir), 0);
	free(dir);
}

/* The column after NAME starts at one place on every line, long names too. */
static void assert_columns_aligned(const char *listing)
{
	const char *header_end = strchr(listing, '\n');
	long address_col = strstr(listing, "ADDRESS") - listing;

	assert_non_null(header_end);
	for (const char *line = header_end + 1; *line; line = strchr(line, '\n') + 1) {
		const char *hex = strstr(line, " 0x");

		assert_non_null(hex);
		assert_int_equal(hex + 1 - line, address_col);
	}
}

static void test_probes_align_long_names(void **state)
{
	char python[512];
	/* Debian's own Python (not a pyenv shim or virtualenv's copy). */
	FILE *p = popen("readlink -f /usr/bin/python3 2>/dev/null", "r");
	char *argv[] = { khprof, "probes", python, NULL };
	char *ours[] = { khprof, "probes", "build/workloads/workload", NULL };
	struct run_result r;

	(void)state;
	r = run_here(ours);
	assert_int_equal(r.exit_code, 0);
	assert_columns_aligned(r.out);
	run_result_free(&r);

	assert_non_null(p);
	python[0] = '\0';
	if (!fgets(python, sizeof(python), p))
		python[0] = '\0';
	pclose(p);
	python[strcspn(python, "\n")] = '\0';
	if (!python[0] || access(python, R_OK) != 0)
		skip(); /* no Python here: its 25-character probe names are the case */
	r = run_here(argv);
	assert_int_equal(r.exit_code, 0);
	if (!strstr(r.out, "import__find__load__start")) {
		run_result_free(&r);
		skip(); /* a Python built without its probes */
	}
	assert_columns_aligned(r.out);
	run_result_free(&r);
}

/*
 * Mistakes get one line and a pointer to --help, as git and perf say them,
 * and a mistyped command the nearest one.
 */
static void test_one_line_usage_errors(void **state)
{
	char *bogus[] = { khprof, "report", "--bogus", NULL };
	char *two[] = { khprof, "report", "a.json", "b.json", NULL };
	char *export_none[] = { khprof, "export", NULL };
	char *probes_none[] = { khprof, "probes", NULL };
	char *diff_one[] = { khprof, "diff", "a.json", NULL };
	char *record_bogus[] = { khprof, "record", "--bogus", "--", "/bin/true", NULL };
	char *typo[] = { khprof, "recrod", "--", "/bin/true", NULL };
	char *prefix[] = { khprof, "rep", NULL };
	char *help_typo[] = { khprof, "help", "exprot", NULL };
	char *global[] = { khprof, "--bogus", NULL };
	/* The other command's option is named, never its value. */
	char *attach_user[] = { khprof, "attach", "--all", "--user", "nobody", NULL };
	char *record_pid[] = { khprof, "record", "-p5", "--", "/bin/true", NULL };
	char *attach_repeat[] = { khprof, "attach", "--repeat=3", "-p", "1", NULL };
	struct run_result r;

	(void)state;
	r = run_here(bogus);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err, "khprof: unknown option '--bogus' (see 'khprof report "
				   "--help')\n");
	assert_string_equal(r.out, "");
	run_result_free(&r);
	assert_run_exits(two, 2, "unexpected argument 'b.json' (report takes one PATH) (see "
				 "'khprof report --help')");
	assert_run_exits(export_none, 2, "(see 'khprof export --help')");
	assert_run_exits(probes_none, 2, "(see 'khprof probes --help')");
	assert_run_exits(diff_one, 2, "(see 'khprof diff --help')");
	assert_run_exits(record_bogus, 2, "unknown option '--bogus' (see 'khprof record "
					  "--help')");
	r = run_here(typo);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err, "khprof: 'recrod' is not a khprof command; did you mean "
				   "'record'? (see 'khprof --help')\n");
	run_result_free(&r);
	assert_run_exits(prefix, 2, "did you mean 'report'?");
	assert_run_exits(help_typo, 2, "did you mean 'export'?");
	assert_run_exits(global, 2, "unknown option '--bogus' (see 'khprof --help')");
	assert_run_exits(attach_user, 2, "option '--user' is record's, not attach's (see "
					 "'khprof attach --help')");
	assert_run_exits(record_pid, 2, "option '-p' is attach's, not record's");
	assert_run_exits(attach_repeat, 2, "option '--repeat' is record's, not attach's");
	/* Every one of them is a single line. */
	{
		char *const *all[] = { bogus, two, export_none, probes_none, diff_one, record_bogus,
				       typo, prefix, help_typo, global, attach_user, record_pid,
				       attach_repeat };

		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
			r = run_here(all[i]);
			if (count_lines(r.err) != 1)
				fail_msg("%s %s: %zu lines on stderr: %s", all[i][1],
					 all[i][2] ? all[i][2] : "", count_lines(r.err), r.err);
			run_result_free(&r);
		}
	}
}

/*
 * A bad value is a bad command line like an unknown option: one line, exit
 * 2, ending in the pointer to the command's --help that the README promises.
 */
static void test_bad_values_point_to_help(void **state)
{
	static const struct {
		const char *command;
		char *argv[8];
		const char *says;
	} cases[] = {
		{ "report", { "report", "--format", "xml", "x.json" }, "unknown format 'xml' (text, " },
		{ "export", { "export", "--format", "xml", "x.json" }, "unknown format 'xml'" },
		{ "diff", { "diff", "--format", "xml", "a", "b" }, "unknown format 'xml'" },
		{ "diff", { "diff", "--threshold", "foo", "a", "b" }, "bad --threshold 'foo'" },
		{ "diff", { "diff", "--min-change-ms", "x", "a", "b" }, "bad --min-change-ms 'x'" },
		{ "attach", { "attach", "-p", "abc" }, "bad PID 'abc'" },
		{ "attach", { "attach", "-p", "1", "--duration", "5x" }, "bad duration '5x'" },
		{ "record", { "record", "--mode", "fast", "--", "/bin/true" }, "unknown mode 'fast'" },
		{ "attach", { "attach", "--mode", "fast", "-p", "1" }, "unknown mode 'fast'" },
		{ "record", { "record", "--repeat", "0", "-o", "d", "--", "/bin/true" },
		  "bad --repeat '0': expected a whole number from 1 to " },
		{ "record", { "record", "--interval", "5ms", "--", "/bin/true" }, "bad interval '5ms'" },
		{ "record", { "record", "--sample=0", "--", "/bin/true" }, "bad sampling rate '0'" },
		{ "record", { "record", "--identity", "nokey", "--", "/bin/true" },
		  "bad --identity 'nokey'" },
		{ "record", { "record", "--append", "--", "/bin/true" }, "--append needs --repeat" },
		{ "attach", { "attach", "-p", "1", "--exe", "/bin/true" },
		  "attach takes one of -p PID, --exe PATH and --all" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *argv[9] = { khprof };
		char ending[64];
		struct run_result r;
		size_t len;

		memcpy(argv + 1, cases[i].argv, sizeof(cases[i].argv));
		r = run_here(argv);
		snprintf(ending, sizeof(ending), " (see 'khprof %s --help')\n", cases[i].command);
		len = strlen(r.err);
		if (r.exit_code != 2 || count_lines(r.err) != 1 || !strstr(r.err, cases[i].says) ||
		    len < strlen(ending) || strcmp(r.err + len - strlen(ending), ending))
			fail_msg("khprof %s %s %s: exit %d, stderr: %s", argv[1], argv[2],
				 argv[3] ? argv[3] : "", r.exit_code, r.err);
		run_result_free(&r);
	}
}

/* The constant of a stage or state name: "source-acquire" -> KH_STAGE_SOURCE_ACQUIRE. */
static void constant_of(const char *prefix, const char *name, char *out, size_t len)
{
	size_t n = (size_t)snprintf(out, len, "%s", prefix);

	for (; *name && n + 1 < len; name++)
		out[n++] = *name == '-' ? '_' : (char)toupper((unsigned char)*name);
	out[n] = '\0';
}

/*
 * docs/INSTRUMENTING.md, linked first from the README, names every stage
 * and state with its constant as the header and the records spell them.
 */
static void test_instrumenting_page_names_everything(void **state)
{
	char *page, *readme, cell[160], constant[64];
	size_t len;

	(void)state;
	assert_int_equal(file__read_all("docs/INSTRUMENTING.md", &page, &len), 0);
	for (uint32_t i = 0; i < KH_STAGE_COUNT; i++) {
		constant_of("KH_STAGE_", kh_stage__name(i), constant, sizeof(constant));
		snprintf(cell, sizeof(cell), "| `%s` | `%s` |", constant, kh_stage__name(i));
		if (!strstr(page, cell))
			fail_msg("docs/INSTRUMENTING.md has no '%s'", cell);
	}
	for (uint32_t i = 0; i < KH_STATE_COUNT; i++) {
		constant_of("KH_STATE_", kh_run_state__name(i), constant, sizeof(constant));
		snprintf(cell, sizeof(cell), "| `%s` | `%s`", constant, kh_run_state__name(i));
		if (!strstr(page, cell))
			fail_msg("docs/INSTRUMENTING.md has no '%s'", cell);
	}
	free(page);
	assert_int_equal(file__read_all("README.md", &readme, &len), 0);
	page = strstr(readme, "](docs/");
	assert_non_null(page);
	assert_int_equal(strncmp(page, "](docs/INSTRUMENTING.md)", 24), 0);
	free(readme);
}

/*
 * report without PATH reads khprof.json here (what record writes without
 * -o), and says so when there is none.
 */
static void test_report_reads_the_default_record(void **state)
{
	char *dir = make_temp_dir("khprof-cli"), *tool = realpath(khprof, NULL);
	char *golden = realpath("tests/golden/seed_workload.json", NULL);
	char *bare[] = { tool, "report", NULL };
	char *seed[] = { tool, "report", "--format", "seed", NULL };
	char *named[] = { tool, "report", "--format", "seed", golden, NULL };
	char path[PATH_MAX], *text;
	struct run_result r, expected;
	size_t len;

	(void)state;
	assert_non_null(dir);
	assert_non_null(tool);
	assert_non_null(golden);
	r = run_cmd(dir, -1, bare);
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.err, "khprof: cannot read record 'khprof.json': No such file or "
				   "directory (no PATH given: 'khprof record' writes khprof.json in "
				   "the directory it runs in)\n");
	assert_string_equal(r.out, "");
	run_result_free(&r);

	assert_int_equal(file__read_all(golden, &text, &len), 0);
	path_in(path, sizeof(path), dir, "khprof.json");
	assert_int_equal(file__write_atomic(path, text, len), 0);
	free(text);
	r = run_cmd(dir, -1, seed);
	expected = run_here(named);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(expected.exit_code, 0);
	assert_string_equal(r.out, expected.out);
	run_result_free(&r);
	run_result_free(&expected);
	assert_int_equal(remove_tree(dir), 0);
	free(dir);
	free(tool);
	free(golden);
}

/* A record of a schema this khprof does not know is refused, by every reader. */
static void test_unknown_schema_is_refused(void **state)
{
	char *text, *v2, *pos;
	size_t len;

	(void)state;
	assert_int_equal(file__read_all("tests/golden/seed_workload.json", &text, &len), 0);
	pos = strstr(text, "keyhog-profile-v1");
	assert_non_null(pos);
	pos[strlen("keyhog-profile-v")] = '2';
	v2 = write_temp(text);
	assert_non_null(v2);
	{
		char *report[] = { khprof, "report", v2, NULL };
		char *export[] = { khprof, "export", v2, NULL };
		char *diff[] = { khprof, "diff", v2, v2, NULL };
		char expected[PATH_MAX + 256];
		struct run_result r = run_here(report);

		snprintf(expected, sizeof(expected),
			 "khprof: cannot read record '%s': schema 'keyhog-profile-v2' is not one "
			 "this khprof reads (it reads keyhog-profile-v1; a newer khprof may)\n", v2);
		assert_int_equal(r.exit_code, 2);
		assert_string_equal(r.err, expected);
		assert_string_equal(r.out, "");
		run_result_free(&r);
		assert_run_exits(export, 2, "schema 'keyhog-profile-v2' is not one this khprof reads");
		assert_run_exits(diff, 2, "schema 'keyhog-profile-v2'");
	}
	unlink(v2);
	free(v2);
	free(text);
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
		cmocka_unit_test(test_one_line_usage_errors),
		cmocka_unit_test(test_bad_values_point_to_help),
		cmocka_unit_test(test_instrumenting_page_names_everything),
		cmocka_unit_test(test_report_reads_the_default_record),
		cmocka_unit_test(test_unknown_schema_is_refused),
		cmocka_unit_test(test_unprivileged_tracing_is_refused),
		cmocka_unit_test(test_version_and_help_command),
		cmocka_unit_test(test_option_value_that_looks_like_an_option),
		cmocka_unit_test(test_report_directory_of_runs),
		cmocka_unit_test(test_probes_align_long_names),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
