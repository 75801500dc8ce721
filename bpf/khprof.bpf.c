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
#include <bpf/usdt.bpf.h>

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

/* Session slot bookkeeping; the loader clears slot_busy after reading a slot. */
__u32 active_slot = KH_OUTSIDE_SLOT;
__u32 slot_busy[KH_MAX_SLOTS];
__u64 slot_start_ns[KH_MAX_SLOTS];
/* _r_debug.r_state's address minus _dl_debug_state's; 0 if unknown. */
__s64 r_state_from_hook;
/*
 * TSC ticks to ns: ns = ticks * tsc_mult >> tsc_shift, measured by the loader
 * after load (the batch probe's TSC times); 0 until then.
 */
__u32 tsc_mult;
__u32 tsc_shift;

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

/* Pair mode's open spans; task storage is freed by the kernel at thread exit. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kh_task_stack);
} task_stacks SEC(".maps");

struct batch_buffer {
	struct kh_batch_entry entries[KH_BATCH_CAPACITY];
	/*
	 * Earliest start of the batch's spans.  Kept here, not in the walk on
	 * the stack: the verifier re-walks a bpf_loop body while the caller's
	 * stack changes, and a changing value there never settles.
	 */
	__u64 min_start_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch_buffer);
} batch_scratch SEC(".maps");

/*
 * Uprobe programs run with migration disabled but preemption enabled, so a
 * per-CPU read-modify-write could interleave with another traced thread on
 * the same CPU.  Disabling preemption around the update keeps every count
 * exact without atomic instructions.
 */
extern void bpf_preempt_disable(void) __ksym;
extern void bpf_preempt_enable(void) __ksym;

/* Latency histograms and off-CPU split (include/khprof_hist.h). */
struct kh_hist_block;
static __always_inline struct kh_hist_block *hist_of(__u32 slot);
static __always_inline void add_dist(struct kh_hist_block *hist, __u32 stage, __u64 elapsed_ns);
static __always_inline void add_offcpu(struct kh_hist_block *hist, __u32 stage, __u64 start_ns,
				       __u64 end_ns);
static __always_inline struct kh_offcpu_thread *offcpu_of_current(void);
static __always_inline __u64 offcpu_newest_in(struct kh_offcpu_thread *th);
static long add_batch_offcpu(__u64 index, void *ctx);

static __always_inline struct kh_slot_stats *stats_of(__u32 slot)
{
	if (slot >= KH_SLOT_MAP_ENTRIES)
		slot = KH_OUTSIDE_SLOT;
	return bpf_map_lookup_elem(&slot_stats, &slot);
}

static __always_inline void count_drop(__u32 slot, enum kh_drop drop)
{
	struct kh_slot_stats *stats;

	bpf_preempt_disable();
	stats = stats_of(slot);
	if (stats)
		stats->drops[drop] += 1;
	bpf_preempt_enable();
}

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
 * Adds one completed span, or counts why it cannot be added: a start of 0,
 * or one left by an earlier tracer, means the enter was not seen; a span
 * that ended before its session began is late (batches only).  True when
 * the span was added.
 */
static __always_inline bool account_span(struct kh_slot_stats *stats, struct kh_hist_block *hist,
					 __u32 stage, __u64 start_ns, __u64 end_ns,
					 __u32 attribution, __u64 session_start_ns)
{
	if (start_ns == 0 || start_ns < trace_start_ns || start_ns > end_ns)
		stats->drops[KH_DROP_UNMATCHED_EXIT] += 1;
	else if (end_ns < session_start_ns)
		stats->drops[KH_DROP_LATE_BATCH] += 1;
	else
		return add_span(stats, hist, stage, end_ns - start_ns, attribution);
	return false;
}

/*
 * Minimum and maximum of two values less than 2^63 apart, without a
 * branch: in the unrolled batch walk every branch is one more fork for the
 * verifier to follow at every start.
 */
static __always_inline __u64 min_no_branch(__u64 a, __u64 b)
{
	__u64 d = b - a;

	return a + (d & (__u64)((__s64)d >> 63));
}

