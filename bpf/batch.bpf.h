/* SPDX-License-Identifier: GPL-2.0 */
/*
 * batch.bpf.h - part of khprof.bpf.c, included after the span paths it
 * shares (add_span, span_drop, ticks_to_ns): batch mode's side of the
 * `batch` probe.  A thread's buffer of completed spans is copied into this
 * CPU's scratch buffer, each span filtered, its length converted once and
 * added to its stage's sums and histogram in strides under bpf_loop, and the
 * off-CPU split taken only for a batch during which the thread left its
 * CPU (docs/PROBES.md, "What the kernel does per batched span").  The
 * thread-end drains (thread_ends.bpf.h) read this CPU's anchor in the
 * scratch buffer.
 */
#ifndef KHPROF_BATCH_BPF_H
#define KHPROF_BATCH_BPF_H

struct batch_buffer {
	struct kh_batch_entry entries[KH_BATCH_CAPACITY];
	/* This CPU's last flush: its TSC and kernel time, to place TSC times at exit. */
	__u64 anchor_ticks;
	__u64 anchor_ns;
	/*
	 * Earliest start of the batch's counted spans, in ticks of those timed
	 * by the TSC and in ns of those timed by CLOCK_MONOTONIC
	 * (batch_min_start_ns).  Kept here, not in the walk on the stack:
	 * the verifier re-walks a bpf_loop body while the caller's stack
	 * changes, and a changing value there never settles.
	 */
	__u64 min_start_ticks;
	__u64 min_start_mono;
	/*
	 * kh_take_batch's count and thresholds pass through here so that the
	 * verifier takes them as any number (its tracking stops at a load
	 * from a map value): as known ones, each path of kh_take_batch (a full
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
	/* This batch's thread and switches, read before the walk (off its stack). */
	__u64 born;
	__u64 switches;
	__u64 min_start; /* batch_min_start_ns, kept here for the same reason */
	__u32 own;       /* the batch is its thread's own */
	__u32 tid;       /* whose the batch is */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch_buffer);
} batch_scratch SEC(".maps");

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
 * ns.  On KH_SPAN_COUNTS, *elapsed_ns is its length: for a TSC span one
 * conversion of its length in ticks instead of one of each edge, 1 ns a
 * batched span here.
 */
static __always_inline __u32 batch_span_drop(const struct batch_walk *walk,
					      const struct kh_batch_entry *e, __u64 *elapsed_ns)
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
	if ((__s64)start < end_lo)
		return KH_SPAN_BEGUN_BEFORE; /* not the session's, as the seed has it */
	*elapsed_ns = e->start_ns & KH_TIME_TSC ? ticks_to_ns(end - start) : end - start;
	return KH_SPAN_COUNTS;
}

/* Above every tick count (146 years at 1 GHz): no span counted yet. */
#define KH_BATCH_NO_START (1ull << 62)

/*
 * The earliest start of the batch's counted spans on the kernel clock, from
 * the earliest in ticks and the earliest in ns that add_batch_stride kept.
 * CLOCK_MONOTONIC starts (a batch timed without the TSC, or while a
 * span-mode tracer was attached too) are kept on their own: when they were
 * kept as 0, every batch of a run without the TSC took the off-CPU pass,
 * one more walk of all its spans.
 */
