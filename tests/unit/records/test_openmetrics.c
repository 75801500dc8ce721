// SPDX-License-Identifier: MIT
/*
 * The OpenMetrics writer: label escaping and bounds, identity folding, the
 * sums taken from records and live slots, and the layout differences between
 * OpenMetrics 1.0 and the Prometheus text format.
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

#include "openmetrics.h"
#include "record.h"

static void assert_escaped(const char *in, const char *expected)
{
	char out[OM_LABEL_VALUE_ESCAPED_MAX];
	size_t len = om__escape_label_value(in, out);

	assert_string_equal(out, expected);
	assert_int_equal(len, strlen(expected));
}

static void test_escapes_backslash_quote_newline(void **state)
{
	(void)state;
	assert_escaped("plain 1.0", "plain 1.0");
	assert_escaped("a\"b", "a\\\"b");
	assert_escaped("c:\\dir", "c:\\\\dir");
	assert_escaped("two\nlines", "two\\nlines");
	assert_escaped("tab\tstays", "tab\tstays");
	assert_escaped("", "");
	assert_escaped(NULL, "");
	/* Invalid UTF-8 becomes U+FFFD; valid multibyte passes untouched. */
	assert_escaped("x\xff" "y", "x\xef\xbf\xbdy");
	assert_escaped("\xc3\xa9\xe2\x98\x83", "\xc3\xa9\xe2\x98\x83");
	/*
	 * The program's controls, which a terminal showing the exposition
	 * would act on (a carriage return, an escape sequence, C1, a bidi
	 * override), become U+FFFD too.
	 */
	assert_escaped("a\rb\x1b[2Kc\x7f", "a\xef\xbf\xbd" "b\xef\xbf\xbd[2Kc\xef\xbf\xbd");
	assert_escaped("\xc2\x9b\xe2\x80\xaex", "\xef\xbf\xbd\xef\xbf\xbdx");
}

static void test_long_values_are_cut_with_an_ellipsis(void **state)
{
	char in[400], expected[OM_LABEL_VALUE_ESCAPED_MAX], out[OM_LABEL_VALUE_ESCAPED_MAX];

	(void)state;
	/* Exactly the bound: kept whole. */
	memset(in, 'a', OM_LABEL_VALUE_MAX);
	in[OM_LABEL_VALUE_MAX] = '\0';
	assert_escaped(in, in);
	/* One byte more: cut to the bound, the last three bytes "…". */
	memset(in, 'a', OM_LABEL_VALUE_MAX + 1);
	in[OM_LABEL_VALUE_MAX + 1] = '\0';
	memset(expected, 'a', OM_LABEL_VALUE_MAX - 3);
	strcpy(expected + OM_LABEL_VALUE_MAX - 3, "\xe2\x80\xa6");
	assert_escaped(in, expected);
	assert_int_equal(strlen(expected), OM_LABEL_VALUE_MAX);
	/* A two-byte character is never split by the cut. */
	for (int i = 0; i < 100; i++)
		memcpy(in + 2 * i, "\xc3\xa9", 2);
	in[200] = '\0';
	om__escape_label_value(in, out);
	assert_true(strlen(out) <= OM_LABEL_VALUE_MAX);
	assert_int_equal(strlen(out), 124 + 3); /* 62 whole characters, then "…" */
	assert_memory_equal(out + 122, "\xc3\xa9\xe2\x80\xa6", 5);
	/* Escapes are counted after the cut: the worst case fits the buffer. */
	memset(in, '"', 300);
	in[300] = '\0';
	assert_int_equal(om__escape_label_value(in, out), 2 * (OM_LABEL_VALUE_MAX - 3) + 3);
}

