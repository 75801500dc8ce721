// SPDX-License-Identifier: MIT
/*
 * Function names as khprof shows them (userspace/analysis/formats/demangle.c):
 * symbols of real binaries built here (tests/workloads-rs, with the legacy
 * and the v0 Rust manglings; tests/workloads/stackwork_cxx.cc with g++),
 * and the names of the issue that asked for it, demangled by libiberty;
 * the tables' shortening on fixed strings; and every output of a record
 * whose names are mangled, as every record's are (records written before
 * khprof demangled included: the record did not change).
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

#include "demangle.h"
#include "diff_stacks.h"
#include "html.h"
#include "latency_text.h"
#include "outbuf.h"
#include "pprof.h"
#include "pprof_read.h"
#include "record.h"
#include "stacks.h"
#include "trace_event.h"
#include "utf8.h"

/* build/workloads/workload-rs (legacy) and workload-rs-v0, the `names` scenario. */
#define RS_SCAN_LEGACY "_ZN66_$LT$workload_rs..Needle$LT$T$GT$$u20$as$u20$workload_rs..Scan$GT$4scan17h1c76472075d7cd66E"
#define RS_SCAN_V0                                                                                 \
	"_RNvXCs5PW7SlhPIxA_11workload_rsINtB2_6NeedleINtNtNtNtCsjrHSEGnQ3l9_3std11collections4hash" \
	"3map7HashMapNtNtCslNYArtu3iFV_5alloc6string6StringINtNtB1F_3vec3VechEEENtB2_4Scan4scanB2_"
#define RS_SIFT_LEGACY "_ZN11workload_rs8Haystack4sift17h1d090b9021038ac6E"
#define RS_SIFT_V0                                                                                 \
	"_RINvMs_Cs5PW7SlhPIxA_11workload_rsNtB5_8Haystack4siftINtB5_6NeedleINtNtNtNtCsjrHSEGnQ3l9_" \
	"3std11collections4hash3map7HashMapNtNtCslNYArtu3iFV_5alloc6string6StringINtNtB21_3vec3Vech" \
	"EEEEB5_"
#define RS_NAMES_LEGACY "_ZN11workload_rs5names17h8e9bcc74445f71eeE"
#define RS_NAMES_V0 "_RNvCs5PW7SlhPIxA_11workload_rs5names"
#define RS_HASHMAP "std::collections::hash::map::HashMap<alloc::string::String, alloc::vec::Vec<u8>>"
/* build/workloads/stackwork-cxx */
#define CXX_PROBE                                                                                  \
	"_ZNK2kh6detail5TableINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt6vectorIiSaIiEE" \
	"E5probeEm"
#define CXX_PROBE_SHOWN                                                                            \
	"kh::detail::Table<std::__cxx11::basic_string<char, std::char_traits<char>, "               \
	"std::allocator<char> >, std::vector<int, std::allocator<int> > >::probe(unsigned long) const"
#define CXX_DECODER "_ZNK12_GLOBAL__N_17DecoderclEm"
/* Issue #35's, from the KeyHog scanner. */
#define KH_MAPPING "_ZN12regex_syntax7unicode16SimpleCaseFolder7mapping17h8e26700b3f84f47cE"
#define KH_MEMCHR "_RNvNtNtCsgEmfK2I1SDS_4core5slice6memchr14memchr_aligned"
#define KH_NORMALIZED                                                                              \
	"_ZN14keyhog_scanner17unicode_hardening15normalized_char17ha9ac915de997c226E.llvm."         \
	"1025850052142651839"
#define KH_CASE_FOLD                                                                               \
	"_ZN94_$LT$regex_syntax..hir..ClassUnicodeRange$u20$as$u20$regex_syntax..hir..interval.."   \
	"Interval$GT$16case_fold_simple17h4627339b50a66801E"

#define E "\xE2\x80\xA6" /* the ellipsis of the short names */

/* show(name) is want; how says what show does. */
static void assert_shows(char *(*show)(const char *), const char *how, const char *name,
			 const char *want)
{
	char *got = show(name);

	assert_non_null(got);
	if (strcmp(got, want))
		fail_msg("'%s' %s as '%s', wanted '%s'", name, how, got, want);
	free(got);
}

#define assert_demangles(name, want) assert_shows(kh_name__demangle, "demangled", name, want)
#define assert_shortens(name, want) assert_shows(kh_name__shorten, "shortened", name, want)

