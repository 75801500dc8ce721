/* SPDX-License-Identifier: GPL-2.0 */
/*
 * latency.bpf.h - part of khprof.bpf.c, included before the span paths
 * that use it (one BPF object, one skeleton): per-stage latency histograms
 * and the on-CPU/off-CPU split of spans (include/khprof_hist.h,
 * docs/ARCHITECTURE.md).  Uses traced_tgid, active_slot and trace_start_ns
 * from above the include; the thread-exit program in
 * thread_ends.bpf.h drops a thread's switch log (offcpu_thread_end).
 */
#ifndef KHPROF_LATENCY_BPF_H
#define KHPROF_LATENCY_BPF_H

/*
 * One block of all stages' histograms per (CPU, slot), key cpu *
 * KH_SLOT_MAP_ENTRIES + slot; the loader sizes the map to the possible CPUs.  A
 * plain array rather than a per-CPU one: a per-CPU value is limited to
 * 32 KiB, and one lookup per batch serves its up to 256 spans.
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
	struct kh_stage_hist *h;
	__u64 bucket;

	if (stage >= KH_STAGE_COUNT)
		return;
	/*
	 * A short span's bucket is one load, 45 instructions fewer than the
	 * arithmetic: 45.9 -> 43.3 ns per batched span here (span_cost's spans
	 * are tens of ns; a span of 4 us or more pays the arithmetic).
	 */
	if (elapsed_ns < KH_HIST_SMALL)
		bucket = kh_hist_small[elapsed_ns];
	else
		bucket = kh_hist_bucket(elapsed_ns);
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
	/*
	 * Branches, stored only when they change: the compiler made branches
	 * of the branch-free form anyway, and then stored both every time.
	 */
	if (elapsed_ns > h->max_ns)
		h->max_ns = elapsed_ns;
	if (KH_HIST_MIN_TOP - elapsed_ns > h->min_below_top)
		h->min_below_top = KH_HIST_MIN_TOP - elapsed_ns;
}

static __always_inline __u64 overlap(__u64 a0, __u64 a1, __u64 b0, __u64 b1)
{
	__u64 lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? hi - lo : 0;
}

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

/* local_clock() on this CPU (layout.bpf.h, included further down). */
static __always_inline __u64 sched_clock_now(void);

/*
 * A running traced thread whose interval is still open came back to its
 * CPU without its switch in reaching kh_sched_switch.  On this machine
 * that was every miss counted under load (a few in 10 runs of kh-scan
 * with 8 threads, none a recursion miss of the program: the kernel's own
 * count of the thread's arrivals, sched_info.pcount, had moved by one
 * more than the switches seen in).  The kernel keeps when the thread
 * arrived, sched_info.last_arrival on the runqueue's clock, which is
 * local_clock(): the interval closes there, as if the switch had been
 * seen.  Called with the thread running (its span or its next switch out),
 * so that last arrival is the one missed.  Out of line to keep it out of
 * the span paths' code, but static: the batch flush calls it with
 * preemption disabled, where some kernels (6.12, not 6.18) refuse a
 * global function.  1: closed; 0: the kernel keeps no arrival (no
 * CONFIG_SCHED_INFO) or no clock to place it by.
 */
static __noinline int kh_offcpu_repair(struct kh_offcpu_thread *th, __u64 now)
{
	struct task_struct *task = kh_current_task(); /* 5.11: the BTF one (classic.bpf.h) */
	__u64 clock, arrived, in_ns;

	if (!th || !th->out_ns || !bpf_core_field_exists(task->sched_info))
		return 0;
	arrived = BPF_CORE_READ(task, sched_info.last_arrival);
	clock = sched_clock_now();
	if (!arrived || !clock || arrived > clock || clock - arrived >= now)
		return 0;
	in_ns = now - (clock - arrived);
	if (in_ns <= th->out_ns)
		return 0;
	log_interval(th, in_ns);
	return 1;
}

/* The current thread's off-CPU log; NULL if it never left its CPU. */
static __always_inline struct kh_offcpu_thread *offcpu_of_current(void)
{
	struct kh_offcpu_thread *th;

	if (!traced_tgid)
		return NULL;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	th = bpf_map_lookup_elem(&offcpu_threads, &tid);
	/* Running, yet switched out: its switch in was missed (kh_offcpu_repair). */
	if (th && th->out_ns)
		kh_offcpu_repair(th, bpf_ktime_get_ns());
	return th;
}

/* When the thread last came back to a CPU; 0 if it never left one. */
static __always_inline __u64 offcpu_newest_in(struct kh_offcpu_thread *th)
{
	__u64 n = th->intervals;

	return n ? th->log[(n - 1) & (KH_OFFCPU_LOG - 1)].in_ns : 0;
}

/* Intervals summed for one span at most: the whole log, but in the classic object. */
#ifndef KH_OFFCPU_WALK
#define KH_OFFCPU_WALK KH_OFFCPU_LOG
#endif

/*
 * Read-only for the callback: the verifier re-walks a bpf_loop body while
 * the caller's stack changes, and sums kept there never settle (loading
 * took seconds); they go straight to the map value instead.
 */
struct offcpu_scan {
	struct kh_offcpu_thread *th;
	struct kh_stage_hist *h;
	__u64 start_ns, end_ns;
	__u64 first; /* the first interval (in the thread's count) that ended after start_ns */
};

