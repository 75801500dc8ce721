// SPDX-License-Identifier: MIT
/*
 * Sampled stacks without a kernel: the record's stacks (JSON both ways,
 * folded lines, the top-functions table) and the store that keeps and
 * symbolizes samples (userspace/capture/stacks/stackstore.c), fed samples of this
 * very binary's functions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "diff_stacks.h"
#include "html.h"
#include "json.h"
#include "latency_text.h"
#include "outbuf.h"
#include "record.h"
#include "stacks.h"
#include "stackstore.h"
#include "trace_event.h"

/* A record with three stacks: two share a stack in both attributions. */
static void make_profile(struct kh_profile *p)
{
	struct kh_stacks *s = &p->ext.stacks;
	uint32_t main_id, scan, match, idle;

	assert_int_equal(profile__init(p), 0);
	p->ext.present = true;
	s->present = true;
	s->rate_hz = 99;
	s->unwinding = strdup("frame-pointer");
	main_id = kh_stacks__name(s, "main");
	scan = kh_stacks__name(s, "scan_chunk");
	match = kh_stacks__name(s, "pcre2_match_8");
	idle = kh_stacks__name(s, "[unknown]");
	assert_int_equal(kh_stacks__name(s, "scan_chunk"), scan); /* interned once */
	{
		uint32_t a[] = { main_id, scan, match }, b[] = { main_id, scan }, c[] = { idle };

		assert_int_equal(kh_stacks__add(s, KH_STAGE_HOT_PATTERNS, KH_ATTRIBUTION_ROOT, a, 3, 30), 0);
		assert_int_equal(kh_stacks__add(s, KH_STAGE_HOT_PATTERNS, KH_ATTRIBUTION_DECODED, a, 3, 10), 0);
		assert_int_equal(kh_stacks__add(s, KH_STAGE_HOT_PATTERNS, KH_ATTRIBUTION_ROOT, b, 2, 20), 0);
		assert_int_equal(kh_stacks__add(s, KH_NO_STAGE, KH_ATTRIBUTION_ROOT, c, 1, 5), 0);
	}
	s->samples = 65;
	s->timeline = calloc(2, sizeof(*s->timeline));
	s->timeline[0] = (struct kh_stack_sample){ 1500, 42, 0 };
	s->timeline[1] = (struct kh_stack_sample){ 2500, 43, 3 };
	s->timeline_count = 2;
	s->timeline_every = 1;
	s->tags[KH_SAMPLE_TAG_STAGE] = 60;
	s->tags[KH_SAMPLE_TAG_NO_STAGE] = 5;
	s->leaf_restored = 40;
}

static void test_json_round_trip(void **state)
{
	struct kh_profile p, back;
	char *json, *again, err[256];

	(void)state;
	make_profile(&p);
	json = profile__to_json(&p);
	assert_non_null(json);
	assert_non_null(strstr(json, "\"stacks\": {"));
	assert_non_null(strstr(json, "\"frames\": [0, 1, 2]"));
	assert_int_equal(profile__from_json(json, &back, err, sizeof(err)), 0);
	assert_true(back.ext.stacks.present);
	assert_int_equal(back.ext.stacks.stack_count, 4);
	assert_int_equal(back.ext.stacks.name_count, 4);
	assert_int_equal(back.ext.stacks.stacks[1].attribution, KH_ATTRIBUTION_DECODED);
	assert_int_equal(back.ext.stacks.stacks[3].stage, KH_NO_STAGE);
	assert_int_equal(back.ext.stacks.leaf_restored, 40);
	assert_int_equal(back.ext.stacks.timeline_count, 2);
	assert_int_equal(back.ext.stacks.timeline[1].tid, 43);
	assert_int_equal(back.ext.stacks.timeline[1].stack, 3);
	assert_int_equal(back.ext.stacks.timeline[1].at_ns, 2500);
	again = profile__to_json(&back);
	assert_string_equal(again, json);
	free(again);
	free(json);
	profile__free(&back);
	profile__free(&p);
}

static void test_json_rejects_bad_frames(void **state)
{
	struct kh_profile p, back;
	char *json, *at, err[256];

	(void)state;
	make_profile(&p);
	json = profile__to_json(&p);
	at = strstr(json, "[0, 1, 2]");
	memcpy(at, "[0, 1, 9]", 9);
	assert_int_equal(profile__from_json(json, &back, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "khprof.stacks.stacks[0]"));
	assert_non_null(strstr(err, "frame out of range"));
	free(json);
	profile__free(&p);
}

