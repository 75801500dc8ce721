/* SPDX-License-Identifier: MIT */
/*
 * tracer_impl.h - the tracer's state, shared by the files that implement
 * it (load.c, attach.c, process.c, calibrate.c, collect.c, drain.c, live.c,
 * trace.c); users see only trace.h.
 */
#ifndef KHPROF_TRACER_IMPL_H
#define KHPROF_TRACER_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "btf_cache.h"
#include "kfeatures.h"
#include "latency.h"
#include "ns.h"
#include "session.h"
#include "span_clock.h"
#include "trace.h"
#include "warmer.h"

struct seen_object {
	dev_t dev;
	ino_t ino;
};

/*
 * A file khprof attaches to, held open from its checks to its links
 * (attach.c): usdt/ reads it through fd, and the kernel is handed
 * kernel_path, /proc/self/fd/N, the magic link to the very file opened.
 * A file put at its path in between (a container's owner can) is never
 * the one attached (docs/PROBES.md, "What khprof checks in a file").
 */
struct held_file {
	int fd;
	dev_t dev;
	ino_t ino;
	char kernel_path[32];
	const char *path;  /* what it was opened as, for messages */
	bool stopped;      /* the test hook stopped khprof at it (attach.c) */
};

/*
 * attach.c: opens path as a held file, without reading it yet (O_PATH: a
 * FIFO or a device is never opened for real); 0, -errno, or -ENOEXEC for
 * anything but a regular file.  Then held_file__read opens it for reading
 * through its own descriptor: the same inode, whatever path names now.
 */
int held_file__open(const char *path, struct held_file *f);
int held_file__read(struct held_file *f);
void held_file__close(struct held_file *f);

struct tracer {
	struct khprof_bpf *skel;
	struct ring_buffer *rb;
	struct trace_options opts;
	pid_t pid;
	pid_t kernel_pid;              /* pid in the kernel's namespace: the BPF side's (pid_map.c) */
	int ncpus;
	uint64_t trace_start_ns;
	struct seen_object *seen;
	size_t seen_count;
	struct seen_object *loaders;   /* the dynamic loaders hooked (a container's is its own) */
	size_t loader_count;
	struct ns_identity identity;   /* the process's pid, cgroup and container (ns.h) */
	int *link_fds;             /* one uprobe-multi link per traced file */
	size_t link_fd_count;
	int fork_link_fd;              /* kh_follow_fork's link (also in link_fds), or -1 */
	size_t children_stopped;       /* forks stopped to be followed or made safe */
	bool closing;                  /* only forks and stops are still handled */
	bool polling;                  /* in tracer__poll: a callback must not poll it again */
	uint32_t spec_count;
	size_t probe_count;
	struct session_table sessions;
	struct bpf_link *end_links[8]; /* thread exit (5 kinds), execve check (2), exec */
	bool ended;                    /* the records are written (exec) */
	bool detached;
	uint64_t detach_ns;            /* when tracer__detach began */
	/*
	 * Per session slot, what khprof counted itself (buffers of threads
	 * that ended, or read after a detach), added when the slot is read.
	 */
	struct kh_slot_stats pending[KH_MAX_SLOTS];
	struct kh_latency pending_latency[KH_MAX_SLOTS]; /* their spans' raw lengths */
	bool abi2_batch;               /* a traced file has ABI 2 batch probes */
	/*
	 * Batch mode asks each traced file for CLOCK_MONOTONIC by attaching
	 * its clock_monotonic site (the TSC is not trusted here); the record's
	 * span_clock and reason.
	 */
	bool monotonic_clock;
	const char *span_clock;
	char span_clock_reason[SPAN_CLOCK_REASON_MAX + 64];
	bool spans_only;               /* calibration: only the span sites of khprof itself */
	/* tracer__watch_starts: processes reaching the watched file's start. */
	tracer_start_fn on_start;
	void *start_ctx;
	struct bpf_link *sched_links[KH_LATENCY_LINKS]; /* the off-CPU log's programs (latency.c) */
	/* live.c: hist_blocks mapped read-only at the first scrape, or NULL. */
	const struct kh_hist_block *hist_view;
	size_t hist_view_len;
	bool hist_view_failed;         /* mapping failed once: lookups instead */
	struct warmer warmer;          /* until attached (opts.attach_at_once) */
	struct btf_cache btf_cache;    /* CO-RE targets kept between runs (btf_cache.h) */
	struct kh_features features;   /* what the running kernel offers (kfeatures.h) */
	/* "name (since): cost" of each missing feature that costs the record something. */
	char degraded[KH_FEAT_COUNT + KH_LAYOUT_COUNT + 1][384]; /* + programs' misses */
	const char *degraded_list[KH_FEAT_COUNT + KH_LAYOUT_COUNT + 1];
	size_t degraded_count;
	char *misses_line;             /* the misses' line in degraded, once there are any (misses.c) */
	uint64_t misses_said;          /* programs' misses already in that line */
	uint32_t layout_said;          /* layout_failed bits already named (load.c) */
	uint64_t open_ns;              /* tracer__open began: start-up phase times (-v) */
	struct sampler *sampler;       /* --sample, or NULL (sampler.h) */
	bool warned_old_abi;           /* a session of probe ABI < 4 was named on stderr */
	/* Probe sites of the traced files refused by usdt_notes.c, for each record. */
	struct kh_refused_site *refused_sites;
	size_t refused_site_count;
	bool bad_file;                 /* the attach failed on a malformed executable */
};

