/* SPDX-License-Identifier: MIT */
/*
 * Definitions shared by the BPF programs (bpf/khprof.bpf.c) and the loader
 * (userspace/).  Both sides include this header, so the map layouts and the
 * event records cannot disagree.  Enums that reach the wire are append-only
 * with explicit values.
 */
#ifndef KHPROF_SHARED_H
#define KHPROF_SHARED_H

#include "keyhog_profile.h"
#include "khprof_enums.h"

#ifndef __bpf__
#include <linux/types.h>
#endif

/* Session slots: slot 0 collects spans seen outside any session. */
#define KH_MAX_SLOTS 8
#define KH_OUTSIDE_SLOT 0
/*
 * khprof's own calibration spans (userspace/capture/clock/calibrate.c) count in
 * a slot past the session slots, so they never mix with the program's.
 */
#define KH_CALIBRATION_SLOT KH_MAX_SLOTS
#define KH_SLOT_MAP_ENTRIES (KH_MAX_SLOTS + 1)
/* Per-thread span stack kept in task storage for pair mode. */
#define KH_KERNEL_SPAN_DEPTH 32
#define KH_IDENTITY_KEY_MAX 32
#define KH_IDENTITY_VALUE_MAX 128
#define KH_RINGBUF_BYTES (256 * 1024)
/*
 * Events a process is stopped on until khprof answers (a fork to protect,
 * a library to attach before it runs) have a ring of their own, so that a
 * burst of other events cannot drop one and leave the process stopped or
 * its child unprotected.  16 pages hold 64 such events waiting at once.
 */
#define KH_CONTROL_RINGBUF_BYTES (16 * 4096)

enum kh_event_type {
	KH_EVENT_SESSION_START = 1,
	KH_EVENT_IDENTITY = 2,
	KH_EVENT_TRANSITION = 3,
	KH_EVENT_SESSION_FINISH = 4,
	KH_EVENT_LOADER_STATE = 5, /* the dynamic loader mapped or unmapped objects */
	KH_EVENT_PROCESS_EXIT = 6,   /* the last thread exited; arg0: its exit_code */
	KH_EVENT_EXEC = 7,           /* the process ran execve; the old image is gone */
	KH_EVENT_SESSION_REFUSED = 8, /* session_start while one was open; arg0: sequence */
	KH_EVENT_THREAD_BUFFER = 9,   /* struct kh_buffer_event, not struct kh_event */
	KH_EVENT_FORK = 10,           /* a new process, stopped; arg0: its pid (--follow-forks) */
	KH_EVENT_SELF_STOP = 11,      /* the traced process sent itself SIGSTOP (follow.bpf.h) */
};

/* One ring-buffer record; identity events use key and value. */
struct kh_event {
	__u32 type;        /* enum kh_event_type */
	__u32 pid;
	__u32 tid;
	__u32 slot;        /* session slot the event belongs to */
	__u64 ts_ns;       /* CLOCK_MONOTONIC, bpf_ktime_get_ns() */
	__u64 arg0;        /* state, status or session sequence */
	__u64 arg1;        /* probe ABI version at session start */
	/*
	 * The process's memory and threads, read in the probe handler at the
	 * moment of the event (the values /proc/PID/status would show then).
	 */
	__u64 resident_pages;
	__u64 virtual_pages;
	__u64 threads;
	char key[KH_IDENTITY_KEY_MAX];
	char value[KH_IDENTITY_VALUE_MAX];
	/*
	 * Appended for exact samples (docs/SCHEMA.md, "How close to the
	 * transition").  cpu_ns: the process's CPU time at the event, threads
	 * that already exited included; the peaks: the most resident pages and
	 * threads since the previous sampled event of the process (threads 0:
	 * nothing sampled).  sampled_ns: bpf_ktime_get_ns() once the sample is
	 * read, so sampled_ns - ts_ns is how long after the probe it was taken.
	 */
	__u64 cpu_ns;
	__u64 peak_resident_pages;
	__u64 peak_threads;
	__u64 sampled_ns;
	/*
	 * Identity events: 0, or the -errno of reading the key or value from
	 * the program's memory (arg0 and arg1 hold their addresses).
	 */
	__s32 key_err;
	__s32 value_err;
};

struct kh_stage_stats {
	__u64 elapsed_ns;
	__u64 calls;
	__u64 attributed_ns;
	__u64 attributed_calls; /* for the start-up bias correction */
};

