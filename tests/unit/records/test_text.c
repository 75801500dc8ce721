// SPDX-License-Identifier: MIT
/*
 * The text report against the seed's render_text(): every golden record,
 * plus the layout rules that the goldens exercise only in passing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "hist.h"
#include "html.h"
#include "json.h"
#include "latency_text.h"
#include "notes.h"
#include "text.h"
#include "golden.h"
#include "khtest.h"

static void test_goldens_render_like_the_seed(void **state)
{
	char *names[GOLDEN_MAX];
	size_t count = golden_inputs(names);

	(void)state;
	assert_true(count >= 15);
	for (size_t i = 0; i < count; i++) {
		char *expected = golden_read_suffix(names[i], ".txt");
		struct kh_profile p;
		char *text;

		assert_non_null(expected);
		golden_load(names[i], ".json", &p);
		text = profile__render_text(&p);
		assert_non_null(text);
		if (strcmp(text, expected))
			fail_msg("%s: report differs from %s.txt:\n%s", names[i], names[i], text);
		free(text);
		free(expected);
		profile__free(&p);
	}
	golden_free(names, count);
}

static struct kh_profile minimal_profile(void)
{
	struct kh_profile p;

	assert_int_equal(profile__init(&p), 0);
	assert_int_equal(identity__set(&p.identity, "run_id", "r"), 0);
	assert_int_equal(identity__set(&p.identity, "logical_cpus", "2"), 0);
	p.status = KH_STATE_COMPLETED;
	return p;
}

/* Lines of text after the four header lines. */
static const char *after_header(const char *text)
{
	for (int i = 0; i < 4 && text; i++) {
		text = strchr(text, '\n');
		if (text)
			text++;
	}
	return text;
}

static void test_header_layout(void **state)
{
	struct kh_profile p = minimal_profile();
	char *text;

	(void)state;
	p.wall_time_ns = 2000000000;
	p.input_bytes = 1048576;
	assert_int_equal(identity__set(&p.identity, "reader_threads", "3"), 0);
	assert_int_equal(identity__set(&p.identity, "backend_selected", "cpu"), 0);
	text = profile__render_text(&p);
	assert_string_equal(text,
			    "KeyHog profile r\n"
			    "state=completed source=unknown workload=unknown backend_requested=unknown "
			    "backend_selected=cpu cache=unknown daemon=off wall_ms=2000.000\n"
			    "version=unknown detector_digest=unknown config_digest=unknown\n"
			    "input_bytes=1048576 input_units=0 throughput_mib_s=0.500 scanner_threads=0 "
			    "reader_threads=3 logical_cpus=2\n"
			    "resources aggregate_cpu=unavailable\n");
	free(text);
	profile__free(&p);
}

/* No states and no stages: no bottleneck line at all. */
static void test_empty_profile_has_no_bottleneck_line(void **state)
{
	struct kh_profile p = minimal_profile();
	char *text;

	(void)state;
	text = profile__render_text(&p);
	assert_string_equal(after_header(text), "resources aggregate_cpu=unavailable\n");
	free(text);
	profile__free(&p);
}

/* Only backend-dispatch: the bottleneck line is empty but still ends. */
static void test_dispatch_only_leaves_an_empty_line(void **state)
{
	struct kh_profile p = minimal_profile();
	char *text;

	(void)state;
	assert_int_equal(profile__set_stage(&p, KH_STAGE_BACKEND_DISPATCH, 1000000, 4, 0), 0);
	text = profile__render_text(&p);
	assert_string_equal(after_header(text),
			    "  backend-dispatch              1.000 ms calls=4 per_call_us=250.000 "
			    "attributed_ms=0.000\n"
			    "\n"
			    "resources aggregate_cpu=unavailable\n");
	free(text);
	profile__free(&p);
}

/* max_by_key returns the last of equal maxima, for states and stages. */
static void test_bottleneck_ties_pick_the_last(void **state)
{
	struct kh_profile p = minimal_profile();
	char *text;

	(void)state;
	assert_int_equal(profile__add_transition(&p, KH_STATE_CREATED, 0, NULL), 0);
	assert_int_equal(profile__add_transition(&p, KH_STATE_SCANNING, 5, NULL), 0);
	assert_int_equal(profile__add_transition(&p, KH_STATE_REPORTING, 10, NULL), 0);
	assert_int_equal(profile__add_transition(&p, KH_STATE_COMPLETED, 15, NULL), 0);
	assert_int_equal(profile__set_stage(&p, KH_STAGE_SOURCE_READ, 7, 1, 0), 0);
	assert_int_equal(profile__set_stage(&p, KH_STAGE_BACKEND_DISPATCH, 99, 1, 0), 0);
	assert_int_equal(profile__set_stage(&p, KH_STAGE_DECODE, 7, 1, 0), 0);
	assert_int_equal(profile__set_stage(&p, KH_STAGE_ENTROPY, 3, 1, 0), 0);
	assert_int_equal(profile__finish(&p, KH_STATE_COMPLETED, 15), 0);
	text = profile__render_text(&p);
	assert_non_null(strstr(text, "\nbottleneck macro=reporting wall_ms=0.000 "
				     "summed_stage=decode summed_ms=0.000\n"));
	free(text);
	profile__free(&p);
}