static void sample_profile(struct kh_profile *p, const char *version, uint32_t status)
{
	assert_int_equal(profile__init(p), 0);
	assert_int_equal(identity__set(&p->identity, "binary_version", version), 0);
	assert_int_equal(profile__set_stage(p, KH_STAGE_DECODE, 3000000000ull, 7, 1000000000ull),
			 0);
	assert_int_equal(profile__set_stage(p, KH_STAGE_ENTROPY, 5, 2, 0), 0);
	p->input_bytes = 4096;
	p->input_units = 3;
	p->status = status;
	p->resources.start.cpu_time_ms = (struct kh_opt_u64){ true, 100 };
	p->resources.finish.cpu_time_ms = (struct kh_opt_u64){ true, 1350 };
	p->resources.max_observed_resident_bytes = (struct kh_opt_u64){ true, 1 << 20 };
	p->ext.probe_hits = 11;
	p->ext.drops[KH_DROP_RINGBUF_FULL] = 2;
	p->ext.drops[KH_DROP_EXIT_UNREAD] = 5;
	p->ext.identity_unreadable = 3;
}

static void test_counters_sum_records(void **state)
{
	struct om_counters c = { 0 };
	struct kh_profile p;

	(void)state;
	sample_profile(&p, "1.0", KH_STATE_COMPLETED);
	om_counters__add_profile(&c, &p);
	p.status = KH_STATE_FAILED;
	p.resources.max_observed_resident_bytes.value = 1 << 21;
	om_counters__add_profile(&c, &p);
	profile__free(&p);

	/* attributed_ns is the decoded share of elapsed_ns. */
	assert_int_equal(c.elapsed_ns[KH_STAGE_DECODE][OM_ATTR_ROOT], 4000000000ull);
	assert_int_equal(c.elapsed_ns[KH_STAGE_DECODE][OM_ATTR_DECODED], 2000000000ull);
	assert_int_equal(c.calls[KH_STAGE_DECODE], 14);
	assert_int_equal(c.calls[KH_STAGE_ENTROPY], 4);
	assert_int_equal(c.input_bytes, 8192);
	assert_int_equal(c.input_units, 6);
	assert_int_equal(c.sessions_started, 2);
	assert_int_equal(c.sessions_ended[KH_STATE_COMPLETED], 1);
	assert_int_equal(c.sessions_ended[KH_STATE_FAILED], 1);
	assert_int_equal(c.session_cpu_ms, 2500);
	assert_true(c.have_peak_rss);
	assert_int_equal(c.peak_rss_bytes, 1 << 21);
	assert_int_equal(c.probe_hits, 22);
	assert_int_equal(c.drops[KH_DROP_RINGBUF_FULL], 4);
	assert_int_equal(c.drops[KH_DROP_EXIT_UNREAD], 10);
	assert_int_equal(c.identity_unreadable, 6);
}

static void test_counters_add_live_slots(void **state)
{
	struct kh_slot_stats slot = { 0 };
	struct kh_span_fold spans[KH_STAGE_COUNT] = { 0 };
	struct om_counters c = { 0 }, total = { 0 };

	(void)state;
	slot.stages[KH_STAGE_HOT_PATTERNS] = (struct kh_stage_stats){ 900, 4, 300, 1 };
	slot.input_bytes = 10;
	slot.probe_hits = 5;
	slot.drops[KH_DROP_LATE_BATCH] = 1;
	om_counters__add_slot(&c, &slot, spans);
	om_counters__add(&total, &c);
	om_counters__add(&total, &c);
	assert_int_equal(total.elapsed_ns[KH_STAGE_HOT_PATTERNS][OM_ATTR_ROOT], 1200);
	assert_int_equal(total.elapsed_ns[KH_STAGE_HOT_PATTERNS][OM_ATTR_DECODED], 600);
	assert_int_equal(total.calls[KH_STAGE_HOT_PATTERNS], 8);
	assert_int_equal(total.input_bytes, 20);
	assert_int_equal(total.probe_hits, 10);
	assert_int_equal(total.drops[KH_DROP_LATE_BATCH], 2);
	/* A live slot is not a session start or end. */
	assert_int_equal(total.sessions_started, 0);
}

