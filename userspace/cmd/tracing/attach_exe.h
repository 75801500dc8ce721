/* SPDX-License-Identifier: MIT */
/*
 * khprof attach --exe PATH: every process running PATH, now and later,
 * on the host or in one container; attach --all: every process of the
 * host that maps a file with keyhog probes.
 */
#ifndef KHPROF_ATTACH_EXE_H
#define KHPROF_ATTACH_EXE_H

#include <stdbool.h>

#include "trace.h"

struct exe_attach_options {
	const char *path;             /* executable or shared library; NULL with all */
	/*
	 * --container WHICH: PATH is inside that container (its init's host
	 * PID, its id, or its cgroup), and only its processes are traced.
	 */
	const char *container;
	bool all;                     /* --all: every instrumented process of the host */
	size_t keep;                  /* --keep N: the newest N records stay (0: all) */
	const char *output;           /* -o PATH: PATH.PID.json per process, or NULL */
	bool quiet;
	double duration_s;            /* 0: until a signal */
	bool from_start;              /* stop new processes at their start until attached */
	struct trace_options trace;   /* mode and overrides; the rest is set per process */
	const char *serve;            /* --serve [ADDR:]PORT, or NULL */
};

/* Traces until Ctrl-C, SIGTERM or the duration; khprof's exit code. */
int attach_exe(const struct exe_attach_options *o);

#endif
