// SPDX-License-Identifier: GPL-2.0
/*
 * khprof BPF side: aggregates keyhog USDT spans per stage in per-CPU maps and
 * forwards session events (start, identity, transitions, finish) in order
 * through a ring buffer.  Map layouts and records: include/khprof_shared.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#define BPF_USDT_MAX_SPEC_CNT KH_MAX_PROBE_SITES
#include "khprof_shared.h"
#include "khprof_hist.h"
/* The object for kernels without bpf_loop (-DKH_CLASSIC) differs here. */
#include "classic.bpf.h"
/*
 * usdt.bpf.h finds a site by its address only without BPF cookies (before
 * Linux 5.15), a branch the verifier drops since LINUX_HAS_BPF_COOKIE is a
 * constant.  Its table of addresses is kept at one entry (16384
 * preallocated cost 0.4 ms at every start); on kernels without cookies the
 * loader grows it to one entry a spec id, each mapping the id to itself.
 */
#define BPF_USDT_MAX_IP_CNT 1
/*
 * Without cookies (Linux 5.10) the site comes from the kernel's uprobe
 * instead of its address (site.bpf.h), in either branch of usdt.bpf.h.
 */
#include "site.bpf.h"
#pragma push_macro("PT_REGS_IP")
#pragma push_macro("bpf_get_attach_cookie")
#undef PT_REGS_IP
#define PT_REGS_IP(x) kh_site_spec_id(x)
#define bpf_get_attach_cookie kh_attach_cookie
#include <bpf/usdt.bpf.h>
#pragma pop_macro("bpf_get_attach_cookie")
#pragma pop_macro("PT_REGS_IP")

/*
 * bpf_usdt_arg as a global function: the verifier checks it once for any
 * arguments instead of again at each call (kh_usdt has seven: 8147
 * processed instructions before, 7116 after).  The same call at run time.
 */
KH_GLOBAL __noinline int kh_usdt_arg(struct pt_regs *ctx, __u64 arg_num, long *res)
{
	/*
	 * Bounded here, before the code of a kernel without cookies
	 * (site.bpf.h) makes the compiler spill it: Linux 6.1's verifier
	 * keeps a bound a value had when spilled, not one tested after.
	 */
	if (!res || arg_num >= BPF_USDT_MAX_ARG_CNT)
		return -1;
	return bpf_usdt_arg(ctx, arg_num, res);
}
#define bpf_usdt_arg kh_usdt_arg

_Static_assert(sizeof(struct kh_usdt_spec) == sizeof(struct __bpf_usdt_spec),
	       "khprof_shared.h must mirror libbpf's USDT spec");
_Static_assert(__builtin_offsetof(struct kh_usdt_spec, usdt_cookie) ==
		       __builtin_offsetof(struct __bpf_usdt_spec, usdt_cookie),
	       "khprof_shared.h must mirror libbpf's USDT spec");

char LICENSE[] SEC("license") = "GPL";

#define SIGSTOP 19

/* Set by the loader before load. */
const volatile __u64 trace_start_ns = 0;
const volatile __u32 stop_on_loader_event = 0;
/*
 * The mode whose probe sites this tracer links (capture/attach.c's
 * probe_kinds): the verifier then drops the other modes' paths of kh_usdt
 * (in batch mode, span and pair mode's).  KH_MODE_COUNT: every path.
 */
const volatile __u32 trace_mode = KH_MODE_COUNT;
#define MODE_LINKED(m) (trace_mode == KH_MODE_COUNT || trace_mode == (m))
/*
 * Kernel BTF type ids for bpf_rdonly_cast: from a CO-RE relocation, or,
 * when the CO-RE targets come from khprof's cache (a small BTF of just the
 * types this object uses, whose ids are not the kernel's:
 * userspace/capture/kernel/btf_cache.c), the kernel's ids kept in the cache.  The
 * loader sets core_ids_given before the load, so the verifier follows one
 * branch.
 */
const volatile __u32 core_ids_given = 0;
const volatile __u32 kernel_id_task_struct = 0;
const volatile __u32 kernel_id_mm_struct = 0;
const volatile __u32 kernel_id_signal_struct = 0;
#define KERNEL_TYPE_ID(name) \
	(core_ids_given ? kernel_id_##name : bpf_core_type_id_kernel(struct name))

/* Kernel features that khprof's floor (Linux 6.1) lacks, behind the loader's flags. */
#include "compat.bpf.h"
/* Per-thread state on kernels with and without task storage. */
#include "task_state.bpf.h"

/* Session slot bookkeeping; the loader clears slot_busy after reading a slot. */
__u32 active_slot = KH_OUTSIDE_SLOT;
__u32 slot_busy[KH_MAX_SLOTS] = {};
__u64 slot_start_ns[KH_MAX_SLOTS] = {};
/* _r_debug.r_state's address minus _dl_debug_state's; 0 if unknown. */
__s64 r_state_from_hook = 0;
/*
 * TSC ticks to ns: ns = ticks * tsc_mult >> tsc_shift, measured by the loader
 * after load (the batch probe's TSC times); 0 until then.
 */
__u32 tsc_mult = 0;
__u32 tsc_shift = 0;
/*
 * The traced process, set by the loader once it knows it (0 until then),
 * and its highest resident pages and thread count since its last sampled
 * event (docs/SCHEMA.md).  Plain stores, no atomics: a thread created on
 * another CPU while a transition reads these lands in this interval or the
 * next, never in neither, because the sample reads the live count too.
 */
__u32 traced_tgid = 0;
__u64 peak_resident_pages = 0;
__u64 peak_threads = 0;
/*
 * The memory of the process as it ends, where sched_process_exit comes too
 * late to read it (thread_ends.bpf.h): the latest the kernel showed, at a
 * change of the RSS counters (kh_rss_stat), a sample or the start of
 * do_exit() (kh_exit_drain; the virtual size from these two); 0 unknown.
 */
__u64 end_resident_pages = 0;
__u64 end_virtual_pages = 0;

#define RT_CONSISTENT 0

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KH_SLOT_MAP_ENTRIES);
	__type(key, __u32);
	__type(value, struct kh_slot_stats);
} slot_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, KH_RINGBUF_BYTES);
} events SEC(".maps");