/*
 * attach --all: an executable file as the kernel knows it (its superblock's
 * device, inode number and generation, which tells a new file from a
 * deleted one whose number was reused), the key of the files khprof found
 * without keyhog probes (bpf/watch.bpf.h's plain_files).  A start event of
 * the exec watcher carries it: arg0 = dev << 32 | generation, arg1 = ino.
 */
struct kh_file_key {
	__u64 ino;
	__u32 dev;
	__u32 generation;
};

/*
 * khprof in a PID namespace of its own: a task's id in the kernel's
 * (initial) namespace and in khprof's, as bpf/pidns.bpf.h's iterator
 * writes them.
 */
struct kh_pid_pair {
	__u32 kernel_tid;
	__u32 local_tid;
};

/* Per-CPU, per-session-slot aggregate; userspace sums the CPUs. */
struct kh_slot_stats {
	struct kh_stage_stats stages[KH_STAGE_COUNT];
	__u64 input_bytes;
	__u64 input_units;
	__u64 probe_hits;  /* kernel entries, for the tracer-cost estimate */
	__u64 drops[KH_DROP_COUNT];
};

/*
 * khprof attaches every probe site of one file with a single uprobe-multi
 * link to one program, kh_usdt, which dispatches on the site's kind.  (One
 * perf-event uprobe per site, as libbpf 1.1 attaches USDTs, costs an
 * RCU-tasks grace period per site on detach: seconds for a real scanner.)
 */
enum kh_probe_kind {
	KH_PROBE_SPAN = 1,
	KH_PROBE_SPAN_ENTER = 2,
	KH_PROBE_SPAN_EXIT = 3,
	KH_PROBE_BATCH = 4,
	KH_PROBE_INPUT_BYTES = 5,
	KH_PROBE_INPUT_UNITS = 6,
	KH_PROBE_SESSION_START = 7,
	KH_PROBE_IDENTITY = 8,
	KH_PROBE_TRANSITION = 9,
	KH_PROBE_SESSION_FINISH = 10,
	KH_PROBE_BATCH_REGISTER = 11, /* probe ABI 3 */
	/* probe ABI 4: never hit; attached for its semaphore (keyhog_profile.h) */
	KH_PROBE_CLOCK_MONOTONIC = 12,
};

/* Argument specs of all attached sites (libbpf's __bpf_usdt_specs map). */
#define KH_MAX_PROBE_SITES 4096
#define KH_USDT_MAX_ARGS 12

/* The layout of libbpf's struct __bpf_usdt_spec (bpf/usdt.bpf.h). */
struct kh_usdt_arg_spec {
	__u64 val_off;
	__u32 arg_type; /* 0 constant, 1 register, 2 register dereference */
	short reg_off;  /* offset of the register in struct pt_regs */
	char arg_signed;
	char arg_bitshift;
};

struct kh_usdt_spec {
	struct kh_usdt_arg_spec args[KH_USDT_MAX_ARGS];
	__u64 usdt_cookie; /* enum kh_probe_kind */
	short arg_cnt;
};

/* Pair-mode frame kept in task storage. */
struct kh_frame {
	__u64 start_ns;
	__u32 stage;
	__u32 pad;
};

struct kh_task_stack {
	__u32 depth;
	__u32 pad;
	struct kh_frame frames[KH_KERNEL_SPAN_DEPTH];
};

/*
 * Where the fields of the program's struct kh_thread_state
 * (include/keyhog_profile.h) lie, for the BPF side, which reads a thread's
 * buffer when the thread dies or execs, and for khprof, which reads them
 * after a detach.  Checked against the header below.
 */
#define KH_TS_BATCH_COUNT_OFF 8
#define KH_TS_INPUT_OFF 400   /* input_bytes, then input_units */
#define KH_TS_BATCH_OFF 416
#define KH_TS_FLUSHES_OFF (KH_TS_BATCH_OFF + KH_BATCH_CAPACITY * 24)
/*
 * Programs of probe ABI 3 to 5 (the Rust crate's too) buffer 64 spans, so
 * their `flushes` is nearer: the BPF side and khprof read such a thread's
 * state with this layout (KH_THREAD_ABI6 unset) and pass it on as if it
 * had the current one, entries past 64 unset.
 */
