// SPDX-License-Identifier: MIT
/*
 * utf8.c - UTF-8 as Rust's from_utf8_lossy reads it, for every writer that
 * must not pass invalid UTF-8 on (the record's strings, JSON, OpenMetrics
 * label values): in common, below all of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

size_t utf8__scan(const unsigned char *s, size_t n, bool *valid)
{
	unsigned char lo = 0x80, hi = 0xBF;
	size_t need;

	*valid = false;
	if (n == 0)
		return 0;
	if (s[0] < 0x80) {
		*valid = true;
		return 1;
	}
	if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		need = 1;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		need = 2;
		/* Overlong forms and UTF-16 surrogates are not UTF-8. */
		lo = s[0] == 0xE0 ? 0xA0 : 0x80;
		hi = s[0] == 0xED ? 0x9F : 0xBF;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		need = 3;
		/* Overlong forms and code points above U+10FFFF. */
		lo = s[0] == 0xF0 ? 0x90 : 0x80;
		hi = s[0] == 0xF4 ? 0x8F : 0xBF;
	} else {
		return 1;
	}
	for (size_t i = 1; i <= need; i++) {
		if (i >= n || s[i] < lo || s[i] > hi)
			return i;
		lo = 0x80;
		hi = 0xBF;
	}
	*valid = true;
	return need + 1;
}

char *utf8__dup_lossy(const char *s)
{
	static const char replacement[] = "\xEF\xBF\xBD";
	size_t n = strlen(s), len = 0;
	char *out = malloc(n * 3 + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		bool valid;
		size_t step = utf8__scan((const unsigned char *)s + i, n - i, &valid);

		if (valid) {
			memcpy(out + len, s + i, step);
			len += step;
		} else {
			memcpy(out + len, replacement, 3);
			len += 3;
		}
		i += step;
	}
	out[len] = '\0';
	return out;
}

size_t utf8__chars(const char *s)
{
	size_t n = strlen(s), chars = 0;
	bool valid;

	for (size_t i = 0; i < n; chars++)
		i += utf8__scan((const unsigned char *)s + i, n - i, &valid);
	return chars;
}

size_t utf8__prefix(const char *s, size_t n)
{
	size_t len = strlen(s), i = 0;
	bool valid;

	while (n-- && i < len)
		i += utf8__scan((const unsigned char *)s + i, len - i, &valid);
	return i;
}

/* The code point of a valid sequence of step bytes. */
static unsigned int code_point(const unsigned char *s, size_t step)
{
	unsigned int c = step == 1 ? s[0] : s[0] & (0x7F >> step);

	for (size_t i = 1; i < step; i++)
		c = (c << 6) | (s[i] & 0x3F);
	return c;
}

/*
 * Characters a terminal or a reader would act on rather than show: C0 and
 * C1 controls, DEL, and the bidirectional overrides and isolates, which
 * reorder the rest of a line ("Trojan Source").
 */
static bool acts_on_display(unsigned int c)
{
	return c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) ||
	       (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

bool utf8__controls_display(const unsigned char *s, size_t step)
{
	return acts_on_display(code_point(s, step));
}

/* The escaped form of the character at u + i (n bytes in all) into piece; its length. */
static size_t escape_one(const unsigned char *u, size_t n, size_t i, size_t *step, char *piece,
			 size_t room)
{
	bool valid;
	size_t len = 0;
	unsigned int c;

	*step = utf8__scan(u + i, n - i, &valid);
	if (!valid) {
		for (size_t j = 0; j < *step; j++)
			len += (size_t)snprintf(piece + len, room - len, "\\x%02x", u[i + j]);
		return len;
	}
	c = code_point(u + i, *step);
	if (c == '\\' || c == '\n' || c == '\t' || c == '\r')
		return (size_t)snprintf(piece, room, "\\%c",
					c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
	if (acts_on_display(c))
		return (size_t)snprintf(piece, room, c < 0x80 ? "\\x%02x" : "\\u%04x", c);
	memcpy(piece, u + i, *step);
	return *step;
}

const char *utf8__escape(const char *s, char *buf, size_t len)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)u), used = 0, whole = 0, step;
	char piece[16];

	if (len == 0)
		return buf;
	for (size_t i = 0; i < n; i += step)
		whole += escape_one(u, n, i, &step, piece, sizeof(piece));
	for (size_t i = 0; i < n; i += step) {
		size_t plen = escape_one(u, n, i, &step, piece, sizeof(piece));

		/*
		 * When the whole does not fit, room for "..." is kept after
		 * every piece, so the first piece that does not fit is
		 * replaced by it.
		 */
		if (whole >= len && used + plen + 4 > len) {
			snprintf(buf + used, len - used, "...");
			return buf;
		}
		memcpy(buf + used, piece, plen);
		used += plen;
	}
	buf[used] = '\0';
	return buf;
}

char *utf8__escape_dup(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), whole = 0, used = 0, step;
	char piece[16], *out;

	for (size_t i = 0; i < n; i += step)
		whole += escape_one(u, n, i, &step, piece, sizeof(piece));
	out = malloc(whole + 1);
	for (size_t i = 0; out && i < n; i += step)
		used += escape_one(u, n, i, &step, out + used, whole + 1 - used);
	if (out)
		out[used] = '\0';
	return out;
}
