// SPDX-License-Identifier: MIT
/*
 * json_doc.c - JSON text to a tree, for the record reader (json_read.c).
 *
 * Two passes over the text, one grammar: the lexical pass checks every
 * string, escape and number token and every byte outside them first, so
 * that such a problem is named wherever it is; the structural pass then
 * builds a tree whose number nodes keep their source span.  Its errors
 * ("invalid JSON at line L column C") point where the cJSON-based reader
 * pointed, so that messages did not change (tests/unit/records/test_json.c pins
 * each one); the rules that decide that position are cJSON's: see
 * doc__skip_blank and doc__fail.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "json_doc.h"
#include "json_number.h"
#include "record.h"
#include "utf8.h"

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

int parse__fail(struct parse *ps, const char *fmt, ...)
{
	va_list ap;

	if (!ps->failed && ps->errlen) {
		va_start(ap, fmt);
		vsnprintf(ps->err, ps->errlen, fmt, ap);
		va_end(ap);
	}
	ps->failed = true;
	return -EINVAL;
}

int parse__nomem(struct parse *ps)
{
	parse__fail(ps, "out of memory");
	ps->nomem = true;
	return -ENOMEM;
}

/* serde_json-style position of a byte offset. */
int parse__fail_at(struct parse *ps, size_t offset, const char *what)
{
	size_t line = 1, column = 1;

	for (size_t i = 0; i < offset && ps->text[i]; i++) {
		if (ps->text[i] == '\n') {
			line++;
			column = 1;
		} else {
			column++;
		}
	}
	return parse__fail(ps, "%s at line %zu column %zu", what, line, column);
}

/* ------------------------------------------------------------------ */
/* Lexical pass: strings, escapes, numbers and stray bytes             */
/* ------------------------------------------------------------------ */

static unsigned hex_digit(char c)
{
	return c >= '0' && c <= '9' ? (unsigned)(c - '0')
	     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
	     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16;
}

/* Four hex digits at s (checked by the lexical pass). */
static unsigned hex4(const char *s)
{
	unsigned value = 0;

	for (int k = 0; k < 4; k++)
		value = value * 16 + hex_digit(s[k]);
	return value;
}

/* Length of the escape at s[i], or 0 after an error. */
static size_t lex__escape(struct parse *ps, size_t i)
{
	const char *s = ps->text;

	if (!s[i + 1] || !strchr("\"\\/bfnrtu", s[i + 1])) {
		parse__fail_at(ps, i, "invalid escape");
		return 0;
	}
	if (s[i + 1] != 'u')
		return 2;
	for (size_t k = 2; k < 6; k++) {
		if (hex_digit(s[i + k]) == 16) {
			parse__fail_at(ps, i, "invalid escape");
			return 0;
		}
	}
	/* C strings end at NUL, so U+0000 cannot be kept. */
	if (hex4(s + i + 2) == 0) {
		parse__fail_at(ps, i, "unsupported \\u0000 in string");
		return 0;
	}
	return 6;
}

/* Offset just past the string that opens at start, or 0 after an error. */
static size_t lex__string(struct parse *ps, size_t start)
{
	const unsigned char *s = (const unsigned char *)ps->text;
	size_t i = start + 1;

	for (;;) {
		bool valid;

		if (s[i] == '\0') {
			parse__fail_at(ps, i, "EOF while parsing a string");
			return 0;
		}
		if (s[i] == '"')
			return i + 1;
		if (s[i] == '\\') {
			size_t len = lex__escape(ps, i);

			if (!len)
				return 0;
			i += len;
			continue;
		}
		if (s[i] < 0x20) {
			parse__fail_at(ps, i, "control character (\\u0000-\\u001F) found while parsing a string");
			return 0;
		}
		/* The terminating NUL stops a truncated sequence, so 4 is safe. */
		i += utf8__scan(s + i, 4, &valid);
		if (!valid) {
			parse__fail_at(ps, i, "invalid UTF-8");
			return 0;
		}
	}
}

/* The characters a number token is made of (a wider set than the grammar's). */
static const char number_chars[] = "0123456789+-eE.";

static int lex__number(struct parse *ps, size_t *pos)
{
	size_t start = *pos, len = strspn(ps->text + start, number_chars);
	struct number n;

	*pos = start + len;
	/* Range errors only matter for fields we read, as in serde_json. */
	if (number__parse(ps->text + start, len, &n) == -EINVAL)
		return parse__fail_at(ps, start, "invalid number");
	return 0;
}

