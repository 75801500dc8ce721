/* SPDX-License-Identifier: MIT */
/*
 * session.h - assembling RunProfile records from the tracer's events.
 *
 * Plain logic: no libbpf, no BPF maps.  The tracer's one dispatcher
 * (handle_event in trace.c) calls one function here per event type, in
 * ring-buffer order, and hands a session's end the totals of its slot
 * (struct kh_slot_stats summed over the CPUs) and its distributions as
 * parameters; this unit turns them into records exactly as the seed would
 * and hands each to on_profile.  The unit tests drive it without root
 * (tests/unit/tracing/test_session.c).
 */
#ifndef KHPROF_SESSION_H
#define KHPROF_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "khprof_shared.h"
#include "record.h"
#include "trace.h"

/* What records need to know about the trace; the tracer fills it in. */
struct session_config {
	pid_t pid;                  /* the traced process */
	/*
	 * Who it is among namespaces (capture/ns): its pid in its own PID
	 * namespace, which begins run ids as the seed's getpid() does (0: pid),
	 * its cgroup path and id and the container id that path names (NULL,
	 * 0: unknown).
	 */
	pid_t ns_pid;
	uint64_t cgroup_id;
	const char *cgroup;
	const char *container_id;
	enum kh_trace_mode mode;
	const char *span_clock;        /* "tsc" or "monotonic" (record.h) */
	const char *span_clock_reason; /* why: the evidence (span_clock.h) */
	uint64_t trace_start_ns;    /* CLOCK_MONOTONIC when tracing began */
	int64_t realtime_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC, for run ids */
	uint64_t page_size;
	uint64_t span_cost_ns;      /* calibrated: what one span costs the program */
	uint64_t span_bias_ns;      /* calibrated: apparent length of an empty span */
	const struct identity_override *overrides;
	size_t override_count;
	tracer_profile_fn on_profile;
	void *ctx;
	uint64_t interval_ns;       /* series sampling period; 0: no series */
	tracer_interval_fn on_interval;
	/*
	 * When the probes went live (CLOCK_MONOTONIC); 0 until then.  A
	 * session khprof joins after it began starts its clock here: nothing
	 * before it was observed.
	 */
	uint64_t observed_from_ns;
	bool off_cpu;               /* context switches are watched (latency.c) */
	/*
	 * The probe cannot fault an identity string's page in (the classic
	 * object): khprof reads what it could not from the process.  false:
	 * what the probe could not read is unreadable.
	 */
	bool identity_reread;
	/* The kernel, and what its missing features cost each record (kfeatures.h). */
	const char *kernel_release;
	const char *const *kernel_degraded;
	size_t kernel_degraded_count;
	/* The probe sites of the traced files refused so far (attach.c), copied into each record. */
	const struct kh_refused_site *refused_sites;
	size_t refused_site_count;
	/*
	 * --sample: fills a record's stacks with the samples of its time
	 * span, just before on_profile (the tracer's sampler); NULL: none.
	 */
	void (*fill_stacks)(struct kh_profile *p, uint64_t start_ns, uint64_t end_ns, void *ctx);
	void *stacks_ctx;
};

/* How the traced process ended, once it has (sessions__process_ended). */
enum session_end {
	SESSION_END_NONE = 0,
	SESSION_END_EXIT,   /* exited, with wait_status's code */
	SESSION_END_SIGNAL, /* killed by wait_status's signal */
	SESSION_END_EXEC,   /* replaced its image with execve */
};

struct open_session {
	bool open;
	bool started_mid_session;
	uint64_t start_ns;
	uint32_t last_state;
	struct kh_profile profile;
	/* The series (interval_ns): the slot's running totals at the last sample. */
	struct kh_slot_stats seen;
	uint64_t last_sample_ns;
	uint64_t next_sample_ns;  /* the next boundary: start + k * interval */
	struct kh_opt_u64 last_cpu_ns;
};

struct session_table {
	struct session_config cfg;
	struct open_session slots[KH_MAX_SLOTS];
	bool saw_session;
	bool have_first_sample;
	struct kh_resource_snapshot first_sample; /* when tracing began */
	struct kh_opt_u64 first_cpu_ns;
	struct kh_opt_u64 end_peak_threads, end_peak_pages; /* sessions__set_end_peaks */
	size_t records_emitted;
	/* Stops the keeper let go (sessions__note_let_go) since the last record: the next one's. */
	uint64_t stops_let_go;
	char warned_keys[512];
	enum session_end end;
	int end_code; /* exit code or signal number */
	/*
	 * The process as the kernel sampled it at its end (KH_EVENT_PROCESS_EXIT
	 * or KH_EVENT_EXEC with a sample): the last sample of the sessions it
	 * ends.  threads 0: none.
	 */
	struct kh_event end_sample;
};

