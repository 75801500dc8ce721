// SPDX-License-Identifier: MIT
/*
 * khprof's HTML pages opened in a real headless Chromium: each kind of page
 * renders its elements (checked in the DOM Chromium built), logs nothing
 * on the console, loads nothing from outside the file, and paints a
 * screenshot that is not blank.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "browser.h"
#include "fileio.h"
#include "html.h"
#include "khtest.h"
#include "series.h"

static char *khprof;
static char *workdir;

/* Runs khprof with argv (after "khprof"), writes stdout to workdir/out; its path. */
static char *khprof_to_file(const char *out, char *const args[], int want_exit)
{
	char *argv[16] = { khprof }, *path;
	struct run_result r;
	size_t n = 1;
	int err;

	while (args[n - 1]) {
		argv[n] = args[n - 1];
		n++;
	}
	argv[n] = NULL;
	r = run_cmd(NULL, -1, argv);
	if (r.exit_code != want_exit)
		fail_msg("khprof %s exited %d, not %d: %s", args[0], r.exit_code, want_exit, r.err);
	assert_true(asprintf(&path, "%s/%s", workdir, out) > 0);
	err = file__write_atomic(path, r.out, strlen(r.out));
	assert_int_equal(err, 0);
	run_result_free(&r);
	return path;
}

static char *read_text(const char *path)
{
	char *text;
	size_t len;

	assert_int_equal(file__read_all(path, &text, &len), 0);
	return text;
}

/*
 * Nothing that could reach the network or another file: no URL scheme, no
 * src/href attribute, no @import, no url() but the page's own #patterns.
 */
static void assert_self_contained(const char *html)
{
	static const char *const outside[] = { "http://", "https://", " src=", " href=",
					       "@import" };
	size_t bad_urls = 0;

	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
		if (strstr(html, outside[i]))
			fail_msg("the page refers outside itself: '%s'", outside[i]);
	for (size_t i = 0; html[i]; i++)
		bad_urls += !strncmp(html + i, "url(", 4) && html[i + 4] != '#';
	assert_int_equal(bad_urls, 0);
}

/* The checks every page gets: console, self-containment, a painted screenshot. */
static void assert_page_renders(const char *html_path, struct page_view *v)
{
	char *html = read_text(html_path), *png;
	struct png_stats s;

	assert_self_contained(html);
	*v = page_open(html_path);
	if (*v->console)
		fail_msg("console messages on %s:\n%s", html_path, v->console);
	assert_non_null(strstr(v->dom, "</main>"));
	assert_true(asprintf(&png, "%s.png", html_path) > 0);
	s = page_screenshot(html_path, png);
	assert_int_equal(s.width, 1280);
	/* Text in several colours, bars and charts: far from one flat colour. */
	if (s.colours < 64 || s.non_white_pct < 3.0)
		fail_msg("screenshot of %s looks blank: %zu colours, %.2f%% not white", html_path,
			 s.colours, s.non_white_pct);
	free(png);
	free(html);
}

/* The check must be able to fail: a page with a script error is caught. */
static void test_console_errors_are_caught(void **state)
{
	char *path;
	struct page_view v;

	(void)state;
	assert_true(asprintf(&path, "%s/broken.html", workdir) > 0);
	assert_int_equal(file__write_atomic(path, "<!DOCTYPE html><p>x</p><script>nosuch();"
						  "</script>\n", 61), 0);
	v = page_open(path);
	assert_non_null(strstr(v.console, "nosuch"));
	page_view_free(&v);
	free(path);
}

/* So must the screenshot check: an empty page is white. */
static void test_blank_screenshot_is_caught(void **state)
{
	char *path, *png;
	struct png_stats s;

	(void)state;
	assert_true(asprintf(&path, "%s/blank.html", workdir) > 0);
	assert_true(asprintf(&png, "%s/blank.png", workdir) > 0);
	assert_int_equal(file__write_atomic(path, "<!DOCTYPE html><title>t</title>\n", 32), 0);
	s = page_screenshot(path, png);
	assert_true(s.colours < 64);
	assert_true(s.non_white_pct < 3.0);
	free(path);
	free(png);
}