static void test_identities_dedupe_and_fold(void **state)
{
	struct om_info_set set = { 0 };
	struct kh_profile p;
	char version[16];

	(void)state;
	for (int i = 0; i < OM_INFO_MAX + 3; i++) {
		snprintf(version, sizeof(version), "v%d", i);
		sample_profile(&p, version, KH_STATE_COMPLETED);
		assert_int_equal(om_info_set__add(&set, &p), 0);
		assert_int_equal(om_info_set__add(&set, &p), 0); /* the same again */
		profile__free(&p);
	}
	assert_int_equal(set.count, OM_INFO_MAX);
	/* Each session of an identity past the cap is counted: 3 x 2. */
	assert_int_equal(set.folded, 6);
	assert_non_null(strstr(set.labels[0], "binary_version=\"v0\""));
	/* run_id differs in every run and is left out. */
	assert_null(strstr(set.labels[0], "run_id"));
	om_info_set__free(&set);
}

static size_t count_of(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle))
		n++;
	return n;
}

static char *render(enum om_format format, bool live)
{
	struct om_counters c = { 0 };
	struct om_info_set info = { 0 };
	struct om_live l = { 0 };
	struct kh_profile p;
	char *text;

	sample_profile(&p, "ver \"2\"", KH_STATE_COMPLETED);
	om_counters__add_profile(&c, &p);
	assert_int_equal(om_info_set__add(&info, &p), 0);
	profile__free(&p);
	l.open_by_state[KH_STATE_SCANNING] = 1;
	l.have_process = true;
	l.process_cpu_ms = 1234;
	text = om__render(&c, &info, live ? &l : NULL, format);
	om_info_set__free(&info);
	assert_non_null(text);
	return text;
}

static void test_openmetrics_layout(void **state)
{
	char *text = render(OM_FORMAT_OPENMETRICS, false);
	size_t len = strlen(text);

	(void)state;
	assert_true(len > 6 && strcmp(text + len - 6, "# EOF\n") == 0);
	assert_int_equal(count_of(text, "# EOF"), 1);
	/* Counter families are named without _total, their samples with it. */
	assert_non_null(strstr(text, "# TYPE khprof_stage_elapsed_seconds counter\n"
				     "# UNIT khprof_stage_elapsed_seconds seconds\n"));
	assert_non_null(strstr(text, "khprof_stage_elapsed_seconds_total{stage=\"decode\","
				     "attribution=\"root\"} 2.000000000\n"));
	assert_non_null(strstr(text, "khprof_stage_elapsed_seconds_total{stage=\"decode\","
				     "attribution=\"decoded\"} 1.000000000\n"));
	assert_non_null(strstr(text, "khprof_stage_calls_total{stage=\"decode\"} 7\n"));
	assert_non_null(strstr(text, "khprof_input_bytes_total 4096\n"));
	assert_non_null(strstr(text, "khprof_sessions_ended_total{status=\"completed\"} 1\n"));
	assert_non_null(strstr(text, "khprof_session_cpu_seconds_total 1.250\n"));
	assert_non_null(strstr(text, "khprof_drops_total{reason=\"ringbuf_full\"} 2\n"));
	/* Every reason of the shared table, the thread-end ones included. */
	assert_non_null(strstr(text, "khprof_drops_total{reason=\"exit_unread\"} 5\n"));
	assert_non_null(strstr(text, "khprof_drops_total{reason=\"exit_unknown\"} 0\n"));
	assert_non_null(strstr(text, "# TYPE khprof_identity_unreadable counter\n"));
	assert_non_null(strstr(text, "khprof_identity_unreadable_total 3\n"));
	assert_non_null(strstr(text, "# TYPE khprof_run info\n"));
	assert_non_null(strstr(text, "khprof_run_info{binary_version=\"ver \\\"2\\\"\""));
	/* Every fixed label value is there, zeros included. */
	assert_int_equal(count_of(text, "khprof_stage_elapsed_seconds_total{"),
			 KH_STAGE_COUNT * OM_ATTR_COUNT);
	assert_int_equal(count_of(text, "khprof_stage_calls_total{"), KH_STAGE_COUNT);
	assert_int_equal(count_of(text, "khprof_sessions_ended_total{"), KH_STATE_COUNT);
	assert_int_equal(count_of(text, "khprof_drops_total{"), KH_DROP_COUNT);
	/* Live families only when live. */
	assert_null(strstr(text, "khprof_sessions_open"));
	free(text);
}

