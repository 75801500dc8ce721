/* SPDX-License-Identifier: MIT */
/*
 * The tracer: loads the BPF programs, attaches them to the keyhog probes of
 * one process (its executable and every library it maps that carries them),
 * and turns the kernel's aggregates and events into RunProfile records.
 */
#ifndef KHPROF_TRACE_H
#define KHPROF_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "khprof_shared.h"
#include "record.h"

struct tracer;

/* Called for every completed record; the tracer frees it afterwards. */
typedef void (*tracer_profile_fn)(const struct kh_profile *profile, void *ctx);
/*
 * Called after each interval of a session's series (--interval), with the
 * session's record so far (identity, transitions, the series).
 */
typedef void (*tracer_interval_fn)(const struct kh_profile *profile,
				   const struct kh_interval *interval, void *ctx);

struct identity_override {
	const char *key;
	const char *value;
};

/* What calibration found; one khprof process needs to measure it once. */
struct tracer_calibration {
	uint64_t span_cost_ns;
	uint64_t span_bias_ns;
};

struct trace_options {
	enum kh_trace_mode mode;
	/* Nobody asked for the mode (the default, batch). */
	bool mode_is_default;
	/* -q: no note about the span clock (span_clock.h) or the kernel's missing features. */
	bool quiet;
	/*
	 * Stop the process whenever the dynamic loader maps objects so their
	 * probes are attached before their code runs.  Only where khprof is
	 * the parent: a job-control shell would otherwise see a stopped job.
	 */
	bool stop_on_loader;
	/*
	 * The process is already running (attach): a session it is inside
	 * when the probes go live is recorded from that moment on.
	 */
	bool joins_running_process;
	const struct identity_override *overrides;
	size_t override_count;
	tracer_profile_fn on_profile;
	void *ctx;
	/*
	 * Sample every session's stage totals, input and process CPU and RSS
	 * this often (0: never), into the record's series.
	 */
	uint64_t interval_ns;
	tracer_interval_fn on_interval;
	/*
	 * Another tracer's calibration to use instead of calibrating: while a
	 * tracer is attached, its links on khprof's own probe sites would
	 * count a second calibration's spans as its own.
	 */
	const struct tracer_calibration *calibration;
	/*
	 * record --follow-forks: every process the traced one forks (not a
	 * thread, not a vfork) is stopped before its first instruction and
	 * passed to on_fork, which must SIGCONT it, traced or not.  Without
	 * on_fork, such a process (and its own forks) is made safe to run the
	 * probe sites it inherited and resumed, untraced (docs/PROBES.md).
	 */
	bool follow_forks;
	void (*on_fork)(pid_t parent, pid_t child, void *ctx);
	/*
	 * The traced process stopped itself as a child it waits for stopped
	 * (util-linux's nsenter), and will resume that child as soon as it is
	 * resumed: called before khprof resumes it, to answer first the stops
	 * khprof put the followed children in (an execve's, a loader's), or
	 * the child runs its new image before its tracer attached it.  The
	 * child's event is in its tracer's ring by then: the BPF side submits
	 * it before the child returns to user space, where it stops, and the
	 * parent sees the stop only then.  A fork's stop needs none of this:
	 * its event comes first on the parent's own ring (fork_stopped).
	 */
	void (*on_self_stop)(void *ctx);
	void *fork_ctx;
	/*
	 * tracer__attach follows tracer__open at once (not a tracer loaded
	 * ahead): the kernel's wait before the first uprobe registration is
	 * taken while the programs load (warmer.h), ~11 ms less start-up.
	 */
	bool attach_at_once;
	/*
	 * --sample: CPU-clock samples of every thread this often (0: none),
	 * their stacks tagged with the open stage (sampler.h).
	 */
	uint64_t sample_hz;
	/* attach --all's watcher: loads the program that sees every execve (tracer__watch_execs). */
	bool watch_execs;
};

/*
 * Decides batch mode's span clock for this process and the khprof
 * processes it forks later, and notes on stderr (unless quiet) when it is
 * not the TSC: once, however many tracers open after it (span_clock.h).
 * tracer__open does it too; a command that forks a khprof per run calls
 * it first so that the check runs and the note prints once.
 */
void tracer__decide_clock(enum kh_trace_mode mode, bool quiet);

/* open -> configure -> load; prints one line and returns -errno on failure. */
int tracer__open(struct tracer **out, const struct trace_options *opts);
/* Attaches to pid's executable (exe_path) and loader; libraries come later. */
int tracer__attach(struct tracer *t, pid_t pid, const char *exe_path);
/* The calibration t uses (after tracer__attach). */
void tracer__calibration(const struct tracer *t, struct tracer_calibration *out);
/* Attaches to every object pid has mapped now that carries keyhog probes. */
int tracer__attach_mapped(struct tracer *t);
/* Consumes pending events; timeout_ms < 0 blocks.  Returns events or -errno. */
int tracer__poll(struct tracer *t, int timeout_ms);
int tracer__epoll_fd(const struct tracer *t);
/*
 * Ends the trace: closes sessions still open (the process exited or khprof
 * detached) and emits the record for a program that had spans but no
 * session probes.  exit_status < 0 means the process is still running.
 */
void tracer__finish(struct tracer *t, int exit_status);
/*
 * The wake-and-sample step of an event loop, between polls (interval_ns):
 * takes t's samples due at now on the monotonic clock and returns the
 * earlier of wake and when t's next sample is due (0: neither; wake 0:
 * none yet).  The traced program does nothing for them.
 */