static void test_state_lines(void **state)
{
	struct kh_profile p = minimal_profile();
	struct kh_state_measurement m = {
		.state = KH_STATE_VERIFYING,
		.elapsed_ns = 1234567,
		.aggregate_cpu_milli_percent = { true, 99950 },
		.resident_start_bytes = { true, 1 },
		.resident_end_bytes = { false, 0 },
		.threads_start = { true, 2 },
		.threads_end = { true, 3 },
	};
	char *text;

	(void)state;
	p.states = &m;
	p.state_count = 1;
	text = profile__render_text(&p);
	/* 99.95 is a little above the tie in binary, so {:.1} gives 100.0; no rss end */
	assert_non_null(strstr(text, "\nmacro verifying    wall_ms=1.235 cpu=100.0% threads=2->3\n"));
	p.states = NULL;
	p.state_count = 0;
	free(text);
	profile__free(&p);
}

/*
 * A 47 us state across a millisecond boundary of the process's CPU time:
 * the seed's text says cpu=2127.7% (whole ms, kept byte for byte), while
 * khprof's own table and HTML state the kernel's ns and never more than
 * 100 % per logical CPU.
 */
static void add_sample(struct kh_profile *p, uint32_t state, uint64_t at_ns, uint64_t cpu_ns)
{
	struct kh_resource_snapshot snap = { .cpu_time_ms = { true, cpu_ns / 1000000 } };
	struct kh_sample_ext x = { .cpu_time_ns = { true, cpu_ns } };

	assert_int_equal(profile__add_transition(p, state, at_ns, &snap), 0);
	assert_int_equal(profile__add_sample_ext(p, &x), 0);
}

static void test_own_cpu_shares_are_possible(void **state)
{
	struct kh_profile p = minimal_profile();
	char *seed, *report, *html, *at;

	(void)state;
	add_sample(&p, KH_STATE_CREATED, 0, 970000);
	add_sample(&p, KH_STATE_SCANNING, 47000, 1001000);      /* 31 us of CPU */
	add_sample(&p, KH_STATE_REPORTING, 50047000, 91001000); /* 90 ms: 180 % */
	add_sample(&p, KH_STATE_COMPLETED, 50094000, 92001000); /* 1 ms in 47 us: lag, capped */
	assert_int_equal(profile__finish(&p, KH_STATE_COMPLETED, 50094000), 0);
	seed = profile__render_text(&p);
	report = profile__render_report(&p);
	html = profile__render_html(&p);
	assert_non_null(seed);
	assert_non_null(report);
	assert_non_null(html);
	/* The seed's own lines are untouched... */
	assert_non_null(strstr(seed, "\nmacro created      wall_ms=0.047 cpu=2127.7%"));
	assert_int_equal(strncmp(report, seed, strlen(seed)), 0);
	/* ...khprof's table after them says what the kernel counted. */
	at = report + strlen(seed);
	assert_non_null(strstr(at, "state cpu "));
	assert_non_null(strstr(at, "  created                    47.00us   31.00us    66.0%\n"));
	assert_non_null(strstr(at, "  scanning                  50.000ms  90.000ms   180.0%\n"));
	assert_non_null(strstr(at, "  reporting                  47.00us   1.000ms   200.0% cap\n"));
	assert_null(strstr(at, "2127.7"));
	/* The HTML's state table likewise: no share above 200 % on 2 CPUs. */
	assert_non_null(strstr(html, "<td>66.0 %</td>"));
	assert_non_null(strstr(html, "<td>&ge; 200.0 %</td>"));
	assert_null(strstr(html, "2127.7"));
	free(seed);
	free(report);
	free(html);
	profile__free(&p);
}

/*
 * What the README says of states under a millisecond of CPU: the seed's
 * text takes two whole milliseconds of the samples' CPU time, so a
 * 0.255 ms state that was on CPU throughout prints cpu=0.0% unless a
 * millisecond boundary falls inside it, and then 1 ms over 0.255 ms,
 * cpu=392.2%; khprof's state cpu table says 100.0% either way.
 */
