// SPDX-License-Identifier: MIT
/*
 * The Perfetto / Chrome trace-event export against the format's documented
 * fields: a JSON object with a traceEvents array; every event a name, a
 * phase (X complete, C counter, M metadata here), pid and tid integers and
 * ts in microseconds; X events a dur; C events numeric args (one series
 * each); M events process_name / thread_name with args.name.  Checked on
 * every golden record, and figure by figure on one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "json.h"
#include "trace_event.h"

static cJSON *export_parsed(const struct kh_profile *p)
{
	char *text = profile__to_trace_events(p);
	cJSON *root;

	assert_non_null(text);
	root = cJSON_Parse(text);
	if (!root)
		fail_msg("not JSON near: %.60s", cJSON_GetErrorPtr());
	free(text);
	return root;
}

static double number_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		fail_msg("member '%s' is not a number", key);
	return v->valuedouble;
}

/* Every event has the documented fields with the documented types. */
static void check_event_fields(const cJSON *ev, uint64_t pid, double wall_us)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(ev, "name");
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "ph");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
	double ts = number_of(ev, "ts");

	assert_true(cJSON_IsString(name) && *name->valuestring);
	assert_true(cJSON_IsString(ph) && strlen(ph->valuestring) == 1);
	assert_true(number_of(ev, "pid") == (double)pid);
	assert_true(number_of(ev, "tid") >= 0);
	/* Microseconds: within the session, which is wall_us long. */
	assert_true(ts >= 0 && ts <= wall_us + 1e-9);
	switch (ph->valuestring[0]) {
	case 'X':
		assert_true(number_of(ev, "dur") >= 0);
		assert_true(ts + number_of(ev, "dur") <= wall_us + 1e-6);
		break;
	case 'C': {
		const cJSON *series;

		assert_true(cJSON_IsObject(args));
		assert_non_null(args->child);
		cJSON_ArrayForEach(series, args)
			assert_true(cJSON_IsNumber(series));
		break;
	}
	case 'M':
		assert_true(!strcmp(name->valuestring, "process_name") ||
			    !strcmp(name->valuestring, "thread_name"));
		assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, "name")));
		break;
	default:
		fail_msg("unexpected phase '%s'", ph->valuestring);
	}
}

static void test_goldens_export_valid_trace_events(void **state)
{
	char *names[GOLDEN_MAX];
	size_t count = golden_inputs(names);

	(void)state;
	assert_true(count >= 15);
	for (size_t i = 0; i < count; i++) {
		struct kh_profile p;
		cJSON *root, *events, *ev, *other;
		uint64_t last = 0;
		double wall_us;

		golden_load(names[i], ".json", &p);
		root = export_parsed(&p);
		events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
		assert_true(cJSON_IsArray(events));
		other = cJSON_GetObjectItemCaseSensitive(root, "otherData");
		/* Identity as metadata, strings intact through the escaping. */
		assert_string_equal(cJSON_GetObjectItemCaseSensitive(other, "run_id")->valuestring,
				    p.identity.run_id);
		assert_string_equal(
			cJSON_GetObjectItemCaseSensitive(other, "binary_version")->valuestring,
			p.identity.binary_version);
		if (p.transition_count)
			last = p.transitions[p.transition_count - 1].elapsed_ns;
		wall_us = (double)(p.wall_time_ns > last ? p.wall_time_ns : last) / 1000.0;
		cJSON_ArrayForEach(ev, events)
			check_event_fields(ev, p.ext.traced_pid ? p.ext.traced_pid : 1, wall_us);
		cJSON_Delete(root);
		profile__free(&p);
		free(names[i]);
	}
}

/* The slices, counters and names of one record, figure by figure. */
static void test_assembled_states_and_counters(void **state)
{
	struct kh_profile p;
	cJSON *root, *events, *ev;
	size_t slices = 0, rss = 0, cpu = 0, names = 0;
	double pid;

	(void)state;
	golden_load("assembled", ".json", &p);
	pid = (double)(p.ext.traced_pid ? p.ext.traced_pid : 1);
	root = export_parsed(&p);
	events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
	cJSON_ArrayForEach(ev, events) {
		const char *name = cJSON_GetObjectItemCaseSensitive(ev, "name")->valuestring;
		char ph = cJSON_GetObjectItemCaseSensitive(ev, "ph")->valuestring[0];
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
		double ts = number_of(ev, "ts");
		bool process_track = number_of(ev, "tid") == pid;

		if (!process_track && ph == 'X')
			continue; /* the threads' stage slices: test_thread_tracks */
		if (ph == 'X' && strcmp(name, "session")) {
			/* State i from transition i to i+1, in µs. */
			const struct kh_transition *t = &p.transitions[slices];

			assert_string_equal(name, kh_run_state__name(t->state));
			assert_true(ts == (double)t[0].elapsed_ns / 1000.0);
			assert_true(number_of(ev, "dur") ==
				    (double)(t[1].elapsed_ns - t[0].elapsed_ns) / 1000.0);
			slices++;
		} else if (ph == 'X') {
			assert_true(number_of(ev, "dur") == (double)p.wall_time_ns / 1000.0);
			assert_true(fabs(number_of(args, "hot-patterns_ms") - 0.424) < 1e-9);
		} else if (ph == 'C' && !strcmp(name, "RSS MiB")) {
			const struct kh_resource_sample *s = &p.resource_samples[rss++];

			assert_true(ts == (double)s->elapsed_ns / 1000.0);
			assert_true(fabs(number_of(args, "mib") * 1048576.0 -
					 (double)s->snapshot.resident_bytes.value) < 64);
		} else if (ph == 'C' && !strcmp(name, "CPU % of one CPU")) {
			/* Never above 100 % per logical CPU. */
			assert_true(number_of(args, "percent") <= 100.0 * (double)p.identity.logical_cpus);
			cpu++;
		} else if (ph == 'M' && process_track) {
			names++;
		}
	}
	assert_int_equal(slices, p.transition_count - 1);
	assert_int_equal(rss, p.resource_sample_count);
	/* One per state, and the closing zero. */
	assert_int_equal(cpu, p.transition_count);
	/* The process's name and its own track's. */
	assert_int_equal(names, 2);
	cJSON_Delete(root);
	profile__free(&p);
}