/* KH_EVENT_FORK and KH_EVENT_LOADER_STATE only (KH_CONTROL_RINGBUF_BYTES). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, KH_CONTROL_RINGBUF_BYTES);
} control SEC(".maps");

/* Pair mode's open spans; task storage is freed by the kernel at thread exit. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kh_task_stack);
} task_stacks SEC(".maps");

/* struct pt_regs in words. */
#define KH_PT_REGS_WORDS (sizeof(struct pt_regs) / 8)

struct batch_buffer {
	struct kh_batch_entry entries[KH_BATCH_CAPACITY];
	/* This CPU's last flush: its TSC and kernel time, to place TSC times at exit. */
	__u64 anchor_ticks;
	__u64 anchor_ns;
	/*
	 * Earliest start in ticks of the batch's counted spans (0 for one in
	 * ns; batch_min_start_ns).  Kept here, not in the walk on the stack:
	 * the verifier re-walks a bpf_loop body while the caller's stack
	 * changes, and a changing value there never settles.
	 */
	__u64 min_start_ns;
	/*
	 * on_batch's count and thresholds pass through here so that the
	 * verifier takes them as any number (its tracking stops at a load
	 * from a map value): as known ones, each path of on_batch (a full
	 * batch, a shorter one, a failed read; the TSC usable or not) reached
	 * the walk's bpf_loop with its own, and the walk was verified once for
	 * each: 7,300 instructions of kh_usdt walked at a stride of 4, 5,500
	 * with these.
	 */
	__u32 count;
	__s64 start_lo, end_lo;
	/* The last batch on this CPU: its thread (start time), switches and time. */
	__u64 last_born;
	__u64 last_switches;
	__u64 last_flush_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch_buffer);
} batch_scratch SEC(".maps");



static __always_inline struct kh_slot_stats *stats_of(__u32 slot)
{
	if (slot >= KH_SLOT_MAP_ENTRIES)
		slot = KH_OUTSIDE_SLOT;
	return bpf_map_lookup_elem(&slot_stats, &slot);
}

static __always_inline void count_drop(__u32 slot, enum kh_drop drop)
{
	struct kh_slot_stats *stats;

	kh_preempt_disable();
	stats = stats_of(slot);
	if (stats)
		stats->drops[drop] += 1;
	kh_preempt_enable();
}

/*
 * Minimum of two values less than 2^63 apart, without a
 * branch: in the unrolled batch walk every branch is one more fork for the
 * verifier to follow at every start.
 */
static __always_inline __u64 min_no_branch(__u64 a, __u64 b)
{
	__u64 d = b - a;

	return a + (d & (__u64)((__s64)d >> 63));
}

/* Latency histograms and off-CPU split: a file of its own, for its length. */
#include "latency.bpf.h"

static __always_inline bool add_span(struct kh_slot_stats *stats, struct kh_hist_block *hist,
				     __u32 stage, __u64 elapsed_ns, __u32 attribution)
{
	struct kh_stage_stats *s;

	if (stage >= KH_STAGE_COUNT) {
		stats->drops[KH_DROP_BAD_STAGE] += 1;
		return false;
	}
	s = &stats->stages[stage];
	s->elapsed_ns += elapsed_ns;
	s->calls += 1;
	if (attribution == KH_ATTRIBUTION_DECODED) {
		s->attributed_ns += elapsed_ns;
		s->attributed_calls += 1;
	}
	if (hist)
		add_dist(hist, stage, elapsed_ns);
	return true;
}

/*
 * Why a completed span cannot be counted, KH_DROP_COUNT when it can: a
 * start of 0, or one left by an earlier tracer, means the enter was not
 * seen; a span that ended before its session began is late (batches only).
 */
static __always_inline enum kh_drop span_drop(__u64 start_ns, __u64 end_ns,
					      __u64 session_start_ns)
{
	if (start_ns == 0 || start_ns < trace_start_ns || start_ns > end_ns)
		return KH_DROP_UNMATCHED_EXIT;
	if (end_ns < session_start_ns)
		return KH_DROP_LATE_BATCH;
	return KH_DROP_COUNT;
}

/* Adds one completed span, or counts why it cannot be; true when added. */
static __always_inline bool account_span(struct kh_slot_stats *stats, struct kh_hist_block *hist,
					 __u32 stage, __u64 start_ns, __u64 end_ns,
					 __u32 attribution, __u64 session_start_ns)
{
	enum kh_drop drop = span_drop(start_ns, end_ns, session_start_ns);

	if (drop == KH_DROP_COUNT)
		return add_span(stats, hist, stage, end_ns - start_ns, attribution);
	stats->drops[drop] += 1;
	return false;
}

