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

#ifndef __bpf__
#include <linux/types.h>
#endif

/* Session slots: slot 0 collects spans seen outside any session. */
#define KH_MAX_SLOTS 8
#define KH_OUTSIDE_SLOT 0
/*
 * khprof's own calibration spans (userspace/capture/calibrate.c) count in
 * a slot past the session slots, so they never mix with the program's.
 */
#define KH_CALIBRATION_SLOT KH_MAX_SLOTS
#define KH_SLOT_MAP_ENTRIES (KH_MAX_SLOTS + 1)
/* Per-thread span stack kept in task storage for pair mode. */
#define KH_KERNEL_SPAN_DEPTH 32
#define KH_IDENTITY_KEY_MAX 32
#define KH_IDENTITY_VALUE_MAX 128
#define KH_RINGBUF_BYTES (256 * 1024)

/* How spans reach the kernel (docs/PROBES.md). */
enum kh_trace_mode {
	KH_MODE_SPAN = 0,  /* one probe per span carrying its start time */
	KH_MODE_PAIR = 1,  /* span_enter + span_exit, start kept in the kernel */
	KH_MODE_BATCH = 2, /* spans buffered per thread, one probe per batch */
	KH_MODE_COUNT
};

enum kh_event_type {
	KH_EVENT_SESSION_START = 1,
	KH_EVENT_IDENTITY = 2,
	KH_EVENT_TRANSITION = 3,
	KH_EVENT_SESSION_FINISH = 4,
	KH_EVENT_LOADER_STATE = 5, /* the dynamic loader mapped or unmapped objects */
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
};

struct kh_stage_stats {
	__u64 elapsed_ns;
	__u64 calls;
	__u64 attributed_ns;
	__u64 attributed_calls; /* for the start-up bias correction */
};

/* Everything that had to be dropped is counted, never lost silently. */
enum kh_drop {
	KH_DROP_STACK_OVERFLOW = 0, /* span deeper than KH_KERNEL_SPAN_DEPTH */
	KH_DROP_UNMATCHED_EXIT = 1, /* exit without its enter (attached mid-span) */
	KH_DROP_RINGBUF_FULL = 2,   /* event lost: ring buffer full */
	KH_DROP_SESSION_SLOTS = 3,  /* session started while every slot was unread */
	KH_DROP_BAD_STAGE = 4,      /* stage or state number out of range */
	KH_DROP_LATE_BATCH = 5,     /* batched span that ended before its session */
	KH_DROP_COUNT
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

#endif /* KHPROF_SHARED_H */