static void test_record_page(void **state)
{
	char *args[] = { "report", "--format", "html", "tests/golden/assembled.json", NULL };
	char *path = khprof_to_file("record.html", args, 0);
	struct kh_profile p;
	struct page_view v;

	(void)state;
	load_record("tests/golden/assembled.json", &p);
	assert_page_renders(path, &v);
	for (const char *const *id = (const char *const[]){ "summary", "card-status", "card-wall",
				"card-throughput", "card-bottleneck", "stage-bars", "stage-table",
				"timeline-chart", "state-table", "rss-line", "identity", "notes",
				NULL }; *id; id++) {
		char needle[64];

		snprintf(needle, sizeof(needle), "id=\"%s\"", *id);
		if (!strstr(v.dom, needle))
			fail_msg("no element %s in the record page", needle);
	}
	/* One bar per stage, one band segment per state, the run's own words. */
	assert_int_equal(count_of(v.dom, "class=\"stage-bar\""), p.stage_count);
	assert_int_equal(count_of(v.dom, "class=\"state-seg\""), p.transition_count - 1);
	assert_non_null(strstr(v.dom, "completed"));
	assert_non_null(strstr(v.dom, p.identity.run_id));
	assert_non_null(strstr(v.dom, "data-stage=\"hot-patterns\""));
	/* Units with numbers: the wall time of 849175 ns. */
	assert_non_null(strstr(v.dom, "849 µs"));
	/* The record lost two span exits: the page says so. */
	assert_non_null(strstr(v.dom, "Not seen: 2 span exits"));
	/* Written before khprof.latency and the process end: the page is as it was. */
	for (const char *const *id = (const char *const[]){ "latency", "latency-chart",
				"cpu-split", "card-end", "note-process-end", "note-refused",
				"note-identity-unreadable", "note-missed-switches", NULL }; *id; id++) {
		char needle[64];

		snprintf(needle, sizeof(needle), "id=\"%s\"", *id);
		if (strstr(v.dom, needle))
			fail_msg("element %s in the page of a record without it", needle);
	}
	page_view_free(&v);
	profile__free(&p);
	free(path);
}

/* A record with nothing to draw still renders, and says what is missing. */
static void test_record_page_without_states(void **state)
{
	char *args[] = { "report", "--format", "html", "tests/golden/all_null.json", NULL };
	char *path = khprof_to_file("empty.html", args, 0);
	struct page_view v;

	(void)state;
	v = page_open(path);
	if (*v.console)
		fail_msg("console messages:\n%s", v.console);
	assert_non_null(strstr(v.dom, "id=\"summary\""));
	assert_non_null(strstr(v.dom, "no timeline"));
	page_view_free(&v);
	free(path);
}

/* p as JSON in workdir/name, rendered to workdir/name.html; that page's path. */
static char *render_record(struct kh_profile *p, const char *name)
{
	char *rec, *out, *path, *json = profile__to_json(p);
	char *args[] = { "report", "--format", "html", NULL, NULL };

	assert_non_null(json);
	assert_true(asprintf(&rec, "%s/%s", workdir, name) > 0);
	assert_int_equal(file__write_atomic(rec, json, strlen(json)), 0);
	assert_true(asprintf(&out, "%s.html", name) > 0);
	args[3] = rec;
	path = khprof_to_file(out, args, 0);
	free(out);
	free(rec);
	free(json);
	return path;
}

/* n spans of ns each into d's histogram (bias 0 in the golden record). */
static void add_spans(struct kh_stage_dist *d, uint64_t ns, uint64_t n)
{
	d->counts[kh_hist_bucket(ns)] += n;
	if (!d->spans || ns < d->min_ns)
		d->min_ns = ns;
	if (ns > d->max_ns)
		d->max_ns = ns;
	d->spans += n;
}

