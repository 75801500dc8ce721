/* SPDX-License-Identifier: MIT */
/*
 * latency.h - the BPF side's per-stage histograms and off-CPU log
 * (include/khprof_hist.h): sizing before load, the scheduler programs'
 * attachment, and reading a session slot into a record's "latency" object.
 */
#ifndef KHPROF_LATENCY_H
#define KHPROF_LATENCY_H

#include <stdint.h>
#include <sys/types.h>

#include "hist.h"

struct khprof_bpf;
struct bpf_link;

/*
 * The scheduler programs: sched_switch, sched_wakeup.  A thread's log is
 * dropped by kh_thread_exit, attached with the thread-end programs.
 */
#define KH_LATENCY_LINKS 2

/* Before load: one block of histograms per possible CPU and session slot. */
int latency__configure(struct khprof_bpf *skel, int ncpus);

/*
 * Logs the context switches of pid's threads (sched_switch, sched_wakeup;
 * a thread's log is dropped at its exit); traced_tgid must be set first.
 * On failure warns once and returns -errno: records then have no off-CPU
 * split, the rest of the trace is unaffected.
 */
int latency__attach(struct khprof_bpf *skel, pid_t pid, struct bpf_link *links[KH_LATENCY_LINKS]);

/*
 * Sums slot's histograms over the CPUs into l (its stages' counts
 * allocated as needed), subtracting bias_ns from min and max like the
 * stage sums, and zeroes the slot for its next session.  0 or -errno.
 */
int latency__read_slot(struct khprof_bpf *skel, int ncpus, uint32_t slot, uint64_t bias_ns,
		       struct kh_latency *l);

/*
 * Adds the spans khprof read from threads' buffers itself (raw, as
 * buffers__account keeps them) to a slot's distributions just read, taking
 * bias_ns off their min and max as latency__read_slot does; empties raw.
 */
void latency__add_drained(struct kh_latency *into, struct kh_latency *raw, uint64_t bias_ns);

#endif