/* Legacy Rust: the path without the hash, and without LLVM's clone suffix. */
static void test_rust_legacy(void **state)
{
	(void)state;
	assert_demangles(KH_MAPPING, "regex_syntax::unicode::SimpleCaseFolder::mapping");
	assert_demangles(KH_NORMALIZED, "keyhog_scanner::unicode_hardening::normalized_char");
	assert_demangles(KH_CASE_FOLD, "<regex_syntax::hir::ClassUnicodeRange as "
				       "regex_syntax::hir::interval::Interval>::case_fold_simple");
	assert_demangles(RS_SCAN_LEGACY, "<workload_rs::Needle<T> as workload_rs::Scan>::scan");
	assert_demangles(RS_SIFT_LEGACY, "workload_rs::Haystack::sift");
	assert_demangles(RS_NAMES_LEGACY, "workload_rs::names");
	assert_demangles(RS_NAMES_LEGACY ".llvm.4029508290", "workload_rs::names");
}

/* v0: generic arguments spelled out, no crate disambiguators. */
static void test_rust_v0(void **state)
{
	(void)state;
	assert_demangles(KH_MEMCHR, "core::slice::memchr::memchr_aligned");
	assert_demangles(KH_MEMCHR ".llvm.123", "core::slice::memchr::memchr_aligned");
	assert_demangles(RS_SCAN_V0, "<workload_rs::Needle<" RS_HASHMAP "> as workload_rs::Scan>::scan");
	assert_demangles(RS_SIFT_V0, "<workload_rs::Haystack>::sift::<workload_rs::Needle<" RS_HASHMAP
				     ">>");
	assert_demangles(RS_NAMES_V0, "workload_rs::names");
}

/* C++: parameters and qualifiers kept (overloads differ by them), GCC's clones named. */
static void test_cxx(void **state)
{
	(void)state;
	assert_demangles(CXX_PROBE, CXX_PROBE_SHOWN);
	assert_demangles(CXX_DECODER, "(anonymous namespace)::Decoder::operator()(unsigned long) const");
	assert_demangles("_ZN2khlsERNS_4SinkEm", "kh::operator<<(kh::Sink&, unsigned long)");
	assert_demangles("_ZN2kh4idleILi3EEEvm", "void kh::idle<3>(unsigned long)");
	assert_demangles("_ZNSt6vectorIiSaIiEE9push_backERKi",
			 "std::vector<int, std::allocator<int> >::push_back(int const&)");
	assert_demangles("_ZN3foo3barEv.cold", "foo::bar() [clone .cold]");
	assert_demangles("_ZN3foo3barEv.llvm.77", "foo::bar()");
}

/* What does not demangle is shown as it is (LLVM's suffix aside). */
static void test_not_mangled(void **state)
{
	(void)state;
	assert_demangles("work_alpha", "work_alpha");
	assert_demangles("main.cold", "main.cold");
	assert_demangles("[libc.so.6]", "[libc.so.6]");
	assert_demangles("[pcre2 jit]", "[pcre2 jit]");
	assert_demangles("[unknown]", "[unknown]");
	assert_demangles("", "");
	assert_demangles("_Z", "_Z");
	assert_demangles("_ZN3foo", "_ZN3foo");     /* cut short */
	assert_demangles("_RNvC", "_RNvC");
	assert_demangles("helper.llvm.55", "helper");
	assert_demangles("helper.llvm.55.llvm.66", "helper");
	assert_demangles("helper.llvm.", "helper.llvm.");      /* no digits: not LLVM's */
	assert_demangles("helper.llvm.5x", "helper.llvm.5x");
	assert_demangles(".llvm.12", ".llvm.12");
}

