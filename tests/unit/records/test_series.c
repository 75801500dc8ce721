// SPDX-License-Identifier: MIT
/*
 * The --interval time series without a tracer: bounded by merging, sums
 * kept exactly; --interval's duration syntax; the live line; the series in
 * the JSON record (round trip, malformed columns) and in the Perfetto
 * export.
 */
#include "khtest.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>

#include "duration.h"
#include "json.h"
#include "record.h"
#include "series.h"
#include "trace_event.h"

static struct kh_interval interval_at(uint64_t start, uint64_t dur, uint64_t calls)
{
	struct kh_interval iv;

	memset(&iv, 0, sizeof(iv));
	iv.start_ns = start;
	iv.duration_ns = dur;
	iv.state = KH_STATE_SCANNING;
	iv.input_bytes = 1000 * calls;
	iv.input_units = calls;
	iv.cpu_time_ms = (struct kh_opt_u64){ true, 3 };
	iv.resident_bytes = (struct kh_opt_u64){ true, 4096 * (start / dur + 1) };
	iv.calls[KH_STAGE_DECODE] = calls;
	iv.elapsed_ns[KH_STAGE_DECODE] = 7 * calls;
	iv.calls[KH_STAGE_HOT_PATTERNS] = 1;
	iv.elapsed_ns[KH_STAGE_HOT_PATTERNS] = 50;
	return iv;
}

/* Far more intervals than the cap: bounded, contiguous, sums unchanged. */
static void test_series_stays_bounded_and_exact(void **state)
{
	struct kh_series s = { .interval_ns = 100 };
	const size_t n = 5 * KH_SERIES_MAX + 17;
	uint64_t calls = 0, bytes = 0, cpu = 0, decode_ns = 0, merged_total;

	(void)state;
	for (size_t i = 0; i < n; i++) {
		struct kh_interval iv = interval_at(100 * i, 100, i % 7);

		calls += iv.calls[KH_STAGE_DECODE];
		bytes += iv.input_bytes;
		decode_ns += iv.elapsed_ns[KH_STAGE_DECODE];
		assert_int_equal(series__append(&s, &iv), 0);
		assert_true(s.count <= KH_SERIES_MAX);
	}
	/* Every interval is in exactly one entry: n = entries + merges. */
	assert_int_equal(s.count + s.merged, n);
	merged_total = 0;
	for (size_t i = 0; i < s.count; i++) {
		const struct kh_interval *iv = &s.intervals[i];

		merged_total += iv->calls[KH_STAGE_DECODE];
		bytes -= iv->input_bytes;
		cpu += iv->cpu_time_ms.value;
		decode_ns -= iv->elapsed_ns[KH_STAGE_DECODE];
		/* One resolution throughout: every full entry spans group intervals. */
		if (i + 1 < s.count)
			assert_int_equal(iv->duration_ns, 100 * s.group);
		else
			assert_true(iv->duration_ns <= 100 * s.group);
		/* Contiguous, from 0 to the end of the last interval. */
		assert_int_equal(iv->start_ns, i ? s.intervals[i - 1].start_ns +
							  s.intervals[i - 1].duration_ns : 0);
	}
	assert_int_equal(merged_total, calls);
	assert_int_equal(bytes, 0);
	assert_int_equal(decode_ns, 0);
	assert_int_equal(cpu, 3 * n);
	/* 2577 intervals in at most 512 entries: 8 to an entry. */
	assert_int_equal(s.group, 8);
	assert_int_equal(s.count, (n + 7) / 8);
	assert_int_equal(s.intervals[s.count - 1].start_ns + s.intervals[s.count - 1].duration_ns,
			 100 * n);
	/* The last interval keeps the RSS of its end. */
	assert_int_equal(s.intervals[s.count - 1].resident_bytes.value, 4096 * n);
	series__free(&s);
}

/* A CPU time missing on one side makes the merged one unknown, not wrong. */
static void test_merge_of_unknown_cpu(void **state)
{
	struct kh_interval a = interval_at(0, 10, 1), b = interval_at(10, 10, 2);

	(void)state;
	b.cpu_time_ms.present = false;
	interval__merge(&a, &b);
	assert_false(a.cpu_time_ms.present);
	assert_int_equal(a.duration_ns, 20);
	assert_int_equal(a.calls[KH_STAGE_DECODE], 3);
}