/* Removes the probe's own calibrated share (calls x bias) from a stage's sum. */
uint64_t sessions__unbias(uint64_t elapsed_ns, uint64_t calls, uint64_t bias_ns);

void sessions__init(struct session_table *tbl, const struct session_config *cfg);
/* The span clock changed before attach (the TSC's rate could not be measured). */
void sessions__set_clock(struct session_table *tbl, const char *clock, const char *reason);
/* Frees the sessions still open, without records. */
void sessions__free(struct session_table *tbl);

/* A stop of the process, or of one it forked, that the keeper let go (stops.h). */
void sessions__note_let_go(struct session_table *tbl);

/* Samples the process once, as the start of sessions khprof opens itself. */
void sessions__take_first_sample(struct session_table *tbl);

/* Slot of an event in the table: the outside slot for out-of-range slots. */
uint32_t sessions__slot_of(const struct kh_event *e);
/*
 * The session events, one function per type (KH_EVENT_SESSION_START,
 * _IDENTITY, _TRANSITION, _SESSION_REFUSED, _SESSION_FINISH), each called
 * in ring-buffer order.  An event for a slot with no session seen opens a
 * partial one (khprof attached mid-session).
 */
void sessions__start(struct session_table *tbl, const struct kh_event *e);
void sessions__identity(struct session_table *tbl, const struct kh_event *e);
void sessions__transition(struct session_table *tbl, const struct kh_event *e);
void sessions__refused(struct session_table *tbl, const struct kh_event *e);
/*
 * The session of e's slot finished: totals are the slot's sums, latency
 * its distributions, which the record takes over (*latency is left empty;
 * NULL: none).
 */
void sessions__finish(struct session_table *tbl, const struct kh_event *e,
		      const struct kh_slot_stats *totals, struct kh_latency *latency);

bool sessions__is_open(const struct session_table *tbl, uint32_t slot);
/*
 * The process ended: wait_status as waitpid(2) gives it (the kernel's
 * exit_code has the same form).  Records of sessions it ended say how.
 */
void sessions__process_ended(struct session_table *tbl, int wait_status);
/* The process ran execve: records of the old image end there. */
void sessions__process_execed(struct session_table *tbl);
/*
 * Keeps the sample an exit or exec event carries (bpf/thread_ends.bpf.h),
 * for the state the process ends in (trace.c calls it for those two).
 */
void sessions__note_end_sample(struct session_table *tbl, const struct kh_event *e);
/*
 * khprof attached while the process was inside a session in state (from
 * the program's kh_current_state): opens a partial session in slot whose
 * clock starts at cfg.observed_from_ns.
 */
void sessions__open_partial(struct session_table *tbl, uint32_t slot, uint32_t state);
/*
 * An identity key the session in slot set before khprof attached (the
 * program's kh_identity_table), taken as its identity probe would be.
 */
void sessions__set_identity(struct session_table *tbl, uint32_t slot, const char *key,
			    const char *value);
/*
 * Ends the open session of slot at now: failed if the process exited
 * (exit_status >= 0), else in the state it was in (khprof detached).
 * totals and latency as for sessions__finish.
 */
void sessions__end(struct session_table *tbl, uint32_t slot, int exit_status, uint64_t now,
		   const struct kh_slot_stats *totals, struct kh_latency *latency);
/*
 * The kernel's peaks since its last sample (threads alive at once,
 * resident pages), for the closing sample of the sessions ended next: a
 * process killed or detached from has no probe to sample it, and /proc
 * is gone or says only the present.
 */
void sessions__set_end_peaks(struct session_table *tbl, uint64_t threads, uint64_t pages);
/* The earliest sample due among the open sessions; 0 when none. */
uint64_t sessions__next_sample_ns(const struct session_table *tbl);
/* Whether slot's session has a sample due at now. */
bool sessions__sample_due(const struct session_table *tbl, uint32_t slot, uint64_t now);
/*
 * Closes the interval ending at now with the slot's running totals (read
 * without reset): the difference from the last sample, with the process's
 * CPU time and RSS from /proc; calls cfg.on_interval.  running NULL (the
 * slot could not be read) only moves the next sample to the next boundary.
 */
void sessions__sample(struct session_table *tbl, uint32_t slot, uint64_t now,
		      const struct kh_slot_stats *running);
/* Whether the trace saw no session at all (a whole-trace record may be due). */
bool sessions__none_seen(const struct session_table *tbl);
/*
 * For a program with spans but no session probes: one record for the whole
 * trace from the outside slot's totals, if they show any activity.  Takes
 * over latency as sessions__finish does (freed when no record is due).
 */
void sessions__end_whole_trace(struct session_table *tbl, int exit_status, uint64_t now,
			       const struct kh_slot_stats *outside, struct kh_latency *latency);

#endif
