// SPDX-License-Identifier: MIT
/*
 * demangle.c - function names as khprof shows them (demangle.h).
 *
 * Demangling is libiberty's (Debian's libiberty-dev, the library c++filt,
 * gdb and perf use): Rust's legacy and v0 schemes and the Itanium C++ ABI,
 * kept up to date with the compilers by the GCC project and fuzzed with
 * binutils.  Debian 12's (20230104, of GCC 13's tree) has v0, which
 * libiberty has known since GCC 11: tests/unit/records/test_demangle.c
 * demangles v0 symbols of a workload built here.  elfutils' libdw, which names the frames, has no demangler of
 * its own, and a hand-written one would lag both languages' manglings.
 * The names come from the traced program's symbol tables (or a record
 * someone sent): libiberty bounds its recursion unless asked not to
 * (DMGL_NO_RECURSE_LIMIT, not set here).
 *
 * The shortening for tables is khprof's own: it is a choice of display,
 * not a grammar, and needs only the demangled text's brackets.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "demangle.h"
#include "outbuf.h"

#define ELLIPSIS "\xE2\x80\xA6" /* U+2026 */
/* Brackets nested deeper than this leave a name whole (and bound the recursion below). */
#define GROUP_DEPTH_MAX 64

/*
 * Drops LLVM's clone suffixes, ".llvm." and digits at the end or before
 * another suffix: ThinLTO adds them to the local functions it promotes
 * (`..E.llvm.1025850052142651839`), and they name no function of the
 * source.  GCC's (`.cold`, `.isra.0`) are kept: the demangler shows them
 * as `[clone .cold]`, which says where the time went.
 */
static void drop_llvm_suffixes(char *name)
{
	/* Not at the start: ".llvm.1" alone is a name, if a strange one. */
	char *at = name[0] ? strstr(name + 1, ".llvm.") : NULL;

	while (at) {
		char *end = at + 6;

		while (isdigit((unsigned char)*end))
			end++;
		if (end > at + 6 && (!*end || *end == '.')) {
			memmove(at, end, strlen(end) + 1);
			at = strstr(at, ".llvm.");
		} else {
			at = strstr(at + 1, ".llvm.");
		}
	}
}

char *kh_name__demangle(const char *name)
{
	char *bare = strdup(name), *shown;

	if (!bare)
		return NULL;
	drop_llvm_suffixes(bare);
	/*
	 * DMGL_AUTO tries Rust first (a legacy Rust symbol is also a valid
	 * C++ one, which would keep its hash), then C++.  Without
	 * DMGL_VERBOSE, Rust's `::h<hash>` and v0's crate disambiguators
	 * (`core[c1f1a4ba060b9bfa]`) are left out; DMGL_PARAMS keeps C++'s
	 * parameters, which tell overloads apart.  NULL: not mangled.
	 */
	shown = cplus_demangle(bare, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!shown)
		return bare;
	free(bare);
	return shown;
}

static char closer_of(char c)
{
	switch (c) {
	case '<': return '>';
	case '(': return ')';
	case '[': return ']';
	case '{': return '}';
	default: return 0;
	}
}

static bool is_closer(char c)
{
	return c == '>' || c == ')' || c == ']' || c == '}';
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || (unsigned char)c >= 0x80;
}

/*
 * One past the bracket that closes the group opened at s, or NULL when the
 * brackets do not pair before end.  "->" is an arrow (Rust's `fn(A) -> B`),
 * not a closing bracket.
 */
static const char *group_end(const char *s, const char *end)
{
	char want[GROUP_DEPTH_MAX];
	size_t depth = 0;

	for (const char *p = s; p < end; p++) {
		if (p[0] == '-' && p + 1 < end && p[1] == '>') {
			p++;
		} else if (closer_of(*p)) {
			if (depth == GROUP_DEPTH_MAX)
				return NULL;
			want[depth++] = closer_of(*p);
		} else if (is_closer(*p)) {
			if (!depth || want[depth - 1] != *p)
				return NULL;
			if (!--depth)
				return p + 1;
		}
	}
	return NULL;
}

/*
 * At p, a C++ operator's name ("operator<<", "operator()", "operator->*"):
 * its length, whose brackets are not groups; else 0.
 */
static size_t operator_len(const char *name, const char *p, const char *end)
{
	static const char symbols[] = "<>=!+-*/%^&|~,";
	size_t n = 8;

	if ((size_t)(end - p) < 9 || strncmp(p, "operator", 8) || (p > name && ident_char(p[-1])))
		return 0;
	if (!strncmp(p + 8, "()", 2) || !strncmp(p + 8, "[]", 2))
		return 10;
	while (p + n < end && strchr(symbols, p[n]))
		n++;
	return n > 8 ? n : 0;
}

