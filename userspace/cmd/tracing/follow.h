/* SPDX-License-Identifier: MIT */
/*
 * record --follow-forks: the processes the traced command forks, and theirs,
 * each traced by a tracer of its own from its first instruction after fork,
 * its records named PATH.PID.json as under attach --exe.
 */
#ifndef KHPROF_FOLLOW_H
#define KHPROF_FOLLOW_H

#include <signal.h>
#include <stdbool.h>

#include "cmd_trace.h"
#include "trace.h"

struct follow;
struct live_metrics;

/* cli: record's options (mode, overrides, -o, -q); metrics: --serve or NULL. */
int follow__open(struct follow **out, const struct trace_cli *cli, struct live_metrics *metrics);
/*
 * Makes the first process's tracer report its forks here (before its
 * attach); its opts->stops (the command's) are every followed tracer's.
 */
void follow__configure(struct follow *f, struct trace_options *opts);
/* The first tracer's calibration, for every followed process (after its attach). */
void follow__set_calibration(struct follow *f, struct tracer *first);
/*
 * Loads the next child's tracer ahead of its fork (once calibrated): most
 * of the 41-68 ms a child would otherwise wait stopped.
 */
void follow__prepare(struct follow *f);
/* Readable when a followed process has events or ended. */
int follow__epoll_fd(const struct follow *f);
void follow__service(struct follow *f);
/*
 * After the first process ended: goes on until every followed process has
 * ended, or a signal on signal_fd (then the rest are detached, their
 * completed spans kept).
 */
void follow__wait(struct follow *f, int signal_fd);
/* Whether any followed process's record could not be written. */
bool follow__write_failed(const struct follow *f);
/* Records written for the followed processes that have ended. */
size_t follow__records(const struct follow *f);
void follow__close(struct follow *f);

#endif