/*
 * Rejects what is wrong with a token, or a byte outside tokens that no
 * JSON text holds (a control character, a byte order mark, any non-ASCII).
 * Nesting is left to the structural pass (1000 levels); serde_json skips
 * unknown members without any depth limit, so only absurd records differ.
 */
static int lex(struct parse *ps, size_t *values, size_t *chars)
{
	const unsigned char *s = (const unsigned char *)ps->text;
	size_t i = 0;

	/*
	 * It also counts what the tree will need, so that the tree takes one
	 * allocation of each: values (strings that are not member names,
	 * numbers, containers, literals: t, f and n occur once in each), and
	 * the bytes of every string with its NUL, never fewer than decoded.
	 * Grown by doubling, a 66 MB record's tree moved 0.5 GB about.
	 */
	*values = 0;
	*chars = 0;
	while (s[i]) {
		unsigned char c = s[i];

		if (c == '"') {
			size_t start = i, k;

			i = lex__string(ps, i);
			if (!i)
				return -EINVAL;
			*chars += i - start - 1;
			for (k = i; s[k] == ' ' || s[k] == '\n' || s[k] == '\t' || s[k] == '\r'; k++)
				;
			*values += s[k] != ':';
			continue;
		}
		if (c == '-' || (c >= '0' && c <= '9')) {
			int err = lex__number(ps, &i);

			if (err)
				return err;
			(*values)++;
			continue;
		}
		if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c >= 0x80)
			return parse__fail_at(ps, i, "expected value");
		*values += c == '{' || c == '[' || c == 't' || c == 'f' || c == 'n';
		i++;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Structural pass: the tree                                           */
/* ------------------------------------------------------------------ */

/* Containers deeper than this are refused, where cJSON refused them. */
#define DOC_MAX_DEPTH 1000

static int doc__nomem(struct doc *d)
{
	return parse__nomem(d->ps);
}

/* A structural error where cJSON put it: the offset, or the final NUL. */
static int doc__fail(struct doc *d)
{
	if (d->ps->failed)
		return -EINVAL;
	return parse__fail_at(d->ps, d->offset < d->length ? d->offset : d->length - 1,
			      "invalid JSON");
}

static bool doc__can_read(const struct doc *d, size_t n)
{
	return d->offset + n <= d->length;
}

static bool doc__at(const struct doc *d, char c)
{
	return d->offset < d->length && d->text[d->offset] == c;
}

/*
 * Skips every byte up to the space (the lexical pass let only blanks
 * through), the final NUL too, then steps back onto the NUL: positions
 * after the end are reported at the NUL, as cJSON does.
 */
static void doc__skip_blank(struct doc *d)
{
	if (d->offset >= d->length)
		return;
	while (d->offset < d->length && (unsigned char)d->text[d->offset] <= ' ')
		d->offset++;
	if (d->offset == d->length)
		d->offset--;
}

static int doc__node(struct doc *d, size_t *idx)
{
	if (array__reserve((void **)&d->nodes, &d->node_cap, d->node_count + 1,
			   sizeof(*d->nodes)))
		return doc__nomem(d);
	*idx = d->node_count++;
	d->nodes[*idx] = (struct jnode){ .key_at = JNODE_NONE, .str_at = JNODE_NONE,
					 .bad_at = JNODE_NONE,
					 .child_at = JNODE_NONE, .next_at = JNODE_NONE };
	return 0;
}

static int doc__put(struct doc *d, const char *bytes, size_t n)
{
	if (array__reserve((void **)&d->chars, &d->chars_cap, d->chars_len + n, 1))
		return doc__nomem(d);
	memcpy(d->chars + d->chars_len, bytes, n);
	d->chars_len += n;
	return 0;
}

static int doc__put_utf8(struct doc *d, uint32_t cp)
{
	char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xC0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3F));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xE0 | cp >> 12);
		b[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		b[2] = (char)(0x80 | (cp & 0x3F));
		n = 3;
	} else {
		b[0] = (char)(0xF0 | cp >> 18);
		b[1] = (char)(0x80 | (cp >> 12 & 0x3F));
		b[2] = (char)(0x80 | (cp >> 6 & 0x3F));
		b[3] = (char)(0x80 | (cp & 0x3F));
		n = 4;
	}
	return doc__put(d, b, n);
}