static __always_inline __u64 max_no_branch(__u64 a, __u64 b)
{
	__u64 d = b - a;

	return b - (d & (__u64)((__s64)d >> 63));
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

	bpf_preempt_disable();
	slot = active_slot;
	stats = stats_of(slot);
	hist = hist_of(slot);
	if (stats) {
		stats->probe_hits += 1;
		if (account_span(stats, hist, stage, start_ns, end_ns, attribution, 0))
			add_offcpu(hist, stage, start_ns, end_ns);
	}
	bpf_preempt_enable();
}

static __always_inline void on_span_enter(__u64 stage)
{
	__u64 now = bpf_ktime_get_ns();
	struct kh_task_stack *stack;
	__u32 depth;

	stack = bpf_task_storage_get(&task_stacks, bpf_get_current_task_btf(), 0,
				     BPF_LOCAL_STORAGE_GET_F_CREATE);
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

	stack = bpf_task_storage_get(&task_stacks, bpf_get_current_task_btf(), 0, 0);
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
	bool tsc_ok;       /* the flush gave its TSC and its rate is known */
	__u32 count;
};

/*
 * A batched TSC time on the kernel clock: placed by its distance from the
 * flush, which happened now, so no offset between the clocks is needed and
 * both edges of a span move together.  Branch-free but for the callers'
 * one test, because the verifier walks every copy in the unrolled stride:
 * with branches here the programs took three times as long to load.
 */
static __always_inline __u64 tsc_time_ns(__u64 t, const struct batch_walk *walk)
{
	__s64 ticks = (__s64)(walk->flush_ticks - (t & ~KH_TIME_TSC));

	ticks &= ~(ticks >> 63); /* TSCs of different CPUs may differ by a few ticks */
	return walk->now_ns - ticks_to_ns((__u64)ticks);
}

/*
 * 4, not 8, since each span also updates its histogram: at 8 the verifier
 * walked 18.4k instructions of kh_usdt (26 ms at every start here), at 4
 * 7.1k (8 ms), for the same cost per span (46.8 against 46.9 ns).
 */
#define BATCH_STRIDE 4
_Static_assert(KH_BATCH_CAPACITY % BATCH_STRIDE == 0, "whole strides");

/*
 * BATCH_STRIDE batched spans per call: bpf_loop lets the verifier check
 * this body once instead of walking all 64 entries (20 ms of verification
 * at every start), and the stride keeps the per-call cost off each span.
 */
static long add_batch_stride(__u64 stride, void *ctx)
{
	struct batch_walk *walk = ctx;
	__u64 min_start;
	long done = 0;

	if (stride >= KH_BATCH_CAPACITY / BATCH_STRIDE)
		return 1;
	/* In a register through the stride, stored once: 47.6 -> 46.8 ns a span here. */
	min_start = walk->buf->min_start_ns;
	for (__u32 j = 0; j < BATCH_STRIDE; j++) {
		__u32 index = stride * BATCH_STRIDE + j;
		struct kh_batch_entry *e;
		__u64 start_ns, end_ns;

		if (index >= walk->count || index >= KH_BATCH_CAPACITY) {
			done = 1;
			break;
		}
		e = &walk->buf->entries[index];
		start_ns = e->start_ns;
		end_ns = e->end_ns;
		/* CLOCK_MONOTONIC times are used as they are (docs/PROBES.md). */
		if (start_ns & KH_TIME_TSC) {
			start_ns = walk->tsc_ok ? tsc_time_ns(start_ns, walk) : 0;
			end_ns = tsc_time_ns(end_ns, walk);
		}
		account_span(walk->stats, walk->hist, e->stage, start_ns, end_ns, e->attribution,
			     walk->session_start);
		/* A dropped span's 0 only costs a needless second pass. */
		min_start = min_no_branch(min_start, start_ns);
	}
	walk->buf->min_start_ns = min_start;
	return done;
}

