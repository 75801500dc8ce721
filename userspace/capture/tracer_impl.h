/* SPDX-License-Identifier: MIT */
/*
 * tracer_impl.h - the tracer's state, shared by the files that implement
 * it (load.c, attach.c, calibrate.c, trace.c); users see only trace.h.
 */
#ifndef KHPROF_TRACER_IMPL_H
#define KHPROF_TRACER_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "session.h"
#include "trace.h"

struct seen_object {
	dev_t dev;
	ino_t ino;
};

struct tracer {
	struct khprof_bpf *skel;
	struct ring_buffer *rb;
	struct trace_options opts;
	pid_t pid;
	int ncpus;
	uint64_t trace_start_ns;
	struct seen_object *seen;
	size_t seen_count;
	int *link_fds;             /* one uprobe-multi link per traced file */
	size_t link_fd_count;
	uint32_t spec_count;
	size_t probe_count;
	struct session_table sessions;
	struct bpf_link *sched_links[3]; /* the off-CPU log's programs (latency.c) */
};

/* attach.c: all wanted keyhog sites of one file, in one uprobe-multi link. */
int attach__object(struct tracer *t, const char *path);
/* calibrate.c: learns span cost and bias by tracing khprof itself. */
int calibrate__run(struct tracer *t);
/* trace.c: one slot's totals over the CPUs; with reset, zeroed afterwards. */
int tracer__read_slot(struct tracer *t, uint32_t slot, struct kh_slot_stats *sum, bool reset);

#endif