/*
 * Appends [p, end) of name shortened: generic arguments as <…>, parameter
 * lists as (…), the insides of [] and {} shortened in turn.  type: a type
 * of a Rust qualified path, whose paths keep their last segment only
 * (`alloc::vec::Vec<u8>` is `Vec<…>`) and whose parentheses are tuples.
 * Elsewhere parentheses that begin a segment (`(anonymous namespace)`) are
 * not a parameter list.  false: the brackets do not pair.
 */
static bool shorten_span(struct outbuf *o, const char *name, const char *p, const char *end,
			 bool type)
{
	size_t path_at = o->len; /* type: where the current path begins in o */

	while (p < end) {
		size_t op = operator_len(name, p, end);
		const char *close;

		if (op) {
			outbuf__put(o, p, op);
			p += op;
		} else if (p[0] == '-' && p + 1 < end && p[1] == '>') {
			outbuf__put(o, p, 2);
			p += 2;
		} else if (closer_of(*p)) {
			bool segment = p == name || p[-1] == ':' || p[-1] == ' ';

			close = group_end(p, end);
			if (!close)
				return false;
			if (*p == '<' && p - name >= 2 && p[-1] == ':' && p[-2] == ':') {
				/*
				 * Rust's turbofish, a generic function's arguments
				 * (`sift::<S>`): v0 names them, legacy does not, and
				 * one function is one row whichever built it.
				 */
				if (!o->failed && o->len >= 2)
					o->len -= 2;
			} else if (*p == '<') {
				outbuf__puts(o, "<" ELLIPSIS ">");
			} else if (*p == '(' && (type || !segment)) {
				outbuf__puts(o, close - p == 2 ? "()" : "(" ELLIPSIS ")");
			} else {
				outbuf__putc(o, *p);
				if (!shorten_span(o, name, p + 1, close - 1, type))
					return false;
				outbuf__putc(o, close[-1]);
			}
			p = close;
		} else if (is_closer(*p)) {
			return false;
		} else if (type && p[0] == ':' && p + 1 < end && p[1] == ':' &&
			   !(p + 2 < end && p[2] == '{')) {
			/* The path's prefix goes; a closure keeps its function (`main::{closure#0}`). */
			if (!o->failed)
				o->len = path_at;
			p += 2;
		} else {
			outbuf__putc(o, *p);
			if (type && !ident_char(*p) && *p != ':')
				path_at = o->len;
			p++;
		}
	}
	return true;
}

/* The " as " of a qualified path's <Type as Trait> outside its types' brackets, or NULL. */
static const char *top_level_as(const char *p, const char *end)
{
	while (p < end) {
		if (closer_of(*p)) {
			p = group_end(p, end);
			if (!p)
				return NULL;
		} else if ((size_t)(end - p) > 4 && !strncmp(p, " as ", 4)) {
			return p;
		} else {
			p++;
		}
	}
	return NULL;
}

/*
 * A leading Rust qualified path, [p, end) its inside: `<Type as Trait>`
 * with each by its last segment, or a v0 inherent impl's `<Type>` as the
 * type alone when it is a path, as the legacy scheme writes it
 * (`<alloc::vec::Vec<u8>>` is `alloc::vec::Vec<…>`; `<[T]>`, `<&str>`
 * keep their brackets).
 */
static bool shorten_qualified(struct outbuf *o, const char *name, const char *p, const char *end)
{
	const char *as = top_level_as(p, end);
	size_t at = o->len;

	outbuf__putc(o, '<');
	if (as) {
		if (!shorten_span(o, name, p, as, true))
			return false;
		outbuf__puts(o, " as ");
		if (!shorten_span(o, name, as + 4, end, true))
			return false;
	} else if (!shorten_span(o, name, p, end, false)) {
		return false;
	}
	outbuf__putc(o, '>');
	if (!as && !o->failed && ident_char(o->data[at + 1]) &&
	    !memchr(o->data + at, ' ', o->len - at)) {
		memmove(o->data + at, o->data + at + 1, o->len - at - 2);
		o->len -= 2;
	}
	return true;
}

char *kh_name__shorten(const char *shown)
{
	const char *p = shown, *end = shown + strlen(shown), *close;
	struct outbuf o;
	bool ok = true;

	outbuf__init(&o);
	if (*p == '<') {
		close = group_end(p, end);
		ok = close && shorten_qualified(&o, shown, p + 1, close - 1);
		p = close;
	}
	ok = ok && shorten_span(&o, shown, p, end, false);
	if (!ok) {
		free(outbuf__finish(&o));
		return strdup(shown);
	}
	return outbuf__finish(&o);
}