/* Completed spans, and the input counted since the thread's last batch. */
static __always_inline void on_batch(__u64 entries, __u64 count, __u64 input_bytes,
				     __u64 input_units, __u64 flush_tsc)
{
	struct batch_walk walk;
	__u32 zero = 0, slot;

	walk.now_ns = bpf_ktime_get_ns();
	walk.flush_ticks = flush_tsc & ~KH_TIME_TSC;
	walk.tsc_ok = (flush_tsc & KH_TIME_TSC) && tsc_mult;

	walk.buf = bpf_map_lookup_elem(&batch_scratch, &zero);
	if (!walk.buf)
		return;
	if (count > KH_BATCH_CAPACITY)
		count = KH_BATCH_CAPACITY;
	if (bpf_probe_read_user(walk.buf->entries, count * sizeof(struct kh_batch_entry),
				(const void *)entries))
		count = 0;

	bpf_preempt_disable();
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
		walk.stats->input_bytes += input_bytes;
		walk.stats->input_units += input_units;
		walk.count = count;
		walk.buf->min_start_ns = 1ull << 62; /* later than any time: 146 years of uptime */
		bpf_loop((count + BATCH_STRIDE - 1) / BATCH_STRIDE, add_batch_stride, &walk, 0);
		/* A second pass only when the thread left its CPU during the batch. */
		walk.offcpu = offcpu_of_current();
		if (walk.offcpu && walk.hist && offcpu_newest_in(walk.offcpu) > walk.buf->min_start_ns)
			bpf_loop(count, add_batch_offcpu, &walk, 0);
	}
	bpf_preempt_enable();
}

static __always_inline void add_input(bool units, __u64 n)
{
	struct kh_slot_stats *stats;

	bpf_preempt_disable();
	stats = stats_of(active_slot);
	if (stats) {
		stats->probe_hits += 1;
		if (units)
			stats->input_units += n;
		else
			stats->input_bytes += n;
	}
	bpf_preempt_enable();
}

/* VmRSS counts file, anon and shmem pages: the counters /proc reads. */
static __always_inline void sample_task(struct kh_event *e)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	__s64 rss;

	e->threads = BPF_CORE_READ(task, signal, nr_threads);
	if (!mm)
		return;
	e->virtual_pages = BPF_CORE_READ(mm, total_vm);
	rss = BPF_CORE_READ(mm, rss_stat[MM_FILEPAGES].count) +
	      BPF_CORE_READ(mm, rss_stat[MM_ANONPAGES].count) +
	      BPF_CORE_READ(mm, rss_stat[MM_SHMEMPAGES].count);
	e->resident_pages = rss > 0 ? rss : 0;
}

static __always_inline struct kh_event *event_reserve(__u32 type, __u32 slot)
{
	struct kh_event *e;
	__u64 id;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_drop(slot, KH_DROP_RINGBUF_FULL);
		return NULL;
	}
	id = bpf_get_current_pid_tgid();
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
	if (type == KH_EVENT_SESSION_START || type == KH_EVENT_TRANSITION ||
	    type == KH_EVENT_SESSION_FINISH)
		sample_task(e);
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

	if (!e)
		return;
	bpf_probe_read_user_str(e->key, sizeof(e->key), (const void *)key);
	bpf_probe_read_user_str(e->value, sizeof(e->value), (const void *)value);
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

/* Every keyhog probe site of a file, attached with one uprobe-multi link. */
SEC("usdt")
int kh_usdt(struct pt_regs *ctx)
{
	long a0 = 0, a1 = 0, a2 = 0;

	bpf_usdt_arg(ctx, 0, &a0);
	bpf_usdt_arg(ctx, 1, &a1);
	switch (bpf_usdt_cookie(ctx)) {
	case KH_PROBE_SPAN:
		bpf_usdt_arg(ctx, 2, &a2);
		record_span(a0, a1, bpf_ktime_get_ns(), a2);
		break;
	case KH_PROBE_SPAN_ENTER:
		on_span_enter(a0);
		break;
	case KH_PROBE_SPAN_EXIT:
		on_span_exit(a0, a1);
		break;
	case KH_PROBE_BATCH: {
		long a3 = 0, a4 = 0; /* a4: absent before probe ABI 2 */

		bpf_usdt_arg(ctx, 2, &a2);
		bpf_usdt_arg(ctx, 3, &a3);
		bpf_usdt_arg(ctx, 4, &a4);
		on_batch(a0, a1, a2, a3, a4);
		break;
	}
	case KH_PROBE_INPUT_BYTES:
		add_input(false, a0);
		break;
	case KH_PROBE_INPUT_UNITS:
		add_input(true, a0);
		break;
	case KH_PROBE_SESSION_START:
		on_session_start(a0, a1);
		break;
	case KH_PROBE_IDENTITY:
		on_identity(a0, a1);
		break;
	case KH_PROBE_TRANSITION:
		on_transition(a0);
		break;
	case KH_PROBE_SESSION_FINISH:
		on_session_finish(a0);
		break;
	}
	return 0;
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

	/* Before the map changes there is nothing new to attach to yet. */
	if (r_state_from_hook &&
	    bpf_probe_read_user(&r_state, sizeof(r_state),
				(const void *)(bpf_get_func_ip(ctx) + r_state_from_hook)) == 0 &&
	    r_state != RT_CONSISTENT)
		return 0;
	e = event_reserve(KH_EVENT_LOADER_STATE, active_slot);
	if (stop_on_loader_event)
		bpf_send_signal(SIGSTOP);
	if (e)
		event_submit(e);
	return 0;
}

