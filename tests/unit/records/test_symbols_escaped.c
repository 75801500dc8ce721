// SPDX-License-Identifier: MIT
/*
 * Function names are the traced file's, and anyone may have written them
 * (issue #38): a record whose sampled stacks hold crafted symbols (ESC and
 * a terminal's erase-line sequence, CR, LF, a bidirectional override, a
 * ';', a backslash) printed in every format of `khprof report` and in
 * diff's function rows.  Where a name is printed as text it is escaped
 * (utf8__escape), so that it writes no line of the output and drives no
 * terminal; in folded stacks and Perfetto's joined stack a name's ';' is
 * ':', so that it is never two frames.  The escaping is at output: the
 * record keeps the symbols as they are (JSON escapes them), and pprof,
 * data for other tools, keeps them too.  The seed's text has no names.
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

#include "diff_stacks.h"
#include "output_formats.h"
#include "pprof_read.h"
#include "record.h"
#include "stacks.h"
#include "utf8.h"

/* The crafted symbols, and how a printed name shows each (whole). */
#define ERASE "erase\x1b[2K\x1b[1Gforged"
#define ERASE_SHOWN "erase\\x1b[2K\\x1b[1Gforged"
#define LINE "line\nkhprof: error: forged"
#define LINE_SHOWN "line\\nkhprof: error: forged"
#define CR "cr\rforged"
#define CR_SHOWN "cr\\rforged"
#define BIDI "bidi\xe2\x80\xae" "degrof"
#define BIDI_SHOWN "bidi\\u202edegrof"
#define SEMI "semi;colon\\path"
#define SEMI_SHOWN "semi;colon\\\\path"   /* printed, not in a joined stack */
#define SEMI_STACKED "semi:colon\\\\path" /* a frame of a folded line */

/*
 * A record as --sample writes it: main calling each crafted function in
 * decode, ERASE and SEMI in hot-patterns, one sample on the timeline.
 */
