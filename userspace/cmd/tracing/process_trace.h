/* SPDX-License-Identifier: MIT */
/*
 * One tracer per process, for the commands that trace many: attach --exe
 * (every process running a file) and record --follow-forks (the processes
 * the command forks).  Both attach a loaded tracer to a running process,
 * name its records PATH.PID.json, watch its ring buffer and its exit in
 * the caller's epoll set, and end its trace when it exits or khprof stops.
 */
#ifndef KHPROF_PROCESS_TRACE_H
#define KHPROF_PROCESS_TRACE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cmd_trace.h"
#include "trace.h"

struct live_metrics;

struct process_trace {
	pid_t pid;
	int pid_fd;
	struct tracer *tracer;
	struct output_state out;
	char path[PATH_MAX]; /* -o PATH with ".PID" before the extension */
	struct process_trace *next;
};

/* The traced processes of one command, watched in the command's epoll set. */
struct process_set {
	int epoll_fd;
	struct live_metrics *metrics; /* --serve, or NULL */
	struct process_trace *list;
	bool write_failed;            /* some process's record could not be written */
	size_t records;               /* records of the processes that ended */
};

/* A process_trace whose tracer is yet to be opened (pid_fd -1). */
struct process_trace *process_trace__new(void);
/* Closes the tracer of a process_trace that is in no set, and frees it. */
void process_trace__discard(struct process_trace *p);

/*
 * Attaches p's loaded tracer to the running process pid (its executable
 * and every object it maps), names its records after output (NULL: none
 * written), and adds it to the set: its ring buffer and exit to epoll_fd
 * with the caller's tags, its counters to the metrics.  0; -ECHILD when
 * pid is already gone, p untouched and reusable; another -errno (-ESRCH:
 * it ended while attaching) when p could not be attached: discard it.
 */
int process_set__attach(struct process_set *s, struct process_trace *p, pid_t pid,
			const char *output, uint64_t ring_tag, uint64_t exit_tag);
/*
 * Ends p's trace and frees it: its sessions become records.  A process
 * that exited is closed on a thread of its own (the kernel's detach takes
 * tens of ms a link); a live one is detached first, then the spans its
 * threads still buffer are read.
 */
void process_set__end(struct process_set *s, struct process_trace *p, bool exited);
struct process_trace *process_set__find(const struct process_set *s, pid_t pid);

#endif
