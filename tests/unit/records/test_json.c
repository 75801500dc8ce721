// SPDX-License-Identifier: MIT
/*
 * JSON reader and writer against the seed: every golden record must read,
 * and write back exactly as the seed's serde re-serialises it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "golden.h"
#include "khtest.h"

/* Fewer inputs than this means the golden folder was not found. */
#define GOLDEN_MIN 15

static const char base_record[] =
	"{\"schema\":\"keyhog-profile-v1\",\"identity\":{\"run_id\":\"r\",\"binary_version\":\"b\","
	"\"detector_digest\":\"d\",\"config_digest\":\"c\",\"source_kind\":\"s\","
	"\"workload_class\":\"w\",\"backend_requested\":\"a\",\"backend_selected\":null,"
	"\"cache_state\":\"cold\",\"daemon_state\":\"off\",\"scanner_threads\":1,"
	"\"reader_threads\":null,\"logical_cpus\":2},\"status\":\"completed\","
	"\"wall_time_ns\":5,\"input_bytes\":0,\"input_units\":0,"
	"\"stages\":[{\"stage\":\"decode\",\"elapsed_ns\":1,\"calls\":1,\"attributed_ns\":0}],"
	"\"transitions\":[],\"states\":[],\"resource_samples\":[],"
	"\"resources\":{\"start\":{},\"finish\":{},\"aggregate_cpu_percent\":null}}";

/* base_record with the first occurrence of from replaced by to. */
static char *mutate(const char *from, const char *to)
{
	const char *at = strstr(base_record, from);
	char *out;

	assert_non_null(at);
	assert_true(asprintf(&out, "%.*s%s%s", (int)(at - base_record), base_record, to,
			     at + strlen(from)) > 0);
	return out;
}

static void test_base_record_reads(void **state)
{
	struct kh_profile p;
	char err[256];

	(void)state;
	assert_int_equal(profile__from_json(base_record, &p, err, sizeof(err)), 0);
	assert_string_equal(p.identity.run_id, "r");
	assert_null(p.identity.backend_selected);
	assert_int_equal(p.identity.cache_state, KH_CACHE_COLD);
	assert_int_equal(p.stage_count, 1);
	assert_int_equal(p.stages[0].stage, KH_STAGE_DECODE);
	assert_false(p.resources.start.cpu_time_ms.present);
	assert_false(p.ext.present);
	profile__free(&p);
}

/*
 * Where the seed's reader and khprof's must agree (docs/SCHEMA.md): a NUL
 * and junk after a record are trailing characters to both; a lone
 * surrogate escape in a member the seed skips (an unknown one, or in the
 * khprof object) leaves the record readable, in one it reads it does not;
 * records beyond 64 MiB are read (the limit is FILE_RECORD_MAX).
 */
static void test_reader_agrees_with_the_seed(void **state)
{
	char *nul, *path, *text, err[256], expected[64];
	struct kh_profile p;
	size_t len = strlen(base_record);
	int fd;

	(void)state;
	/* "{...}\0junk": refused, at the NUL, as serde says it. */
	nul = malloc(len + 6);
	assert_non_null(nul);
	memcpy(nul, base_record, len);
	memcpy(nul + len, "\0junk", 6);
	assert_int_equal(profile__from_json_len(nul, len + 5, &p, err, sizeof(err)), -EINVAL);
	/* One line: the NUL is the column after the record's last byte. */
	snprintf(expected, sizeof(expected), "trailing characters at line 1 column %zu", len + 1);
	assert_string_equal(err, expected);
	/* ...also when read from a file, and blanks before the NUL change nothing. */
	fd = temp_file(&path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, nul, len + 5), (ssize_t)(len + 5));
	close(fd);
	assert_int_equal(profile__read_file(path, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "trailing characters at line 1 column"));
	unlink(path);
	free(path);
	free(nul);

	text = mutate("\"status\":", "\"extra\":[\"\\ud800\",{\"k\":\"\\udc00x\"}],\"status\":");
	assert_int_equal(profile__from_json(text, &p, err, sizeof(err)), 0);
	profile__free(&p);
	free(text);
	text = mutate("}}", "},\"khprof\":{\"mode\":\"\\ud800\"}}");
	assert_int_equal(profile__from_json(text, &p, err, sizeof(err)), 0);
	assert_string_equal(p.ext.mode, "\xef\xbf\xbd");
	profile__free(&p);
	free(text);
	text = mutate("\"run_id\":\"r\"", "\"run_id\":\"\\ud800\"");
	assert_int_equal(profile__from_json(text, &p, err, sizeof(err)), -EINVAL);
	free(text);

	/* 65 MiB of blanks after a record: past the old 64 MiB limit, read. */
	fd = temp_file(&path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, base_record, len), (ssize_t)len);
	assert_int_equal(ftruncate(fd, (off_t)(65u << 20)), 0);
	close(fd);
	/* ftruncate fills with NULs: trailing characters, not "File too large". */
	assert_int_equal(profile__read_file(path, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "trailing characters"));
	unlink(path);
	free(path);
}

/* from_json then to_json equals the seed's re-serialisation, khprof aside. */
static void test_goldens_match_seed_json(void **state)
{
	char *names[GOLDEN_MAX];
	size_t count = golden_inputs(names);

	(void)state;
	assert_true(count >= GOLDEN_MIN);
	for (size_t i = 0; i < count; i++) {
		char *expected = golden_read_suffix(names[i], ".seed.json");
		char *json, *seed_part;
		struct kh_profile p;

		assert_non_null(expected);
		golden_load(names[i], ".json", &p);
		json = profile__to_json(&p);
		assert_non_null(json);
		seed_part = strip_khprof(json);
		if (strcmp(seed_part, expected))
			fail_msg("%s: to_json differs from %s.seed.json", names[i], names[i]);
		free(seed_part);
		free(json);
		free(expected);
		profile__free(&p);
	}
	golden_free(names, count);
}

