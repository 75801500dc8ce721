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
#include "arch.bpf.h"
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
 * The context is declared by the type the verifier takes for a uprobe's
 * context in a global function, bpf_user_pt_regs_t: struct pt_regs on
 * x86-64, struct user_pt_regs on aarch64, where Linux 6.1 took a struct
 * pt_regs argument for plain memory and refused bpf_get_attach_cookie on
 * it ("R1 type=mem_or_null expected=ctx").
 */
KH_GLOBAL __noinline int kh_usdt_arg(bpf_user_pt_regs_t *regs, __u64 arg_num, long *res)
{
	struct pt_regs *ctx = (struct pt_regs *)regs;

	/*
	 * Bounded here, before the code of a kernel without cookies
	 * (site.bpf.h) makes the compiler spill it: Linux 6.1's verifier
	 * keeps a bound a value had when spilled, not one tested after.
	 */
	if (!res || arg_num >= BPF_USDT_MAX_ARG_CNT)
		return -1;
	return bpf_usdt_arg(ctx, arg_num, res);
}
#define bpf_usdt_arg(ctx, arg_num, res) kh_usdt_arg((bpf_user_pt_regs_t *)(ctx), arg_num, res)

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
 * Stop the process at an identity probe whose strings could not be read
 * until khprof has read them (on_identity): set where the read cannot
 * fault pages in (the classic object) and khprof may stop the process.
 */
const volatile __u32 stop_to_read_identity = 0;
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

/* Kernel features newer than Linux 6.1 (and 5.10's classic object), behind the loader's flags. */
#include "compat.bpf.h"
/* Per-thread state on kernels with and without task storage. */
#include "task_state.bpf.h"

/* Session slot bookkeeping; the loader clears slot_busy after reading a slot. */
__u32 active_slot = KH_OUTSIDE_SLOT;
__u32 slot_busy[KH_MAX_SLOTS] = {};
__u64 slot_start_ns[KH_MAX_SLOTS] = {};
/*
 * _r_debug.r_state's address minus _dl_debug_state's, on kernels without
 * BPF cookies (with them, each loader link's cookie); 0 if unknown.
 */
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