/* The page's spelling of a duration, as html__duration writes it. */
static char *duration_text(uint64_t ns)
{
	struct outbuf b;

	outbuf__init(&b);
	html__duration(&b, (double)ns);
	return outbuf__finish(&b);
}

/*
 * khprof.latency and how the process ended: percentile marks per stage,
 * on-CPU/off-CPU bars split into runnable and blocked, the counts of what
 * the split missed, and the partial record's notes, with the record's figures.
 */
static void test_latency_page(void **state)
{
	const uint32_t stages[] = { KH_STAGE_HOT_PATTERNS, KH_STAGE_DECODE };
	struct kh_latency *l;
	struct kh_profile p;
	struct page_view v;
	char *path;

	(void)state;
	load_record("tests/golden/assembled.json", &p);
	l = &p.ext.latency;
	l->present = l->off_cpu = true;
	l->missed_switches = 3;
	for (size_t i = 0; i < 2; i++) {
		const struct kh_stage_measurement *m = profile__find_stage(&p, stages[i]);
		struct kh_stage_dist *d = &l->stages[stages[i]];

		assert_non_null(m);
		d->present = true;
		assert_int_equal(kh_dist__alloc(d), 0);
		add_spans(d, 500, 90);
		add_spans(d, 20000, 9);
		add_spans(d, 5000000, 1);
		/* Half the stage's time off-CPU, half of that runnable. */
		d->off_cpu_ns = m->elapsed_ns / 2;
		d->runnable_ns = m->elapsed_ns / 4;
	}
	l->stages[KH_STAGE_DECODE].offcpu_truncated = 4;
	p.ext.started_mid_session = p.ext.ended_mid_session = true;
	p.ext.process_end = strdup("signal");
	p.ext.exit_signal = (struct kh_opt_u64){ true, 9 };
	/* 2026-11-30 22:34:17.250 UTC */
	p.ext.observed_from_unix_ns = (struct kh_opt_u64){ true, 1796078057250000000ull };
	p.ext.attach_state = strdup("scanning");
	p.ext.refused_session_starts = 2;
	p.ext.identity_unreadable = 1;
	path = render_record(&p, "latency.json");
	assert_page_renders(path, &v);
	for (const char *const *id = (const char *const[]){ "latency", "latency-chart",
				"latency-table", "cpu-split", "cpu-split-chart", "cpu-split-table",
				"card-end", "note-process-end", "note-started-mid", "note-refused",
				"note-identity-unreadable", "note-missed-switches",
				"note-offcpu-truncated", "attach-state", "observed-from", NULL };
	     *id; id++) {
		char needle[64];

		snprintf(needle, sizeof(needle), "id=\"%s\"", *id);
		if (!strstr(v.dom, needle))
			fail_msg("no element %s in the latency page", needle);
	}
	/* A row of marks and a split bar per stage with spans, each with its patterns. */
	assert_int_equal(count_of(v.dom, "class=\"latency-row\""), 2);
	assert_int_equal(count_of(v.dom, "class=\"p90\""), 2);
	assert_int_equal(count_of(v.dom, "class=\"p999\""), 2);
	assert_int_equal(count_of(v.dom, "class=\"split-row\""), 2);
	assert_int_equal(count_of(v.dom, "class=\"split-runnable\""), 2);
	assert_int_equal(count_of(v.dom, "class=\"split-blocked\""), 2);
	assert_non_null(strstr(v.dom, "data-stage=\"decode\""));
	/* Each percentile the record gives, with its unit, in the chart and the table. */
	for (int q = 0; q < KH_DIST_PERCENTILES; q++) {
		uint64_t ns = kh_dist__percentile(&l->stages[KH_STAGE_DECODE], kh_dist_permille[q],
						  0);
		char *text = duration_text(ns), *cell;

		assert_true(asprintf(&cell, "<td>%s</td>", text) > 0);
		if (!strstr(v.dom, cell))
			fail_msg("percentile %s = %s not in the table", kh_dist_percentile_name[q],
				 text);
		free(cell);
		free(text);
	}
	assert_non_null(strstr(v.dom, "<th>p99.9</th>"));
	assert_non_null(strstr(v.dom, "· max 5.00 ms</text>"));
	assert_non_null(strstr(v.dom, "on-CPU 50.0 % · runnable 25.0 % · blocked 25.0 %"));
	/* What the split missed, counted. */
	assert_non_null(strstr(v.dom, "3 context switches"));
	assert_non_null(strstr(v.dom, "* The off-CPU time of 4 spans is only partly known"));
	/* How the program ended and where the record began. */
	assert_non_null(strstr(v.dom, "Ended mid-session: <span id=\"note-process-end\">the "
				      "program was killed by signal 9 (SIGKILL)</span>, before"));
	assert_non_null(strstr(v.dom, "2026-11-30 22:34:17.250 UTC"));
	assert_non_null(strstr(v.dom, "<code id=\"attach-state\">scanning</code>"));
	assert_non_null(strstr(v.dom, "2 session starts refused while this session was open"));
	assert_non_null(strstr(v.dom, "1 identity probe passed memory"));
	page_view_free(&v);
	profile__free(&p);
	free(path);
}

