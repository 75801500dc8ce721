/* SPDX-License-Identifier: MIT */
/*
 * The wire enums a record names as well as the BPF programs: how spans
 * reach the kernel (the record's khprof.mode) and what had to be dropped
 * (khprof.drops).  Apart from khprof_shared.h, the map layouts, so that the
 * record model (userspace/analysis/model/record.h) depends on these alone.
 * Append-only, with explicit values.
 */
#ifndef KHPROF_ENUMS_H
#define KHPROF_ENUMS_H

/* How spans reach the kernel (docs/PROBES.md). */
enum kh_trace_mode {
	KH_MODE_SPAN = 0,  /* one probe per span carrying its start time */
	KH_MODE_PAIR = 1,  /* span_enter + span_exit, start kept in the kernel */
	KH_MODE_BATCH = 2, /* spans buffered per thread, one probe per batch */
	KH_MODE_COUNT
};

/* Everything that had to be dropped is counted, never lost silently. */
enum kh_drop {
	KH_DROP_STACK_OVERFLOW = 0, /* span deeper than KH_KERNEL_SPAN_DEPTH */
	KH_DROP_UNMATCHED_EXIT = 1, /* exit without its enter (attached mid-span) */
	KH_DROP_RINGBUF_FULL = 2,   /* event lost: ring buffer full */
	KH_DROP_SESSION_SLOTS = 3,  /* session started while every slot was unread */
	KH_DROP_BAD_STAGE = 4,      /* stage or state number out of range */
	KH_DROP_LATE_BATCH = 5,     /* batched span that ended before its session */
	/* buffered span of an ending thread that could not be read (or ABI 2) */
	KH_DROP_EXIT_UNREAD = 6,
	/* thread of an ABI 2 program that ended with its buffer unknown to khprof */
	KH_DROP_EXIT_UNKNOWN = 7,
	/*
	 * span a thread handed over (its probe ABI 7 sequence numbers say so)
	 * that khprof never received
	 */
	KH_DROP_UNSEEN = 8,
	KH_DROP_COUNT
};

#endif /* KHPROF_ENUMS_H */