/*
 * A session ends with the status its program gives KH_SESSION_FINISH, any
 * run state (the seed's Session::finish takes any; tests/workloads/forks.c
 * ends its sessions `created`): counted under it, every status present.
 */
static void test_sessions_end_in_any_state(void **state)
{
	struct om_counters c = { 0 };
	struct om_info_set info = { 0 };
	struct kh_profile p;
	char *text;

	(void)state;
	sample_profile(&p, "1.0", KH_STATE_SCANNING);
	om_counters__add_profile(&c, &p);
	profile__free(&p);
	text = om__render(&c, &info, NULL, OM_FORMAT_PROMETHEUS);
	assert_non_null(text);
	assert_non_null(strstr(text, "khprof_sessions_ended_total{status=\"scanning\"} 1\n"));
	assert_non_null(strstr(text, "khprof_sessions_ended_total{status=\"completed\"} 0\n"));
	assert_int_equal(count_of(text, "khprof_sessions_ended_total{"), KH_STATE_COUNT);
	free(text);
}

static void test_prometheus_text_layout(void **state)
{
	char *text = render(OM_FORMAT_PROMETHEUS, true);

	(void)state;
	assert_null(strstr(text, "# EOF"));
	assert_null(strstr(text, "# UNIT"));
	assert_non_null(strstr(text, "# TYPE khprof_stage_elapsed_seconds_total counter\n"));
	assert_non_null(strstr(text, "# TYPE khprof_run_info gauge\n"));
	assert_non_null(strstr(text, "khprof_sessions_open{state=\"scanning\"} 1\n"));
	assert_non_null(strstr(text, "khprof_sessions_open{state=\"created\"} 0\n"));
	assert_non_null(strstr(text, "khprof_process_cpu_seconds_total 1.234\n"));
	free(text);
}

/* HELP text goes out unescaped in both formats, so it must need none. */
static void test_help_texts_need_no_escaping(void **state)
{
	char *text = render(OM_FORMAT_OPENMETRICS, true);

	(void)state;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		if (strncmp(line, "# HELP ", 7) == 0)
			assert_true(strpbrk(line, "\\\"") == NULL);
	free(text);
}

/*
 * Spans of decode at known lengths, as a record's khprof.latency has them:
 * bucket counts of raw lengths, elapsed_ns (bias removed) beside them.
 */
static void add_decode_latency(struct kh_profile *p, const uint64_t *lengths, size_t n)
{
	struct kh_stage_dist *d = &p->ext.latency.stages[KH_STAGE_DECODE];

	assert_int_equal(kh_dist__alloc(d), 0);
	for (size_t i = 0; i < n; i++)
		d->counts[kh_hist_bucket(lengths[i])]++;
	d->present = true;
	d->spans = n;
	p->ext.latency.present = true;
}

