/* SPDX-License-Identifier: MIT */
/* utf8.h - reading UTF-8 as Rust's from_utf8_lossy does. */
#ifndef KHPROF_UTF8_H
#define KHPROF_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Length of the UTF-8 character at s (n bytes left).  For invalid input
 * *valid is false and the length is that of the maximal invalid subpart,
 * which gets one U+FFFD, as Rust's from_utf8_lossy does.
 */
size_t utf8__scan(const unsigned char *s, size_t n, bool *valid);

/* Copy of s with invalid UTF-8 replaced by U+FFFD, as serde strings must be. */
char *utf8__dup_lossy(const char *s);

#endif /* KHPROF_UTF8_H */