static __always_inline __u64 ticks_to_ns(__u64 ticks)
{
	__u32 shift = tsc_shift & 63;

	/* Split so that long gaps cannot overflow the product. */
	return (ticks >> shift) * tsc_mult + (((ticks & ((1ull << shift) - 1)) * tsc_mult) >> shift);
}

/* One span reported at its exit (span and pair modes). */
static __always_inline void record_span(__u32 stage, __u64 start_ns, __u64 end_ns,
					__u32 attribution)
{
	struct kh_slot_stats *stats;
	struct kh_hist_block *hist;
	__u32 slot;

	kh_preempt_disable();
	slot = active_slot;
	stats = stats_of(slot);
	hist = hist_of(slot);
	if (stats) {
		stats->probe_hits += 1;
		if (account_span(stats, hist, stage, start_ns, end_ns, attribution, 0))
			add_offcpu(hist, stage, start_ns, end_ns);
	}
	kh_preempt_enable();
}

static __always_inline void on_span_enter(__u64 stage)
{
	__u64 now = bpf_ktime_get_ns();
	struct kh_task_stack *stack;
	__u32 depth;

	stack = kh_task_state_get(&task_stacks, kh_current_task(), BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!stack) {
		count_drop(active_slot, KH_DROP_STACK_OVERFLOW);
		return;
	}
	depth = stack->depth;
	if (depth < KH_KERNEL_SPAN_DEPTH) {
		stack->frames[depth].start_ns = now;
		stack->frames[depth].stage = stage;
	} else {
		count_drop(active_slot, KH_DROP_STACK_OVERFLOW);
	}
	stack->depth = depth + 1;
}

static __always_inline void on_span_exit(__u64 stage, __u64 attribution)
{
	__u64 now = bpf_ktime_get_ns();
	struct kh_task_stack *stack;
	__u64 start_ns = 0;
	__u32 top;

	stack = kh_task_state_get(&task_stacks, kh_current_task(), 0);
	if (stack && stack->depth > 0) {
		top = stack->depth - 1;
		if (top >= KH_KERNEL_SPAN_DEPTH) {
			/* Its enter overflowed and was counted there. */
			stack->depth = top;
			return;
		}
		if (stack->frames[top].stage == stage) {
			start_ns = stack->frames[top].start_ns;
			stack->depth = top;
		}
	}
	record_span(stage, start_ns, now, attribution);
}

struct batch_walk {
	struct batch_buffer *buf;
	struct kh_slot_stats *stats;
	struct kh_hist_block *hist;
	struct kh_offcpu_thread *offcpu; /* the thread's off-CPU log, or NULL */
	__u64 session_start;
	__u64 now_ns;      /* kernel time of the flush */
	__u64 flush_ticks; /* TSC of the flush */
	/*
	 * span_drop's two thresholds in TSC ticks, for spans timed by the TSC:
	 * the first tick on or after trace_start_ns and the first on or after
	 * session_start (tsc_lower_bound).  A batched span is then filtered on
	 * its ticks and converted once, as its length.
	 */
	__s64 start_lo;
	__s64 end_lo;
	bool tsc_ok;       /* the flush gave its TSC and its rate is known */
	__u32 count;
	__u32 first;       /* the first entry to count: those before were counted */
};

/*
 * A batched TSC time on the kernel clock: placed by its distance from the
 * flush, which happened now, so no offset between the clocks is needed and
 * both edges of a span move together.
 */
static __always_inline __u64 tsc_time_ns(__u64 t, const struct batch_walk *walk)
{
	__s64 ticks = (__s64)(walk->flush_ticks - (t & ~KH_TIME_TSC));

	ticks &= ~(ticks >> 63); /* TSCs of different CPUs may differ by a few ticks */
	return walk->now_ns - ticks_to_ns((__u64)ticks);
}

/*
 * The lowest TSC reading t whose tsc_time_ns(t) is at or after x: the
 * largest distance d from the flush with ticks_to_ns(d) <= now - x is
 * floor(((now - x + 1) << shift - 1) / mult), split at the division so
 * that it cannot overflow.  Once per batch.
 */
static __always_inline __s64 tsc_lower_bound(const struct batch_walk *walk, __u64 x)
{
	__u64 mult = tsc_mult, shift = tsc_shift & 63, d, q, r;

	if (x > walk->now_ns || !mult)
		return 0x7fffffffffffffffll; /* no tick of this batch reaches x */
	d = walk->now_ns - x + 1;
	q = d / mult;
	r = d - q * mult;
	d = (q << shift) + ((r << shift) + mult - 1) / mult - 1;
	return (__s64)(walk->flush_ticks - d);
}

/*
 * A batched span's times on the kernel clock; CLOCK_MONOTONIC times are
 * used as they are (docs/PROBES.md).  For the off-CPU pass only.
 */
static __always_inline void entry_times(const struct batch_walk *walk,
					const struct kh_batch_entry *e, __u64 *start_ns,
					__u64 *end_ns)
{
	*start_ns = e->start_ns;
	*end_ns = e->end_ns;
	if (*start_ns & KH_TIME_TSC) {
		*start_ns = walk->tsc_ok ? tsc_time_ns(*start_ns, walk) : 0;
		*end_ns = tsc_time_ns(*end_ns, walk);
	}
}