/* The tables' names: generic arguments and parameters cut, the rest kept. */
static void test_shorten(void **state)
{
	(void)state;
	assert_shortens("regex_syntax::unicode::SimpleCaseFolder::mapping",
			"regex_syntax::unicode::SimpleCaseFolder::mapping");
	assert_shortens("<regex_syntax::hir::ClassUnicodeRange as "
			"regex_syntax::hir::interval::Interval>::case_fold_simple",
			"<ClassUnicodeRange as Interval>::case_fold_simple");
	assert_shortens("<workload_rs::Needle<" RS_HASHMAP "> as workload_rs::Scan>::scan",
			"<Needle<" E "> as Scan>::scan");
	assert_shortens("<workload_rs::Needle<T> as workload_rs::Scan>::scan",
			"<Needle<" E "> as Scan>::scan");
	assert_shortens("<workload_rs::Haystack>::sift::<workload_rs::Needle<" RS_HASHMAP ">>",
			"workload_rs::Haystack::sift");
	assert_shortens("<alloc::vec::Vec<u8>>::push", "alloc::vec::Vec<" E ">::push");
	assert_shortens("alloc::vec::Vec<T,A>::push", "alloc::vec::Vec<" E ">::push");
	assert_shortens("<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop",
			"<Vec<" E "> as Drop>::drop");
	assert_shortens("<dyn core::any::Any + core::marker::Send as core::fmt::Debug>::fmt",
			"<dyn Any + Send as Debug>::fmt");
	assert_shortens("<&mut F as core::ops::function::FnOnce<A>>::call_once",
			"<&mut F as FnOnce<" E ">>::call_once");
	assert_shortens("<workload_rs::main::{closure#0} as core::ops::function::FnOnce<()>>::call_once",
			"<main::{closure#0} as FnOnce<" E ">>::call_once");
	assert_shortens("<[alloc::string::String]>::join", "<[alloc::string::String]>::join");
	assert_shortens("<fn(u8) -> u8 as core::ops::Fn<(u8,)>>::call", "<fn(" E ") -> u8 as Fn<" E ">>::call");
	assert_shortens("core::ptr::drop_in_place<alloc::vec::Vec<u8>>", "core::ptr::drop_in_place<" E ">");
	assert_shortens("core::ptr::drop_in_place::<alloc::vec::Vec<u8>>", "core::ptr::drop_in_place");
	assert_shortens("foo::bar::<u8>::{closure#0}", "foo::bar::{closure#0}");
	assert_shortens("core::ops::function::FnOnce::call_once{{vtable.shim}}",
			"core::ops::function::FnOnce::call_once{{vtable.shim}}");
	assert_shortens(CXX_PROBE_SHOWN, "kh::detail::Table<" E ">::probe(" E ") const");
	assert_shortens("(anonymous namespace)::Decoder::operator()(unsigned long) const",
			"(anonymous namespace)::Decoder::operator()(" E ") const");
	assert_shortens("kh::operator<<(kh::Sink&, unsigned long)", "kh::operator<<(" E ")");
	assert_shortens("bool kh::operator< <int>(kh::Key<int> const&, kh::Key<int> const&)",
			"bool kh::operator< <" E ">(" E ")");
	assert_shortens("kh::Ptr<int>::operator->() const", "kh::Ptr<" E ">::operator->() const");
	assert_shortens("kh::Table::operator[](unsigned long)", "kh::Table::operator[](" E ")");
	assert_shortens("kh::Table::operator std::vector<int, std::allocator<int> >() const",
			"kh::Table::operator std::vector<" E ">() const");
	assert_shortens("void kh::idle<3>(unsigned long)", "void kh::idle<" E ">(" E ")");
	assert_shortens("main::{lambda(std::vector<int, std::allocator<int> > const&)#1}::operator()"
			"(std::vector<int, std::allocator<int> > const&) const",
			"main::{lambda(" E ")#1}::operator()(" E ") const");
	assert_shortens("foo::bar() [clone .cold]", "foo::bar() [clone .cold]");
	assert_shortens("std::__cxx11::basic_string<char>::_M_create[abi:cxx11](unsigned long&)",
			"std::__cxx11::basic_string<" E ">::_M_create[abi:cxx11](" E ")");
	assert_shortens("work_alpha", "work_alpha");
	assert_shortens("main.cold", "main.cold");
	assert_shortens("[libc.so.6]", "[libc.so.6]");
	assert_shortens("(no stage)", "(no stage)");
	assert_shortens("", "");
}

/* Brackets that do not pair (a name that is not a demangler's) leave the name whole. */
static void test_shorten_unpaired(void **state)
{
	char deep[300];

	(void)state;
	assert_shortens("a<b", "a<b");
	assert_shortens("x>y::z<T>", "x>y::z<T>");
	assert_shortens("f(int", "f(int");
	assert_shortens("<a::B as c::D", "<a::B as c::D");
	assert_shortens("v<(1)]>", "v<(1)]>");
	/* Deeper than the bound: whole, not a stack overflow. */
	memset(deep, 0, sizeof(deep));
	for (size_t i = 0; i < 100; i++)
		deep[i] = '<', deep[199 - i] = '>';
	deep[0] = 'f';
	deep[199] = '\0';
	assert_shortens(deep, deep);
}

