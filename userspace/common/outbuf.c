// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outbuf.h"

void outbuf__init(struct outbuf *b)
{
	memset(b, 0, sizeof(*b));
}

/* Room for n more bytes plus the terminating NUL. */
static bool outbuf__reserve(struct outbuf *b, size_t n)
{
	size_t cap;
	char *grown;

	if (b->failed)
		return false;
	if (n < b->cap - b->len)
		return true;
	cap = b->cap ? b->cap : 256;
	while (n >= cap - b->len) {
		if (cap > ((size_t)-1) / 2) {
			b->failed = true;
			return false;
		}
		cap *= 2;
	}
	grown = realloc(b->data, cap);
	if (!grown) {
		b->failed = true;
		return false;
	}
	b->data = grown;
	b->cap = cap;
	return true;
}

void outbuf__put(struct outbuf *b, const char *s, size_t n)
{
	if (!outbuf__reserve(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void outbuf__puts(struct outbuf *b, const char *s)
{
	outbuf__put(b, s, strlen(s));
}

void outbuf__putc(struct outbuf *b, char c)
{
	outbuf__put(b, &c, 1);
}

void outbuf__printf(struct outbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = true;
		return;
	}
	if (!outbuf__reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *outbuf__finish(struct outbuf *b)
{
	char *text;

	if (b->failed || !outbuf__reserve(b, 0)) {
		free(b->data);
		outbuf__init(b);
		return NULL;
	}
	b->data[b->len] = '\0'; /* nothing may have been put yet */
	text = b->data;
	outbuf__init(b);
	return text;
}