static __always_inline __u64 batch_min_start_ns(const struct batch_walk *walk)
{
	__u64 ticks = walk->buf->min_start_ticks, ns = walk->buf->min_start_mono;
	__u64 min = ns == KH_BATCH_NO_START ? ~0ull : ns;

	if (ticks != KH_BATCH_NO_START && tsc_time_ns(ticks, walk) < min)
		min = tsc_time_ns(ticks, walk);
	return min; /* ~0: nothing counted */
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
	__u64 min_ticks, min_mono;
	long done = 0;

	if (stride >= KH_BATCH_CAPACITY / BATCH_STRIDE)
		return 1;
	/* In registers through the stride, stored once: 47.6 -> 46.8 ns a span here. */
	min_ticks = buf->min_start_ticks;
	min_mono = buf->min_start_mono;
	for (__u32 j = 0; j < BATCH_STRIDE; j++, index++) {
		struct kh_batch_entry *e;
		__u32 verdict;
		__u64 elapsed_ns, tsc;
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
		verdict = batch_span_drop(walk, e, &elapsed_ns);
		if (verdict != KH_SPAN_COUNTS) {
			set_aside(stats, verdict);
			continue;
		}
		/* Its start into the minimum of its clock, the other's left alone. */
		tsc = 0 - (e->start_ns >> 63);
		min_ticks = min_no_branch(min_ticks, (e->start_ns & ~KH_TIME_TSC & tsc) |
							     (KH_BATCH_NO_START & ~tsc));
		min_mono = min_no_branch(min_mono, (e->start_ns & ~tsc) | (KH_BATCH_NO_START & tsc));
		add_span(stats, hist, e->stage, elapsed_ns, e->attribution);
	}
	buf->min_start_ticks = min_ticks;
	buf->min_start_mono = min_mono;
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
	if (batch_span_drop(walk, e, &elapsed_ns) != KH_SPAN_COUNTS)
		return 0;
	entry_times(walk, e, &start_ns, &end_ns);
	add_offcpu_of(walk->hist, walk->offcpu, e->stage, start_ns, end_ns);
	return 0;
}

/*
 * A batch to count: the thread's own at its `batch` probe, or what another
 * thread still buffers when a session starts or ends (settle_buffers).
 * Passed by pointer to kh_take_batch, a global function, which the
 * verifier checks once for both.  count, bytes and units come back as what
 * is left to count, with first and unseen.
 */
struct kh_take {
	/* The batch probe's eight arguments, where batch_args writes them: */
	__u64 state_addr;   /* the thread's kh_thread_state (the probe's entries, less their offset) */
	__u64 count;        /* own batch: the entries the probe gives; out: what to count */
	__u64 bytes;        /* own batch: the input the probe gives */
	__u64 units;
	__u64 anchor_ticks; /* a TSC reading (own batch: the flush's) ... */
	__u64 flushes;      /* its buffer generation (own batch: the probe's) */
	__u64 capacity;     /* own batch, probe ABI 6: its buffer's */
	__u64 flushed;      /* own batch, probe ABI 7: the sequence number of its first span */
	/* and the rest: */
	__u64 anchor_ns;    /* ... and the kernel time then */
	__u64 unseen;       /* out: spans handed over before that khprof never saw (ABI 7) */
	__u32 first;        /* out: the entries before this one were counted */
	__u32 flags;        /* KH_THREAD_LAYOUT's bits, KH_TAKE_OWN, KH_TAKE_TSC */
	__u32 tid;
	__u32 slot;         /* where its spans count */
};
/* 96 bytes: the take is on the deepest chain of calls' frames (512 bytes in all). */
#define KH_TAKE_OWN (1u << 30) /* the thread's own batch probe */
#define KH_TAKE_TSC (1u << 31) /* the anchor's TSC is usable */
_Static_assert(__builtin_offsetof(struct kh_take, flushed) == 7 * sizeof(__u64),
	       "batch_args writes the probe's arguments into a take");
_Static_assert(__builtin_offsetof(struct kh_take, units) - __builtin_offsetof(struct kh_take, count) ==
		       __builtin_offsetof(struct claim_take, units) - __builtin_offsetof(struct claim_take, count),
	       "a take's count, bytes and units are a struct claim_take");

/*
 * Session slots a batch is being counted into, so that khprof, when a
 * session ends, reads the slot only once every batch that took it is in
 * (capture/trace.c).  A flush reads active_slot before it claims its
 * buffer and a session's end settles the buffers before it changes
 * active_slot: a flush that still found the ending session counts into it
 * (and khprof waits for it), one that did not finds its buffer already
 * taken, but for what it completed since.
 */
