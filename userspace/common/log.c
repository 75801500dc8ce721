// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

bool khprof_verbose;

/*
 * One line, one write: stderr is unbuffered, so three calls were three
 * writes, and whatever else writes to the same terminal or pipe (the
 * traced program, a --follow-forks tracer) could land between the text
 * and its newline.  Longer lines than the buffer are written in pieces.
 */
static void emit(const char *prefix, const char *fmt, va_list ap)
{
	char line[2048];
	int n = snprintf(line, sizeof(line), "khprof: %s", prefix), m;
	va_list copy;

	va_copy(copy, ap);
	m = n >= 0 && (size_t)n < sizeof(line) ? vsnprintf(line + n, sizeof(line) - (size_t)n,
							   fmt, copy) : -1;
	va_end(copy);
	if (m >= 0 && (size_t)(n + m) + 1 < sizeof(line)) {
		line[n + m] = '\n';
		fwrite(line, 1, (size_t)(n + m) + 1, stderr);
		return;
	}
	fprintf(stderr, "khprof: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void log__error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("", fmt, ap);
	va_end(ap);
}

void log__warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("warning: ", fmt, ap);
	va_end(ap);
}

void log__note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("note: ", fmt, ap);
	va_end(ap);
}

void log__debug(const char *fmt, ...)
{
	va_list ap;

	if (!khprof_verbose)
		return;
	va_start(ap, fmt);
	emit("debug: ", fmt, ap);
	va_end(ap);
}