static void test_folded_lines(void **state)
{
	struct kh_profile p;
	struct outbuf out;
	char *text;

	(void)state;
	make_profile(&p);
	outbuf__init(&out);
	kh_stacks__folded(&p.ext.stacks, &out);
	text = outbuf__finish(&out);
	/* Sorted; both attributions of one stack on one line; (no stage) as the root. */
	assert_string_equal(text, "(no stage);[unknown] 5\n"
				  "hot-patterns;main;scan_chunk 20\n"
				  "hot-patterns;main;scan_chunk;pcre2_match_8 40\n");
	free(text);
	profile__free(&p);
}

static void test_top_functions_table(void **state)
{
	struct kh_profile p;
	struct kh_stack_fn *fns;
	char *report;
	size_t n;

	(void)state;
	make_profile(&p);
	n = kh_stacks__functions(&p.ext.stacks, KH_STAGE_HOT_PATTERNS, &fns);
	assert_int_equal(n, 3);
	assert_string_equal(p.ext.stacks.names[fns[0].name], "pcre2_match_8");
	assert_int_equal(fns[0].self, 40);
	assert_string_equal(p.ext.stacks.names[fns[1].name], "scan_chunk");
	assert_int_equal(fns[1].self, 20);
	assert_int_equal(fns[1].total, 60);
	free(fns);
	/* After the seed's text and khprof's other tables. */
	report = profile__render_report(&p);
	assert_non_null(report);
	assert_non_null(strstr(report, "stack samples: 65 at 99 Hz (frame-pointer)\n"));
	assert_non_null(strstr(report, "  hot-patterns                   60  92.3%  pcre2_match_8 66.7%, "
				       "scan_chunk 33.3%\n"));
	assert_non_null(strstr(report, "  (no stage)                      5   7.7%  [unknown] 100.0%\n"));
	free(report);
	profile__free(&p);
}

/* The Perfetto export puts each sample on its thread's track, with its stage and stack. */
static void test_samples_in_perfetto(void **state)
{
	struct kh_profile p;
	char *json;

	(void)state;
	make_profile(&p);
	json = profile__to_trace_events(&p);
	assert_non_null(json);
	assert_non_null(strstr(json, "{\"name\":\"thread_name\",\"cat\":\"khprof\",\"ph\":\"M\","
				     "\"pid\":1,\"tid\":42,\"ts\":0.000,\"args\":{\"name\":\"thread 42 "
				     "(stack samples)\"}}"));
	assert_non_null(strstr(json, "{\"name\":\"pcre2_match_8\",\"cat\":\"khprof\",\"ph\":\"i\","
				     "\"pid\":1,\"tid\":42,\"ts\":1.500,\"s\":\"t\",\"args\":{\"stage\":"
				     "\"hot-patterns\",\"stack\":\"main;scan_chunk;pcre2_match_8\"}}"));
	assert_non_null(strstr(json, "\"tid\":43,\"ts\":2.500,\"s\":\"t\",\"args\":{\"stage\":"
				     "\"(no stage)\",\"stack\":\"[unknown]\"}}"));
	free(json);
	profile__free(&p);
}

/* A flame graph per stage in the HTML page, most samples first, figures in each box's title. */
static void test_flame_graphs_in_html(void **state)
{
	struct kh_profile p;
	char *html, *hot, *none;

	(void)state;
	make_profile(&p);
	html = profile__render_html(&p);
	assert_non_null(html);
	hot = strstr(html, "<figure id=\"flame-hot-patterns\">");
	none = strstr(html, "<figure id=\"flame-no-stage\">");
	assert_non_null(hot);
	assert_non_null(none);
	assert_true(hot < none);
	assert_non_null(strstr(hot, "<title>pcre2_match_8: 40 samples, 66.7%</title>"));
	assert_non_null(strstr(hot, "<title>scan_chunk: 60 samples, 100.0%</title>"));
	assert_null(strstr(html, "<script"));
	free(html);
	profile__free(&p);
	/* Without samples, no section. */
	assert_int_equal(profile__init(&p), 0);
	html = profile__render_html(&p);
	assert_null(strstr(html, "id=\"flame-graphs\""));
	free(html);
	profile__free(&p);
}

/* The line of text naming fn holds every one of the four cells. */
static void assert_line_has(const char *text, const char *fn, const char *a, const char *b,
			    const char *c, const char *d)
{
	const char *at = strstr(text, fn), *start, *end;
	char line[256];

	assert_non_null(at);
	for (start = at; start > text && start[-1] != '\n'; start--)
		;
	end = strchr(at, '\n');
	assert_non_null(end);
	snprintf(line, sizeof(line), "%.*s", (int)(end - start), start);
	if (!strstr(line, a) || !strstr(line, b) || !strstr(line, c) || !strstr(line, d))
		fail_msg("'%s' lacks %s, %s, %s or %s", line, a, b, c, d);
}