__u32 slot_inflight[KH_SLOT_MAP_ENTRIES] = {};

static __always_inline __u32 slot_enter(void)
{
	__u32 slot = KH_OUTSIDE_SLOT;

	for (int i = 0; i < 4; i++) {
		slot = *(volatile __u32 *)&active_slot;
		if (slot >= KH_SLOT_MAP_ENTRIES)
			slot = KH_OUTSIDE_SLOT;
		__sync_fetch_and_add(&slot_inflight[slot], 1);
		if (*(volatile __u32 *)&active_slot == slot)
			return slot;
		__sync_fetch_and_add(&slot_inflight[slot], -1);
	}
	/* Four session events within a few instructions: not a session's spans anyway. */
	slot = KH_OUTSIDE_SLOT;
	__sync_fetch_and_add(&slot_inflight[slot], 1);
	return slot;
}

static __always_inline void slot_exit(__u32 slot)
{
	if (slot < KH_SLOT_MAP_ENTRIES)
		__sync_fetch_and_add(&slot_inflight[slot], -1);
}

/*
 * The thread's own batch: learns where its buffer is, takes the whole
 * generation's claims (a session's end or an execve that failed may have
 * taken part of it first), checks (probe ABI 7) that khprof saw every span
 * the thread handed over before, and copies the entries into this CPU's
 * scratch buffer.  Returns with preemption off.
 */
static __always_inline void take_own(struct kh_take *tk, struct batch_buffer *buf)
{
	struct kh_thread_entry *entry;
	__u32 count = tk->count > KH_BATCH_CAPACITY ? KH_BATCH_CAPACITY : tk->count;

	tk->first = 0;
	tk->unseen = 0;
	entry = thread_entry_learn(tk->state_addr, tk->flags & KH_THREAD_LAYOUT, tk->flushes, tk->flushed);
	if (!entry) {
		count_drop(tk->slot, KH_DROP_EXIT_UNKNOWN); /* thread_list is full: its end goes unseen */
	} else if (tk->flags & KH_THREAD_ABI3) {
		tk->first = claim_take(&entry->claim_spans, tk->flushes, count);
		tk->bytes -= claim_take(&entry->claim_bytes, tk->flushes, tk->bytes);
		tk->units -= claim_take(&entry->claim_units, tk->flushes, tk->units);
		tk->unseen = thread_unseen(entry, tk->flushed);
		entry->next_flushed = tk->flushed + count;
		entry->anchor_ticks = tk->anchor_ticks;
		entry->anchor_ns = tk->flags & KH_TAKE_TSC ? tk->anchor_ns : 0;
	}
	kh_preempt_disable();
	/*
	 * The thread wrote these entries just now, so the read fails only
	 * for a buffer that is not the thread's any more: its spans are lost,
	 * and counted as unread.
	 */
	if (bpf_probe_read_user(buf->entries, count * sizeof(struct kh_batch_entry),
				(const void *)(tk->state_addr + KH_TS_BATCH_OFF))) {
		struct kh_slot_stats *stats = stats_of(tk->slot);

		if (stats && count > tk->first)
			stats->drops[KH_DROP_EXIT_UNREAD] += count - tk->first;
		count = 0;
	}
	tk->count = count;
}

/*
 * Test hook (KHPROF_TEST_UNREAD_ENTRIES, userspace/capture/process.c):
 * other threads' entries read at a session's start or end as if their
 * page could not be read.
 */
__u32 test_unread_entries = 0;

/* Live threads' buffers a session's start or end could not read (all or their entries): khprof says so. */
__u64 settle_unreadable = 0;