static void test_sub_millisecond_states_as_the_readme_says(void **state)
{
	struct kh_profile p = minimal_profile();
	char *seed, *report;

	(void)state;
	add_sample(&p, KH_STATE_CREATED, 0, 10100000);
	add_sample(&p, KH_STATE_ACQUIRING, 255000, 10355000);  /* no ms boundary inside */
	add_sample(&p, KH_STATE_SCANNING, 510000, 10610000);   /* 10.355 -> 10.610: none */
	add_sample(&p, KH_STATE_RESOLVING, 765000, 10865000);  /* 10.610 -> 10.865: none */
	add_sample(&p, KH_STATE_COMPLETED, 1020000, 11120000); /* 10.865 -> 11.120: one */
	assert_int_equal(profile__finish(&p, KH_STATE_COMPLETED, 1020000), 0);
	seed = profile__render_text(&p);
	report = profile__render_report(&p);
	assert_non_null(seed);
	assert_non_null(report);
	assert_non_null(strstr(seed, "\nmacro created      wall_ms=0.255 cpu=0.0%"));
	assert_non_null(strstr(seed, "\nmacro resolving    wall_ms=0.255 cpu=392.2%"));
	assert_true(p.states[3].aggregate_cpu_milli_percent.present);
	assert_int_equal(p.states[3].aggregate_cpu_milli_percent.value, 392156);
	assert_non_null(strstr(report + strlen(seed),
			       "  created                   255.00us  255.00us   100.0%\n"));
	assert_non_null(strstr(report + strlen(seed),
			       "  resolving                 255.00us  255.00us   100.0%\n"));
	free(seed);
	free(report);
	profile__free(&p);
}

/*
 * khprof report with stdout and stderr on one file, as `2>&1` or a CI log
 * has them: the report comes first and every warning on a line of its
 * own.  The report used to come out after the notes (or cut at its
 * buffer's end, a warning running into its line).
 */
static void test_report_then_notes_on_one_stream(void **state)
{
	struct kh_profile p;
	char *khprof = tool_path("KH_KHPROF", "build/khprof"), *record, *log_path, *json, *out;
	char *argv[] = { khprof, "report", NULL, NULL };
	const char *warn, *table;
	int fd, log_fd, status;
	size_t len;
	pid_t pid;

	(void)state;
	if (access(khprof, X_OK) != 0) {
		if (running_in_ci())
			fail_msg("%s is missing and CI=true: run `make build/khprof`", khprof);
		free(khprof);
		skip();
	}
	golden_load("assembled", ".json", &p);
	p.ext.latency.present = true;
	p.ext.latency.off_cpu = true;
	p.ext.latency.missed_switches = 4;
	json = profile__to_json(&p);
	fd = temp_file(&record);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	log_fd = temp_file(&log_path);
	assert_true(log_fd >= 0);
	argv[2] = record;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(file__read_all(log_path, &out, &len), 0);
	warn = strstr(out, "khprof: warning: 4 context switches of the traced threads not seen: "
			   "off-CPU times may miss as many intervals\n");
	table = strstr(out, "  4 context switches seen without its other half");
	assert_non_null(warn);
	assert_non_null(table);
	assert_true(table < warn);
	assert_true(warn == out || warn[-1] == '\n');
	assert_int_equal(strncmp(out, "KeyHog profile ", 15), 0);
	free(out);
	unlink(log_path);
	unlink(record);
	close(log_fd);
	free(log_path);
	free(record);
	free(json);
	free(khprof);
	profile__free(&p);
}

/* Off-CPU time is not bias-corrected, elapsed is: the table never says more than 100 %. */
static void test_off_cpu_share_is_possible(void **state)
{
	struct kh_profile p = minimal_profile();
	struct kh_stage_dist *d = &p.ext.latency.stages[KH_STAGE_SUPPRESSION];
	char *report;

	(void)state;
	assert_int_equal(kh_dist__alloc(d), 0);
	d->present = true;
	d->spans = 1;
	d->counts[kh_hist_bucket(431)]++;
	d->min_ns = d->max_ns = 431;
	d->off_cpu_ns = 431;
	d->runnable_ns = 20;
	p.ext.latency.present = true;
	p.ext.latency.off_cpu = true;
	assert_int_equal(profile__set_stage(&p, KH_STAGE_SUPPRESSION, 180, 1, 0), 0);
	report = profile__render_report(&p);
	assert_non_null(report);
	assert_non_null(strstr(report, "\n  suppression                  180ns       0ns     180ns      "
					"20ns     160ns  100.0%\n"));
	free(report);
	profile__free(&p);
}

/* Rust spells non-finite floats NaN, inf and -inf. */
static void test_non_finite_cpu(void **state)
{
	struct kh_profile p = minimal_profile();
	char *text;

	(void)state;
	p.resources.aggregate_cpu_percent = (struct kh_opt_f64){ true, NAN };
	text = profile__render_text(&p);
	assert_non_null(strstr(text, "resources aggregate_cpu=NaN%\n"));
	free(text);
	p.resources.aggregate_cpu_percent.value = -INFINITY;
	text = profile__render_text(&p);
	assert_non_null(strstr(text, "resources aggregate_cpu=-inf%\n"));
	free(text);
	profile__free(&p);
}

