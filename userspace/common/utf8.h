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

/*
 * Characters in s (an invalid subpart counts as the one U+FFFD it reads
 * as): the columns it takes in a table, for the text khprof pads (names
 * with an ellipsis, a Rust identifier in another script).
 */
size_t utf8__chars(const char *s);
/* Bytes of the first n characters of s (all of s when it has fewer): a cut between characters. */
size_t utf8__prefix(const char *s, size_t n);

/*
 * Whether the valid character of step bytes at s is one a terminal or a
 * reader acts on rather than shows: C0 and C1 controls, DEL, and the
 * bidirectional overrides and isolates, which reorder the rest of a line.
 */
bool utf8__controls_display(const unsigned char *s, size_t step);

/*
 * s made safe to print on a line of a terminal or a log: backslash, C0 and
 * C1 controls, DEL and the bidirectional overrides escaped (\n,
 * \x1b, \u202e), invalid bytes as \xff, other characters as they
 * are; cut short with "..." when it does not fit in len.  For strings
 * from files or programs khprof does not trust (probe notes, identity
 * keys) in its messages.  buf is returned.
 */
const char *utf8__escape(const char *s, char *buf, size_t len);
/* utf8__escape of the whole of s, however long (a C++ symbol can be kilobytes); malloc'd. */
char *utf8__escape_dup(const char *s);

#endif /* KHPROF_UTF8_H */