static void test_parse_duration(void **state)
{
	static const struct { const char *text; uint64_t ns; } good[] = {
		{ "100ms", 100000000 }, { "1s", 1000000000 }, { "2.5s", 2500000000 },
		{ "10ms", 10000000 },   { "1m", 60000000000 }, { "20000us", 20000000 },
		{ "30", 30000000000 },  { "0.5", 500000000 }, { "0.01h", 36000000000 },
	};
	/* "100" is 100 s, "1h" an hour: both beyond this test's 60 s bound. */
	static const char *const bad[] = { "", "100", "ms", "-1s", "1h", "5ms", "2m", "1 s",
					   "1sec", "1e400s", "nans", "0x10ms", "5x", "." };
	uint64_t ns;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ns = 0;
		assert_int_equal(kh_parse_duration_ns(good[i].text, KH_INTERVAL_MIN_NS, 60000000000ull,
						      &ns), 0);
		assert_int_equal(ns, good[i].ns);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (kh_parse_duration_ns(bad[i], KH_INTERVAL_MIN_NS, 60000000000ull, &ns) == 0)
			fail_msg("'%s' accepted as %" PRIu64 " ns", bad[i], ns);
}

static void test_live_line(void **state)
{
	struct kh_interval iv = interval_at(1000000000, 500000000, 0);
	char line[256];

	(void)state;
	iv.input_bytes = 512ull << 20; /* 512 MiB in 0.5 s */
	iv.cpu_time_ms.value = 600;    /* 600 ms in 0.5 s */
	iv.resident_bytes.value = 3ull << 20;
	iv.elapsed_ns[KH_STAGE_DECODE] = 600;
	iv.elapsed_ns[KH_STAGE_HOT_PATTERNS] = 300;
	iv.elapsed_ns[KH_STAGE_ENTROPY] = 100;
	iv.elapsed_ns[KH_STAGE_BACKEND_DISPATCH] = 5000; /* wraps the others: never listed */
	interval__render_line(&iv, 2, line, sizeof(line));
	assert_string_equal(line, "1.50s scanning 1024.0 MiB/s cpu 120% rss 3.0 MiB top: decode "
				  "60%, hot-patterns 30%, entropy 10%");
	/* Short buffers truncate, never overflow. */
	interval__render_line(&iv, 2, line, 12);
	assert_int_equal(strlen(line), 11);
}

/*
 * CPU in ns when the interval has them, and never above 100 % per CPU:
 * whole ms in a 10 ms interval read 30 ms (300 %) on 2 CPUs.
 */
static void test_cpu_percent(void **state)
{
	struct kh_interval iv = interval_at(0, 10000000, 0);
	char line[256];
	double pct = -1;

	(void)state;
	iv.cpu_time_ms.value = 30;
	assert_true(interval__cpu_percent(&iv, 2, &pct));
	assert_true(pct == 200.0);
	interval__render_line(&iv, 2, line, sizeof(line));
	assert_non_null(strstr(line, " cpu 200%"));
	assert_true(interval__cpu_percent(&iv, 0, &pct));
	assert_true(pct == 300.0);
	iv.cpu_time_ns = (struct kh_opt_u64){ true, 12345678 };
	assert_true(interval__cpu_percent(&iv, 2, &pct));
	assert_true(fabs(pct - 123.45678) < 1e-9);
	iv.cpu_time_ms.present = false;
	iv.cpu_time_ns.present = false;
	assert_false(interval__cpu_percent(&iv, 2, &pct));
}

static void profile_with_series(struct kh_profile *p, size_t n)
{
	char err[256];

	assert_int_equal(profile__read_file("tests/golden/assembled.json", p, err, sizeof(err)), 0);
	p->ext.series.interval_ns = 200000;
	for (size_t i = 0; i < n; i++) {
		struct kh_interval iv = interval_at(200000 * i, 200000, i + 1);

		if (i == 1)
			iv.cpu_time_ms.present = false;
		assert_int_equal(series__append(&p->ext.series, &iv), 0);
	}
	p->ext.series.merged = 2;
}