/*
 * The \u escape at s (one, or a surrogate pair of two) as UTF-8; its
 * length, or 0 on failure.  A lone surrogate, which UTF-8 cannot hold,
 * becomes U+FFFD and sets *lone: serde refuses it only where it reads
 * the string (json_read.c), not in a member it skips.
 */
static size_t doc__unicode(struct doc *d, const char *s, const char *end, bool *lone)
{
	uint32_t first = hex4(s + 2), second;

	if (first >= 0xDC00 && first <= 0xDFFF)
		goto lone;
	if (first < 0xD800 || first > 0xDBFF)
		return doc__put_utf8(d, first) ? 0 : 6;
	if (end - (s + 6) < 6 || s[6] != '\\' || s[7] != 'u')
		goto lone;
	second = hex4(s + 8);
	if (second < 0xDC00 || second > 0xDFFF)
		goto lone;
	return doc__put_utf8(d, 0x10000 + ((first & 0x3FF) << 10 | (second & 0x3FF))) ? 0 : 12;
lone:
	*lone = true;
	return doc__put_utf8(d, 0xFFFD) ? 0 : 6;
}

/*
 * The string at the offset, decoded into d->chars; *at is where it
 * starts.  Not a string: the error is one byte further, as in cJSON; a
 * lone surrogate: at its backslash.
 */
static int doc__string(struct doc *d, uint32_t *at, uint32_t *bad_at)
{
	const char *s = d->text + d->offset + 1, *end;

	if (!doc__at(d, '"')) {
		d->offset++;
		return doc__fail(d);
	}
	/* The lexical pass checked the escapes, so the end is the next bare quote. */
	for (end = s; *end != '"'; end += *end == '\\' ? 2 : 1)
		;
	*at = (uint32_t)d->chars_len;
	while (s < end) {
		const char *run = s;
		size_t step;

		while (s < end && *s != '\\')
			s++;
		if (s > run && doc__put(d, run, (size_t)(s - run)))
			return -ENOMEM;
		if (s == end)
			break;
		if (s[1] == 'u') {
			bool lone = false;

			step = doc__unicode(d, s, end, &lone);
			if (d->ps->failed)
				return -ENOMEM;
			/* A member name is always read: serde refuses it there. */
			if (lone && !bad_at)
				step = 0;
			else if (lone && *bad_at == JNODE_NONE)
				*bad_at = (uint32_t)(s - d->text);
		} else {
			static const char from[] = "bfnrt\"\\/", to[] = "\b\f\n\r\t\"\\/";
			char c = to[strchr(from, s[1]) - from];

			step = doc__put(d, &c, 1) ? 0 : 2;
			if (d->ps->failed)
				return -ENOMEM;
		}
		if (!step) {
			d->offset = (size_t)(s - d->text);
			return doc__fail(d);
		}
		s += step;
	}
	if (doc__put(d, "", 1))
		return -ENOMEM;
	d->offset = (size_t)(end - d->text) + 1;
	return 0;
}

static int doc__value(struct doc *d, size_t idx);

/*
 * An array or an object at the offset, into node idx.  Each element is
 * read after its separator (or the opening bracket) and the blanks after
 * it; a missing separator or closing bracket is reported where it should
 * have been, past the blanks.
 */
static int doc__container(struct doc *d, size_t idx, bool object)
{
	char close = object ? '}' : ']';
	size_t prev = JNODE_NONE;

	if (d->depth >= DOC_MAX_DEPTH)
		return doc__fail(d);
	d->depth++;
	d->nodes[idx].type = object ? J_OBJECT : J_ARRAY;
	d->offset++;
	doc__skip_blank(d);
	if (!doc__at(d, close)) {
		d->offset--;
		do {
			size_t child;
			uint32_t key = JNODE_NONE;

			if (doc__node(d, &child))
				return -ENOMEM;
			d->offset++;
			doc__skip_blank(d);
			if (object) {
				if (doc__string(d, &key, NULL))
					return -EINVAL;
				doc__skip_blank(d);
				if (!doc__at(d, ':'))
					return doc__fail(d);
				d->offset++;
				doc__skip_blank(d);
			}
			if (doc__value(d, child))
				return -EINVAL;
			doc__skip_blank(d);
			d->nodes[child].key_at = key;
			if (prev == JNODE_NONE)
				d->nodes[idx].child_at = (uint32_t)child;
			else
				d->nodes[prev].next_at = (uint32_t)child;
			prev = child;
			d->nodes[idx].count++;
		} while (doc__at(d, ','));
		if (!doc__at(d, close))
			return doc__fail(d);
	}
	d->depth--;
	d->offset++;
	return 0;
}