/* --- latency histograms and off-CPU time (include/khprof_hist.h) -------- */

/*
 * Process whose threads' context switches are logged; set by the loader
 * once it knows the target (0: none, so the scheduler programs return at
 * once).  Other processes' switches pay this one compare.
 */
__u32 traced_tgid;

/*
 * One block of all stages' histograms per (CPU, slot), key cpu *
 * KH_SLOT_MAP_ENTRIES + slot; the loader sizes the map to the possible CPUs.  A
 * plain array rather than a per-CPU one: a per-CPU value is limited to
 * 32 KiB, and one lookup per batch serves its 64 spans.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KH_SLOT_MAP_ENTRIES);
	__type(key, __u32);
	__type(value, struct kh_hist_block);
} hist_blocks SEC(".maps");

/*
 * Off-CPU intervals of the traced process's threads, by thread id.  A hash
 * map, not task storage: a task-storage lookup from a tracing program fails
 * while any task-storage user on the same CPU is preempted inside one (a
 * per-CPU busy count), and a switch it missed lost a whole sleep (1 run in
 * 12 here while other tracers ran).  Inserted at a thread's first switch,
 * deleted at its exit.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, KH_OFFCPU_THREADS);
	__type(key, __u32);
	__type(value, struct kh_offcpu_thread);
} offcpu_threads SEC(".maps");

/* Zeroed, never written: what a new thread's entry starts from. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kh_offcpu_thread);
} offcpu_zero SEC(".maps");

static __always_inline struct kh_hist_block *hist_of(__u32 slot)
{
	__u32 key;

	if (slot >= KH_SLOT_MAP_ENTRIES)
		slot = KH_OUTSIDE_SLOT;
	key = bpf_get_smp_processor_id() * KH_SLOT_MAP_ENTRIES + slot;

	return bpf_map_lookup_elem(&hist_blocks, &key);
}

/*
 * Inlined into every unrolled copy of the batch walk: as a global function
 * the verifier would check it once, but the call cost 7 ns per batched
 * span here (48 -> 55 ns).
 */
static __always_inline void add_dist(struct kh_hist_block *hist, __u32 stage, __u64 elapsed_ns)
{
	__u64 bucket = kh_hist_bucket(elapsed_ns);
	struct kh_stage_hist *h;

	if (stage >= KH_STAGE_COUNT)
		return;
	h = &hist->stages[stage];
	/*
	 * A clamp that never acts, but the verifier cannot follow the bit
	 * tricks; in asm so that the compiler, which can, keeps it on the very
	 * register used as the index.
	 */
	asm volatile("if %[b] < %[n] goto +1\n\t%[b] = %[last]"
		     : [b] "+r"(bucket)
		     : [n] "i"(KH_HIST_BUCKETS), [last] "i"(KH_HIST_BUCKETS - 1));
	h->counts[bucket] += 1;
	h->max_ns = max_no_branch(h->max_ns, elapsed_ns);
	h->min_below_top = max_no_branch(h->min_below_top, KH_HIST_MIN_TOP - elapsed_ns);
}

static __always_inline __u64 overlap(__u64 a0, __u64 a1, __u64 b0, __u64 b1)
{
	__u64 lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? hi - lo : 0;
}