/*
 * attach.c: whether dev:ino is in the list, added to it when it is not
 * (a file attached or a loader hooked once per tracer).
 */
bool attach__seen_before(struct seen_object **list, size_t *count, dev_t dev, ino_t ino);
/*
 * attach.c: all wanted keyhog sites of one file, in one uprobe-multi link;
 * a file whose notes cannot be read is named and left untraced.
 */
int attach__object(struct tracer *t, const char *path);
/*
 * attach.c: attach__object for a file not attached yet (by device and
 * inode); required (the executable under record): a malformed file fails
 * the attach, and tracer__bad_file says so.
 */
int attach__object_once(struct tracer *t, const char *path, bool required);
/* attach.c: frees the refused sites kept for the records. */
void attach__free_refused_sites(struct tracer *t);
struct bpf_program;
/* attach.c: links prog to count sites of a held file, kept until tracer__close. */
int attach__link_sites(struct tracer *t, struct bpf_program *prog, struct held_file *f,
		       const __u64 *offsets, const __u64 *ref_ctr_offsets, const __u64 *cookies,
		       __u32 count);
/* attach.c: keeps a link's fd until tracer__close (closes it on failure); 0 or -errno. */
int attach__keep_link(struct tracer *t, int fd);
/*
 * attach.c: close(what) on a thread of its own, or here if none starts:
 * each link's detach waits for an RCU-tasks grace period (about 80 ms
 * here), which a stopped child or the next process must not wait for.
 */
void attach__close_later(void *(*close)(void *), void *what);
/*
 * attach.c: no more forks are stopped; the ones already stopped are made
 * safe and let go.  Closing: the ring buffer's other events are dropped,
 * else handled as a poll would.
 */
void attach__stop_watching_forks(struct tracer *t, bool closing);
/* process.c: watches thread ends and execve of the traced process. */
int attach__process_end(struct tracer *t);
/* process.c: once the probes are live, the state of a session already open. */
void attach__join_session(struct tracer *t);
/*
 * drain.c: counts the spans a thread that ended (or execed) left in its
 * buffer, which the BPF side sent as one event, for its slot.
 */
void drain__thread_ended(struct tracer *t, const struct kh_buffer_event *e);
/* drain.c: reads the threads' buffers of a process khprof has detached from. */
void drain__detached(struct tracer *t, uint64_t detach_ns);
/* drain.c: counts the threads of a process that ended whose end was never seen. */
void drain__process_ended(struct tracer *t);
/* Says how many buffers khprof could not read (threads that ended unseen, left more). */
void drain__say_unread(struct tracer *t, uint64_t left);
/*
 * pid_map.c: khprof in a PID namespace of its own.  Whether the kernel's
 * pids are not khprof's (the iterator program must load), and a task's
 * pid from khprof's namespace to the kernel's and back; 0 when khprof
 * cannot see it.  Without a namespace of its own, the pid itself.
 */
bool pid_map__needed(void);
/* khprof's PID namespace by its inode number where pid_map__needed, else 0. */
uint32_t pid_map__own_ns_inum(void);
pid_t pid_map__kernel(struct tracer *t, pid_t local);
pid_t pid_map__local(struct tracer *t, pid_t kernel);
/* live.c: unmaps what tracer__read_live mapped (tracer__close). */
void live__unmap(struct tracer *t);
/* calibrate.c: learns span cost and bias by tracing khprof itself. */
int calibrate__run(struct tracer *t);
struct khprof_bpf;
/*
 * load.c: the kernel's features as .rodata flags (bpf/compat.bpf.h) and as
 * the programs that load, before the load: a program a kernel cannot load
 * is not loaded there.
 */
/*
 * khprof's BPF object opened for this kernel: the default one, or where
 * bpf_loop is missing the classic one (bpf/classic.bpf.h), through the
 * same skeleton.  NULL with errno on failure.
 */
struct khprof_bpf *tracer__open_object(const struct bpf_object_open_opts *opts,
					const struct kh_features *f);
void tracer__configure_features(struct khprof_bpf *skel, const struct kh_features *f,
				bool batch, bool follow_forks);
/*
 * load.c: names, once each, the kernel internals the BPF side could not
 * read by layout (bpf/layout.bpf.h), on stderr and in the records to come.
 */
void tracer__note_layout(struct tracer *t);
/* collect.c: one slot's totals over the CPUs; with reset, zeroed afterwards. */
int tracer__read_slot(struct tracer *t, uint32_t slot, struct kh_slot_stats *sum, bool reset);
/*
 * collect.c: adds to totals what khprof counted itself for slot (buffers of
 * threads that ended, or read after a detach); reset when the slot is taken.
 */
void tracer__add_pending(struct tracer *t, uint32_t slot, struct kh_slot_stats *totals,
			 bool reset);
/*
 * collect.c: a slot's totals and distributions with what khprof counted
 * itself, as a record takes them.  take: the record takes them over, so
 * the slot is zeroed and the BPF side may reuse it; a take reads whatever
 * it can, a look (the whole-trace record) nothing when the totals cannot
 * be read.  0 or -errno.
 */
int tracer__collect_slot(struct tracer *t, uint32_t slot, bool take, struct kh_slot_stats *totals,
			 struct kh_latency *latency);

#endif
