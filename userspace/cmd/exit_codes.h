/* SPDX-License-Identifier: MIT */
/*
 * exit_codes.h - what khprof's commands return: the contract scripts and CI
 * read, so in a header of its own rather than beside the messages (log.h).
 */
#ifndef KHPROF_EXIT_CODES_H
#define KHPROF_EXIT_CODES_H

/* Documented exit codes (README.md, khprof --help). */
enum khprof_exit {
	KHPROF_EXIT_OK = 0,
	KHPROF_EXIT_FAILURE = 1,     /* tracing could not start or failed */
	KHPROF_EXIT_USAGE = 2,       /* bad command line */
	KHPROF_EXIT_BAD_INPUT = 2,   /* unreadable or malformed record, ELF or config file */
	KHPROF_EXIT_REGRESSION = 1,  /* diff: a regression, so that CI fails the job */
	KHPROF_EXIT_NOT_COMPARABLE = 3, /* diff: the records' identities differ */
	KHPROF_EXIT_CANNOT_JUDGE = 4,   /* diff: too few runs, or too many starved of CPU */
	KHPROF_EXIT_CANNOT_EXEC = 126,
	KHPROF_EXIT_NOT_FOUND = 127,
};

#endif /* KHPROF_EXIT_CODES_H */
