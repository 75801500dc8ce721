/* SPDX-License-Identifier: MIT */
/*
 * Per-stage latency histograms and on-CPU/off-CPU split, shared by the BPF
 * side (bpf/khprof.bpf.c) and userspace (userspace/analysis/model/hist.c).
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
 * Position of the highest set bit of v (v > 0), without branches: BPF has
 * no clz, and a compare is one more fork for the verifier in every span of
 * the batch walk.  The bits below the highest are set, then a de Bruijn
 * multiply names the highest: 16 instructions where a branch-free binary
 * search took 30 (with add_dist's maximum and minimum as branches, 48.3 ->
 * 47.1 ns per batched span here; docs/PROBES.md).
 */
static const __u8 kh_hist_debruijn[64] = {
	0,  47, 1,  56, 48, 27, 2,  60, 57, 49, 41, 37, 28, 16, 3,  61,
	54, 58, 35, 52, 50, 42, 21, 44, 38, 32, 29, 23, 17, 11, 4,  62,
	46, 55, 26, 59, 40, 36, 15, 53, 34, 51, 20, 43, 31, 22, 10, 45,
	25, 39, 14, 33, 19, 30, 9,  24, 13, 18, 8,  12, 7,  6,  5,  63,
};

static inline __u32 kh_hist_log2(__u64 v)
{
	v |= v >> 1;
	v |= v >> 2;
	v |= v >> 4;
	v |= v >> 8;
	v |= v >> 16;
	v |= v >> 32;
	return kh_hist_debruijn[(v * 0x03f79d71b4cb0a89ull) >> 58];
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

/*
 * The buckets of the spans shorter than KH_HIST_SMALL ns, in a table the
 * compiler fills from the same formula (kh_hist_bucket, with the clz it
 * can fold for constants): the BPF side's one load instead of the
 * arithmetic above for the short spans, whose cost tracing matters most to
 * (bpf/latency.bpf.h).  8 KiB, in the BPF object's read-only data.
 */
#define KH_HIST_SMALL 4096
#define KH__HLOG(i) (63 - __builtin_clzll((unsigned long long)(i) | (KH_HIST_LINEAR - 1)))
#define KH__HB(i) ((((KH__HLOG(i) - KH_HIST_SUB_BITS)) << KH_HIST_SUB_BITS) + \
		   ((i) >> (KH__HLOG(i) - KH_HIST_SUB_BITS)))
#define KH__HB4(i) KH__HB(i), KH__HB((i) + 1), KH__HB((i) + 2), KH__HB((i) + 3)
#define KH__HB16(i) KH__HB4(i), KH__HB4((i) + 4), KH__HB4((i) + 8), KH__HB4((i) + 12)
#define KH__HB64(i) KH__HB16(i), KH__HB16((i) + 16), KH__HB16((i) + 32), KH__HB16((i) + 48)
#define KH__HB256(i) KH__HB64(i), KH__HB64((i) + 64), KH__HB64((i) + 128), KH__HB64((i) + 192)
#define KH__HB1024(i) KH__HB256(i), KH__HB256((i) + 256), KH__HB256((i) + 512), \
		      KH__HB256((i) + 768)
static const __u16 kh_hist_small[KH_HIST_SMALL] = {
	KH__HB1024(0), KH__HB1024(1024), KH__HB1024(2048), KH__HB1024(3072),
};

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
 * In batch mode the overlap is taken when the batch is handed over, up to
 * KH_BATCH_CAPACITY spans after a span began, so the log must hold every
 * switch since: a batch of spans that each wait on a queue once (the
 * reference scanner's queue-wait spans) needs a switch a span, and as many
 * again for preemptions.  12 KiB per thread that switches.
 */
#define KH_OFFCPU_LOG_BITS 9
#define KH_OFFCPU_LOG (1 << KH_OFFCPU_LOG_BITS)
_Static_assert(KH_OFFCPU_LOG >= 2 * KH_BATCH_CAPACITY, "a switch and a preemption a batched span");
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
