/* SPDX-License-Identifier: MIT */
/* khprof attach --exe PATH: every process running PATH, now and later. */
#ifndef KHPROF_ATTACH_EXE_H
#define KHPROF_ATTACH_EXE_H

#include <stdbool.h>

#include "trace.h"

struct exe_attach_options {
	const char *path;             /* executable or shared library */
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
