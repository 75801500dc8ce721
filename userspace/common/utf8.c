// SPDX-License-Identifier: MIT
/*
 * utf8.c - UTF-8 as Rust's from_utf8_lossy reads it, for every writer that
 * must not pass invalid UTF-8 on (the record's strings, JSON, OpenMetrics
 * label values): in common, below all of them.
 */
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