/*
 * span_drop for a batched span, on its own clock: TSC spans against the
 * batch's thresholds in ticks (the verdict on the kernel clock but for a
 * span whose edges fall within one nanosecond of each other), others in
 * ns.  On KH_DROP_COUNT, *elapsed_ns is its length: for a TSC span one
 * conversion of its length in ticks instead of one of each edge, 1 ns a
 * batched span here.
 */
static __always_inline enum kh_drop batch_span_drop(const struct batch_walk *walk,
						    const struct kh_batch_entry *e,
						    __u64 *elapsed_ns)
{
	__u64 start = e->start_ns, end = e->end_ns;
	__s64 start_lo, end_lo;

	if (start & KH_TIME_TSC) {
		start &= ~KH_TIME_TSC;
		end &= ~KH_TIME_TSC;
		start_lo = walk->start_lo;
		end_lo = walk->end_lo;
	} else {
		start_lo = trace_start_ns ?: 1; /* a start of 0: enter not seen */
		end_lo = walk->session_start;
	}
	if ((__s64)start < start_lo || start > end)
		return KH_DROP_UNMATCHED_EXIT;
	if ((__s64)end < end_lo)
		return KH_DROP_LATE_BATCH;
	*elapsed_ns = e->start_ns & KH_TIME_TSC ? ticks_to_ns(end - start) : end - start;
	return KH_DROP_COUNT;
}

/* Above every tick count (146 years at 1 GHz): no span counted yet. */
#define KH_BATCH_NO_START (1ull << 62)

/*
 * The earliest start of the batch's counted spans on the kernel clock, from
 * the earliest in ticks that add_batch_stride kept.  A CLOCK_MONOTONIC
 * start (timed while a span-mode tracer was attached too) is kept there as
 * 0, so such a batch always takes the off-CPU pass, which tests each span
 * on its own.
 */
static __always_inline __u64 batch_min_start_ns(const struct batch_walk *walk)
{
	__u64 min = walk->buf->min_start_ns;

	if (min == KH_BATCH_NO_START)
		return ~0ull; /* nothing counted */
	if (min == 0)
		return 0;
	return tsc_time_ns(min, walk);
}

/*
 * 8: the verifier walks 8,200 instructions of kh_usdt at 8, 5,500 at 4 and
 * 12,400 at 16; 8 saves about 1 ns a batched span over 4 here (40.7
 * against 41.9 ns, medians of 21 alternating runs).
 */
#define BATCH_STRIDE 8
_Static_assert(KH_BATCH_CAPACITY % BATCH_STRIDE == 0, "whole strides");

/*
 * BATCH_STRIDE batched spans per call: bpf_loop lets the verifier check
 * this body once instead of walking all 64 entries (20 ms of verification
 * at every start), and the stride keeps the per-call cost off each span.
 */
static long add_batch_stride(__u64 stride, void *ctx)
{
	struct batch_walk *walk = ctx;
	struct batch_buffer *buf = walk->buf;
	struct kh_slot_stats *stats = walk->stats;
	struct kh_hist_block *hist = walk->hist;
	__u32 index = walk->first + stride * BATCH_STRIDE, count = walk->count;
	__u64 min_start;
	long done = 0;

	if (stride >= KH_BATCH_CAPACITY / BATCH_STRIDE)
		return 1;
	/* In a register through the stride, stored once: 47.6 -> 46.8 ns a span here. */
	min_start = buf->min_start_ns;
	for (__u32 j = 0; j < BATCH_STRIDE; j++, index++) {
		struct kh_batch_entry *e;
		enum kh_drop drop;
		__u64 elapsed_ns;
		__u32 slot;

		if (index >= count || index >= KH_BATCH_CAPACITY) {
			done = 1;
			break;
		}
		/*
		 * The mask bounds the index for the verifier (the test above
		 * already does, so the compiler would drop the mask); the
		 * barrier keeps it on the register used as the index.
		 */
		slot = index;
		asm volatile("" : "+r"(slot));
		e = &buf->entries[slot & (KH_BATCH_CAPACITY - 1)];
		drop = batch_span_drop(walk, e, &elapsed_ns);
		if (drop != KH_DROP_COUNT) {
			stats->drops[drop] += 1;
			continue;
		}
		/* Its start in ticks, 0 if in ns (batch_min_start_ns). */
		min_start = min_no_branch(min_start, e->start_ns & ~KH_TIME_TSC &
							     (0 - (e->start_ns >> 63)));
		add_span(stats, hist, e->stage, elapsed_ns, e->attribution);
	}
	buf->min_start_ns = min_start;
	return done;
}

/*
 * Batch mode's off-CPU split: one batched span per call, the spans
 * add_batch_stride counted (batch_span_drop).  Only runs for a batch during
 * which the thread was switched out, so a thread that keeps its CPU pays
 * nothing.
 */
static long add_batch_offcpu(__u64 i, void *ctx)
{
	struct batch_walk *walk = ctx;
	__u64 index = walk->first + i;
	struct kh_batch_entry *e;
	__u64 start_ns, end_ns, elapsed_ns;

	if (index >= walk->count || index >= KH_BATCH_CAPACITY)
		return 1;
	e = &walk->buf->entries[index & (KH_BATCH_CAPACITY - 1)];
	if (batch_span_drop(walk, e, &elapsed_ns) != KH_DROP_COUNT)
		return 0;
	entry_times(walk, e, &start_ns, &end_ns);
	add_offcpu_of(walk->hist, walk->offcpu, e->stage, start_ns, end_ns);
	return 0;
}