static void test_series_json_round_trip(void **state)
{
	struct kh_profile p, back;
	char *json, *again, err[256];

	(void)state;
	profile_with_series(&p, 4);
	json = profile__to_json(&p);
	assert_non_null(json);
	assert_non_null(strstr(json, "\"series\": {"));
	assert_int_equal(profile__from_json(json, &back, err, sizeof(err)), 0);
	assert_int_equal(back.ext.series.count, 4);
	assert_int_equal(back.ext.series.interval_ns, 200000);
	assert_int_equal(back.ext.series.merged, 2);
	assert_false(back.ext.series.intervals[1].cpu_time_ms.present);
	assert_true(back.ext.series.intervals[2].cpu_time_ms.present);
	assert_memory_equal(back.ext.series.intervals[3].calls, p.ext.series.intervals[3].calls,
			    sizeof(p.ext.series.intervals[3].calls));
	again = profile__to_json(&back);
	assert_string_equal(again, json);
	free(again);
	free(json);
	profile__free(&back);
	profile__free(&p);
}

/* A record without a series writes none: the record is unchanged. */
static void test_no_series_no_member(void **state)
{
	struct kh_profile p;
	char *json, err[256];

	(void)state;
	assert_int_equal(profile__read_file("tests/golden/assembled.json", &p, err, sizeof(err)), 0);
	json = profile__to_json(&p);
	assert_null(strstr(json, "series"));
	free(json);
	profile__free(&p);
}

/* Columns of another length, or an unknown stage, are named and refused. */
static void test_series_json_malformed(void **state)
{
	static const struct { const char *from, *to, *message; } cases[] = {
		{ "\"duration_ns\": [\n        200000,", "\"duration_ns\": [",
		  "one value per interval" },
		{ "\"decode\": {", "\"no-such-stage\": {", "unknown stage" },
		{ "\"state\": [\n        \"scanning\"", "\"state\": [\n        \"sideways\"",
		  "state name" },
	};
	struct kh_profile p, back;
	char *json, err[256];

	(void)state;
	profile_with_series(&p, 3);
	json = profile__to_json(&p);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *at = strstr(json, cases[i].from), *bad;

		assert_non_null(at);
		assert_true(asprintf(&bad, "%.*s%s%s", (int)(at - json), json, cases[i].to,
				     at + strlen(cases[i].from)) > 0);
		assert_int_equal(profile__from_json(bad, &back, err, sizeof(err)), -EINVAL);
		if (!strstr(err, cases[i].message) || !strstr(err, "series"))
			fail_msg("case %zu: '%s'", i, err);
		free(bad);
	}
	free(json);
	profile__free(&p);
}

/* Perfetto: a counter event per interval and a closing one, stages as series. */
static void test_series_perfetto_counters(void **state)
{
	struct kh_profile p;
	char *text;
	cJSON *root, *ev;
	size_t stage_events = 0, throughput = 0;

	(void)state;
	profile_with_series(&p, 4);
	text = profile__to_trace_events(&p);
	root = cJSON_Parse(text);
	assert_non_null(root);
	cJSON_ArrayForEach(ev, cJSON_GetObjectItem(root, "traceEvents")) {
		const char *name = cJSON_GetObjectItem(ev, "name")->valuestring;
		cJSON *args = cJSON_GetObjectItem(ev, "args");
		double ts = cJSON_GetObjectItem(ev, "ts")->valuedouble;

		if (!strcmp(name, "stage threads busy")) {
			double decode = cJSON_GetObjectItem(args, "decode")->valuedouble;

			assert_string_equal(cJSON_GetObjectItem(ev, "ph")->valuestring, "C");
			/* Interval i: 7(i+1) ns of decode over 200 µs, at ts 200 i µs. */
			assert_true(ts == 200.0 * stage_events);
			if (stage_events < 4)
				assert_true(fabs(decode - 7.0 * (stage_events + 1) / 200000.0) < 1e-12);
			else
				assert_true(decode == 0);
			assert_null(cJSON_GetObjectItem(args, "backend-dispatch"));
			stage_events++;
		}
		throughput += !strcmp(name, "throughput MiB/s");
	}
	assert_int_equal(stage_events, 5);
	assert_int_equal(throughput, 5);
	cJSON_Delete(root);
	free(text);
	profile__free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_series_stays_bounded_and_exact),
		cmocka_unit_test(test_merge_of_unknown_cpu),
		cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_live_line),
		cmocka_unit_test(test_cpu_percent),
		cmocka_unit_test(test_series_json_round_trip),
		cmocka_unit_test(test_no_series_no_member),
		cmocka_unit_test(test_series_json_malformed),
		cmocka_unit_test(test_series_perfetto_counters),
	};

	if (chdir(test_repo_root()) != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