/* The current thread's off-CPU log; NULL if it never left its CPU. */
static __always_inline struct kh_offcpu_thread *offcpu_of_current(void)
{
	if (!traced_tgid)
		return NULL;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	return bpf_map_lookup_elem(&offcpu_threads, &tid);
}

/* When the thread last came back to a CPU; 0 if it never left one. */
static __always_inline __u64 offcpu_newest_in(struct kh_offcpu_thread *th)
{
	__u64 n = th->intervals;

	return n ? th->log[(n - 1) & (KH_OFFCPU_LOG - 1)].in_ns : 0;
}

/*
 * Read-only for the callback: the verifier re-walks a bpf_loop body while
 * the caller's stack changes, and sums kept there never settle (loading
 * took seconds); they go straight to the map value instead.
 */
struct offcpu_scan {
	struct kh_offcpu_thread *th;
	struct kh_stage_hist *h;
	__u64 start_ns, end_ns;
};

/* One logged interval per call, newest first. */
static long scan_interval(__u64 i, void *ctx)
{
	struct offcpu_scan *scan = ctx;
	struct kh_offcpu_thread *th = scan->th;
	struct kh_offcpu_interval *iv;
	__u64 n = th->intervals;

	iv = &th->log[(n - 1 - i) & (KH_OFFCPU_LOG - 1)];
	if (i >= n || iv->in_ns <= scan->start_ns) {
		scan->h->offcpu_truncated -= 1; /* reached the span's start after all */
		return 1;
	}
	scan->h->off_cpu_ns += overlap(iv->out_ns, iv->in_ns, scan->start_ns, scan->end_ns);
	scan->h->runnable_ns += overlap(iv->wake_ns, iv->in_ns, scan->start_ns, scan->end_ns);
	return 0;
}

/*
 * Adds the overlap of [start, end] with the thread's logged off-CPU
 * intervals, newest first, stopping at the first that ended before the
 * span began: a span during which the thread never left its CPU costs one
 * compare.  A span that began before the oldest interval still logged is
 * counted as truncated (its off-CPU time is then a lower bound).
 */
static __always_inline void add_offcpu_of(struct kh_hist_block *hist,
					  struct kh_offcpu_thread *th, __u32 stage,
					  __u64 start_ns, __u64 end_ns)
{
	struct offcpu_scan scan = { .th = th, .start_ns = start_ns, .end_ns = end_ns };

	if (!hist || !th || stage >= KH_STAGE_COUNT)
		return;
	if (offcpu_newest_in(th) <= start_ns)
		return; /* the common case: not switched out since the span began */
	scan.h = &hist->stages[stage];
	scan.h->offcpu_truncated += 1; /* until the scan reaches the span's start */
	bpf_loop(KH_OFFCPU_LOG, scan_interval, &scan, 0);
}

static __always_inline void add_offcpu(struct kh_hist_block *hist, __u32 stage, __u64 start_ns,
				       __u64 end_ns)
{
	if (hist)
		add_offcpu_of(hist, offcpu_of_current(), stage, start_ns, end_ns);
}

/*
 * Batch mode's off-CPU split: one batched span per call, the same span
 * filter as add_batch_stride.  Only runs for a batch during which the
 * thread was switched out, so a thread that keeps its CPU pays nothing.
 */
static long add_batch_offcpu(__u64 index, void *ctx)
{
	struct batch_walk *walk = ctx;
	struct kh_batch_entry *e;
	__u64 start_ns, end_ns;

	if (index >= walk->count || index >= KH_BATCH_CAPACITY)
		return 1;
	e = &walk->buf->entries[index];
	start_ns = e->start_ns;
	end_ns = e->end_ns;
	if (start_ns & KH_TIME_TSC) {
		start_ns = walk->tsc_ok ? tsc_time_ns(start_ns, walk) : 0;
		end_ns = tsc_time_ns(end_ns, walk);
	}
	if (start_ns == 0 || start_ns < trace_start_ns || start_ns > end_ns ||
	    end_ns < walk->session_start)
		return 0;
	add_offcpu_of(walk->hist, walk->offcpu, e->stage, start_ns, end_ns);
	return 0;
}

_Static_assert((KH_OFFCPU_LOG & (KH_OFFCPU_LOG - 1)) == 0, "power of two");