/* diff: a function whose share of its stage grew is named with the change. */
static void test_diff_top_functions(void **state)
{
	struct kh_profile base, cand, plain;
	struct kh_diff_side b = { "base", &base, NULL, 1 }, c = { "cand", &cand, NULL, 1 };
	struct kh_diff_side none = { "plain", &plain, NULL, 1 };
	char *text;

	(void)state;
	make_profile(&base);
	make_profile(&cand);
	cand.ext.stacks.stacks[0].count = 70; /* pcre2_match_8: 40 of 60 -> 80 of 100 */
	text = diff__render_stack_functions(&b, &c);
	assert_non_null(text);
	assert_line_has(text, "pcre2_match_8", "hot-patterns", "66.7%", "80.0%", "+13.3 pp");
	assert_line_has(text, "scan_chunk", "hot-patterns", "33.3%", "20.0%", "-13.3 pp");
	free(text);
	assert_int_equal(profile__init(&plain), 0);
	text = diff__render_stack_functions(&b, &none);
	assert_string_equal(text, "");
	free(text);
	profile__free(&plain);
	profile__free(&base);
	profile__free(&cand);
}

__attribute__((noinline, noipa)) int known_function(int x)
{
	return x * 3 + 1;
}

static struct kh_sample_event sample_at(uint64_t ts, uint64_t ip0, uint64_t ip1)
{
	struct kh_sample_event e;

	memset(&e, 0, sizeof(e));
	e.ts_ns = ts;
	e.tag = KH_SAMPLE_TAG_STAGE;
	e.stage = KH_STAGE_DECODE;
	e.frames = ip1 ? 2 : 1;
	e.ips[0] = ip0;
	e.ips[1] = ip1;
	return e;
}

/*
 * The store names this binary's own function through libdwfl, anonymous
 * executable memory as [jit] and an address in no mapping as [unknown],
 * and a record gets only the samples of its time span.
 */
static void test_store_symbolizes(void **state)
{
	struct stack_store store;
	struct kh_stacks out = { 0 };
	struct kh_sample_event e;
	uint64_t fn = (uint64_t)(uintptr_t)&known_function;
	void *jit = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool saw_fn = false, saw_jit = false, saw_unknown = false;

	(void)state;
	assert_true(jit != MAP_FAILED);
	stack_store__init(&store, getpid(), 99);
	stack_store__read_maps(&store);
	e = sample_at(100, fn + 2, 0);
	stack_store__add(&store, &e);
	stack_store__add(&store, &e);
	e = sample_at(200, (uint64_t)(uintptr_t)jit + 16, fn + 4);
	stack_store__add(&store, &e);
	e = sample_at(300, 8, 0);
	stack_store__add(&store, &e);
	e = sample_at(900, fn + 2, 0); /* after the record's end */
	stack_store__add(&store, &e);
	assert_int_equal(store.stack_count, 3);
	stack_store__fill(&store, 50, 500, 0, &out);
	assert_int_equal(out.samples, 4);
	assert_int_equal(out.tags[KH_SAMPLE_TAG_STAGE], 4);
	for (size_t i = 0; i < out.stack_count; i++) {
		const struct kh_stack *st = &out.stacks[i];
		const char *inner = out.names[st->frames[st->frame_count - 1]];

		assert_int_equal(st->stage, KH_STAGE_DECODE);
		if (!strcmp(inner, "known_function")) {
			assert_int_equal(st->count, 2);
			saw_fn = true;
		} else if (!strcmp(inner, "[jit]")) {
			/* Outermost first: the caller, then the JIT code it called. */
			assert_string_equal(out.names[st->frames[0]], "known_function");
			saw_jit = true;
		} else if (!strcmp(inner, "[unknown]")) {
			saw_unknown = true;
		}
	}
	assert_true(saw_fn && saw_jit && saw_unknown);
	kh_stacks__free(&out);
	stack_store__free(&store);
	munmap(jit, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_json_rejects_bad_frames),
		cmocka_unit_test(test_folded_lines),
		cmocka_unit_test(test_top_functions_table),
		cmocka_unit_test(test_flame_graphs_in_html),
		cmocka_unit_test(test_samples_in_perfetto),
		cmocka_unit_test(test_diff_top_functions),
		cmocka_unit_test(test_store_symbolizes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