/*
 * Another thread's buffer at a session's start or end, read while the
 * thread may be appending to it or flushing it, as a seqlock's reader:
 * entries below batch_count are whole (probe ABI 7 writes an entry before
 * the count that covers it), and `flushes` read again after the entries
 * tells whether the thread reset the buffer meanwhile (its own batch then
 * took them).  The claims decide who counts what.  1 with the entries in
 * the scratch buffer and preemption off; 0 with nothing to count.
 */
static __always_inline int take_other(struct kh_take *tk, struct batch_buffer *buf)
{
	struct kh_thread_entry *entry;
	struct kh_slot_stats *stats;
	__u64 addr = tk->state_addr, flushes_off = flushes_offset(tk->flags), bytes;
	__u32 count, tid = tk->tid, unread = 0;

	/*
	 * Read into the take itself: this frame is on the deepest chain of
	 * calls.  `flushes` first: a count read before it could be the
	 * previous generation's, taken for the next one's (the soak counted
	 * 44 spans twice in one of 600 records so).
	 */
	tk->count = 0;
	tk->bytes = tk->units = 0;
	if (bpf_probe_read_user(&tk->flushes, sizeof(tk->flushes), (const void *)(addr + flushes_off)) ||
	    bpf_probe_read_user(&tk->count, sizeof(__u32), (const void *)(addr + KH_TS_BATCH_COUNT_OFF)) ||
	    bpf_probe_read_user(&tk->bytes, 2 * sizeof(__u64), (const void *)(addr + KH_TS_INPUT_OFF))) {
		/*
		 * Not readable: an ended thread's stack, which the C library
		 * unmapped or gave to a new thread once exit_mm() cleared its
		 * id.  Its end took its buffer and left thread_list before
		 * that (at sched_process_exit from Linux 6.16, at the start of
		 * do_exit before: thread_ends.bpf.h), so a thread no longer
		 * listed lost nothing.  Before this lookup followed
		 * the reads, a thread that ended between the two was counted
		 * as unknown, one of the exit_unknown drops the soak met under
		 * TCG on Linux 6.1 (about one session end in 20).  A thread
		 * still listed: what it holds is unknown, lost to the session
		 * (a live thread's page being moved, as below, the other).
		 */
		if (bpf_map_lookup_elem(&thread_list, &tid)) {
			count_drop(tk->slot, KH_DROP_EXIT_UNKNOWN);
			__sync_fetch_and_add(&settle_unreadable, 1);
		}
		return 0;
	}
	if (!tk->count && !tk->bytes && !tk->units)
		return 0;
	count = tk->count < capacity_of(tk->flags) ? tk->count : capacity_of(tk->flags);
	bytes = (__u64)count * sizeof(struct kh_batch_entry);
	barrier_var(bytes);
	if (bytes > sizeof(buf->entries))
		bytes = sizeof(buf->entries);
	kh_preempt_disable();
	/*
	 * `flushes` again, into capacity, which another thread's take has no
	 * use for.  Entries that cannot be read now, though the count could
	 * (a page the kernel is moving: it collapses anonymous memory into
	 * huge pages where THP is "always", as in Debian 6.1's cloud kernel),
	 * belong to the session ending all the same: counted there as unread
	 * and claimed, so that the thread's next batch does not count them
	 * into the next one, a loss no record showed.
	 */
	if (test_unread_entries ||
	    bpf_probe_read_user(buf->entries, bytes, (const void *)(addr + KH_TS_BATCH_OFF)))
		unread = 1;
	else if (bpf_probe_read_user(&tk->capacity, sizeof(tk->capacity), (const void *)(addr + flushes_off)) ||
		 tk->capacity != tk->flushes) {
		kh_preempt_enable();
		return 0;
	}
	/*
	 * Looked up after the reads: a thread that ended meanwhile has left
	 * thread_list (its end took the buffer), and a new thread may have
	 * the stack it was read from.
	 */
	entry = bpf_map_lookup_elem(&thread_list, &tid);
	if (!entry) {
		kh_preempt_enable();
		return 0;
	}
	/* The take's count, bytes and units are a struct claim_take: no copy on this frame. */
	tk->count = count;
	claims_raise(entry, tk->flushes, (struct claim_take *)&tk->count);
	tk->first = tk->count;
	tk->count = count;
	tk->unseen = 0;
	if (unread) {
		stats = stats_of(tk->slot);
		if (stats && count > tk->first) {
			stats->drops[KH_DROP_EXIT_UNREAD] += count - tk->first;
			__sync_fetch_and_add(&settle_unreadable, 1);
		}
		tk->first = count; /* its input still counts */
	}
	return 1;
}