/* Distributions without the off-CPU split, and a process that exited: said in words. */
static void test_latency_page_without_split(void **state)
{
	struct kh_stage_dist *d;
	struct kh_profile p;
	struct page_view v;
	char *path;

	(void)state;
	load_record("tests/golden/assembled.json", &p);
	p.ext.latency.present = true;
	d = &p.ext.latency.stages[KH_STAGE_HOT_PATTERNS];
	d->present = true;
	assert_int_equal(kh_dist__alloc(d), 0);
	add_spans(d, 40, 7);
	/* Begun mid-session by a khprof that did not keep the attach time: the old note. */
	p.ext.started_mid_session = p.ext.ended_mid_session = true;
	p.ext.process_end = strdup("exit");
	p.ext.exit_code = (struct kh_opt_u64){ true, 3 };
	path = render_record(&p, "nosplit.json");
	assert_page_renders(path, &v);
	assert_int_equal(count_of(v.dom, "class=\"latency-row\""), 1);
	/* Seven equal spans: every percentile is exact. */
	assert_non_null(strstr(v.dom, "p50 40 ns · p99 40 ns · max 40 ns"));
	assert_non_null(strstr(v.dom, "id=\"no-cpu-split\""));
	assert_null(strstr(v.dom, "id=\"cpu-split-chart\""));
	assert_non_null(strstr(v.dom, "id=\"note-started-mid\">Started mid-session: khprof "
				      "attached after the session began, so earlier work is not "
				      "here.</p>"));
	assert_null(strstr(v.dom, "id=\"observed-from\""));
	assert_non_null(strstr(v.dom, "the program exited with exit code 3</span>, before"));
	page_view_free(&v);
	profile__free(&p);
	free(path);
}

/*
 * n copies of the golden record in dir/run-NNN.json, wall and stage times
 * scaled by 1 + i/20 (a slow drift), hot-patterns also by hot.
 */
static char *write_runs(const char *name, size_t n, double hot)
{
	char *dir;

	assert_true(asprintf(&dir, "%s/%s", workdir, name) > 0);
	assert_int_equal(mkdir(dir, 0755), 0);
	for (size_t i = 0; i < n; i++) {
		double k = 1.0 + (double)i / 20.0;
		struct kh_profile p;
		char *json, *path;

		load_record("tests/golden/assembled.json", &p);
		p.wall_time_ns = (uint64_t)((double)p.wall_time_ns * k);
		for (size_t s = 0; s < p.stage_count; s++)
			p.stages[s].elapsed_ns = (uint64_t)((double)p.stages[s].elapsed_ns * k *
							    (p.stages[s].stage == KH_STAGE_HOT_PATTERNS
								     ? hot
								     : 1.0));
		json = profile__to_json(&p);
		assert_non_null(json);
		assert_true(asprintf(&path, "%s/run-%03zu.json", dir, i + 1) > 0);
		assert_int_equal(file__write_atomic(path, json, strlen(json)), 0);
		free(path);
		free(json);
		profile__free(&p);
	}
	return dir;
}