/* The seed's own output reads back and writes out unchanged. */
static void test_seed_json_is_a_fixed_point(void **state)
{
	char *names[GOLDEN_MAX];
	size_t count = golden_inputs(names);

	(void)state;
	for (size_t i = 0; i < count; i++) {
		char *seed = golden_read_suffix(names[i], ".seed.json");
		char *json;
		struct kh_profile p;

		assert_non_null(seed);
		golden_load(names[i], ".seed.json", &p);
		json = profile__to_json(&p);
		assert_non_null(json);
		if (strcmp(json, seed))
			fail_msg("%s.seed.json does not round-trip", names[i]);
		free(json);
		free(seed);
		profile__free(&p);
	}
	golden_free(names, count);
}

static void test_extension_round_trips(void **state)
{
	char *expected = golden_read("unknown_fields.khprof.json");
	struct kh_profile p, again;
	char err[256], *json, *json_again;

	(void)state;
	assert_non_null(expected);
	golden_load("unknown_fields", ".json", &p);
	assert_true(p.ext.present);
	assert_string_equal(p.ext.mode, "batch");
	assert_true(p.ext.started_mid_session);
	assert_false(p.ext.ended_mid_session);
	for (uint32_t i = 0; i < KH_DROP_COUNT; i++)
		assert_int_equal(p.ext.drops[i], i + 1);
	assert_int_equal(p.ext.probe_hits, 1000);
	assert_int_equal(p.ext.probe_cost_ns, 25);
	assert_int_equal(p.ext.tracer_cost_ns, 25000);
	assert_int_equal(p.ext.traced_pid, 4242);
	assert_int_equal(p.ext.session_sequence, 3);
	assert_int_equal(p.ext.sample_latency_ns_max, 12000);
	assert_int_equal(p.ext.identity_unreadable, 2);
	assert_int_equal(p.ext.sample_count, 2);
	assert_true(p.ext.samples[0].cpu_time_ns.present);
	assert_int_equal(p.ext.samples[0].cpu_time_ns.value, 1500000);
	assert_int_equal(p.ext.samples[0].peak_resident_bytes.value, 4096);
	assert_int_equal(p.ext.samples[0].peak_threads.value, 1);
	assert_false(p.ext.samples[1].cpu_time_ns.present);
	assert_false(p.ext.samples[1].peak_threads.present); /* absent means null */
	assert_string_equal(p.ext.process_end, "signal");
	assert_false(p.ext.exit_code.present);
	assert_true(p.ext.exit_signal.present);
	assert_int_equal(p.ext.exit_signal.value, 9);
	assert_int_equal(p.ext.refused_session_starts, 2);
	assert_int_equal(p.ext.begun_before_session, 3);
	assert_int_equal(p.ext.observed_from_unix_ns.value, 1796007153329499399ull);
	assert_string_equal(p.ext.attach_state, "scanning");
	json = profile__to_json(&p);
	assert_string_equal(json, expected);
	assert_int_equal(profile__from_json(json, &again, err, sizeof(err)), 0);
	json_again = profile__to_json(&again);
	assert_string_equal(json_again, json);
	free(json_again);
	free(json);
	free(expected);
	profile__free(&again);
	profile__free(&p);
}

/*
 * A container's scanner (tests/golden/container.json, khprof's record of
 * a program in a runc container): its pid in its own namespace begins the
 * run_id, the host's pid, cgroup, cgroup id and container id are in the
 * extension, and the record is written back byte for byte.  The seed's
 * reader reads it (the golden loops above).  A record without them (every
 * other golden) is written without them.
 */
static void test_container_fields_round_trip(void **state)
{
	char *expected = golden_read("container.json"), *json;
	struct kh_profile p;

	(void)state;
	assert_non_null(expected);
	golden_load("container", ".json", &p);
	assert_int_equal(strncmp(p.identity.run_id, "1-", 2), 0);
	assert_int_equal(p.ext.namespace_pid, 1);
	assert_int_equal(p.ext.traced_pid, 18270);
	assert_string_equal(p.ext.cgroup, "/system.slice/docker-3f2a9c1b7d4e5a6b8c9d0e1f2a3b4c5d"
					  "6e7f8091a2b3c4d5e6f708192a3b4c5d.scope");
	assert_true(p.ext.cgroup_id.present);
	assert_int_equal(p.ext.cgroup_id.value, 804);
	assert_string_equal(p.ext.container_id, "3f2a9c1b7d4e5a6b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e"
						"6f708192a3b4c5d");
	json = profile__to_json(&p);
	assert_string_equal(json, expected);
	free(json);
	profile__free(&p);
	golden_load("unknown_fields", ".json", &p);
	assert_null(p.ext.cgroup);
	json = profile__to_json(&p);
	assert_null(strstr(json, "\"cgroup\""));
	assert_null(strstr(json, "namespace_pid"));
	free(json);
	free(expected);
	profile__free(&p);
}

/*
 * The span clock and its reason round-trip; a record without them (an
 * older khprof's) is written back without them, byte for byte.
 */
static void test_span_clock_round_trips(void **state)
{
	struct kh_profile p, again;
	char err[256], *json, *json_again;

	(void)state;
	golden_load("unknown_fields", ".json", &p);
	assert_null(p.ext.span_clock);
	json = profile__to_json(&p);
	assert_null(strstr(json, "span_clock"));
	free(json);
	assert_int_equal(profile__set_span_clock(&p, "monotonic", "the TSC went \"back\""), 0);
	json = profile__to_json(&p);
	assert_non_null(strstr(json, "\"span_clock\": \"monotonic\""));
	assert_non_null(strstr(json, "\"span_clock_reason\": \"the TSC went \\\"back\\\"\""));
	assert_int_equal(profile__from_json(json, &again, err, sizeof(err)), 0);
	assert_string_equal(again.ext.span_clock, "monotonic");
	assert_string_equal(again.ext.span_clock_reason, "the TSC went \"back\"");
	json_again = profile__to_json(&again);
	assert_string_equal(json_again, json);
	free(json_again);
	free(json);
	profile__free(&again);
	profile__free(&p);
}

/*
 * Refused probe sites round-trip, their strings (the traced file's, any
 * bytes) escaped by JSON: a control character as \u00XX, invalid UTF-8
 * as U+FFFD; a record without any is written without the member.
 */