static void test_span_histogram_from_records(void **state)
{
	/* 0 ns, 255 ns (on the first bound), 256 ns, 1 ms, 2 min, 3 h (above the top). */
	static const uint64_t lengths[] = { 0, 255, 256, 1000000, 120000000000ull,
					    10800000000000ull };
	static const char *const le[KH_SPAN_BOUNDS] = {
		"2.55e-07", "1.023e-06", "4.095e-06", "1.6383e-05", "6.5535e-05", "0.000262143",
		"0.001048575", "0.004194303", "0.016777215", "0.067108863", "0.268435455",
		"1.073741823", "4.294967295", "17.179869183", "68.719476735", "274.877906943",
	};
	static const uint64_t cumulative[KH_SPAN_BOUNDS] = { 4, 6, 6, 6, 6, 6, 8, 8,
							     8, 8, 8, 8, 8, 8, 8, 10 };
	struct om_counters c = { 0 };
	struct kh_profile p, old;
	char line[160], *text;

	(void)state;
	sample_profile(&p, "1.0", KH_STATE_COMPLETED);
	add_decode_latency(&p, lengths, 6);
	om_counters__add_profile(&c, &p);
	om_counters__add_profile(&c, &p);
	/* A record without khprof.latency: its calls count, its stage not in the histogram. */
	sample_profile(&old, "1.0", KH_STATE_COMPLETED);
	om_counters__add_profile(&c, &old);
	profile__free(&old);
	profile__free(&p);
	assert_int_equal(c.calls[KH_STAGE_DECODE], 21);
	for (int f = 0; f < 2; f++) {
		text = om__render(&c, NULL, NULL, f ? OM_FORMAT_PROMETHEUS : OM_FORMAT_OPENMETRICS);
		assert_non_null(text);
		assert_non_null(strstr(text, "# TYPE khprof_stage_span_seconds histogram\n"));
		for (unsigned int j = 0; j < KH_SPAN_BOUNDS; j++) {
			snprintf(line, sizeof(line), "khprof_stage_span_seconds_bucket{stage="
				 "\"decode\",le=\"%s\"} %llu\n", le[j],
				 (unsigned long long)cumulative[j]);
			if (!strstr(text, line))
				fail_msg("no line %s", line);
			/* The label is the bound, read back exactly. */
			assert_true(strtod(le[j], NULL) == (double)kh_span_bound_ns(j) / 1e9);
		}
		assert_non_null(strstr(text, "khprof_stage_span_seconds_bucket{stage=\"decode\","
					     "le=\"+Inf\"} 12\n"
					     "khprof_stage_span_seconds_count{stage=\"decode\"} 12\n"
					     "khprof_stage_span_seconds_sum{stage=\"decode\"} "
					     "6.000000000\n"));
		/* Only stages with spans: entropy has calls but no histogram. */
		assert_int_equal(count_of(text, "khprof_stage_span_seconds_count{"), 1);
		assert_int_equal(count_of(text, "khprof_stage_span_seconds_bucket{"),
				 KH_SPAN_BOUNDS + 1);
		assert_null(strstr(text, "span_seconds_total"));
		if (f == 0)
			assert_non_null(strstr(text, "# UNIT khprof_stage_span_seconds seconds\n"));
		free(text);
	}
}

/* A live slot's folded spans join the histogram with the slot's elapsed time. */
static void test_span_histogram_from_live_slots(void **state)
{
	struct kh_slot_stats slot = { 0 };
	struct kh_span_fold spans[KH_STAGE_COUNT] = { 0 };
	struct om_counters c = { 0 };
	char *text;

	(void)state;
	slot.stages[KH_STAGE_HOT_PATTERNS] = (struct kh_stage_stats){ 1500000, 3, 0, 0 };
	spans[KH_STAGE_HOT_PATTERNS].counts[2] = 2;
	spans[KH_STAGE_HOT_PATTERNS].counts[KH_SPAN_BOUNDS] = 1;
	om_counters__add_slot(&c, &slot, spans);
	text = om__render(&c, NULL, NULL, OM_FORMAT_PROMETHEUS);
	assert_non_null(strstr(text, "khprof_stage_span_seconds_bucket{stage=\"hot-patterns\","
				     "le=\"1.023e-06\"} 0\n"));
	assert_non_null(strstr(text, "khprof_stage_span_seconds_bucket{stage=\"hot-patterns\","
				     "le=\"4.095e-06\"} 2\n"));
	assert_non_null(strstr(text, "khprof_stage_span_seconds_bucket{stage=\"hot-patterns\","
				     "le=\"274.877906943\"} 2\n"));
	assert_non_null(strstr(text, "khprof_stage_span_seconds_count{stage=\"hot-patterns\"} 3\n"
				     "khprof_stage_span_seconds_sum{stage=\"hot-patterns\"} "
				     "0.001500000\n"));
	assert_int_equal(count_of(text, "khprof_stage_span_seconds_count{"), 1);
	free(text);
	/* No spans anywhere: the family's metadata alone. */
	memset(&c, 0, sizeof(c));
	text = om__render(&c, NULL, NULL, OM_FORMAT_OPENMETRICS);
	assert_non_null(strstr(text, "# TYPE khprof_stage_span_seconds histogram\n"));
	assert_null(strstr(text, "khprof_stage_span_seconds_bucket"));
	free(text);
}