/*
 * Counts entries [first, count) of this CPU's scratch buffer and the input
 * left into the take's slot, with preemption off.  The off-CPU pass reads
 * the thread's switch log: for its own batch the current thread's, skipped
 * when this CPU's last batch was the same thread's, its count of switches
 * has not moved since and every span began after that batch (then no
 * off-CPU interval ended while one of them ran); for another thread's its
 * log by its id.
 */
static __noinline void count_scratch(const struct kh_take *tk, struct batch_buffer *buf)
{
	struct batch_walk walk;
	__u32 slot = tk->slot, count;

	walk.buf = buf;
	walk.now_ns = tk->anchor_ns;
	walk.flush_ticks = tk->anchor_ticks & ~KH_TIME_TSC;
	walk.tsc_ok = (tk->flags & KH_TAKE_TSC) && tsc_mult;
	walk.first = tk->first;
	/* Through the map value (struct batch_buffer says why). */
	*(volatile __u32 *)&buf->count = tk->count;
	count = *(volatile __u32 *)&buf->count;
	walk.stats = stats_of(slot);
	walk.hist = hist_of(slot);
	/*
	 * Both or neither (they cannot be missing): a walk whose hist might be
	 * NULL would fork the verifier at every unrolled span.
	 */
	if (!walk.stats || !walk.hist)
		return;
	walk.stats->drops[KH_DROP_UNSEEN] += tk->unseen;
	walk.session_start = slot < KH_MAX_SLOTS ? slot_start_ns[slot & (KH_MAX_SLOTS - 1)] : 0;
	walk.stats->probe_hits += !!(tk->flags & KH_TAKE_OWN);
	walk.stats->input_bytes += tk->bytes;
	walk.stats->input_units += tk->units;
	walk.count = count;
	/* Through the map value, like count. */
	*(volatile __s64 *)&buf->start_lo = walk.tsc_ok ? tsc_lower_bound(&walk, trace_start_ns)
							: 0x7fffffffffffffffll; /* TSC starts unusable */
	*(volatile __s64 *)&buf->end_lo = tsc_lower_bound(&walk, walk.session_start);
	walk.start_lo = *(volatile __s64 *)&buf->start_lo;
	walk.end_lo = *(volatile __s64 *)&buf->end_lo;
	buf->min_start_ticks = KH_BATCH_NO_START;
	buf->min_start_mono = KH_BATCH_NO_START;
	/*
	 * What the off-CPU pass needs after the walk is kept in the map value,
	 * so that nothing but the walk is live across it: this frame is the
	 * largest of the deepest chain of calls (512 bytes in all).
	 */
	buf->own = !!(tk->flags & KH_TAKE_OWN);
	buf->tid = tk->tid;
	if (walk.first >= count)
		return;
	kh_loop(KH_BATCH_CAPACITY / BATCH_STRIDE, (count - walk.first + BATCH_STRIDE - 1) / BATCH_STRIDE,
		add_batch_stride, &walk);
	buf = walk.buf;
	buf->min_start = batch_min_start_ns(&walk);
	walk.offcpu = NULL;
	if (buf->own) {
		if (buf->last_born != buf->born || buf->last_switches != buf->switches ||
		    buf->min_start < buf->last_flush_ns)
			walk.offcpu = offcpu_of_current();
		buf->last_born = buf->born;
		buf->last_switches = buf->switches;
		buf->last_flush_ns = walk.now_ns;
	} else {
		walk.offcpu = bpf_map_lookup_elem(&offcpu_threads, &buf->tid);
	}
	if (walk.offcpu && offcpu_newest_in(walk.offcpu) > buf->min_start)
		kh_loop(KH_CLASSIC_OFFCPU_SPANS, walk.count - walk.first, add_batch_offcpu, &walk);
}

