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
		enum kh_drop drop;
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
		drop = batch_span_drop(walk, e, &elapsed_ns);
		if (drop != KH_DROP_COUNT) {
			stats->drops[drop] += 1;
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
		walk.buf->min_start_ticks = KH_BATCH_NO_START;
		walk.buf->min_start_mono = KH_BATCH_NO_START;
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
 * Out of line, so that the registers' copy (168 bytes, 264 on aarch64:
 * arch.bpf.h) and the batch's
 * walk (on_batch) are never on the stack together: every program stays
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

#endif /* KHPROF_BATCH_BPF_H */