static void test_refused_sites_round_trip(void **state)
{
	const struct kh_refused_site site = {
		.file = "/tmp/x", .provider = "keyhog", .name = "\nforged\x1b[2K\xff",
		.address = 0x1331, .refusal = "not_a_nop", .reason = "the instruction there is not a no-op",
	};
	struct kh_profile p, again;
	char err[256], *json, *json_again;

	(void)state;
	golden_load("unknown_fields", ".json", &p);
	json = profile__to_json(&p);
	assert_null(strstr(json, "refused_sites"));
	free(json);
	assert_int_equal(profile__add_refused_site(&p, &site), 0);
	json = profile__to_json(&p);
	assert_non_null(strstr(json, "\"name\": \"\\nforged\\u001b[2K\xef\xbf\xbd\""));
	assert_non_null(strstr(json, "\"address\": 4913"));
	assert_int_equal(profile__from_json(json, &again, err, sizeof(err)), 0);
	assert_int_equal(again.ext.refused_site_count, 1);
	assert_string_equal(again.ext.refused_sites[0].name, "\nforged\x1b[2K\xef\xbf\xbd");
	assert_string_equal(again.ext.refused_sites[0].refusal, "not_a_nop");
	assert_int_equal(again.ext.refused_sites[0].address, 0x1331);
	json_again = profile__to_json(&again);
	assert_string_equal(json_again, json);
	free(json_again);
	free(json);
	profile__free(&again);
	profile__free(&p);
}

/* An older khprof record may lack extension members: they default to zero. */
static void test_extension_members_are_optional(void **state)
{
	char *text = mutate("\"resources\":", "\"khprof\":{\"probe_hits\":9},\"resources\":");
	struct kh_profile p;
	char err[256];

	(void)state;
	assert_int_equal(profile__from_json(text, &p, err, sizeof(err)), 0);
	assert_true(p.ext.present);
	assert_null(p.ext.mode);
	assert_int_equal(p.ext.probe_hits, 9);
	assert_int_equal(p.ext.drops[KH_DROP_RINGBUF_FULL], 0);
	assert_int_equal(p.ext.begun_before_session, 0);
	profile__free(&p);
	free(text);
}

/* One call reads and parses a record file, and says why it could not. */
static void test_read_file(void **state)
{
	char *path = write_temp(base_record), err[256];
	struct kh_profile p;
	int fd;

	(void)state;
	assert_non_null(path);
	assert_int_equal(profile__read_file(path, &p, err, sizeof(err)), 0);
	assert_int_equal(p.wall_time_ns, 5);
	profile__free(&p);

	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, base_record, 40), 40); /* cut mid-record */
	close(fd);
	assert_int_equal(profile__read_file(path, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "line 1 column 41")); /* where the text stops */
	unlink(path);
	assert_int_equal(profile__read_file(path, &p, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "No such file or directory");
	free(path);
}

static void test_u64_beyond_double_precision(void **state)
{
	char *text = mutate("\"wall_time_ns\":5", "\"wall_time_ns\":9007199254740993");
	struct kh_profile p;
	char err[256];

	(void)state;
	assert_int_equal(profile__from_json(text, &p, err, sizeof(err)), 0);
	assert_true(p.wall_time_ns == 9007199254740993ull);
	profile__free(&p);
	free(text);
	text = mutate("\"wall_time_ns\":5", "\"wall_time_ns\":18446744073709551615");
	assert_int_equal(profile__from_json(text, &p, err, sizeof(err)), 0);
	assert_true(p.wall_time_ns == UINT64_MAX);
	profile__free(&p);
	free(text);
}

static void test_absent_options_and_states_default(void **state)
{
	char *text = mutate("\"states\":[],", "");
	struct kh_profile p;
	char err[256];

	(void)state;
	assert_int_equal(profile__from_json(text, &p, err, sizeof(err)), 0);
	assert_int_equal(p.state_count, 0);
	profile__free(&p);
	free(text);
	/* serde reads an absent Option member as None. */
	text = mutate("\"backend_selected\":null,\"cache_state\"", "\"cache_state\"");
	assert_int_equal(profile__from_json(text, &p, err, sizeof(err)), 0);
	assert_null(p.identity.backend_selected);
	assert_false(p.resources.max_observed_threads.present);
	profile__free(&p);
	free(text);
}

struct malformed {
	const char *from;
	const char *to;
	const char *message;
	bool seed_accepts; /* the seed reads it; khprof cannot represent it */
};