static bool doc__literal(struct doc *d, const char *word)
{
	size_t n = strlen(word);

	if (!doc__can_read(d, n) || strncmp(d->text + d->offset, word, n))
		return false;
	d->offset += n;
	return true;
}

static size_t digits_span(const char *s)
{
	return strspn(s, "0123456789");
}

/*
 * Length of the number at s, -?int(.frac?)?(e[+-]?exp)?: the whole token
 * when serde reads it (which takes "18446744073709551616." as serde_json
 * does), its number part when serde stops early at "out of range" without
 * looking further, as for "1e400-3": "-3" is then a structural error, as
 * it was when cJSON's strtod ended the number there.
 */
static size_t number_span(const char *s)
{
	size_t i = s[0] == '-', n;

	i += digits_span(s + i);
	if (s[i] == '.')
		i += 1 + digits_span(s + i + 1);
	if (s[i] == 'e' || s[i] == 'E') {
		size_t sign = s[i + 1] == '+' || s[i + 1] == '-';

		if ((n = digits_span(s + i + 1 + sign)))
			i += 1 + sign + n;
	}
	return i;
}

static int doc__value(struct doc *d, size_t idx)
{
	struct jnode *node = &d->nodes[idx];
	char c = d->offset < d->length ? d->text[d->offset] : '\0';

	if (doc__literal(d, "null")) {
		node->type = J_NULL;
		return 0;
	}
	if (doc__literal(d, "false")) {
		node->type = J_FALSE;
		return 0;
	}
	if (doc__literal(d, "true")) {
		node->type = J_TRUE;
		return 0;
	}
	if (c == '"') {
		node->type = J_STRING;
		return doc__string(d, &node->str_at, &node->bad_at);
	}
	if (c == '-' || (c >= '0' && c <= '9')) {
		node->type = J_NUMBER;
		node->start = (uint32_t)d->offset;
		node->len = (uint32_t)number_span(d->text + d->offset);
		d->offset += node->len;
		return 0;
	}
	if (c == '[' || c == '{')
		return doc__container(d, idx, c == '{');
	return doc__fail(d);
}

/* Fills the pointers, now that nodes and strings no longer move. */
static void doc__link(struct doc *d)
{
	for (size_t i = 0; i < d->node_count; i++) {
		struct jnode *n = &d->nodes[i];

		n->key = n->key_at == JNODE_NONE ? NULL : d->chars + n->key_at;
		n->string = n->str_at == JNODE_NONE ? NULL : d->chars + n->str_at;
		n->child = n->child_at == JNODE_NONE ? NULL : &d->nodes[n->child_at];
		n->next = n->next_at == JNODE_NONE ? NULL : &d->nodes[n->next_at];
	}
}

/* The whole text as one value and nothing after it; the root, or NULL. */
const struct jnode *doc__parse(struct doc *d)
{
	size_t root, chars;

	if (lex(d->ps, &d->values, &chars))
		return NULL;
	/* Exactly that: array__reserve would round up to a power of two. */
	d->nodes = malloc((d->values + 1) * sizeof(*d->nodes));
	d->chars = malloc(chars + 1);
	if (!d->nodes || !d->chars) {
		doc__nomem(d);
		return NULL;
	}
	d->node_cap = d->values + 1;
	d->chars_cap = chars + 1;
	d->text = d->ps->text;
	d->length = strlen(d->text) + 1;
	/* A byte order mark, which cJSON skips, is refused by the lexical pass. */
	doc__skip_blank(d);
	if (doc__node(d, &root) || doc__value(d, root))
		return NULL;
	doc__skip_blank(d);
	if (!doc__at(d, '\0')) {
		doc__fail(d);
		return NULL;
	}
	/*
	 * A NUL inside the text ended it early: what follows is trailing
	 * characters to serde, whatever they are (a NUL is not blank).
	 */
	if (d->ps->length && d->offset < d->ps->length) {
		parse__fail_at(d->ps, d->offset, "trailing characters");
		return NULL;
	}
	doc__link(d);
	return &d->nodes[root];
}

void doc__free(struct doc *d)
{
	free(d->nodes);
	free(d->chars);
}