/* Every drop the kernel side counts has words for its warning. */
static void test_every_drop_is_described(void **state)
{
	(void)state;
	for (uint32_t d = 0; d < KH_DROP_COUNT; d++) {
		assert_non_null(kh_drop__description(d));
		assert_true(strlen(kh_drop__description(d)) > 10);
	}
	assert_null(kh_drop__description(KH_DROP_COUNT));
}

/* What profile__print_notes writes to stderr (malloc'd). */
static char *notes_of(const struct kh_profile *p)
{
	char *path = NULL, *text;
	size_t len;
	int fd = temp_file(&path), saved = dup(STDERR_FILENO);

	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	assert_true(dup2(fd, STDERR_FILENO) >= 0);
	profile__print_notes(p, false);
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	close(fd);
	assert_int_equal(file__read_all(path, &text, &len), 0);
	unlink(path);
	free(path);
	return text;
}

static void test_notes_beside_the_report(void **state)
{
	struct kh_profile p;
	char *text;

	(void)state;
	profile__init(&p);
	text = notes_of(&p);
	assert_string_equal(text, "");
	free(text);
	p.ext.present = true;
	p.ext.started_mid_session = true;
	p.ext.drops[KH_DROP_RINGBUF_FULL] = 3;
	p.ext.drops[KH_DROP_LATE_BATCH] = 1;
	text = notes_of(&p);
	assert_string_equal(text,
		"khprof: note: profile started mid-session: khprof attached after the "
		"session began, so earlier work is not in it\n"
		"khprof: warning: 3 events were lost because the ring buffer was full\n"
		"khprof: warning: 1 batched spans ended before their session and were "
		"not counted\n");
	free(text);
	profile__free(&p);
}

/* Live: the seed renders every golden as the committed .txt says. */
static void test_text_goldens_are_current(void **state)
{
	(void)state;
	assert_goldens_current(".txt", false);
}

/*
 * Spans whose off-CPU time is a lower bound: the warning names their
 * stages, most first, and says what still holds (docs/SCHEMA.md,
 * offcpu_truncated), not only how khprof came to it.
 */
static void test_offcpu_lower_bound_says_what_holds(void **state)
{
	struct kh_profile p = minimal_profile();
	const uint32_t stages[] = { KH_STAGE_ENTROPY, KH_STAGE_DECODE, KH_STAGE_SOURCE_READ,
				    KH_STAGE_PREPROCESS, KH_STAGE_REPORTING };
	const uint64_t counts[] = { 3, 12, 2, 1, 1 };
	char *text, expected[768];

	(void)state;
	p.ext.latency.present = true;
	p.ext.latency.off_cpu = true;
	p.ext.latency.stages[KH_STAGE_DECODE].offcpu_truncated = 1;
	text = notes_of(&p);
	snprintf(expected, sizeof(expected), "khprof: warning: 1 span (decode 1) has an off-CPU "
		 "time that is only a lower bound: those stages' off-CPU times may read low and "
		 "their on-CPU times high; their elapsed times, calls and latencies are exact "
		 "(such a span switched out more than the %d times khprof logs per thread, or "
		 "was read from a thread's buffer after the thread ended or khprof detached)\n",
		 KH_OFFCPU_LOG);
	assert_string_equal(text, expected);
	free(text);
	for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++)
		p.ext.latency.stages[stages[i]].offcpu_truncated = counts[i];
	text = notes_of(&p);
	assert_int_equal(strncmp(text, "khprof: warning: 19 spans (decode 12, entropy 3, "
				       "source-read 2 and 2 more stages) have an off-CPU time ", 96),
			 0);
	assert_int_equal(count_lines(text), 1);
	free(text);
	profile__free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goldens_render_like_the_seed),
		cmocka_unit_test(test_header_layout),
		cmocka_unit_test(test_empty_profile_has_no_bottleneck_line),
		cmocka_unit_test(test_dispatch_only_leaves_an_empty_line),
		cmocka_unit_test(test_bottleneck_ties_pick_the_last),
		cmocka_unit_test(test_state_lines),
		cmocka_unit_test(test_non_finite_cpu),
		cmocka_unit_test(test_own_cpu_shares_are_possible),
		cmocka_unit_test(test_sub_millisecond_states_as_the_readme_says),
		cmocka_unit_test(test_offcpu_lower_bound_says_what_holds),
		cmocka_unit_test(test_off_cpu_share_is_possible),
		cmocka_unit_test(test_report_then_notes_on_one_stream),
		cmocka_unit_test(test_every_drop_is_described),
		cmocka_unit_test(test_notes_beside_the_report),
		cmocka_unit_test(test_text_goldens_are_current),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