/*
 * The binary search's bounds, in a map value: a bpf_loop callback may not
 * keep what changes on its caller's stack (the verifier never settles),
 * and unrolled, its ten steps cost the verifier 3,200 instructions at every
 * start.  Per CPU: the callers run with preemption off.
 */
struct offcpu_bounds {
	__u64 lo, hi;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_bounds);
} offcpu_search SEC(".maps");

/* One step: the first interval that came back after the span's start is in [lo, hi). */
static long search_step(__u64 i, void *ctx)
{
	struct offcpu_scan *scan = ctx;
	struct offcpu_bounds *b;
	__u32 zero = 0;
	__u64 mid;

	b = bpf_map_lookup_elem(&offcpu_search, &zero);
	if (!b || b->lo >= b->hi)
		return 1;
	mid = b->lo + (b->hi - b->lo) / 2;
	if (scan->th->log[mid & (KH_OFFCPU_LOG - 1)].in_ns > scan->start_ns)
		b->hi = mid;
	else
		b->lo = mid + 1;
	return 0;
}

/* One logged interval per call, oldest first, from scan->first until one begins after the span. */
static long sum_interval(__u64 i, void *ctx)
{
	struct offcpu_scan *scan = ctx;
	struct kh_offcpu_thread *th = scan->th;
	struct kh_offcpu_interval *iv;
	__u64 c = scan->first + i;

	iv = &th->log[c & (KH_OFFCPU_LOG - 1)];
	if (c >= th->intervals || iv->out_ns >= scan->end_ns)
		return 1;
	scan->h->off_cpu_ns += overlap(iv->out_ns, iv->in_ns, scan->start_ns, scan->end_ns);
	scan->h->runnable_ns += overlap(iv->wake_ns, iv->in_ns, scan->start_ns, scan->end_ns);
	return 0;
}

/*
 * Adds the overlap of [start, end] with the thread's logged off-CPU
 * intervals.  The log is in time order, so a binary search finds the first
 * interval that ended after the span began (log2 of the log's length
 * steps), and the sum walks forward only over those that began before it
 * ended: a span costs about the same whatever the log's length, where a
 * walk back from the newest interval cost one step per switch since the
 * span began (up to 64 a span with the old log, far more with this one).
 * A span that began before the oldest interval still logged is counted as
 * truncated (its off-CPU time is then a lower bound): one that switched
 * out more often than the log holds between its start and the batch.
 */
static __always_inline void add_offcpu_of(struct kh_hist_block *hist,
					  struct kh_offcpu_thread *th, __u32 stage,
					  __u64 start_ns, __u64 end_ns)
{
	struct offcpu_scan scan = { .th = th, .start_ns = start_ns, .end_ns = end_ns };
	struct offcpu_bounds *b;
	__u32 zero = 0;
	__u64 n, lo;

	if (!hist || !th || stage >= KH_STAGE_COUNT)
		return;
	if (offcpu_newest_in(th) <= start_ns)
		return; /* the common case: not switched out since the span began */
	n = th->intervals;
	lo = n > KH_OFFCPU_LOG ? n - KH_OFFCPU_LOG : 0;
	b = bpf_map_lookup_elem(&offcpu_search, &zero);
	if (!b)
		return;
	b->lo = lo;
	b->hi = n;
	/* hi - lo halves at each step: 10 steps cover the 512 intervals kept. */
	kh_loop(KH_OFFCPU_LOG_BITS + 1, KH_OFFCPU_LOG_BITS + 1, search_step, &scan);
	lo = b->lo;
	scan.first = lo;
	scan.h = &hist->stages[stage];
	/*
	 * Its earliest switches may have left the log: more than it holds
	 * since; or (the classic object) more than its walk's bound.
	 */
	if ((n > KH_OFFCPU_LOG && lo == n - KH_OFFCPU_LOG) || n - lo > KH_OFFCPU_WALK)
		scan.h->offcpu_truncated += 1;
	kh_loop(KH_OFFCPU_WALK, n - lo, sum_interval, &scan);
}

static __always_inline void add_offcpu(struct kh_hist_block *hist, __u32 stage, __u64 start_ns,
				       __u64 end_ns)
{
	if (hist)
		add_offcpu_of(hist, offcpu_of_current(), stage, start_ns, end_ns);
}

_Static_assert(KH_OFFCPU_LOG == 1 << KH_OFFCPU_LOG_BITS, "a power of two");

#define TASK_RUNNING 0

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
int BPF_PROG(kh_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	unsigned int prev_state = kh_switch_prev_state(ctx, prev); /* compat.bpf.h */
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
		if (th && th->out_ns && !kh_offcpu_repair(th, now)) {
			/*
			 * Its switch back in was not seen and the kernel cannot say
			 * when it came (counted): the time until its wakeup, when
			 * known, is still blocked time.
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

/*
 * A traced thread's switch log goes with it (thread ids are reused); called
 * by kh_thread_exit, the one sched_process_exit program.
 */
static __always_inline void offcpu_thread_end(struct task_struct *p)
{
	__u32 tid = p->pid;
	struct kh_offcpu_thread *th = bpf_map_lookup_elem(&offcpu_threads, &tid);

	if (!th)
		return;
	/* Switches since the last one seen that were never seen at all. */
	if (th->switches && p->nvcsw + p->nivcsw > th->switches)
		count_offcpu_missed();
	bpf_map_delete_elem(&offcpu_threads, &tid);
}

#endif /* KHPROF_LATENCY_BPF_H */