/* The name of thread track tid, or NULL. */
static const char *track_name(const cJSON *events, double tid)
{
	const cJSON *ev;

	cJSON_ArrayForEach(ev, events)
		if (!strcmp(cJSON_GetObjectItemCaseSensitive(ev, "name")->valuestring,
			    "thread_name") &&
		    number_of(ev, "tid") == tid)
			return cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(ev, "args"), "name")->valuestring;
	return NULL;
}

/*
 * Thread tracks named after the record's threads (main, reader N, scanner
 * N, then as many as its peak saw), each interval's stage time laid out on
 * them, and a threads counter that follows the samples' peaks: 4 threads
 * ran between two transitions that each saw 1.
 */
static void test_thread_tracks(void **state)
{
	struct kh_profile p;
	cJSON *root, *events, *ev;
	double pid, staged = 0, threads_max = 0;
	uint64_t summed = 0;

	(void)state;
	golden_load("assembled", ".json", &p);
	pid = (double)(p.ext.traced_pid ? p.ext.traced_pid : 1);
	p.identity.scanner_threads = 2;
	p.identity.reader_threads = (struct kh_opt_u64){ true, 1 };
	p.resources.max_observed_threads = (struct kh_opt_u64){ true, 5 };
	assert_true(p.resource_sample_count >= 3);
	assert_int_equal(p.ext.sample_count, 0);
	for (size_t i = 0; i < p.resource_sample_count; i++) {
		struct kh_sample_ext x = { .peak_threads = { true, i == 2 ? 4 : 1 } };

		p.resource_samples[i].snapshot.thread_count = (struct kh_opt_u64){ true, 1 };
		assert_int_equal(profile__add_sample_ext(&p, &x), 0);
	}
	for (size_t i = 0; i < p.stage_count; i++)
		if (p.stages[i].stage != KH_STAGE_BACKEND_DISPATCH)
			summed += p.stages[i].elapsed_ns;
	root = export_parsed(&p);
	events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
	assert_string_equal(track_name(events, pid), "macro states");
	assert_string_equal(track_name(events, pid + 1), "main thread");
	assert_string_equal(track_name(events, pid + 2), "reader 1");
	assert_string_equal(track_name(events, pid + 3), "scanner 1");
	assert_string_equal(track_name(events, pid + 4), "scanner 2");
	assert_string_equal(track_name(events, pid + 5), "thread 5");
	cJSON_ArrayForEach(ev, events) {
		const char *name = cJSON_GetObjectItemCaseSensitive(ev, "name")->valuestring;
		char ph = cJSON_GetObjectItemCaseSensitive(ev, "ph")->valuestring[0];
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");

		if (ph == 'X' && number_of(ev, "tid") > pid) {
			uint32_t stage;

			assert_int_equal(kh_stage__parse(name, &stage), 0);
			assert_int_not_equal(stage, KH_STAGE_BACKEND_DISPATCH);
			assert_non_null(track_name(events, number_of(ev, "tid")));
			staged += number_of(ev, "dur");
		}
		if (ph == 'C' && !strcmp(name, "threads") &&
		    number_of(args, "threads") > threads_max)
			threads_max = number_of(args, "threads");
	}
	/* Every stage's time is on some thread's track, dispatch aside. */
	assert_true(fabs(staged - (double)summed / 1000.0) < 0.01);
	assert_true(threads_max == 4);
	cJSON_Delete(root);
	profile__free(&p);
}

/* The process end rides in otherData when the record has one, and only then. */
static void test_process_end_in_metadata(void **state)
{
	struct kh_profile p;
	cJSON *root, *other;

	(void)state;
	golden_load("assembled", ".json", &p);
	root = export_parsed(&p);
	other = cJSON_GetObjectItemCaseSensitive(root, "otherData");
	assert_null(cJSON_GetObjectItemCaseSensitive(other, "process_end"));
	assert_null(cJSON_GetObjectItemCaseSensitive(other, "exit_signal"));
	cJSON_Delete(root);
	p.ext.process_end = strdup("signal");
	p.ext.exit_signal = (struct kh_opt_u64){ true, 9 };
	root = export_parsed(&p);
	other = cJSON_GetObjectItemCaseSensitive(root, "otherData");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(other, "process_end")->valuestring,
			    "signal");
	assert_int_equal(number_of(other, "exit_signal"), 9);
	assert_null(cJSON_GetObjectItemCaseSensitive(other, "exit_code"));
	cJSON_Delete(root);
	profile__free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goldens_export_valid_trace_events),
		cmocka_unit_test(test_thread_tracks),
		cmocka_unit_test(test_assembled_states_and_counters),
		cmocka_unit_test(test_process_end_in_metadata),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