struct kh_inputs {
	__u64 bytes;
	__u64 units;
};

KH_GLOBAL int kh_thread_batch(__u64 state_addr, __u64 flushes, __u32 flags, __u32 count,
		    struct kh_inputs *inputs);

/*
 * Completed spans, and the input counted since the thread's last batch:
 * args are the batch probe's (entries, count, input bytes, input units,
 * flush TSC, flushes, capacity).  Out of line: its walk (208 bytes of
 * stack) and the registers' copy in batch_args are never on the stack at
 * once.  With probe ABI 3 (flags KH_THREAD_ABI3: flushes given), the
 * thread's buffer is marked as counted, so that it is not counted again if
 * the thread dies before the program resets it, and the part an execve that
 * failed drained is skipped; KH_THREAD_ABI6 says its buffer's layout.
 */
static __noinline void on_batch(const __u64 *args, __u32 flags)
{
	__u64 entries, count, flush_tsc, flushes;
	struct kh_inputs inputs;
	struct batch_walk walk;
	struct task_struct *task;
	__u64 born, switches, min_start;
	__u32 zero = 0, slot;

	if (!args)
		return;
	entries = args[0];
	count = args[1];
	inputs.bytes = args[2];
	inputs.units = args[3];
	flush_tsc = args[4];
	flushes = args[5];
	task = kh_current_task();
	born = KH_TASK_READ(task, start_time);
	switches = KH_TASK_READ(task, nvcsw) + KH_TASK_READ(task, nivcsw);
	walk.now_ns = bpf_ktime_get_ns();
	walk.flush_ticks = flush_tsc & ~KH_TIME_TSC;
	walk.tsc_ok = (flush_tsc & KH_TIME_TSC) && tsc_mult;

	if (count > KH_BATCH_CAPACITY)
		count = KH_BATCH_CAPACITY;
	/*
	 * Before preemption goes off: the verifier of Linux 6.12 refuses a
	 * global function's call with preemption disabled, and this one only
	 * touches the thread's own storage.
	 */
	walk.first = kh_thread_batch(entries - KH_TS_BATCH_OFF, flushes, flags, count, &inputs);
	/*
	 * From the copy into this CPU's scratch buffer on: another traced
	 * thread preempting this one on the CPU would flush into the same
	 * buffer.
	 */
	kh_preempt_disable();
	walk.buf = bpf_map_lookup_elem(&batch_scratch, &zero);
	if (!walk.buf) {
		kh_preempt_enable();
		return;
	}
	/*
	 * The thread wrote these entries just now, so the read fails only
	 * for a buffer that is not the thread's any more: its spans are lost,
	 * and counted as unread.
	 */
	if (bpf_probe_read_user(walk.buf->entries, count * sizeof(struct kh_batch_entry),
				(const void *)entries)) {
		walk.stats = stats_of(active_slot);
		if (walk.stats && count > walk.first)
			walk.stats->drops[KH_DROP_EXIT_UNREAD] += count - walk.first;
		count = 0;
	}
	/* Through the map value (struct batch_buffer says why). */
	*(volatile __u32 *)&walk.buf->count = count;
	count = *(volatile __u32 *)&walk.buf->count;

	slot = active_slot;
	walk.stats = stats_of(slot);
	walk.hist = hist_of(slot);
	/*
	 * Both or neither (they cannot be missing): a walk whose hist might be
	 * NULL would fork the verifier at every unrolled span.
	 */
	if (walk.stats && walk.hist) {
		walk.session_start = slot < KH_MAX_SLOTS ? slot_start_ns[slot] : 0;
		walk.stats->probe_hits += 1;
		walk.stats->input_bytes += inputs.bytes;
		walk.stats->input_units += inputs.units;
		walk.count = count;
		/* Through the map value, like count. */
		*(volatile __s64 *)&walk.buf->start_lo =
			walk.tsc_ok ? tsc_lower_bound(&walk, trace_start_ns)
				    : 0x7fffffffffffffffll; /* TSC starts unusable */
		*(volatile __s64 *)&walk.buf->end_lo = tsc_lower_bound(&walk, walk.session_start);
		walk.start_lo = *(volatile __s64 *)&walk.buf->start_lo;
		walk.end_lo = *(volatile __s64 *)&walk.buf->end_lo;
		walk.buf->min_start_ns = KH_BATCH_NO_START;
		if (walk.first < count)
			kh_loop(KH_BATCH_CAPACITY / BATCH_STRIDE,
				(count - walk.first + BATCH_STRIDE - 1) / BATCH_STRIDE,
				add_batch_stride, &walk);
		/*
		 * A second pass only when the thread left its CPU during the
		 * batch (batch_min_start_ns).  Its switch log is a hash lookup
		 * (2.3 ns a batched span here), skipped when this CPU's last
		 * batch was the same thread's, its count of switches has not
		 * moved since, and every span began after that batch: then no
		 * off-CPU interval ended while one of them ran.
		 */
		min_start = batch_min_start_ns(&walk);
		if (walk.first < count &&
		    (walk.buf->last_born != born || walk.buf->last_switches != switches ||
		     min_start < walk.buf->last_flush_ns)) {
			walk.offcpu = offcpu_of_current();
			if (walk.offcpu && offcpu_newest_in(walk.offcpu) > min_start)
				kh_loop(KH_CLASSIC_OFFCPU_SPANS, count - walk.first, add_batch_offcpu,
					&walk);
		}
		walk.buf->last_born = born;
		walk.buf->last_switches = switches;
		walk.buf->last_flush_ns = walk.now_ns;
	}
	/* Branch-free: a branch here doubled the states the verifier walks. */
	walk.buf->anchor_ticks = walk.flush_ticks;
	walk.buf->anchor_ns = walk.now_ns * walk.tsc_ok;
	kh_preempt_enable();
}