#define KH_BATCH_CAPACITY_ABI5 64
#define KH_TS_FLUSHES_OFF_ABI5 (KH_TS_BATCH_OFF + KH_BATCH_CAPACITY_ABI5 * 24)
#define KH_TS_READ_BYTES_ABI5 (KH_TS_FLUSHES_OFF_ABI5 + 8)
#ifndef __bpf__
#include <stddef.h>
_Static_assert(offsetof(struct kh_thread_state, batch_count) == KH_TS_BATCH_COUNT_OFF, "");
_Static_assert(offsetof(struct kh_thread_state, input_bytes) == KH_TS_INPUT_OFF, "");
_Static_assert(offsetof(struct kh_thread_state, input_units) == KH_TS_INPUT_OFF + 8, "");
_Static_assert(offsetof(struct kh_thread_state, batch) == KH_TS_BATCH_OFF, "");
_Static_assert(offsetof(struct kh_thread_state, flushes) == KH_TS_FLUSHES_OFF, "");
_Static_assert(sizeof(struct kh_batch_entry) == 24, "");
#endif

/*
 * What the BPF side knows of one thread of the traced process in batch
 * mode (task storage thread_store; the threads are listed by id in
 * thread_list): where its kh_thread_state is, and which part of its
 * buffer is already counted.
 */
#define KH_THREAD_ABI3 1u   /* registered or flushed with probe ABI 3 */
#define KH_THREAD_MARKED 2u /* the marked_* fields are valid */
#define KH_THREAD_ABI6 4u   /* registered or flushed with probe ABI 6: 256 entries */
#define KH_THREAD_DRAINED 8u /* kh_exit_drain read its buffer (kernels before 6.16) */
#define KH_MAX_THREADS 16384

struct kh_thread_info {
	__u64 state_addr;         /* &kh_thread_state in the program */
	/*
	 * Of the buffer generation marked_flushes (kh_thread_state.flushes),
	 * the first marked_count entries and this much input were counted:
	 * at its flush, or at an execve that then failed.
	 */
	__u64 marked_flushes;
	__u64 marked_input_bytes;
	__u64 marked_input_units;
	__u32 marked_count;
	__u32 flags;
};

/* Bytes of a thread's state khprof reads: up to and including `flushes`. */
#define KH_TS_READ_BYTES (KH_TS_FLUSHES_OFF + 8)

/*
 * What a thread that died or execed still held in its buffer, as the BPF
 * side read it; khprof counts it (userspace/capture/session/buffers.c).
 */
struct kh_buffer_event {
	__u32 type;             /* KH_EVENT_THREAD_BUFFER, where kh_event has its type */
	__u32 slot;             /* the session slot active then */
	__u32 tid;
	__u32 pad;
	__u64 ts_ns;            /* when it was read: every span in it ended before */
	__u64 session_start_ns; /* slot_start_ns of the slot */
	/* A TSC reading of this CPU (its last flush) and the kernel time then; anchor_ns 0: none. */
	__u64 anchor_ticks;
	__u64 anchor_ns;
	struct kh_thread_info info; /* what was counted of it before */
	/* The first KH_TS_READ_BYTES bytes of its kh_thread_state; entries past batch_count unset. */
	unsigned char state[KH_TS_READ_BYTES];
};

/*
 * Kernel internals bpf/layout.bpf.h reads by their layout, a bit each in
 * its layout_failed when a check of one fails (append only).
 */
enum kh_layout {
	KH_LAYOUT_ARRAY_VALUE = 0, /* where a bpf_array's elements start */
	KH_LAYOUT_CPU_OFFSETS = 1, /* each CPU's per-CPU offset */
	KH_LAYOUT_SCHED_CLOCK = 2, /* the scheduler's clock in a cpu-clock perf_event */
	KH_LAYOUT_UPROBE_SITE = 3, /* the running uprobe's file and offset (bpf/site.bpf.h) */
	KH_LAYOUT_COUNT
};

/*
 * A probe site as the kernel's uprobe names it, on kernels without BPF
 * cookies (bpf/site.bpf.h): the file's device (the kernel's dev_t,
 * major << 20 | minor) and inode, and the site's offset in the file.
 */
struct kh_site_key {
	__u64 ino;
	__u64 offset;
	__u32 dev;
	__u32 pad;
};

#endif /* KHPROF_SHARED_H */