/*
 * A batch, the thread's own or another's (struct kh_take).  Global, so
 * that the verifier checks the walk once for both, with the take as any
 * values.  Preemption goes off inside, from the copy into this CPU's
 * scratch buffer on (another traced thread preempting this one would
 * flush into the same buffer), not around the call: the verifier of Linux
 * 6.12 refuses a global function's call with preemption disabled.  Global
 * in the classic object too, where nothing calls it (so no program loads
 * it): the maps it names come first in the object as in the other one,
 * whose skeleton the classic object must share (classic-skel.sh).
 */
__noinline int kh_take_batch(struct kh_take *tk)
{
	struct batch_buffer *buf;
	__u32 zero = 0;

	if (!tk)
		return 0;
	buf = bpf_map_lookup_elem(&batch_scratch, &zero);
	if (!buf)
		return 0;
	if (tk->flags & KH_TAKE_OWN) {
		struct task_struct *task = kh_current_task();

		take_own(tk, buf);
		buf->born = KH_TASK_READ(task, start_time);
		buf->switches = KH_TASK_READ(task, nvcsw) + KH_TASK_READ(task, nivcsw);
	} else if (!take_other(tk, buf)) {
		return 0;
	}
	count_scratch(tk, buf);
	if (tk->flags & KH_TAKE_OWN) {
		/* This CPU's anchor for the buffers of threads that end here; branch-free. */
		buf->anchor_ticks = tk->anchor_ticks & ~KH_TIME_TSC;
		buf->anchor_ns = tk->anchor_ns * !!((tk->flags & KH_TAKE_TSC) && tsc_mult);
	}
	kh_preempt_enable();
	return 0;
}

/*
 * What every other thread of the process still buffers when a session
 * starts or ends, counted into the slot ending (or, at a start, the one
 * before it, outside any session): a thread's last batch is flushed by its
 * key destructor or a Rust thread-local destructor, which run after a
 * `pthread_join` or `std::thread::scope` waited for it, but not after a
 * thread that only signalled its end, or a pool that only waited for its
 * jobs, let the session go on.  Without this its spans went to no session
 * (docs/PROBES.md, "When a session ends").  Another thread's TSC times are
 * placed by the freshest anchor at hand: the ending thread's own flush,
 * which a probe ABI 7 program makes at every session event.
 */
struct settle_ctx {
	__u64 anchor_ticks;
	__u64 anchor_ns;
	__u32 slot;
};

/*
 * The settle's take, in a map value rather than on settle_thread's frame,
 * which is on the deepest chain of calls (512 bytes in all).  Per CPU:
 * session events come from one thread at a time.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kh_take);
} settle_take SEC(".maps");

static long settle_thread(struct bpf_map *map, const __u32 *tid, struct kh_thread_entry *entry,
			  struct settle_ctx *ctx)
{
	__u32 zero = 0;
	struct kh_take *tk = bpf_map_lookup_elem(&settle_take, &zero);

	if (!tk || !(entry->flags & KH_THREAD_ABI3))
		return 0; /* ABI 2: no generation to claim by */
	__builtin_memset(tk, 0, sizeof(*tk));
	tk->state_addr = entry->state_addr;
	tk->flags = (entry->flags & KH_THREAD_LAYOUT) | (ctx->anchor_ns ? KH_TAKE_TSC : 0);
	tk->tid = *tid;
	tk->slot = ctx->slot;
	tk->anchor_ticks = ctx->anchor_ticks;
	tk->anchor_ns = ctx->anchor_ns;
	kh_take_batch(tk);
	return 0;
}

