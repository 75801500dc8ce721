// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

bool khprof_verbose;

static void emit(const char *prefix, const char *fmt, va_list ap)
{
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
