/* SPDX-License-Identifier: MIT */
/*
 * Per-stage latency histograms and on-CPU/off-CPU split, shared by the BPF
 * side (bpf/khprof.bpf.c) and userspace (userspace/analysis/hist.c).
 *
 * Buckets are log-linear (HDR-style): durations below 64 ns have a bucket
 * each; above, every power of two is cut into KH_HIST_SUB equal buckets, so
 * a bucket is at most 1/32 of its lower edge wide.  A percentile reported as
 * the middle of its bucket is then within 1/64 (1.6%) of the exact one.
 * The last bucket starts at 63 << 36 ns (about 72 min) and also holds every
 * longer span; the exact maximum and minimum are kept beside the counts.
 *
 * Memory: one struct kh_hist_block per (CPU, slot), all 25 stages:
 * 25 x (1216 x 4 + 40) B = 122.6 KB, x KH_SLOT_MAP_ENTRIES (8 session slots
 * and calibration's) = 1.1 MB per possible CPU (2.2 MB on this 2-CPU
 * machine, 71 MB with 64 CPUs).  Counts are
 * u32 per CPU and session: a bucket wraps after 4.29e9 spans of one stage on
 * one CPU in one session (userspace detects it from the u64 call counts).
 */
#ifndef KHPROF_HIST_H
#define KHPROF_HIST_H

#include "keyhog_profile.h"

#ifndef __bpf__
#include <linux/types.h>
#endif

#define KH_HIST_SUB_BITS 5
#define KH_HIST_SUB (1u << KH_HIST_SUB_BITS)          /* buckets per power of two */
#define KH_HIST_LINEAR (2u * KH_HIST_SUB)             /* 0..63 ns: one bucket per ns */
#define KH_HIST_MAX_LOG2 41                           /* highest power of two kept */
#define KH_HIST_BUCKETS ((KH_HIST_MAX_LOG2 - KH_HIST_SUB_BITS + 1) * KH_HIST_SUB + KH_HIST_SUB)
#define KH_HIST_MAX_VALUE ((1ull << (KH_HIST_MAX_LOG2 + 1)) - 1)

_Static_assert(KH_HIST_BUCKETS == 1216, "bucket count stated in docs/SCHEMA.md");

/*
 * Position of the highest set bit of v (v > 0, v < 2^63), without branches:
 * BPF has no clz, and a compare would be a jump the verifier walks in every
 * unrolled copy of the batch walk.  (C - v) >> 63 is 1 exactly when v > C.
 */
static inline __u32 kh_hist_log2(__u64 v)
{
	__u32 r, s;

	r = (__u32)((0xffffffffull - v) >> 63) << 5;
	v >>= r;
	s = (__u32)((0xffffull - v) >> 63) << 4;
	v >>= s;
	r |= s;
	s = (__u32)((0xffull - v) >> 63) << 3;
	v >>= s;
	r |= s;
	s = (__u32)((0xfull - v) >> 63) << 2;
	v >>= s;
	r |= s;
	s = (__u32)((0x3ull - v) >> 63) << 1;
	v >>= s;
	r |= s;
	return r | (__u32)(v >> 1);
}

/* The bucket of a duration in ns; longer than KH_HIST_MAX_VALUE: the last. */
static inline __u32 kh_hist_bucket(__u64 ns)
{
	__u64 over = (KH_HIST_MAX_VALUE - ns) >> 63;
	__u32 h, shift;

	ns ^= (ns ^ KH_HIST_MAX_VALUE) & (0 - over); /* min(ns, KH_HIST_MAX_VALUE) */
	h = kh_hist_log2(ns | (KH_HIST_LINEAR - 1));  /* >= KH_HIST_SUB_BITS + 1 */
	shift = h - KH_HIST_SUB_BITS;
	/* below 64 ns: the value itself; above: 32 sub-buckets per octave */
	return (shift << KH_HIST_SUB_BITS) + (__u32)(ns >> shift);
}

/* Above any span length (146 years); the minimum is kept as TOP - min. */
#define KH_HIST_MIN_TOP (1ull << 62)

/* Per-stage distribution of one (CPU, slot); userspace sums the CPUs. */
struct kh_stage_hist {
	__u64 min_below_top; /* KH_HIST_MIN_TOP - min: zeroed memory is "none yet" */
	__u64 max_ns;
	__u64 off_cpu_ns;   /* span time the thread was not running */
	__u64 runnable_ns;  /* of which it was runnable, waiting for a CPU */
	__u64 offcpu_truncated; /* spans with more switches than the log holds */
	__u32 counts[KH_HIST_BUCKETS];
};

struct kh_hist_block {
	struct kh_stage_hist stages[KH_STAGE_COUNT];
	__u64 offcpu_missed; /* switches whose other half was not seen */
};

/*
 * Per-thread log of the last KH_OFFCPU_LOG off-CPU intervals, kept by the
 * sched_switch and sched_wakeup programs for threads of the traced process.
 * A span's off-CPU time is the overlap of [start, end] with these intervals,
 * which works in every mode: span mode only knows a span's start at its end.
 */
#define KH_OFFCPU_LOG 64
/* Threads of the traced process logged at once; more go without a log. */
#define KH_OFFCPU_THREADS 4096

struct kh_offcpu_interval {
	__u64 out_ns;   /* switched out */
	__u64 wake_ns;  /* woken (== out_ns when preempted: runnable throughout) */
	__u64 in_ns;    /* switched back in */
};

struct kh_offcpu_thread {
	__u64 out_ns;     /* open interval: switched out at, 0 when running */
	__u64 wake_ns;    /* open interval: woken at, 0 while blocked */
	__u64 intervals;  /* intervals logged so far; the newest is (intervals-1) % LOG */
	__u64 switches;   /* the kernel's nvcsw + nivcsw at the last switch out seen */
	struct kh_offcpu_interval log[KH_OFFCPU_LOG];
};

#endif /* KHPROF_HIST_H */