/* Six before probe ABI 6, whose seventh is the buffer's capacity. */
#define KH_BATCH_ARGS 7

/*
 * The batch probe's arguments, as bpf_usdt_arg reads them, with one spec
 * lookup and one read of the registers for all six: bpf_usdt_arg costs a
 * lookup and a helper call per argument, 1.2 ns a batched span here.  An
 * argument the site does not have is 0 (the generation, before ABI 3, and
 * the flush TSC, before ABI 2, the capacity before ABI 6).  Returns the
 * site's argument count, or -1.
 * Out of line, so that the registers' copy (168 bytes) and the batch's
 * walk (on_batch) are never on the stack together: every program stays
 * within the 512 bytes a kernel without private stacks allows to the
 * deepest chain of calls, bpf_loop's callbacks included (Linux 6.1
 * counted kh_usdt's at 544 with both in one frame).
 */
static __noinline int batch_args(struct pt_regs *ctx, __u64 *a)
{
	__u64 regs[KH_PT_REGS_WORDS];
	struct __bpf_usdt_spec *spec;
	int id = __bpf_usdt_spec_id(ctx);

	if (id < 0 || !a)
		return -1;
	spec = bpf_map_lookup_elem(&__bpf_usdt_specs, &id);
	if (!spec || bpf_probe_read_kernel(regs, sizeof(regs), ctx))
		return -1;
#pragma unroll
	for (int i = 0; i < KH_BATCH_ARGS; i++) {
		struct __bpf_usdt_arg_spec *arg = &spec->args[i];
		__u64 v;

		if (i >= spec->arg_cnt)
			break;
		if (arg->arg_type == BPF_USDT_ARG_CONST) {
			v = arg->val_off;
		} else {
			__u32 reg = (__u16)arg->reg_off / 8;

			v = 0;
			if (reg < KH_PT_REGS_WORDS) {
				/* The load must stay after the test the verifier bounds it by. */
				asm volatile("" : "+r"(reg));
				if (reg < KH_PT_REGS_WORDS)
					v = regs[reg];
			}
			if (arg->arg_type == BPF_USDT_ARG_REG_DEREF &&
			    bpf_probe_read_user(&v, sizeof(v), (void *)(v + arg->val_off)))
				v = 0;
		}
		v <<= arg->arg_bitshift;
		a[i] = arg->arg_signed ? (__u64)((__s64)v >> arg->arg_bitshift)
				       : v >> arg->arg_bitshift;
	}
	return spec->arg_cnt;
}

/*
 * Out of line for the same reason, and so is on_batch: kh_usdt's own frame
 * stays small, and this one holds only the arguments.
 */
static __noinline void on_batch_probe(struct pt_regs *ctx)
{
	__u64 a[KH_BATCH_ARGS] = {};
	int args = batch_args(ctx, a);

	if (args < 0)
		return;
	on_batch(a, (args >= 6 ? KH_THREAD_ABI3 : 0) |
			    (args >= 7 && a[6] == KH_BATCH_CAPACITY ? KH_THREAD_ABI6 : 0));
}

static __always_inline void add_input(bool units, __u64 n)
{
	struct kh_slot_stats *stats;

	kh_preempt_disable();
	stats = stats_of(active_slot);
	if (stats) {
		stats->probe_hits += 1;
		if (units)
			stats->input_units += n;
		else
			stats->input_bytes += n;
	}
	kh_preempt_enable();
}

/* The process at each transition: kernel internals read by layout. */
#include "layout.bpf.h"

static __always_inline void fill_event(struct kh_event *e, __u32 type, __u32 slot)
{
	__u64 id = bpf_get_current_pid_tgid();

	e->type = type;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->slot = slot;
	e->ts_ns = bpf_ktime_get_ns();
	e->arg0 = 0;
	e->arg1 = 0;
	e->key[0] = 0;
	e->value[0] = 0;
	e->resident_pages = 0;
	e->virtual_pages = 0;
	e->threads = 0;
	e->cpu_ns = 0;
	e->peak_resident_pages = 0;
	e->peak_threads = 0;
	e->sampled_ns = 0;
	e->key_err = 0;
	e->value_err = 0;
	if (type == KH_EVENT_SESSION_START || type == KH_EVENT_TRANSITION ||
	    type == KH_EVENT_SESSION_FINISH)
		kh_sample_task(e);
}

static __always_inline struct kh_event *event_reserve(__u32 type, __u32 slot)
{
	struct kh_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(slot, KH_DROP_RINGBUF_FULL);
		return NULL;
	}
	fill_event(e, type, slot);
	return e;
}