static void test_content_negotiation(void **state)
{
	(void)state;
	/* Prometheus 2.42's scrape Accept header. */
	assert_int_equal(om__format_for_accept("application/openmetrics-text;version=1.0.0,"
					       "application/openmetrics-text;version=0.0.1;"
					       "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
			 OM_FORMAT_OPENMETRICS);
	assert_int_equal(om__format_for_accept("*/*"), OM_FORMAT_PROMETHEUS);
	assert_int_equal(om__format_for_accept(NULL), OM_FORMAT_PROMETHEUS);
	assert_non_null(strstr(om__content_type(OM_FORMAT_OPENMETRICS),
			       "application/openmetrics-text; version=1.0.0"));
	assert_non_null(strstr(om__content_type(OM_FORMAT_PROMETHEUS), "version=0.0.4"));
}

/*
 * A watch's groups (--serve of attach --all): each family's samples per
 * container, the label first, each family's header once; the identities
 * and khprof's own health without the label.
 */
static void test_container_groups(void **state)
{
	struct om_counters a = { 0 }, b = { 0 };
	struct om_live la = { 0 }, lb = { 0 }, health = { 0 };
	struct om_group groups[] = { { "3f2a9c1b7d4e", &a, &la }, { "/kt\"3", &b, &lb } };
	char *text;

	(void)state;
	a.calls[KH_STAGE_DECODE] = 7;
	b.calls[KH_STAGE_DECODE] = 9;
	a.input_bytes = 100;
	la.open_by_state[KH_STATE_SCANNING] = 1;
	lb.have_process = true;
	lb.process_cpu_ms = 1500;
	health.ringbuf_size_bytes = 262144;
	text = om__render_groups(groups, 2, NULL, &health, OM_FORMAT_PROMETHEUS);
	assert_non_null(text);
	assert_int_equal(count_of(text, "# TYPE khprof_stage_calls_total counter"), 1);
	assert_non_null(strstr(text, "khprof_stage_calls_total{container=\"3f2a9c1b7d4e\","
				     "stage=\"decode\"} 7\n"));
	/* Label values escaped as everywhere. */
	assert_non_null(strstr(text, "khprof_stage_calls_total{container=\"/kt\\\"3\","
				     "stage=\"decode\"} 9\n"));
	assert_non_null(strstr(text, "khprof_input_bytes_total{container=\"3f2a9c1b7d4e\"} 100\n"));
	assert_non_null(strstr(text, "khprof_input_bytes_total{container=\"/kt\\\"3\"} 0\n"));
	assert_non_null(strstr(text, "khprof_sessions_open{container=\"3f2a9c1b7d4e\","
				     "state=\"scanning\"} 1\n"));
	/* A group's process family only where it has processes; health once, unlabelled. */
	assert_non_null(strstr(text, "khprof_process_cpu_seconds_total{container=\"/kt\\\"3\"} "
				     "1.500\n"));
	assert_non_null(strstr(text, "khprof_ringbuf_size_bytes 262144\n"));
	assert_null(strstr(text, "khprof_ringbuf_size_bytes{"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escapes_backslash_quote_newline),
		cmocka_unit_test(test_long_values_are_cut_with_an_ellipsis),
		cmocka_unit_test(test_counters_sum_records),
		cmocka_unit_test(test_counters_add_live_slots),
		cmocka_unit_test(test_identities_dedupe_and_fold),
		cmocka_unit_test(test_openmetrics_layout),
		cmocka_unit_test(test_prometheus_text_layout),
		cmocka_unit_test(test_sessions_end_in_any_state),
		cmocka_unit_test(test_help_texts_need_no_escaping),
		cmocka_unit_test(test_content_negotiation),
		cmocka_unit_test(test_span_histogram_from_records),
		cmocka_unit_test(test_span_histogram_from_live_slots),
		cmocka_unit_test(test_container_groups),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