/* Stopping a process until khprof, or its stop keeper, lets it go. */
#include "stops.bpf.h"

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
 * span_drop's verdicts besides enum kh_drop's reasons: the span counts, or
 * it began before its session started (and ended in it), so it is not the
 * session's: the seed counts a span only for a session that was open when
 * the span began (its Span's session_recording).  Set aside in the slot's
 * begun_before_session, not a drop: the seed leaves it out too.
 */
#define KH_SPAN_COUNTS KH_DROP_COUNT
#define KH_SPAN_BEGUN_BEFORE (KH_DROP_COUNT + 1)

/*
 * Whether a completed span counts for the session whose slot it reached:
 * KH_SPAN_COUNTS, KH_SPAN_BEGUN_BEFORE, or the kh_drop why it cannot be
 * counted: a start of 0, or one left by an earlier tracer, means the enter
 * was not seen; a span that ended before its session began is late (a
 * batch's, or in span and pair mode an exit racing the session's start on
 * another CPU).  The session's start is 0 outside any session.
 */
static __always_inline __u32 span_drop(__u64 start_ns, __u64 end_ns, __u64 session_start_ns)
{
	if (start_ns == 0 || start_ns < trace_start_ns || start_ns > end_ns)
		return KH_DROP_UNMATCHED_EXIT;
	if (end_ns < session_start_ns)
		return KH_DROP_LATE_BATCH;
	if (start_ns < session_start_ns)
		return KH_SPAN_BEGUN_BEFORE;
	return KH_SPAN_COUNTS;
}

/* A span span_drop did not let count, under its reason. */
static __always_inline void set_aside(struct kh_slot_stats *stats, __u32 verdict)
{
	if (verdict == KH_SPAN_BEGUN_BEFORE)
		stats->begun_before_session += 1;
	else if (verdict < KH_DROP_COUNT)
		stats->drops[verdict] += 1;
}

/* Adds one completed span, or counts why it cannot be; true when added. */
static __always_inline bool account_span(struct kh_slot_stats *stats, struct kh_hist_block *hist,
					 __u32 stage, __u64 start_ns, __u64 end_ns,
					 __u32 attribution, __u64 session_start_ns)
{
	__u32 verdict = span_drop(start_ns, end_ns, session_start_ns);

	if (verdict == KH_SPAN_COUNTS)
		return add_span(stats, hist, stage, end_ns - start_ns, attribution);
	set_aside(stats, verdict);
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
		/* Against its session's start: one begun before it is not its (span_drop). */
		if (account_span(stats, hist, stage, start_ns, end_ns, attribution,
				 slot < KH_MAX_SLOTS ? slot_start_ns[slot & (KH_MAX_SLOTS - 1)] : 0))
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

/* The threads that keep a batch buffer, and the claims on their spans. */
#include "buffers.bpf.h"
/* Batch mode: the buffer handed over by the `batch` probe. */
#include "batch.bpf.h"

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
	e->stop_kind = KH_STOP_NONE;
	e->stop_pad = 0;
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
	/*
	 * Where the read cannot fault a page in (a literal on a page the
	 * program never touched, the classic object), khprof reads the string
	 * from the process: stopped here until it has, because the string is
	 * the program's only during KH_IDENTITY (a stack buffer, a freed one),
	 * and a process that runs on may have exited before khprof wakes
	 * (1 record in 6 lost its version on 5.10 under TCG).  As loader_stop:
	 * the stop before the submit, so khprof's SIGCONT cannot come first,
	 * only once the event is sure to reach khprof (reserved), and kept
	 * (stops.bpf.h): the keeper lets it go if khprof cannot.  No keeper,
	 * no stop: khprof reads the strings late, as under attach.
	 */
	if (stop_to_read_identity && (e->key_err || e->value_err) &&
	    kh_stop(NULL, e, e->pid, KH_STOP_IDENTITY) == 0) {
		e->type = KH_EVENT_IDENTITY_STOPPED;
		event_submit(e);
		return;
	}
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
 * kh_take_batch, its bpf_loop callbacks and theirs) then needs 448 bytes of
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
		thread_register(a0, a1);
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

/*
 * The uprobe programs below run with preemption off from their first
 * call to their last.  A uprobe runs its programs preemptible (only
 * migration is off), and from Linux 6.13 the JIT gives a kprobe-type
 * program (uprobes are) a stack per CPU for every frame of 64 bytes or
 * more, shared by every task that runs the program on that CPU: a task
 * preempted inside kh_usdt came back to frames another task's run had
 * written over.  Debian's 7.3.4 (preempt=lazy) so saw a span's enter
 * with another thread's stage, input counts a few bytes off, a batch
 * with another thread's buffer: in 19 to 24 of 24
 * sessions of 8 waves records a mode under TCG, with one vCPU as with
 * two, and in 0 of 24 with this (issue 29; docs/KERNELS.md has the
 * experiment).  The program's own frame stays under 64 bytes, so on the
 * task's stack (test_kernels checks), and the body is a call: nothing is
 * live before the first call or after the last.  Only where the verifier
 * allows the global subprograms the bodies call (libbpf's bpf_usdt_arg)
 * with preemption off, from 6.15 (khprof features: preempt_off_calls):
 * it refused them on 6.12 ("global function calls are not allowed with
 * preemption disabled"), where Debian's build is preempt=voluntary.
 * Cost: two kfunc calls a probe hit: span mode 790 -> 809 ns a span here,
 * batch mode 31.1 ns unchanged (one hit a batch; medians of 7 alternated
 * rounds of bench/span_cost under khprof record).
 */
static __always_inline void usdt_dispatch(struct pt_regs *ctx);

SEC("uprobe")
int kh_usdt(struct pt_regs *ctx)
{
	kh_probe_preempt_disable();
	usdt_dispatch(ctx);
	kh_probe_preempt_enable();
	return 0;
}

static __always_inline void usdt_dispatch(struct pt_regs *ctx)
{
	long kind = bpf_usdt_cookie(ctx);

	if (filter_tgid && traced_tgid && (__u32)(bpf_get_current_pid_tgid() >> 32) != traced_tgid)
		return; /* another tracer's process (compat.bpf.h) */
	if (KH_BATCH_PATH && MODE_LINKED(KH_MODE_BATCH) && kind == KH_PROBE_BATCH) {
		on_batch_probe(ctx);
		return;
	}
	/*
	 * What the other threads still buffer when a session starts or ends
	 * belongs to the slot active until then (batch.bpf.h, settle_buffers):
	 * taken before on_probe changes it.  Called from here, whose frame is
	 * empty, not from on_probe: its chain of calls fits the 512 bytes of
	 * stack this way.
	 */
	if (KH_BATCH_PATH && MODE_LINKED(KH_MODE_BATCH) &&
	    (kind == KH_PROBE_SESSION_START || kind == KH_PROBE_SESSION_FINISH))
		settle_buffers(active_slot);
	/*
	 * The classic object has no batch path: in bounded loops the walk of a
	 * 256-span batch (probe ABI 6) took kh_usdt past the verifier's
	 * 1,000,000 instructions on 6.18, and khprof traces in span mode
	 * where it loads this object (capture/kernel/load.c).
	 */
	on_probe(ctx, kind);
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

/* A watcher's scope, and attach --all's watcher of every execve on the host. */
#include "watch.bpf.h"

/*
 * Names the current process to khprof on the control ring and, where
 * khprof asked (record, a followed process, a watched start), stops it
 * until khprof resumes it: the loader mapped objects, an execve brought a
 * new image, a watched file started.  Stopped by kh_stop (stops.bpf.h)
 * before the event is submitted, so khprof's SIGCONT cannot come before
 * it, and only when khprof is sure to hear of it: a lost event would
 * leave the process stopped until the limit.  Unheard, it runs on, and
 * the library's probes wait for the next loader event (counted).
 */
static __always_inline int loader_stop(__u64 arg0, __u64 arg1)
{
	struct kh_event *e;

	if (!watch_in_scope())
		return 0;
	e = bpf_ringbuf_reserve(&control, sizeof(*e), 0);
	if (!e) {
		count_drop(active_slot, KH_DROP_RINGBUF_FULL);
		return 0;
	}
	fill_event(e, KH_EVENT_LOADER_STATE, active_slot);
	e->arg0 = arg0;
	e->arg1 = arg1;
	/* Not stopped, it runs on, and the library is attached a little late. */
	if (stop_on_loader_event)
		kh_stop(NULL, e, e->pid, traced_tgid ? KH_STOP_LOADER : KH_STOP_START);
	event_submit(e);
	return 0;
}

/*
 * Attached to the dynamic loader's _dl_debug_state(), which it calls after
 * mapping or unmapping objects and before running their constructors.  In
 * `record` the process is stopped here so that probes in a library it just
 * loaded are attached before any of its code runs.
 */
static __noinline void loader_state(struct pt_regs *ctx);

/* Preemption off throughout, as kh_usdt's (why there). */
SEC("uprobe")
int kh_loader_state(struct pt_regs *ctx)
{
	kh_probe_preempt_disable();
	loader_state(ctx);
	kh_probe_preempt_enable();
	return 0;
}

static __noinline void loader_state(struct pt_regs *ctx)
{
	int r_state = RT_CONSISTENT;
	/*
	 * Each loader's own distance to its _r_debug.r_state, in the link's
	 * cookie (a container's loader is another build than the host's);
	 * without cookies, the one global.  0: unknown, every hit counts.
	 */
	__s64 r_state_offset = have_bpf_cookie ? (__s64)bpf_get_attach_cookie(ctx)
					       : r_state_from_hook;

	if (filter_tgid && traced_tgid && (__u32)(bpf_get_current_pid_tgid() >> 32) != traced_tgid)
		return;

	/* Before the map changes there is nothing new to attach to yet. */
	if (r_state_offset &&
	    bpf_probe_read_user(&r_state, sizeof(r_state),
				(const void *)(kh_probe_ip(ctx) + r_state_offset)) == 0 &&
	    r_state != RT_CONSISTENT)
		return;
	loader_stop(0, 0);
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
/* Forked children: followed (--follow-forks) or made safe (userspace/capture/stops/sites.h). */
#include "follow.bpf.h"
/* khprof in a PID namespace of its own: the kernel's pids of the tasks it sees. */
#include "pidns.bpf.h"
