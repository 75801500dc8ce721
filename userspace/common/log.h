/* SPDX-License-Identifier: MIT */
/* Messages in git's manner: "khprof: <failure> '<subject>': <reason> (<hint>)". */
#ifndef KHPROF_LOG_H
#define KHPROF_LOG_H

#include <stdbool.h>

/* Documented exit codes (README.md, khprof --help). */
enum khprof_exit {
	KHPROF_EXIT_OK = 0,
	KHPROF_EXIT_FAILURE = 1,     /* tracing could not start or failed */
	KHPROF_EXIT_USAGE = 2,       /* bad command line */
	KHPROF_EXIT_BAD_INPUT = 2,   /* unreadable or malformed record, ELF or config file */
	KHPROF_EXIT_REGRESSION = 1,  /* diff: a regression, so that CI fails the job */
	KHPROF_EXIT_NOT_COMPARABLE = 3, /* diff: the records' identities differ */
	KHPROF_EXIT_TOO_FEW_RUNS = 4,   /* diff: one record on a side, no verdict */
	KHPROF_EXIT_CANNOT_EXEC = 126,
	KHPROF_EXIT_NOT_FOUND = 127,
};

extern bool khprof_verbose;

void log__error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log__note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log__debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
