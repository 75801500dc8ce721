/* SPDX-License-Identifier: MIT */
/*
 * outbuf.h - growable text buffer for the JSON writer and the text report.
 *
 * Appends never fail visibly: the first allocation failure marks the
 * buffer failed and outbuf__finish() then returns NULL, so builders need
 * one check at the end instead of one per append.
 */
#ifndef KHPROF_OUTBUF_H
#define KHPROF_OUTBUF_H

#include <stdbool.h>
#include <stddef.h>

struct outbuf {
	char *data;
	size_t len;
	size_t cap;
	bool failed;
};

void outbuf__init(struct outbuf *b);
void outbuf__put(struct outbuf *b, const char *s, size_t n);
void outbuf__puts(struct outbuf *b, const char *s);
void outbuf__putc(struct outbuf *b, char c);
void outbuf__printf(struct outbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* NUL-terminated text owned by the caller, or NULL after a failure. */
char *outbuf__finish(struct outbuf *b);

#endif /* KHPROF_OUTBUF_H */