static __noinline void settle_buffers(__u32 slot)
{
	struct settle_ctx ctx = { .slot = slot };
	struct kh_thread_entry *own;
	struct batch_buffer *buf;
	__u32 tid = kh_current_tid(), zero = 0;

	own = bpf_map_lookup_elem(&thread_list, &tid);
	if (own) {
		ctx.anchor_ticks = own->anchor_ticks;
		ctx.anchor_ns = own->anchor_ns;
	}
	buf = bpf_map_lookup_elem(&batch_scratch, &zero);
	if (buf && buf->anchor_ns > ctx.anchor_ns) {
		ctx.anchor_ticks = buf->anchor_ticks;
		ctx.anchor_ns = buf->anchor_ns;
	}
	if (tsc_anchor_ns > ctx.anchor_ns) {
		ctx.anchor_ticks = tsc_anchor_ticks;
		ctx.anchor_ns = tsc_anchor_ns;
	}
	bpf_for_each_map_elem(&thread_list, settle_thread, &ctx, 0);
}

/* Six before probe ABI 6, whose seventh is the buffer's capacity; ABI 7's eighth flushed_spans. */
#define KH_BATCH_ARGS 8

/*
 * The batch probe's arguments, as bpf_usdt_arg reads them, with one spec
 * lookup and one read of the registers for all six: bpf_usdt_arg costs a
 * lookup and a helper call per argument, 1.2 ns a batched span here.  An
 * argument the site does not have is 0 (the generation, before ABI 3, and
 * the flush TSC, before ABI 2, the capacity before ABI 6).  Returns the
 * site's argument count, or -1.
 * Out of line, so that the registers' copy (168 bytes, 264 on aarch64:
 * arch.bpf.h) and the batch's
 * walk (kh_take_batch) are never on the stack together: every program stays
 * within the 512 bytes a kernel without private stacks allows to the
 * deepest chain of calls, bpf_loop's callbacks included (Linux 6.1
 * counted kh_usdt's at 544 with both in one frame).
 */
static __noinline int batch_args(struct pt_regs *ctx, __u64 *a)
{
	__u64 regs[KH_REGS_WORDS];
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
			if (reg < KH_REGS_WORDS) {
				/* The load must stay after the test the verifier bounds it by. */
				asm volatile("" : "+r"(reg));
				if (reg < KH_REGS_WORDS)
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
 * A batch probe: its arguments, read into the take that kh_take_batch
 * counts.  Out of line for the same reason: kh_usdt's own frame stays
 * small, and this one holds only the take.
 */
static __noinline void on_batch_probe(struct pt_regs *ctx)
{
	struct kh_take tk = {};
	int args = batch_args(ctx, (__u64 *)&tk);

	if (args < 0)
		return;
	/*
	 * With probe ABI 3 (flushes given) the thread's claims are taken, so
	 * that nothing of the batch is counted twice; ABI 6 and 7 say its
	 * buffer's layout.
	 */
	tk.flags = (args >= 6 ? KH_THREAD_ABI3 : 0) |
		   (args >= 7 && tk.capacity == KH_BATCH_CAPACITY ? KH_THREAD_ABI6 : 0) |
		   (args >= 8 && tk.capacity == KH_BATCH_CAPACITY ? KH_THREAD_ABI7 : 0);
	tk.state_addr -= KH_TS_BATCH_OFF;
	tk.anchor_ns = bpf_ktime_get_ns();
	tk.flags |= KH_TAKE_OWN | (tk.anchor_ticks & KH_TIME_TSC ? KH_TAKE_TSC : 0);
	tk.tid = kh_current_tid();
	tk.slot = slot_enter();
	kh_take_batch(&tk);
	slot_exit(tk.slot);
}

#endif /* KHPROF_BATCH_BPF_H */