/* The columns of padded names count characters, not bytes. */
static void test_utf8_columns(void **state)
{
	(void)state;
	assert_int_equal(utf8__chars("Vec<" E ">::push"), 12);
	assert_int_equal(utf8__chars(""), 0);
	assert_int_equal(utf8__chars("\xff" "a"), 2);
	assert_int_equal(utf8__prefix("a" E "b", 2), 4);
	assert_int_equal(utf8__prefix("a" E "b", 9), 5);
	assert_int_equal(utf8__prefix("abc", 0), 0);
}

/*
 * A record as --sample writes it for the Rust and C++ workloads: mangled
 * names; the hot-patterns scan under its legacy symbol, that symbol with
 * LLVM's clone suffix and its v0 symbol (v0_count samples), decode's
 * sift under v0 (legacy without v0 samples), a C++ stage.
 */
static void make_mangled(struct kh_profile *p, uint64_t v0_count)
{
	struct kh_stacks *s = &p->ext.stacks;
	/* Name i is names[i]: 1, 2 and 3 are the scan's symbols; sift as v0 with v0 samples. */
	const char *const names[] = {
		RS_NAMES_LEGACY, RS_SCAN_LEGACY, RS_SCAN_LEGACY ".llvm.402950829043034993",
		RS_SCAN_V0, v0_count ? RS_SIFT_V0 : RS_SIFT_LEGACY, "main", CXX_PROBE, CXX_DECODER,
	};
	uint32_t a[] = { 0, 1 }, b[] = { 0, 2 }, c[] = { 0, 3 }, d[] = { 0, 4 }, e[] = { 5, 6 };
	uint32_t f[] = { 5, 7 };

	assert_int_equal(profile__init(p), 0);
	for (uint32_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_int_equal(kh_stacks__name(s, names[i]), i);
	p->ext.present = true;
	s->present = true;
	s->rate_hz = 999;
	s->unwinding = strdup("frame-pointer");
	assert_int_equal(kh_stacks__add(s, KH_STAGE_HOT_PATTERNS, KH_ATTRIBUTION_ROOT, a, 2, 30), 0);
	assert_int_equal(kh_stacks__add(s, KH_STAGE_HOT_PATTERNS, KH_ATTRIBUTION_ROOT, b, 2, 10), 0);
	assert_int_equal(kh_stacks__add(s, KH_STAGE_HOT_PATTERNS, KH_ATTRIBUTION_ROOT, c, 2, v0_count), 0);
	assert_int_equal(kh_stacks__add(s, KH_STAGE_DECODE, KH_ATTRIBUTION_DECODED, d, 2, 40), 0);
	assert_int_equal(kh_stacks__add(s, KH_STAGE_PHASE1_TRIGGERS, KH_ATTRIBUTION_ROOT, e, 2, 15), 0);
	assert_int_equal(kh_stacks__add(s, KH_STAGE_PHASE1_TRIGGERS, KH_ATTRIBUTION_ROOT, f, 2, 5), 0);
	s->samples = 100 + v0_count;
	s->tags[KH_SAMPLE_TAG_STAGE] = s->samples;
	s->timeline = calloc(1, sizeof(*s->timeline));
	s->timeline[0] = (struct kh_stack_sample){ 1000, 7, 1 };
	s->timeline_count = 1;
	s->timeline_every = 1;
}

/* No output names a function by its symbol. */
static void assert_no_symbol(const char *text)
{
	static const char *const marks[] = { "_ZN", "_RN", "_RIN", ".llvm.", "17h" };

	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (strstr(text, marks[i]))
			fail_msg("a symbol in the output: %.60s", strstr(text, marks[i]));
}

static void test_view_merges_alike(void **state)
{
	struct kh_profile p;
	struct kh_stacks shown;
	uint32_t *map;

	(void)state;
	make_mangled(&p, 20);
	assert_int_equal(kh_stacks__shown(&p.ext.stacks, KH_NAMES_DEMANGLED, &shown, &map), 0);
	/* The legacy symbol and its clone are one name; v0 spells T out, a name of its own. */
	assert_int_equal(shown.name_count, p.ext.stacks.name_count - 1);
	assert_int_equal(map[1], map[2]);
	assert_int_not_equal(map[1], map[3]);
	assert_string_equal(shown.names[map[1]], "<workload_rs::Needle<T> as workload_rs::Scan>::scan");
	assert_int_equal(shown.stack_count, p.ext.stacks.stack_count);
	assert_int_equal(shown.stacks[1].frames[1], map[2]);
	assert_int_equal(shown.timeline_count, 1);
	assert_int_equal(shown.timeline[0].stack, 1);
	free(map);
	kh_stacks__free(&shown);
	/* Short, the v0 name joins them too. */
	assert_int_equal(kh_stacks__shown(&p.ext.stacks, KH_NAMES_SHORT, &shown, &map), 0);
	assert_int_equal(map[1], map[3]);
	assert_string_equal(shown.names[map[3]], "<Needle<" E "> as Scan>::scan");
	free(map);
	kh_stacks__free(&shown);
	profile__free(&p);
}

static void test_folded_demangled(void **state)
{
	struct kh_profile p;
	struct outbuf out;
	char *text;

	(void)state;
	make_mangled(&p, 20);
	outbuf__init(&out);
	kh_stacks__folded(&p.ext.stacks, &out);
	text = outbuf__finish(&out);
	assert_non_null(text);
	/* Whole names; the hash and the clone's stacks on one line. */
	assert_string_equal(text,
			    "decode;workload_rs::names;<workload_rs::Haystack>::sift::<workload_rs::"
			    "Needle<" RS_HASHMAP ">> 40\n"
			    "hot-patterns;workload_rs::names;<workload_rs::Needle<T> as "
			    "workload_rs::Scan>::scan 40\n"
			    "hot-patterns;workload_rs::names;<workload_rs::Needle<" RS_HASHMAP
			    "> as workload_rs::Scan>::scan 20\n"
			    "phase1-triggers;main;(anonymous namespace)::Decoder::operator()(unsigned "
			    "long) const 5\n"
			    "phase1-triggers;main;" CXX_PROBE_SHOWN " 15\n");
	free(text);
	profile__free(&p);
}

/* A name's ';' (a Rust array type) would split its frame in two: ':' as perf writes it. */
static void test_folded_separator(void **state)
{
	struct kh_profile p;
	struct outbuf out;
	uint32_t frames[2];
	char *text;

	(void)state;
	assert_int_equal(profile__init(&p), 0);
	p.ext.stacks.present = true;
	/* <[u8; 4] as core::fmt::Debug>::fmt, legacy */
	frames[0] = kh_stacks__name(&p.ext.stacks, "main");
	frames[1] = kh_stacks__name(&p.ext.stacks, "_ZN60_$LT$$u5b$u8$u3b$$u20$4$u5d$$u20$as$u20$"
						   "core..fmt..Debug$GT$3fmt17h0123456789abcdefE");
	assert_int_equal(kh_stacks__add(&p.ext.stacks, KH_STAGE_DECODE, KH_ATTRIBUTION_ROOT, frames,
					2, 3), 0);
	outbuf__init(&out);
	kh_stacks__folded(&p.ext.stacks, &out);
	text = outbuf__finish(&out);
	assert_string_equal(text, "decode;main;<[u8: 4] as core::fmt::Debug>::fmt 3\n");
	free(text);
	profile__free(&p);
}

static void test_top_table_short(void **state)
{
	struct kh_profile p;
	char *report;

	(void)state;
	make_mangled(&p, 20);
	report = profile__render_report(&p);
	assert_non_null(report);
	/* The three symbols of the scan are one function in the table. */
	assert_non_null(strstr(report, "  hot-patterns                   60  50.0%  <Needle<" E
				       "> as Scan>::scan 100.0%\n"));
	assert_non_null(strstr(report, "  decode                         40  33.3%  "
				       "workload_rs::Haystack::sift 100.0%\n"));
	assert_non_null(strstr(report, "  phase1-triggers                20  16.7%  "
				       "kh::detail::Table<" E ">::probe(" E ") const 75.0%, "
				       "(anonymous namespace)::Decoder::operator()(" E ") const 25.0%\n"));
	assert_no_symbol(report);
	free(report);
	profile__free(&p);
}

/* pprof: Function.name demangled whole, system_name the symbol, as profile.proto defines them. */
static void test_pprof_names(void **state)
{
	struct kh_profile p;
	unsigned char *zipped;
	size_t zlen;
	Perftools__Profiles__Profile *prof;
	bool scan = false, clone = false, plain = false;

	(void)state;
	make_mangled(&p, 20);
	zipped = profile__to_pprof(&p, &zlen);
	assert_non_null(zipped);
	prof = pprof_read(zipped, zlen);
	assert_int_equal(prof->n_function, p.ext.stacks.name_count);
	for (size_t i = 0; i < prof->n_function; i++) {
		const char *name = prof->string_table[prof->function[i]->name];
		const char *sys = prof->string_table[prof->function[i]->system_name];

		assert_string_equal(sys, p.ext.stacks.names[prof->function[i]->id - 1]);
		if (!strcmp(sys, RS_SCAN_LEGACY)) {
			assert_string_equal(name, "<workload_rs::Needle<T> as workload_rs::Scan>::scan");
			scan = true;
		}
		if (!strcmp(sys, RS_SCAN_LEGACY ".llvm.402950829043034993")) {
			assert_string_equal(name, "<workload_rs::Needle<T> as workload_rs::Scan>::scan");
			/* One string for one name. */
			assert_int_equal(prof->function[i]->name, prof->function[1]->name);
			clone = true;
		}
		if (!strcmp(sys, "main")) {
			assert_int_equal(prof->function[i]->name, prof->function[i]->system_name);
			plain = true;
		}
		if (!strcmp(sys, CXX_PROBE))
			assert_string_equal(name, CXX_PROBE_SHOWN);
	}
	assert_true(scan && clone && plain);
	perftools__profiles__profile__free_unpacked(prof, NULL);
	free(zipped);
	profile__free(&p);
}

static void test_html_and_perfetto_demangled(void **state)
{
	struct kh_profile p;
	char *html, *json;

	(void)state;
	make_mangled(&p, 20);
	html = profile__render_html(&p);
	assert_non_null(html);
	/* The box's title whole (hash and clone in one box: 40 samples), its label short. */
	assert_non_null(strstr(html, "<title>&lt;workload_rs::Needle&lt;T&gt; as "
				     "workload_rs::Scan&gt;::scan: 40 samples, 66.7%</title>"));
	assert_non_null(strstr(html, ">&lt;Needle&lt;" E "&gt; as Scan&gt;::scan</text>"));
	assert_non_null(strstr(html, "<title>" "kh::detail::Table&lt;std::__cxx11::basic_string&lt;"));
	assert_no_symbol(html);
	free(html);
	json = profile__to_trace_events(&p);
	assert_non_null(json);
	assert_non_null(strstr(json, "{\"name\":\"<workload_rs::Needle<T> as workload_rs::Scan>::scan\","
				     "\"cat\":\"khprof\",\"ph\":\"i\""));
	assert_non_null(strstr(json, "\"stack\":\"workload_rs::names;<workload_rs::Needle<T> as "
				     "workload_rs::Scan>::scan\""));
	assert_no_symbol(json);
	free(json);
	profile__free(&p);
}

/*
 * diff: the base's legacy symbols and the candidate's v0 ones name their
 * functions alike (a toolchain changed between two builds), in padded columns.
 */
static void test_diff_rows_short(void **state)
{
	struct kh_profile base, cand;
	struct kh_diff_side b = { "base", &base, NULL, 1 }, c = { "cand", &cand, NULL, 1 };
	char *text, *row, *next;

	(void)state;
	make_mangled(&base, 0);
	make_mangled(&cand, 60);
	text = diff__render_stack_functions(&b, &c);
	assert_non_null(text);
	/* 40 of 40 scan samples in the base, 100 of 100 in the candidate: one row, unchanged. */
	row = strstr(text, "  hot-patterns             <Needle<" E "> as Scan>::scan       "
			   "  100.0%  100.0%    +0.0 pp\n");
	if (!row)
		fail_msg("no padded scan row in:\n%s", text);
	next = strstr(strchr(row, '\n'), "<Needle<");
	if (next)
		fail_msg("the scan in two rows:\n%s", text);
	row = strstr(text, "  decode                   workload_rs::Haystack::sift       "
			   "100.0%  100.0%    +0.0 pp\n");
	if (!row || strstr(strchr(row, '\n'), "::sift"))
		fail_msg("sift not in one row:\n%s", text);
	assert_no_symbol(text);
	free(text);
	profile__free(&base);
	profile__free(&cand);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rust_legacy),
		cmocka_unit_test(test_rust_v0),
		cmocka_unit_test(test_cxx),
		cmocka_unit_test(test_not_mangled),
		cmocka_unit_test(test_shorten),
		cmocka_unit_test(test_shorten_unpaired),
		cmocka_unit_test(test_utf8_columns),
		cmocka_unit_test(test_view_merges_alike),
		cmocka_unit_test(test_folded_demangled),
		cmocka_unit_test(test_folded_separator),
		cmocka_unit_test(test_top_table_short),
		cmocka_unit_test(test_pprof_names),
		cmocka_unit_test(test_html_and_perfetto_demangled),
		cmocka_unit_test(test_diff_rows_short),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