/* Events are rare and someone waits on each: wake the reader at once. */
static __always_inline void event_submit(struct kh_event *e)
{
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/*
 * For events the loader needs only in order, not at once: waking it costs
 * the traced thread ~5 us here (an IPI, a VM exit on this machine), and the
 * next woken event, or the process's exit, delivers these before it.  A
 * buffer half full wakes it anyway, so that a burst cannot overflow it.
 */
static __always_inline void event_submit_lazily(struct kh_event *e)
{
	bool filling = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > KH_RINGBUF_BYTES / 2;

	bpf_ringbuf_submit(e, filling ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

static __always_inline void on_session_start(__u64 sequence, __u64 abi_version)
{
	__u32 slot = KH_OUTSIDE_SLOT, i;
	struct kh_event *e;

	/* As the seed's SessionActive: the open session goes on, spans stay in it. */
	if (active_slot != KH_OUTSIDE_SLOT && active_slot < KH_MAX_SLOTS) {
		e = event_reserve(KH_EVENT_SESSION_REFUSED, active_slot);
		if (!e)
			return;
		e->arg0 = sequence;
		e->arg1 = abi_version;
		event_submit(e);
		return;
	}

	/* The lowest free slot; the loader frees a slot once it has read it. */
	for (i = 1; i < KH_MAX_SLOTS; i++) {
		if (!slot_busy[i]) {
			slot = i;
			break;
		}
	}
	if (slot == KH_OUTSIDE_SLOT) {
		/* The reader fell behind by KH_MAX_SLOTS-1 sessions. */
		count_drop(KH_OUTSIDE_SLOT, KH_DROP_SESSION_SLOTS);
	} else {
		slot_busy[slot & (KH_MAX_SLOTS - 1)] = 1;
		slot_start_ns[slot & (KH_MAX_SLOTS - 1)] = bpf_ktime_get_ns();
	}
	active_slot = slot;

	e = event_reserve(KH_EVENT_SESSION_START, slot);
	if (!e)
		return;
	e->arg0 = sequence;
	e->arg1 = abi_version;
	event_submit(e);
}

static __always_inline void on_identity(__u64 key, __u64 value)
{
	struct kh_event *e = event_reserve(KH_EVENT_IDENTITY, active_slot);

	int err;

	if (!e)
		return;
	/* Faults the pages in when needed: kh_usdt_identity is sleepable. */
	e->arg0 = key;
	e->arg1 = value;
	err = kh_read_user_str(e->key, sizeof(e->key), (const void *)key);
	e->key_err = err < 0 ? err : 0;
	err = kh_read_user_str(e->value, sizeof(e->value), (const void *)value);
	e->value_err = err < 0 ? err : 0;
	event_submit_lazily(e);
}

static __always_inline void on_transition(__u64 state)
{
	struct kh_event *e = event_reserve(KH_EVENT_TRANSITION, active_slot);

	if (!e)
		return;
	e->arg0 = state;
	event_submit(e);
}

static __always_inline void on_session_finish(__u64 status)
{
	__u32 slot = active_slot;
	struct kh_event *e;

	/* Spans that end from here on belong to no session. */
	active_slot = KH_OUTSIDE_SLOT;
	e = event_reserve(KH_EVENT_SESSION_FINISH, slot);
	if (!e)
		return;
	e->arg0 = status;
	event_submit(e);
}

/*
 * Every keyhog probe site of a file but its identity sites, attached with
 * one uprobe-multi link.  Not sleepable: sleepable programs may not read
 * the perf events the CPU-time sample needs (sched_clocks).
 */
/*
 * Every probe but the batch one.  Out of line, so that kh_usdt's own frame
 * stays at a few bytes: the batch path's chain of calls (on_batch_probe,
 * on_batch, its bpf_loop callbacks and theirs) then needs 448 bytes of
 * the 512 a kernel without private stacks allows (test_kernels checks it).
 */
static __noinline void on_probe(struct pt_regs *ctx, long kind)
{
	long a0 = 0, a1 = 0, a2 = 0;

	if (!ctx)
		return;
	bpf_usdt_arg(ctx, 0, &a0);
	bpf_usdt_arg(ctx, 1, &a1);
	switch (kind) {
	case KH_PROBE_SPAN:
		if (!MODE_LINKED(KH_MODE_SPAN))
			break;
		bpf_usdt_arg(ctx, 2, &a2);
		record_span(a0, a1, bpf_ktime_get_ns(), a2);
		break;
	case KH_PROBE_SPAN_ENTER:
		if (MODE_LINKED(KH_MODE_PAIR))
			on_span_enter(a0);
		break;
	case KH_PROBE_SPAN_EXIT:
		if (MODE_LINKED(KH_MODE_PAIR))
			on_span_exit(a0, a1);
		break;
	case KH_PROBE_BATCH_REGISTER:
		/* a1: the program's probe ABI, 6 and on with 256-entry buffers. */
		kh_thread_batch(a0, 0, KH_THREAD_ABI3 | (a1 >= 6 ? KH_THREAD_ABI6 : 0), 0, NULL);
		break;
	case KH_PROBE_INPUT_BYTES:
		add_input(false, a0);
		break;
	case KH_PROBE_INPUT_UNITS:
		add_input(true, a0);
		break;
	case KH_PROBE_SESSION_START:
		on_session_start(a0, a1);
		break;
	case KH_PROBE_TRANSITION:
		on_transition(a0);
		break;
	case KH_PROBE_SESSION_FINISH:
		on_session_finish(a0);
		break;
	}
}

SEC("uprobe")
int kh_usdt(struct pt_regs *ctx)
{
	long kind = bpf_usdt_cookie(ctx);

	if (filter_tgid && traced_tgid && (__u32)(bpf_get_current_pid_tgid() >> 32) != traced_tgid)
		return 0; /* another tracer's process (compat.bpf.h) */
	if (KH_BATCH_PATH && MODE_LINKED(KH_MODE_BATCH) && kind == KH_PROBE_BATCH) {
		on_batch_probe(ctx);
		return 0;
	}
	/*
	 * The classic object has no batch path: in bounded loops the walk of a
	 * 256-span batch (probe ABI 6) took kh_usdt past the verifier's
	 * 1,000,000 instructions on 6.18, and khprof traces in span mode
	 * where it loads this object (capture/kernel/load.c).
	 */
	on_probe(ctx, kind);
	return 0;
}

/*
 * The probe sites of a child the traced process forked, when it is not
 * followed: linked only so that the kernel keeps its sites working in the
 * child (attach__protect_child); its hits are not the traced process's.
 */
SEC("uprobe")
int kh_untraced(struct pt_regs *ctx)
{
	return 0;
}

/*
 * The identity sites of a file, with a link of their own: sleepable, so
 * that bpf_copy_from_user_str can fault in a string on a page the program
 * never touched (a version literal in .rodata, the usual case).
 */
static __always_inline int identity_probe(struct pt_regs *ctx)
{
	long key = 0, value = 0;

	if (filter_tgid && traced_tgid && (__u32)(bpf_get_current_pid_tgid() >> 32) != traced_tgid)
		return 0;
	bpf_usdt_arg(ctx, 0, &key);
	bpf_usdt_arg(ctx, 1, &value);
	on_identity(key, value);
	return 0;
}

SEC("uprobe.s")
int kh_usdt_identity(struct pt_regs *ctx)
{
	return identity_probe(ctx);
}

/*
 * The same where uprobes cannot sleep (before Linux 6.1; the classic
 * object's kernels): libbpf makes every "uprobe.s" program sleepable at
 * load, whatever its flags say, so this one takes its place there.
 */
SEC("uprobe")
int kh_usdt_identity_nosleep(struct pt_regs *ctx)
{
	return identity_probe(ctx);
}

/*
 * Attached to the dynamic loader's _dl_debug_state(), which it calls after
 * mapping or unmapping objects and before running their constructors.  In
 * `record` the process is stopped here so that probes in a library it just
 * loaded are attached before any of its code runs.
 */
SEC("uprobe")
int kh_loader_state(struct pt_regs *ctx)
{
	struct kh_event *e;
	int r_state = RT_CONSISTENT;

	if (filter_tgid && traced_tgid && (__u32)(bpf_get_current_pid_tgid() >> 32) != traced_tgid)
		return 0;

	/* Before the map changes there is nothing new to attach to yet. */
	if (r_state_from_hook &&
	    bpf_probe_read_user(&r_state, sizeof(r_state),
				(const void *)(kh_probe_ip(ctx) + r_state_from_hook)) == 0 &&
	    r_state != RT_CONSISTENT)
		return 0;
	/*
	 * Stopped only when khprof is sure to hear of it: a lost event would
	 * leave the process stopped for good.  Unheard, it runs on, and the
	 * library's probes wait for the next loader event (counted).
	 */
	e = bpf_ringbuf_reserve(&control, sizeof(*e), 0);
	if (!e) {
		count_drop(active_slot, KH_DROP_RINGBUF_FULL);
		return 0;
	}
	fill_event(e, KH_EVENT_LOADER_STATE, active_slot);
	if (stop_on_loader_event)
		bpf_send_signal(SIGSTOP);
	event_submit(e);
	return 0;
}

/*
 * Peaks between samples.  Every RSS counter change of every process passes
 * here while khprof traces; all but the traced process's leave at the
 * first test.
 */
SEC("tp_btf/rss_stat")
int BPF_PROG(kh_rss_stat, struct mm_struct *mm, int member)
{
	struct task_struct *task;
	__u64 pages;

	if (!traced_tgid || (__u32)(bpf_get_current_pid_tgid() >> 32) != traced_tgid)
		return 0;
	task = kh_current_task();
	if (mm != kh_task_mm(task))
		return 0; /* a page fault the traced process took in another one's memory */
	pages = resident_pages_of(mm);
	end_resident_pages = pages;
	if (pages > peak_resident_pages)
		peak_resident_pages = pages;
	return 0;
}

/* After copy_process(): the new thread is already counted. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(kh_process_fork, struct task_struct *parent, struct task_struct *child)
{
	__u64 threads;

	if (!traced_tgid || child->tgid != (pid_t)traced_tgid)
		return 0;
	threads = BPF_CORE_READ(child, signal, nr_threads);
	if (threads > peak_threads)
		peak_threads = threads;
	return 0;
}

/* Buffers of threads that end: a file of its own, for its length. */
#include "thread_ends.bpf.h"
/* Forked children: followed (--follow-forks) or made safe (attach__protect_child). */
#include "follow.bpf.h"