uint64_t tracer__sample_due(struct tracer *t, uint64_t now, uint64_t wake);
/*
 * epoll_wait's timeout from now to the earlier of wake and deadline_ns (0:
 * none), rounded up to whole ms so that the loop never wakes early; -1: no
 * time to wake at.
 */
int tracer__wait_ms(uint64_t now, uint64_t wake, uint64_t deadline_ns);
/*
 * The traced process ended with wait_status (waitpid's form), when khprof
 * knows it before tracer__finish (record is its parent).
 */
void tracer__process_ended(struct tracer *t, int wait_status);
/*
 * Stops tracing a live process: detaches every probe, then reads what its
 * threads still hold in their batch buffers, keeping the spans that ended
 * before the detach, for tracer__finish.
 */
void tracer__detach(struct tracer *t);
/*
 * An executable file as the kernel knows it (khprof_shared.h's
 * kh_file_key): what tracer__watch_execs names and tracer__watch_plain
 * takes.
 */
struct tracer_file_key {
	uint64_t ino;
	uint32_t dev;
	uint32_t generation;
};

/*
 * Makes t a watcher instead of a tracer: fn gets the pid of every process
 * that runs the first code of path from now on (an executable's entry
 * point, a library's DT_INIT: at start-up or dlopen), whoever started it,
 * with file NULL.  With stop_on_loader the process is stopped there until
 * the caller resumes it (SIGCONT), which it must do whatever it makes of
 * it; otherwise it runs on while the caller attaches a tracer of its own
 * to it.  t must not be attached to a process.
 */
typedef void (*tracer_start_fn)(pid_t pid, const struct tracer_file_key *file, void *ctx);
int tracer__watch_starts(struct tracer *t, const char *path, tracer_start_fn fn, void *ctx);
/*
 * attach --all: the same for every process on the host that runs execve
 * (opened with watch_execs), stopped before the new image's first
 * instruction, fn given the file it execs; a file tracer__watch_plain
 * named is let through at once from then on (a lookup, no stop).
 */
int tracer__watch_execs(struct tracer *t, tracer_start_fn fn, void *ctx);
void tracer__watch_plain(struct tracer *t, const struct tracer_file_key *file);
/*
 * A watcher names and stops only the processes below the cgroup (v2)
 * cgroup_fd opens (--container): the host's others are never stopped.
 * 0 or -errno; the caller keeps the fd until t closes.
 */
int tracer__watch_scope(struct tracer *t, int cgroup_fd);
/* Whether the traced image ran execve (its records ended there). */
bool tracer__execed(const struct tracer *t);
/* Number of keyhog probe sites attached so far. */
size_t tracer__probe_count(const struct tracer *t);
/*
 * Whether tracer__attach failed on the executable's file itself (a
 * malformed ELF file, said on stderr): bad input, not a tracing failure.
 */
bool tracer__bad_file(const struct tracer *t);
/*
 * Whether what khprof opens after attaching needs CAP_SYS_ADMIN: perf-event
 * uprobes do (kernels without uprobe-multi links), and any perf event does
 * where perf_event_paranoid is 3 (Debian's kernels' default).
 */
bool tracer__attach_needs_admin(const struct tracer *t);

/*
 * The modes in which record and attach attach a site of provider:name, as
 * 1 << enum kh_trace_mode bits (docs/PROBES.md); 0 for probes khprof never
 * attaches (other providers, names it does not know).
 */
unsigned int tracer__probe_modes(const char *provider, const char *name);
size_t tracer__records_emitted(const struct tracer *t);
void tracer__close(struct tracer *t);
/*
 * tracer__close on a thread of its own: each link's detach waits for an
 * RCU-tasks grace period (about 80 ms here), which the caller's other
 * processes must not wait for.  t must not be used afterwards.
 */
void tracer__close_later(struct tracer *t);
/*
 * For a traced process that has exited: returns at once and leaves the
 * kernel's slow uprobe detach to a child that outlives khprof.  The caller
 * must exit soon after; the tracer is not usable any more.
 */
void tracer__close_in_background(struct tracer *t);

/*
 * One session slot as it stands, for live metrics: profile is the session
 * being assembled (NULL for the slot of spans outside any session), state
 * its current macro state, sum the slot's counters over all CPUs with the
 * calibrated span bias taken off as in records, spans its histograms
 * folded onto the fixed bounds (hist.h; raw span lengths, as records keep
 * them).  In batch mode, spans a thread still buffers (at most 63 each)
 * are not in it yet.
 */
struct tracer_live_slot {
	const struct kh_profile *profile;
	uint32_t state;
	struct kh_slot_stats sum;
	struct kh_span_fold spans[KH_STAGE_COUNT];
};
typedef void (*tracer_live_fn)(const struct tracer_live_slot *slot, void *ctx);
/* Calls fn for the outside slot and every open session; reads, never resets. */
int tracer__read_live(struct tracer *t, tracer_live_fn fn, void *ctx);
/* Event ring-buffer bytes the kernel wrote and khprof has not read yet. */
int tracer__ringbuf_usage(const struct tracer *t, uint64_t *used, uint64_t *size);

/* Monotonic clock in ns, the clock the BPF side stamps events with. */
uint64_t tracer__now_ns(void);

#endif