static void make_crafted(struct kh_profile *p)
{
	struct kh_stacks *s = &p->ext.stacks;
	const char *const names[] = { "main", ERASE, LINE, CR, BIDI, SEMI };
	uint32_t erase[] = { 0, 1 }, line[] = { 0, 2 }, cr[] = { 0, 3 }, bidi[] = { 0, 4 };
	uint32_t semi[] = { 0, 1, 5 };

	assert_int_equal(profile__init(p), 0);
	p->identity.run_id = strdup("1-2-0");
	for (uint32_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_int_equal(kh_stacks__name(s, names[i]), i);
	p->ext.present = true;
	s->present = true;
	s->rate_hz = 99;
	s->unwinding = strdup("frame-pointer");
	assert_int_equal(kh_stacks__add(s, KH_STAGE_DECODE, KH_ATTRIBUTION_ROOT, erase, 2, 40), 0);
	assert_int_equal(kh_stacks__add(s, KH_STAGE_DECODE, KH_ATTRIBUTION_ROOT, line, 2, 30), 0);
	assert_int_equal(kh_stacks__add(s, KH_STAGE_DECODE, KH_ATTRIBUTION_ROOT, cr, 2, 20), 0);
	assert_int_equal(kh_stacks__add(s, KH_STAGE_DECODE, KH_ATTRIBUTION_ROOT, bidi, 2, 10), 0);
	assert_int_equal(kh_stacks__add(s, KH_STAGE_HOT_PATTERNS, KH_ATTRIBUTION_ROOT, semi, 3, 5),
			 0);
	s->samples = 105;
	s->tags[KH_SAMPLE_TAG_STAGE] = s->samples;
	s->timeline = calloc(1, sizeof(*s->timeline));
	assert_non_null(s->timeline);
	s->timeline[0] = (struct kh_stack_sample){ 1000, 7, 4 };
	s->timeline_count = 1;
	s->timeline_every = 1;
}

/*
 * Nothing a terminal acts on but the line breaks khprof writes: no C0 or
 * C1 control, DEL or bidirectional override (utf8__controls_display), and
 * no line of the output that a name began.
 */
static void assert_printable(const char *format, const char *text, size_t len)
{
	for (size_t i = 0; i < len;) {
		bool valid;
		size_t step = utf8__scan((const unsigned char *)text + i, len - i, &valid);

		if (valid && text[i] != '\n' && utf8__controls_display((const unsigned char *)text + i,
								       step))
			fail_msg("--format %s: a byte a terminal acts on (0x%02x) at %zu", format,
				 (unsigned char)text[i], i);
		i += step;
	}
	if (strstr(text, "\nkhprof: error: forged") || strstr(text, "\nforged"))
		fail_msg("--format %s: a name wrote a line of the output", format);
}

/*
 * --format NAME of the crafted record: every text format printable; the
 * record itself (json) as serde writes it, controls escaped by JSON but
 * other characters as they are; pprof binary.
 */
static char *report_as(const struct kh_profile *p, const char *name, size_t *len)
{
	const struct output_format *f = output_format__find(FORMAT_REPORT, name);
	char *text;

	assert_non_null(f);
	text = (char *)f->of_record(p, len);
	assert_non_null(text);
	if (!strcmp(name, "json")) {
		for (size_t i = 0; i < *len; i++)
			if ((unsigned char)text[i] < 0x20 && text[i] != '\n')
				fail_msg("--format json: control byte 0x%02x at %zu", text[i], i);
	} else if (!(f->flags & FORMAT_BINARY)) {
		assert_printable(name, text, *len);
	}
	return text;
}

/* Every format of report, the ones written after this test included. */
static void test_every_report_format(void **state)
{
	char names[256], *name, *save = NULL;
	struct kh_profile p;
	size_t count = 0;

	(void)state;
	make_crafted(&p);
	output_format__names(FORMAT_REPORT, " ", " ", names, sizeof(names));
	for (name = strtok_r(names, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
		size_t len;

		free(report_as(&p, name, &len));
		count++;
	}
	assert_true(count >= 7); /* text seed json html perfetto folded pprof */
	profile__free(&p);
}

/* The text report's table: short names, escaped, in padded columns. */
static void test_text_table(void **state)
{
	struct kh_profile p;
	size_t len;
	char *text, *seed;

	(void)state;
	make_crafted(&p);
	text = report_as(&p, "text", &len);
	assert_non_null(strstr(text, "  decode                        100  95.2%  " ERASE_SHOWN
				     " 40.0%, " LINE_SHOWN " 30.0%, " CR_SHOWN " 20.0%, "
				     BIDI_SHOWN " 10.0%\n"));
	assert_non_null(strstr(text, "  hot-patterns                    5   4.8%  " SEMI_SHOWN
				     " 100.0%\n"));
	free(text);
	/* The seed's text names no function: it is the seed's, byte for byte. */
	seed = report_as(&p, "seed", &len);
	assert_null(strstr(seed, "forged"));
	assert_null(strstr(seed, "degrof"));
	free(seed);
	profile__free(&p);
}

static void test_folded(void **state)
{
	struct kh_profile p;
	size_t len;
	char *text;

	(void)state;
	make_crafted(&p);
	text = report_as(&p, "folded", &len);
	assert_string_equal(text, "decode;main;" BIDI_SHOWN " 10\n"
				  "decode;main;" CR_SHOWN " 20\n"
				  "decode;main;" ERASE_SHOWN " 40\n"
				  "decode;main;" LINE_SHOWN " 30\n"
				  "hot-patterns;main;" ERASE_SHOWN ";" SEMI_STACKED " 5\n");
	free(text);
	profile__free(&p);
}

/*
 * Perfetto: the sample's name and its joined stack escaped (then quoted
 * as JSON: each backslash doubled), the stack's ';' only between frames.
 */
static void test_perfetto(void **state)
{
	struct kh_profile p;
	size_t len;
	char *json;

	(void)state;
	make_crafted(&p);
	json = report_as(&p, "perfetto", &len);
	assert_non_null(strstr(json, "{\"name\":\"semi:colon\\\\\\\\path\",\"cat\":\"khprof\""));
	assert_non_null(strstr(json, "\"stack\":\"main;erase\\\\x1b[2K\\\\x1b[1Gforged;"
				     "semi:colon\\\\\\\\path\"}"));
	/* No control character reaches the viewer, even JSON-escaped. */
	assert_null(strstr(json, "\\u001b"));
	assert_null(strstr(json, "\\u000a"));
	assert_null(strstr(json, "\\u000d"));
	free(json);
	profile__free(&p);
}

/* HTML: the flame graph's box titles escaped, then as HTML. */
static void test_html(void **state)
{
	struct kh_profile p;
	size_t len;
	char *html;

	(void)state;
	make_crafted(&p);
	html = report_as(&p, "html", &len);
	assert_non_null(strstr(html, "<title>" ERASE_SHOWN ": 40 samples"));
	assert_non_null(strstr(html, "<title>" BIDI_SHOWN ": 10 samples"));
	free(html);
	profile__free(&p);
}

/*
 * The record and pprof are data for programs: the symbols as the file has
 * them (JSON escapes them; pprof's readers print them as they choose).
 */
static void test_data_formats_keep_symbols(void **state)
{
	Perftools__Profiles__Profile *prof;
	unsigned char *zipped;
	struct kh_profile p;
	size_t zlen, len;
	bool erase = false;
	char *json;

	(void)state;
	make_crafted(&p);
	json = report_as(&p, "json", &len);
	assert_non_null(strstr(json, "\"erase\\u001b[2K\\u001b[1Gforged\""));
	assert_non_null(strstr(json, "\"line\\nkhprof: error: forged\""));
	free(json);
	zipped = (unsigned char *)report_as(&p, "pprof", &zlen);
	prof = pprof_read(zipped, zlen);
	for (size_t i = 0; i < prof->n_function; i++)
		erase |= !strcmp(prof->string_table[prof->function[i]->name], ERASE);
	assert_true(erase);
	perftools__profiles__profile__free_unpacked(prof, NULL);
	free(zipped);
	profile__free(&p);
}

/* diff's function rows: short names, escaped. */
static void test_diff_rows(void **state)
{
	struct kh_profile base, cand;
	struct kh_diff_side b = { "base", &base, NULL, 1 }, c = { "cand", &cand, NULL, 1 };
	char *text;

	(void)state;
	make_crafted(&base);
	make_crafted(&cand);
	text = diff__render_stack_functions(&b, &c);
	assert_non_null(text);
	assert_printable("diff", text, strlen(text));
	assert_non_null(strstr(text, ERASE_SHOWN));
	assert_non_null(strstr(text, LINE_SHOWN));
	assert_non_null(strstr(text, SEMI_SHOWN));
	free(text);
	profile__free(&base);
	profile__free(&cand);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_report_format),
		cmocka_unit_test(test_text_table),
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_perfetto),
		cmocka_unit_test(test_html),
		cmocka_unit_test(test_data_formats_keep_symbols),
		cmocka_unit_test(test_diff_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