/* A record with an --interval series: stacked stages, throughput and CPU over time. */
static void test_series_page(void **state)
{
	char *rec, *json, *path;
	char *args[] = { "report", "--format", "html", NULL, NULL };
	struct kh_profile p;
	struct page_view v;

	(void)state;
	load_record("tests/golden/assembled.json", &p);
	p.ext.series.interval_ns = 100000;
	for (size_t i = 0; i < 8; i++) {
		struct kh_interval iv = { .start_ns = 100000 * i, .duration_ns = 100000,
					  .state = KH_STATE_SCANNING, .input_bytes = 50000 * (i + 1),
					  .cpu_time_ms = { true, i % 3 },
					  .resident_bytes = { true, 2 << 20 } };

		for (int st = 0; st < KH_STAGE_COUNT; st++) {
			iv.calls[st] = i + 1;
			iv.elapsed_ns[st] = 1000 * (st + 1) * (i + 1);
		}
		assert_int_equal(series__append(&p.ext.series, &iv), 0);
	}
	json = profile__to_json(&p);
	assert_true(asprintf(&rec, "%s/series.json", workdir) > 0);
	assert_int_equal(file__write_atomic(rec, json, strlen(json)), 0);
	args[3] = rec;
	path = khprof_to_file("series.html", args, 0);
	assert_page_renders(path, &v);
	assert_non_null(strstr(v.dom, "id=\"series-stages\""));
	assert_non_null(strstr(v.dom, "id=\"series-throughput\""));
	assert_non_null(strstr(v.dom, "id=\"series-cpu\""));
	assert_int_equal(count_of(v.dom, "class=\"series-interval\""), 8);
	/* 24 stages have time: 7 in colour, the rest summed as "other". */
	assert_non_null(strstr(v.dom, "other stages"));
	assert_non_null(strstr(v.dom, "8 intervals"));
	page_view_free(&v);
	profile__free(&p);
	free(json);
	free(rec);
	free(path);
}

static void test_runs_page(void **state)
{
	char *dir = write_runs("runs", 8, 1.0), *path;
	char *args[] = { "report", "--format", "html", dir, NULL };
	struct page_view v;

	(void)state;
	path = khprof_to_file("runs.html", args, 0);
	assert_page_renders(path, &v);
	assert_non_null(strstr(v.dom, "8 runs"));
	assert_non_null(strstr(v.dom, "id=\"trend-wall-chart\""));
	assert_non_null(strstr(v.dom, "id=\"trend-throughput-chart\""));
	assert_non_null(strstr(v.dom, "id=\"trend-hot-patterns\""));
	/* The six stages of the record, a point per run on each of 2 + 6 charts. */
	assert_int_equal(count_of(v.dom, "class=\"trend stage-trend\""), 6);
	assert_int_equal(count_of(v.dom, "class=\"run-point\""), 8 * (2 + 6));
	/* The spread table and the runs in file order. */
	assert_non_null(strstr(v.dom, "id=\"spread-table\""));
	assert_true(strstr(v.dom, "run-001.json") < strstr(v.dom, "run-008.json"));
	page_view_free(&v);
	free(path);
	free(dir);
}

/*
 * A directory of runs is a table (text) or a page (html); a trace of a
 * series is not one: refused in one line that names the way to the page.
 */
static void test_runs_dir_as_perfetto_is_refused(void **state)
{
	char *argv[] = { khprof, "report", "--format", "perfetto", "tests/golden", NULL };
	struct run_result r = run_cmd(NULL, -1, argv);

	(void)state;
	assert_int_equal(r.exit_code, 2);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "--format html"));
	assert_int_equal(count_of(r.err, "\n"), 1);
	run_result_free(&r);
}