static const struct malformed malformed_cases[] = {
	{ "\"wall_time_ns\":5,", "", "missing field 'wall_time_ns'", false },
	{ "\"run_id\":\"r\",", "", "missing field 'identity.run_id'", false },
	{ "\"cache_state\":\"cold\"", "\"cache_state\":\"hot\"",
	  "'identity.cache_state': unknown value 'hot'", false },
	{ "\"status\":\"completed\"", "\"status\":\"Completed\"",
	  "'status': unknown value 'Completed'", false },
	{ "\"stage\":\"decode\"", "\"stage\":\"warp\"", "'stages[0].stage': unknown value 'warp'", false },
	{ "\"wall_time_ns\":5", "\"wall_time_ns\":1.5",
	  "'wall_time_ns': expected an unsigned 64-bit integer, found 1.5", false },
	{ "\"wall_time_ns\":5", "\"wall_time_ns\":5.0",
	  "'wall_time_ns': expected an unsigned 64-bit integer, found 5.0", false },
	{ "\"wall_time_ns\":5", "\"wall_time_ns\":1e3",
	  "'wall_time_ns': expected an unsigned 64-bit integer, found 1e3", false },
	{ "\"wall_time_ns\":5", "\"wall_time_ns\":-1",
	  "'wall_time_ns': expected an unsigned 64-bit integer, found -1", false },
	{ "\"wall_time_ns\":5", "\"wall_time_ns\":-0",
	  "'wall_time_ns': expected an unsigned 64-bit integer, found -0", false },
	{ "\"wall_time_ns\":5", "\"wall_time_ns\":18446744073709551616",
	  "'wall_time_ns': expected an unsigned 64-bit integer, found 18446744073709551616", false },
	{ "\"wall_time_ns\":5", "\"wall_time_ns\":\"5\"",
	  "'wall_time_ns': expected an unsigned 64-bit integer, found a string", false },
	{ "\"wall_time_ns\":5", "\"wall_time_ns\":null",
	  "'wall_time_ns': expected an unsigned 64-bit integer, found null", false },
	{ "\"scanner_threads\":1", "\"scanner_threads\":true",
	  "'identity.scanner_threads': expected an unsigned 64-bit integer, found a boolean", false },
	{ "\"wall_time_ns\":5", "\"wall_time_ns\":05", "invalid number at line 1 column", false },
	{ "\"stages\":[", "\"stages\":null,\"x\":[", "'stages': expected an array, found null", false },
	{ "\"states\":[]", "\"states\":null", "'states': expected an array, found null", false },
	{ "\"identity\":{", "\"identity\":[],\"y\":{", "'identity': expected an object, found an array", false },
	{ "\"transitions\":[]", "\"transitions\":[1]",
	  "'transitions[0]': expected an object, found a number", false },
	{ "\"start\":{}", "\"start\":{\"cpu_time_ms\":-2}",
	  "'resources.start.cpu_time_ms': expected an unsigned 64-bit integer, found -2", false },
	{ "\"aggregate_cpu_percent\":null", "\"aggregate_cpu_percent\":1e400",
	  "'resources.aggregate_cpu_percent': number out of range", false },
	{ "\"aggregate_cpu_percent\":null", "\"aggregate_cpu_percent\":\"3\"",
	  "'resources.aggregate_cpu_percent': expected a number, found a string", false },
	{ "\"schema\":\"keyhog-profile-v1\"",
	  "\"schema\":\"keyhog-profile-v1\",\"schema\":\"keyhog-profile-v1\"",
	  "duplicate field 'schema'", false },
	{ "\"run_id\":\"r\"", "\"run_id\":\"a\tb\"", "control character", false },
	{ "\"run_id\":\"r\"", "\"run_id\":\"\xff\"", "invalid UTF-8", false },
	{ "\"run_id\":\"r\"", "\"run_id\":\"\xed\xa0\x80\"", "invalid UTF-8", false },
	{ "\"run_id\":\"r\"", "\"run_id\":\"\\ud800\"", "invalid JSON", false },
	{ "{\"schema\"", "\xef\xbb\xbf{\"schema\"", "expected value at line 1 column 1", false },
	{ "{\"schema\"", "[{\"schema\"", "invalid JSON", false },
	{ "\"states\":[]", "\"states\":[],", "invalid JSON", false },
	{ "\"schema\":", "\"x\":1 \"schema\":", "invalid JSON", false },
	{ "\"run_id\":\"r\"", "\"run_id\":\"\\u0000\"", "unsupported \\u0000", true },
	{ "\"run_id\":\"r\"", "\"run_id\":\"\\u01f\"", "invalid escape at line 1 column", false },
	{ "\"run_id\":\"r\"", "\"run_id\":\"\\u.001\"", "invalid escape at line 1 column", false },
	{ "\"run_id\":\"r\"", "\"run_id\":\"\\q\"", "invalid escape at line 1 column", false },
	{ "\"backend_requested\":\"a\"", "\"backend_requested\":\"a\" // comment", "invalid JSON", false },
};

static void check_malformed(const struct malformed *c, const char *render)
{
	char *text = mutate(c->from, c->to);
	struct kh_profile p;
	char err[256];
	int status;

	memset(err, 'x', sizeof(err));
	if (profile__from_json(text, &p, err, sizeof(err)) != -EINVAL)
		fail_msg("accepted: %s", text);
	if (!strstr(err, c->message))
		fail_msg("error '%s' does not contain '%s'", err, c->message);
	if (render && !c->seed_accepts) {
		/* Exit 2 is a serde error; invalid UTF-8 already fails the read. */
		free(seed_render(render, text, true, &status));
		if (status == 0)
			fail_msg("the seed reads what khprof rejects (%s): %s", c->message, text);
	}
	free(text);
}

static void test_malformed_records_name_the_problem(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(malformed_cases) / sizeof(malformed_cases[0]); i++)
		check_malformed(&malformed_cases[i], NULL);
}