#define TASK_RUNNING 0

/* Closes the thread's open off-CPU interval at in_ns. */
static __always_inline void log_interval(struct kh_offcpu_thread *th, __u64 in_ns)
{
	struct kh_offcpu_interval *iv = &th->log[th->intervals & (KH_OFFCPU_LOG - 1)];

	iv->out_ns = th->out_ns;
	iv->wake_ns = th->wake_ns && th->wake_ns <= in_ns ? th->wake_ns : in_ns;
	iv->in_ns = in_ns;
	th->intervals += 1;
	th->out_ns = 0;
	th->wake_ns = 0;
}

/*
 * A switch of a traced thread whose other half never came: the record's
 * off-CPU times may then miss an interval, and it says so.  Seen about once
 * in 400 sleeps on the development machine while other tracers ran.
 */
static __always_inline void count_offcpu_missed(void)
{
	struct kh_hist_block *hist = hist_of(active_slot);

	if (hist)
		__sync_fetch_and_add(&hist->offcpu_missed, 1);
}

/*
 * A traced thread leaving its CPU opens an interval; runnable when it was
 * preempted (still TASK_RUNNING), blocked otherwise until its wakeup.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(kh_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 tgid = traced_tgid;
	struct kh_offcpu_thread *th;
	__u64 now;

	if (!tgid || (prev->tgid != tgid && next->tgid != tgid))
		return 0;
	now = bpf_ktime_get_ns();
	if (prev->tgid == tgid) {
		__u32 tid = prev->pid, zero = 0;

		th = bpf_map_lookup_elem(&offcpu_threads, &tid);
		if (!th) {
			struct kh_offcpu_thread *fresh = bpf_map_lookup_elem(&offcpu_zero, &zero);

			if (fresh)
				bpf_map_update_elem(&offcpu_threads, &tid, fresh, BPF_NOEXIST);
			th = bpf_map_lookup_elem(&offcpu_threads, &tid);
		}
		if (th && th->out_ns) {
			/*
			 * Its switch back in was not seen (rare; counted): the time
			 * until its wakeup, when known, is still blocked time.
			 */
			count_offcpu_missed();
			if (th->wake_ns > th->out_ns && th->wake_ns <= now)
				log_interval(th, th->wake_ns);
		}
		if (th) {
			/*
			 * The kernel counts every switch out before this event: a
			 * gap means some were never seen at all, and is counted too.
			 */
			__u64 switches = prev->nvcsw + prev->nivcsw;

			if (th->switches && switches > th->switches + 1)
				count_offcpu_missed();
			th->switches = switches;
			th->out_ns = now;
			th->wake_ns = preempt || prev_state == TASK_RUNNING ? now : 0;
		}
	}
	if (next->tgid == tgid) {
		__u32 tid = next->pid;

		th = bpf_map_lookup_elem(&offcpu_threads, &tid);
		if (th && th->out_ns)
			log_interval(th, now);
		else if (th)
			count_offcpu_missed(); /* its switch out was not seen */
	}
	return 0;
}

/* A blocked traced thread became runnable: from here it waits for a CPU. */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(kh_sched_wakeup, struct task_struct *p)
{
	__u32 tgid = traced_tgid, tid;
	struct kh_offcpu_thread *th;

	if (!tgid || p->tgid != tgid)
		return 0;
	tid = p->pid;
	th = bpf_map_lookup_elem(&offcpu_threads, &tid);
	if (th && th->out_ns && !th->wake_ns)
		th->wake_ns = bpf_ktime_get_ns();
	return 0;
}

/* A traced thread's log goes with it (thread ids are reused). */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(kh_thread_exit, struct task_struct *p)
{
	__u32 tgid = traced_tgid, tid;
	struct kh_offcpu_thread *th;

	if (!tgid || p->tgid != tgid)
		return 0;
	tid = p->pid;
	th = bpf_map_lookup_elem(&offcpu_threads, &tid);
	/* Switches since the last one seen that were never seen at all. */
	if (th && th->switches && p->nvcsw + p->nivcsw > th->switches)
		count_offcpu_missed();
	bpf_map_delete_elem(&offcpu_threads, &tid);
	return 0;
}