static void test_diff_page(void **state)
{
	char *base = write_runs("base", 6, 1.0), *cand = write_runs("cand", 6, 1.5), *path;
	char *args[] = { "diff", "--format", "html", base, cand, NULL };
	struct page_view v;

	(void)state;
	/* Exit 1: hot-patterns got 50 % slower in every run. */
	path = khprof_to_file("diff.html", args, 1);
	assert_page_renders(path, &v);
	assert_non_null(strstr(v.dom, "id=\"diff-plot\""));
	assert_non_null(strstr(v.dom, "id=\"diff-table\""));
	assert_non_null(strstr(v.dom, "class=\"badge verdict-regressed\" id=\"verdict-badge\">✗ "
				      "regressed"));
	/* The verdict in words and symbol, and its interval drawn. */
	assert_non_null(strstr(v.dom, "class=\"diff-row verdict-regressed\" "
				      "data-item=\"hot-patterns\""));
	assert_non_null(strstr(v.dom, "▲ regressed"));
	assert_true(count_of(v.dom, "class=\"interval\"") > 0);
	assert_non_null(strstr(v.dom, "data-item=\"source-read\""));
	assert_null(strstr(v.dom, "class=\"diff-row verdict-regressed\" data-item=\"source-read\""));
	page_view_free(&v);
	free(path);
	free(base);
	free(cand);
}

/* Records that may not be compared still get a page that says why (exit 3). */
static void test_diff_page_not_comparable(void **state)
{
	char *base = write_runs("nc-base", 2, 1.0), *cand = write_runs("nc-cand", 2, 1.0), *path;
	char *args[] = { "diff", "--format", "html", base, cand, NULL };
	struct kh_profile p;
	struct page_view v;
	char *file, *json;

	(void)state;
	/* Another build on the candidate side. */
	for (int i = 1; i <= 2; i++) {
		assert_true(asprintf(&file, "%s/run-%03d.json", cand, i) > 0);
		load_record(file, &p);
		free(p.identity.binary_version);
		p.identity.binary_version = strdup("other-build");
		json = profile__to_json(&p);
		assert_int_equal(file__write_atomic(file, json, strlen(json)), 0);
		free(json);
		free(file);
		profile__free(&p);
	}
	path = khprof_to_file("diff-nc.html", args, 3);
	assert_page_renders(path, &v);
	assert_non_null(strstr(v.dom, "✗ not-comparable"));
	assert_non_null(strstr(v.dom, "Not comparable: records differ in 'binary_version'"));
	assert_null(strstr(v.dom, "id=\"diff-plot\""));
	page_view_free(&v);
	free(path);
	free(base);
	free(cand);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_console_errors_are_caught),
		cmocka_unit_test(test_blank_screenshot_is_caught),
		cmocka_unit_test(test_record_page),
		cmocka_unit_test(test_record_page_without_states),
		cmocka_unit_test(test_latency_page),
		cmocka_unit_test(test_latency_page_without_split),
		cmocka_unit_test(test_series_page),
		cmocka_unit_test(test_runs_page),
		cmocka_unit_test(test_runs_dir_as_perfetto_is_refused),
		cmocka_unit_test(test_diff_page),
		cmocka_unit_test(test_diff_page_not_comparable),
	};
	char *browser = chromium_path();
	int rc;

	if (chdir(test_repo_root()) != 0)
		return 1;
	if (access(browser, X_OK) != 0) {
		/* make test installs it; outside CI a missing browser skips. */
		fprintf(stderr, "test_html: skipped: no chromium at %s\n", browser);
		return running_in_ci() ? 1 : 0;
	}
	free(browser);
	khprof = tool_path("KH_KHPROF", "build/khprof");
	workdir = make_temp_dir("khprof-html");
	if (!workdir)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	if (!getenv("KH_KEEP"))
		remove_tree(workdir);
	else
		fprintf(stderr, "pages kept in %s\n", workdir);
	free(workdir);
	free(khprof);
	return rc;
}