static void test_malformed_whole_documents(void **state)
{
	static const char *const docs[] = { "", "   ", "null", "[]", "42", "{}" };
	struct kh_profile p;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		assert_int_equal(profile__from_json(docs[i], &p, err, sizeof(err)), -EINVAL);
	assert_int_equal(profile__from_json("{}", &p, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "missing field 'schema'");
	assert_int_equal(profile__from_json("[]", &p, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "expected a JSON object, found an array");
	/* A caller may not want the message at all. */
	assert_int_equal(profile__from_json("{}", &p, NULL, 0), -EINVAL);
}

/* base_record with an unknown member nested depth levels deep. */
static char *nested_member(int depth)
{
	char *member = malloc((size_t)depth * 2 + 32), *text;

	assert_non_null(member);
	strcpy(member, "\"deep\":");
	for (int i = 0; i < depth; i++)
		strcat(member, "[");
	for (int i = 0; i < depth; i++)
		strcat(member, "]");
	strcat(member, ",\"schema\":");
	text = mutate("\"schema\":", member);
	free(member);
	return text;
}

/*
 * serde_json skips unknown members at any depth; the reader stops at 1000
 * levels (where cJSON stopped), well past anything a profile holds.
 */
static void test_deeply_nested_unknown_member(void **state)
{
	struct kh_profile p;
	char err[256], *text;

	(void)state;
	text = nested_member(990);
	assert_int_equal(profile__from_json(text, &p, err, sizeof(err)), 0);
	profile__free(&p);
	free(text);
	text = nested_member(1001);
	assert_int_equal(profile__from_json(text, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "invalid JSON"));
	free(text);
}

static void test_too_many_stages(void **state)
{
	static const char stage[] =
		"{\"stage\":\"decode\",\"elapsed_ns\":1,\"calls\":1,\"attributed_ns\":0},";
	char *many = calloc(1, sizeof(stage) * 26 + 16), *text;
	struct kh_profile p;
	char err[256];

	(void)state;
	for (int i = 0; i < 26; i++)
		strcat(many, stage);
	strcat(many, "{\"stage\":\"decode\"");
	text = mutate("{\"stage\":\"decode\"", many);
	assert_int_equal(profile__from_json(text, &p, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "'stages': more than 25 entries");
	free(text);
	free(many);
}

/*
 * Every message the reader gives, exactly, as golden text: a reader
 * rewrite must keep them (positions included) byte for byte.
 */
enum error_input { ERR_DOC, ERR_MUT, ERR_DEEP, ERR_STAGES };

static const struct error_case {
	enum error_input input; /* a document; base_record mutated; n levels; n+1 stages */
	const char *from, *to;
	int n;
	const char *message;
} error_cases[] = {
	{ ERR_DOC, NULL, NULL, 0,
	  "no input" },
	{ ERR_DOC, "", NULL, 0,
	  "invalid JSON at line 1 column 1" },
	{ ERR_DOC, "   ", NULL, 0,
	  "invalid JSON at line 1 column 4" },
	{ ERR_DOC, "\n\n  ", NULL, 0,
	  "invalid JSON at line 3 column 3" },
	{ ERR_DOC, "null", NULL, 0,
	  "expected a JSON object, found null" },
	{ ERR_DOC, "true", NULL, 0,
	  "expected a JSON object, found a boolean" },
	{ ERR_DOC, "42", NULL, 0,
	  "expected a JSON object, found a number" },
	{ ERR_DOC, "-1.5", NULL, 0,
	  "expected a JSON object, found a number" },
	{ ERR_DOC, "\"s\"", NULL, 0,
	  "expected a JSON object, found a string" },
	{ ERR_DOC, "[]", NULL, 0,
	  "expected a JSON object, found an array" },
	{ ERR_DOC, "{}", NULL, 0,
	  "missing field 'schema'" },
	{ ERR_DOC, "{", NULL, 0,
	  "invalid JSON at line 1 column 2" },
	{ ERR_DOC, "{\"schema\"", NULL, 0,
	  "invalid JSON at line 1 column 10" },
	{ ERR_DOC, "{\"schema\":", NULL, 0,
	  "invalid JSON at line 1 column 11" },
	{ ERR_DOC, "{\"schema\":\"x\"", NULL, 0,
	  "invalid JSON at line 1 column 14" },
	{ ERR_DOC, "{\"schema\":\"x\",}", NULL, 0,
	  "invalid JSON at line 1 column 16" },
	{ ERR_DOC, "{\"schema\" \"x\"}", NULL, 0,
	  "invalid JSON at line 1 column 11" },
	{ ERR_DOC, "{\"schema\":\"x\" \"y\":1}", NULL, 0,
	  "invalid JSON at line 1 column 15" },
	{ ERR_DOC, "{schema:1}", NULL, 0,
	  "invalid JSON at line 1 column 3" },
	{ ERR_DOC, "{} {}", NULL, 0,
	  "invalid JSON at line 1 column 4" },
	{ ERR_DOC, "{}x", NULL, 0,
	  "invalid JSON at line 1 column 3" },
	{ ERR_DOC, "nul", NULL, 0,
	  "invalid JSON at line 1 column 1" },
	{ ERR_DOC, "tru", NULL, 0,
	  "invalid JSON at line 1 column 1" },
	{ ERR_DOC, "+1", NULL, 0,
	  "invalid JSON at line 1 column 1" },
	{ ERR_DOC, ".5", NULL, 0,
	  "invalid JSON at line 1 column 1" },
	{ ERR_DOC, "[1,]", NULL, 0,
	  "invalid JSON at line 1 column 4" },
	{ ERR_DOC, "[1 2]", NULL, 0,
	  "invalid JSON at line 1 column 4" },
	{ ERR_DOC, "{\"a\":[1,2}", NULL, 0,
	  "invalid JSON at line 1 column 10" },
	{ ERR_DOC, "{\"a\":{\"b\":1]}", NULL, 0,
	  "invalid JSON at line 1 column 12" },
	{ ERR_DOC, "{\"a\":\"\\ud800\"}", NULL, 0,
	  "missing field 'schema'" }, /* a member serde skips, as it does */
	{ ERR_DOC, "{\"a\":\"\\udc00\"}", NULL, 0,
	  "missing field 'schema'" }, /* a member serde skips, as it does */
	{ ERR_DOC, "{\"a\":\"\\ud800\\u0041\"}", NULL, 0,
	  "missing field 'schema'" }, /* a member serde skips, as it does */
	{ ERR_DOC, "\001{}", NULL, 0,
	  "expected value at line 1 column 1" },
	{ ERR_DOC, "{}\177", NULL, 0,
	  "invalid JSON at line 1 column 3" },
	{ ERR_DOC, "{\"a\":1}\n\n\002", NULL, 0,
	  "expected value at line 3 column 1" },
	{ ERR_MUT, "\"wall_time_ns\":5,", "", 0,
	  "missing field 'wall_time_ns'" },
	{ ERR_MUT, "\"run_id\":\"r\",", "", 0,
	  "missing field 'identity.run_id'" },
	{ ERR_MUT, "\"identity\":{", "\"identity\":[],\"y\":{", 0,
	  "'identity': expected an object, found an array" },
	{ ERR_MUT, "\"cache_state\":\"cold\"", "\"cache_state\":\"hot\"", 0,
	  "'identity.cache_state': unknown value 'hot'" },
	{ ERR_MUT, "\"daemon_state\":\"off\"", "\"daemon_state\":7", 0,
	  "'identity.daemon_state': expected a string, found a number" },
	{ ERR_MUT, "\"status\":\"completed\"", "\"status\":\"Completed\"", 0,
	  "'status': unknown value 'Completed'" },
	{ ERR_MUT, "\"status\":\"completed\"", "\"status\":null", 0,
	  "'status': expected a string, found null" },
	{ ERR_MUT, "\"stage\":\"decode\"", "\"stage\":\"warp\"", 0,
	  "'stages[0].stage': unknown value 'warp'" },
	{ ERR_MUT, "\"stage\":\"decode\",", "", 0,
	  "missing field 'stages[0].stage'" },
	{ ERR_MUT, "\"calls\":1,", "", 0,
	  "missing field 'stages[0].calls'" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":1.5", 0,
	  "'wall_time_ns': expected an unsigned 64-bit integer, found 1.5" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":5.0", 0,
	  "'wall_time_ns': expected an unsigned 64-bit integer, found 5.0" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":1e3", 0,
	  "'wall_time_ns': expected an unsigned 64-bit integer, found 1e3" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":1E+3", 0,
	  "'wall_time_ns': expected an unsigned 64-bit integer, found 1E+3" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":-1", 0,
	  "'wall_time_ns': expected an unsigned 64-bit integer, found -1" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":-0", 0,
	  "'wall_time_ns': expected an unsigned 64-bit integer, found -0" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":-9223372036854775809", 0,
	  "'wall_time_ns': expected an unsigned 64-bit integer, found -9223372036854775809" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":18446744073709551616", 0,
	  "'wall_time_ns': expected an unsigned 64-bit integer, found 18446744073709551616" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":1e400", 0,
	  "'wall_time_ns': number out of range" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":\"5\"", 0,
	  "'wall_time_ns': expected an unsigned 64-bit integer, found a string" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":null", 0,
	  "'wall_time_ns': expected an unsigned 64-bit integer, found null" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":[]", 0,
	  "'wall_time_ns': expected an unsigned 64-bit integer, found an array" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":{}", 0,
	  "'wall_time_ns': expected an unsigned 64-bit integer, found an object" },
	{ ERR_MUT, "\"scanner_threads\":1", "\"scanner_threads\":true", 0,
	  "'identity.scanner_threads': expected an unsigned 64-bit integer, found a boolean" },
	{ ERR_MUT, "\"reader_threads\":null", "\"reader_threads\":false", 0,
	  "'identity.reader_threads': expected an unsigned 64-bit integer, found a boolean" },
	{ ERR_MUT, "\"reader_threads\":null", "\"reader_threads\":-3", 0,
	  "'identity.reader_threads': expected an unsigned 64-bit integer, found -3" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":05", 0,
	  "invalid number at line 1 column 344" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":5.", 0,
	  "invalid number at line 1 column 344" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":5e", 0,
	  "invalid number at line 1 column 344" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":-", 0,
	  "invalid number at line 1 column 344" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\"wall_time_ns\":1-2", 0,
	  "invalid number at line 1 column 344" },
	{ ERR_MUT, "\"wall_time_ns\":5", "\n\n   \"wall_time_ns\":05", 0,
	  "invalid number at line 3 column 19" },
	{ ERR_MUT, "\"stages\":[", "\"stages\":null,\"x\":[", 0,
	  "'stages': expected an array, found null" },
	{ ERR_MUT, "\"stages\":[", "\"stages\":{},\"x\":[", 0,
	  "'stages': expected an array, found an object" },
	{ ERR_MUT, "\"states\":[]", "\"states\":null", 0,
	  "'states': expected an array, found null" },
	{ ERR_MUT, "\"states\":[]", "\"states\":[[]]", 0,
	  "'states[0]': expected an object, found an array" },
	{ ERR_MUT, "\"states\":[]",
	  "\"states\":[{\"state\":\"scanning\",\"elapsed_ns\":1,\"cpu_time_ms\":\"x\"}]", 0,
	  "'states[0].cpu_time_ms': expected an unsigned 64-bit integer, found a string" },
	{ ERR_MUT, "\"transitions\":[]", "\"transitions\":[1]", 0,
	  "'transitions[0]': expected an object, found a number" },
	{ ERR_MUT, "\"transitions\":[]", "\"transitions\":[{\"state\":\"scanning\"}]", 0,
	  "missing field 'transitions[0].elapsed_ns'" },
	{ ERR_MUT, "\"resource_samples\":[]",
	  "\"resource_samples\":[{\"state\":\"scanning\",\"elapsed_ns\":1,\"snapshot\":[]}]", 0,
	  "'resource_samples[0].snapshot': expected an object, found an array" },
	{ ERR_MUT, "\"resource_samples\":[]",
	  "\"resource_samples\":[{\"state\":\"scanning\",\"elapsed_ns\":1}]", 0,
	  "missing field 'resource_samples[0].snapshot'" },
	{ ERR_MUT, "\"start\":{}", "\"start\":{\"cpu_time_ms\":-2}", 0,
	  "'resources.start.cpu_time_ms': expected an unsigned 64-bit integer, found -2" },
	{ ERR_MUT, "\"start\":{},", "", 0,
	  "missing field 'resources.start'" },
	{ ERR_MUT, "\"finish\":{}", "\"finish\":\"x\"", 0,
	  "'resources.finish': expected an object, found a string" },
	{ ERR_MUT, "\"aggregate_cpu_percent\":null", "\"aggregate_cpu_percent\":1e400", 0,
	  "'resources.aggregate_cpu_percent': number out of range" },
	{ ERR_MUT, "\"aggregate_cpu_percent\":null", "\"aggregate_cpu_percent\":-1e400", 0,
	  "'resources.aggregate_cpu_percent': number out of range" },
	{ ERR_MUT, "\"aggregate_cpu_percent\":null", "\"aggregate_cpu_percent\":\"3\"", 0,
	  "'resources.aggregate_cpu_percent': expected a number, found a string" },
	{ ERR_MUT, "\"aggregate_cpu_percent\":null", "\"aggregate_cpu_percent\":true", 0,
	  "'resources.aggregate_cpu_percent': expected a number, found a boolean" },
	{ ERR_MUT, "\"resources\":{", "\"resources\":[],\"z\":{", 0,
	  "'resources': expected an object, found an array" },
	{ ERR_MUT, "\"schema\":\"keyhog-profile-v1\"",
	  "\"schema\":\"keyhog-profile-v1\",\"schema\":\"keyhog-profile-v1\"", 0,
	  "duplicate field 'schema'" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"r\",\"run_id\":\"r\"", 0,
	  "duplicate field 'identity.run_id'" },
	{ ERR_MUT, "\"calls\":1", "\"calls\":1,\"calls\":2", 0,
	  "duplicate field 'stages[0].calls'" },
	{ ERR_MUT, "\"schema\":\"keyhog-profile-v1\"", "\"schema\":5", 0,
	  "'schema': expected a string, found a number" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":[]", 0,
	  "'identity.run_id': expected a string, found an array" },
	{ ERR_MUT, "\"backend_selected\":null", "\"backend_selected\":1", 0,
	  "'identity.backend_selected': expected a string, found a number" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"a\tb\"", 0,
	  "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 54" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"a\nb\"", 0,
	  "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 54" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"\377\"", 0,
	  "invalid UTF-8 at line 1 column 54" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"\355\240\200\"", 0,
	  "invalid UTF-8 at line 1 column 54" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"\303\"", 0,
	  "invalid UTF-8 at line 1 column 54" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"\\ud800\"", 0,
	  "invalid JSON at line 1 column 53" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"\\u0000\"", 0,
	  "unsupported \\u0000 in string at line 1 column 53" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"\\u01f\"", 0,
	  "invalid escape at line 1 column 53" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"\\u.001\"", 0,
	  "invalid escape at line 1 column 53" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"\\q\"", 0,
	  "invalid escape at line 1 column 53" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"\\", 0,
	  "invalid escape at line 1 column 53" },
	{ ERR_MUT, "\"run_id\":\"r\"", "\"run_id\":\"r", 0,
	  "EOF while parsing a string at line 1 column 567" },
	{ ERR_MUT, "{\"schema\"", "\357\273\277{\"schema\"", 0,
	  "expected value at line 1 column 1" },
	{ ERR_MUT, "{\"schema\"", "[{\"schema\"", 0,
	  "invalid JSON at line 1 column 569" },
	{ ERR_MUT, "\"states\":[]", "\"states\":[],", 0,
	  "invalid JSON at line 1 column 481" },
	{ ERR_MUT, "\"schema\":", "\"x\":1 \"schema\":", 0,
	  "invalid JSON at line 1 column 8" },
	{ ERR_MUT, "\"backend_requested\":\"a\"", "\"backend_requested\":\"a\" // comment", 0,
	  "invalid JSON at line 1 column 182" },
	{ ERR_DEEP, NULL, NULL, 1001,
	  "invalid JSON at line 1 column 1008" },
	{ ERR_MUT, "\"resources\":", "\"khprof\":5,\"resources\":", 0,
	  "'khprof': expected an object, found a number" },
	{ ERR_MUT, "\"resources\":", "\"khprof\":{\"mode\":1},\"resources\":", 0,
	  "'khprof.mode': expected a string, found a number" },
	{ ERR_MUT, "\"resources\":", "\"khprof\":{\"started_mid_session\":1},\"resources\":", 0,
	  "'khprof.started_mid_session': expected a boolean, found a number" },
	{ ERR_MUT, "\"resources\":", "\"khprof\":{\"drops\":[]},\"resources\":", 0,
	  "'khprof.drops': expected an object, found an array" },
	{ ERR_MUT, "\"resources\":",
	  "\"khprof\":{\"drops\":{\"ringbuf_full\":-1}},\"resources\":", 0,
	  "'khprof.drops.ringbuf_full': expected an unsigned 64-bit integer, found -1" },
	{ ERR_MUT, "\"resources\":", "\"khprof\":{\"probe_hits\":1.5},\"resources\":", 0,
	  "'khprof.probe_hits': expected an unsigned 64-bit integer, found 1.5" },
	{ ERR_MUT, "\"resources\":",
	  "\"khprof\":{\"probe_hits\":1,\"probe_hits\":2},\"resources\":", 0,
	  "duplicate field 'khprof.probe_hits'" },
	{ ERR_MUT, "\"resources\":", "\"khprof\":{\"traced_pid\":1e400},\"resources\":", 0,
	  "'khprof.traced_pid': number out of range" },
	/* Found by comparing this reader with the cJSON-based one on mutated records. */
	{ ERR_DOC, "{\"x\":1e400-3}", NULL, 0,
	  "invalid JSON at line 1 column 11" },
	{ ERR_DOC, "{\"x\":1e40033.5}", NULL, 0,
	  "invalid JSON at line 1 column 13" },
	{ ERR_DOC, "{\"x\":184467440737095516163.}", NULL, 0,
	  "missing field 'schema'" },
	{ ERR_DOC, "{\"x\":184467440737095516163.e5]}", NULL, 0,
	  "invalid JSON at line 1 column 30" },
	{ ERR_DOC, "{\"\\ud800\":1}", NULL, 0,
	  "invalid JSON at line 1 column 3" },
	{ ERR_DOC, "{\"x\":\"\\ud800\\u0041\"}", NULL, 0,
	  "missing field 'schema'" }, /* a member serde skips, as it does */
	{ ERR_DOC, "{\"x\":[1,2,3.]}", NULL, 0,
	  "invalid number at line 1 column 11" },
	{ ERR_DOC, "{\"x\":\"\\ud83d\\ude00\",\"x\":nul}", NULL, 0,
	  "invalid JSON at line 1 column 25" },
	{ ERR_STAGES, NULL, NULL, 26,
	  "'stages': more than 25 entries" },

};

static char *error_case__text(const struct error_case *c)
{
	static const char stage[] =
		"{\"stage\":\"decode\",\"elapsed_ns\":1,\"calls\":1,\"attributed_ns\":0},";
	char *text, *many;

	switch (c->input) {
	case ERR_DOC:
		return c->from ? strdup(c->from) : NULL;
	case ERR_MUT:
		return mutate(c->from, c->to);
	case ERR_DEEP:
		return nested_member(c->n);
	case ERR_STAGES:
		many = calloc(1, sizeof(stage) * (size_t)(c->n + 1) + 16);
		assert_non_null(many);
		for (int i = 0; i < c->n; i++)
			strcat(many, stage);
		strcat(many, "{\"stage\":\"decode\"");
		text = mutate("{\"stage\":\"decode\"", many);
		free(many);
		return text;
	}
	return NULL;
}

static void test_reader_error_messages_are_exact(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(error_cases) / sizeof(error_cases[0]); i++) {
		const struct error_case *c = &error_cases[i];
		char *text = error_case__text(c), err[256];
		struct kh_profile p;
		int rc;

		memset(err, 'x', sizeof(err));
		rc = profile__from_json(text, &p, err, sizeof(err));
		if (rc != -EINVAL)
			fail_msg("case %zu: returned %d for: %s", i, rc, text ? text : "(null)");
		if (strcmp(err, c->message))
			fail_msg("case %zu: error '%s', expected '%s'", i, err, c->message);
		free(text);
	}
}

/* serde_json's f64 spelling (ryu), checked on the values that matter. */
static void test_f64_spelling(void **state)
{
	static const struct {
		double value;
		const char *text;
	} cases[] = {
		{ 0.0, "0.0" },
		{ -0.0, "-0.0" },
		{ 250.0, "250.0" },
		{ 33.333333333333336, "33.333333333333336" },
		{ 1e-7, "1e-7" },
		{ 1e-5, "0.00001" },
		{ 1.5e-5, "0.000015" },
		{ 1e15, "1000000000000000.0" },
		{ 1e16, "1e16" },
		{ 1.25e16, "1.25e16" },
		{ 123456789.125, "123456789.125" },
		{ 0.1, "0.1" },
		{ 5e-324, "5e-324" },
		{ 1.7976931348623157e308, "1.7976931348623157e308" },
		{ 9007199254740993.0, "9007199254740992.0" },
		{ -2.5, "-2.5" },
		/* 2^-1074 * 2^k neighbours where the rounding interval is lopsided */
		{ 9.5367431640625e-07, "9.5367431640625e-7" },
		{ 2.2250738585072014e-308, "2.2250738585072014e-308" },
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json__format_f64(cases[i].value, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].text);
	}
	json__format_f64(INFINITY, buf, sizeof(buf));
	assert_string_equal(buf, "null");
	json__format_f64(NAN, buf, sizeof(buf));
	assert_string_equal(buf, "null");
}

/* serde_json (without float_roundtrip) is not always correctly rounded. */
static void test_f64_reading_matches_serde(void **state)
{
	double v;

	(void)state;
	assert_int_equal(json__parse_f64("123456789.12345679", 18, &v), 0);
	assert_true(v == 123456789.1234568);
	assert_int_equal(json__parse_f64("33.333333333333336", 18, &v), 0);
	assert_true(v == 33.333333333333336);
	assert_int_equal(json__parse_f64("1e-400", 6, &v), 0);
	assert_true(v == 0.0);
	assert_int_equal(json__parse_f64("-0", 2, &v), 0);
	assert_true(v == 0.0 && signbit(v));
	assert_int_equal(json__parse_f64("1e400", 5, &v), -ERANGE);
	assert_int_equal(json__parse_f64("1.", 2, &v), -EINVAL);
	assert_int_equal(json__parse_f64(".5", 2, &v), -EINVAL);
	assert_int_equal(json__parse_f64("01", 2, &v), -EINVAL);
	assert_int_equal(json__parse_f64("1e", 2, &v), -EINVAL);
	assert_int_equal(json__parse_f64("+1", 2, &v), -EINVAL);
}

static void test_writer_rejects_bad_enums(void **state)
{
	struct kh_profile p;

	(void)state;
	assert_int_equal(profile__init(&p), 0);
	p.status = KH_STATE_COUNT;
	errno = 0;
	assert_null(profile__to_json(&p));
	assert_int_equal(errno, EINVAL);
	p.status = KH_STATE_COMPLETED;
	p.stage_count = 1;
	p.stages[0].stage = KH_STAGE_COUNT;
	assert_null(profile__to_json(&p));
	profile__free(&p);
}

/* Invalid UTF-8 put into the model by hand is repaired, not written raw. */
static void test_writer_repairs_utf8(void **state)
{
	struct kh_profile p;
	char *json;

	(void)state;
	assert_int_equal(profile__init(&p), 0);
	free(p.identity.source_kind);
	p.identity.source_kind = strdup("a\xff" "b\xe2\x82");
	json = profile__to_json(&p);
	assert_non_null(strstr(json, "\"source_kind\": \"a\xef\xbf\xbd" "b\xef\xbf\xbd\""));
	free(json);
	profile__free(&p);
}

/* Live check against the seed's reader: it reads what we write, identically. */
static void test_seed_reads_our_output(void **state)
{
	const char *render = conformance_reader();
	char *names[GOLDEN_MAX];
	size_t count = golden_inputs(names);

	(void)state;
	for (size_t i = 0; i < count; i++) {
		char *json, *seed_json, *ours;
		struct kh_profile p;
		int status;

		golden_load(names[i], ".json", &p);
		json = profile__to_json(&p);
		seed_json = seed_render(render, json, true, &status);
		if (!seed_json)
			fail_msg("%s: the seed cannot read our output (exit %d)", names[i], status);
		ours = strip_khprof(json);
		if (strcmp(seed_json, ours))
			fail_msg("%s: the seed re-serialises our output differently", names[i]);
		free(ours);
		free(seed_json);
		free(json);
		profile__free(&p);
	}
	golden_free(names, count);
}

/* Committed goldens are still what the seed produces (catches seed drift). */
static void test_goldens_are_current(void **state)
{
	(void)state;
	assert_goldens_current(".seed.json", true);
}

static void test_seed_agrees_on_malformed(void **state)
{
	const char *render = conformance_reader();

	(void)state;
	for (size_t i = 0; i < sizeof(malformed_cases) / sizeof(malformed_cases[0]); i++)
		check_malformed(&malformed_cases[i], render);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base_record_reads),
		cmocka_unit_test(test_goldens_match_seed_json),
		cmocka_unit_test(test_seed_json_is_a_fixed_point),
		cmocka_unit_test(test_extension_round_trips),
		cmocka_unit_test(test_container_fields_round_trip),
		cmocka_unit_test(test_span_clock_round_trips),
		cmocka_unit_test(test_refused_sites_round_trip),
		cmocka_unit_test(test_extension_members_are_optional),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_u64_beyond_double_precision),
		cmocka_unit_test(test_absent_options_and_states_default),
		cmocka_unit_test(test_malformed_records_name_the_problem),
		cmocka_unit_test(test_malformed_whole_documents),
		cmocka_unit_test(test_deeply_nested_unknown_member),
		cmocka_unit_test(test_too_many_stages),
		cmocka_unit_test(test_reader_error_messages_are_exact),
		cmocka_unit_test(test_reader_agrees_with_the_seed),
		cmocka_unit_test(test_f64_spelling),
		cmocka_unit_test(test_f64_reading_matches_serde),
		cmocka_unit_test(test_writer_rejects_bad_enums),
		cmocka_unit_test(test_writer_repairs_utf8),
		cmocka_unit_test(test_seed_reads_our_output),
		cmocka_unit_test(test_goldens_are_current),
		cmocka_unit_test(test_seed_agrees_on_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
