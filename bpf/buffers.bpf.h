/* SPDX-License-Identifier: GPL-2.0 */
/*
 * buffers.bpf.h - part of khprof.bpf.c, included before batch.bpf.h: the
 * threads of the traced process that keep a batch buffer (thread_list,
 * thread_store), and the claims by which each span and byte of a buffer is
 * counted exactly once, whoever takes it: the thread's own `batch` probe,
 * a session's start or end (batch.bpf.h), the thread's end or execve
 * (thread_ends.bpf.h) or khprof after a detach (include/khprof_shared.h,
 * "Claims").
 */
#ifndef KHPROF_BUFFERS_BPF_H
#define KHPROF_BUFFERS_BPF_H

/*
 * A TSC reading and the kernel time then, taken by the loader: the anchor
 * of TSC times where no flush gave a nearer one.
 */
__u64 tsc_anchor_ticks = 0;
__u64 tsc_anchor_ns = 0;

/*
 * Per thread, where its buffer is, for the stack sampler (sample.bpf.c
 * shares this map): task storage, which a perf-event program reaches
 * without a hash lookup.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kh_thread_info);
} thread_store SEC(".maps");

/*
 * The threads that have a buffer, by thread id: where it is and what of it
 * was counted.  A hash map rather than task storage, so that a session's
 * start or end reaches every thread's entry (bpf_for_each_map_elem; task
 * storage of another thread needs bpf_task_from_pid, Linux 6.2) and khprof
 * reads them after a detach by thread id (a pidfd of a thread is Linux
 * 6.9).  The flush path pays one lookup a batch of up to 256 spans (make
 * bench row 2 showed no change beyond its noise).  A thread's end deletes
 * its entry.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, KH_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct kh_thread_entry);
} thread_list SEC(".maps");

/*
 * Which thread's entry holds each buffer address, per process.  A thread
 * whose end the kernel ran none of the thread-end programs for
 * (thread_ends.bpf.h) stays in thread_list; once the C library gives its
 * stack, and the thread-local state on it, to a new thread, a session's
 * start or end reads the new thread's buffer through the dead thread's
 * entry as well, whose claims are another generation's: on 7.3 under TCG
 * a session counted a pool worker's 230 buffered spans twice, in 3 of 60
 * records of test_soak's Rust waves.  A thread's stack comes back only
 * once the kernel has cleared its thread id, after the end's programs had
 * their chance, so the new thread's first entry takes the dead one's out
 * and counts its end as unseen (exit_unknown): what it buffered at its end
 * cannot be read any more.  LRU: the addresses of threads long gone are
 * forgotten first.
 */
struct state_owner_key {
	__u64 state_addr;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, KH_MAX_THREADS);
	__type(key, struct state_owner_key);
	__type(value, __u32);
} state_owners SEC(".maps");

/* Threads whose end went unseen, found by state_owners: khprof says how many. */
__u64 threads_ended_unseen = 0;

/* tid's new entry holds state_addr: a dead thread's entry that held it goes. */
static __noinline void state_owner_take(__u64 state_addr, __u32 tid)
{
	struct state_owner_key key = { .state_addr = state_addr,
				       .tgid = (__u32)(bpf_get_current_pid_tgid() >> 32) };
	struct kh_thread_entry *stale;
	__u32 *owner, dead;

	owner = bpf_map_lookup_elem(&state_owners, &key);
	if (owner && *owner != tid) {
		dead = *owner;
		stale = bpf_map_lookup_elem(&thread_list, &dead);
		if (stale && stale->state_addr == state_addr &&
		    bpf_map_delete_elem(&thread_list, &dead) == 0) {
			count_drop(active_slot, KH_DROP_EXIT_UNKNOWN);
			__sync_fetch_and_add(&threads_ended_unseen, 1);
		}
	}
	bpf_map_update_elem(&state_owners, &key, &tid, BPF_ANY);
}

/* The layout a batch_register probe's ABI version gives. */
static __always_inline __u32 thread_layout(__u64 abi_version)
{
	return KH_THREAD_ABI3 | (abi_version >= 6 ? KH_THREAD_ABI6 : 0) |
	       (abi_version >= 7 ? KH_THREAD_ABI7 : 0);
}

/* Where a thread of this layout keeps `flushes`. */
static __always_inline __u64 flushes_offset(__u32 flags)
{
	return flags & KH_THREAD_ABI6 ? KH_TS_FLUSHES_OFF : KH_TS_FLUSHES_OFF_ABI5;
}

/* Entries a buffer of this layout holds; without a branch (send_buffer says why). */
static __always_inline __u32 capacity_of(__u32 flags)
{
	return KH_BATCH_CAPACITY_ABI5 +
	       ((flags / KH_THREAD_ABI6) & 1) * (KH_BATCH_CAPACITY - KH_BATCH_CAPACITY_ABI5);
}

/*
 * The sampler's copy of where the calling thread's state is.  Creating task
 * storage fails while another task-storage user on this CPU is preempted
 * inside one (a per-CPU busy count): 0 then, and the next batch tries again.
 */
static __always_inline __u32 thread_store_set(__u64 state_addr, __u32 flags)
{
	struct kh_thread_info *info;

	info = kh_task_state_get(&thread_store, kh_current_task(), BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!info)
		return 0;
	info->state_addr = state_addr;
	info->flags = flags & KH_THREAD_LAYOUT;
	return 1;
}

/*
 * The calling thread's entry for the state at state_addr with this layout,
 * made when it has none for them: its claims start at generation flushes,
 * and (ABI 7) the next batch it expects is numbered flushed.  A thread with
 * states of two layouts (modules built with headers of different ABIs)
 * keeps the one it used last.  NULL when thread_list is full
 * (KH_MAX_THREADS threads at once): the caller counts it.
 */
static struct kh_thread_entry *thread_entry_learn(__u64 state_addr, __u32 flags, __u64 flushes,
						  __u64 flushed)
{
	struct kh_thread_entry *entry, fresh = {};
	__u32 tid = kh_current_tid();

	entry = bpf_map_lookup_elem(&thread_list, &tid);
	if (entry && entry->state_addr == state_addr && (entry->flags & KH_THREAD_LAYOUT) == flags) {
		if (!entry->stored)
			entry->stored = thread_store_set(state_addr, flags);
		return entry;
	}
	fresh.state_addr = state_addr;
	fresh.flags = flags;
	fresh.claim_spans = kh_claim(flushes, 0);
	fresh.claim_bytes = fresh.claim_spans;
	fresh.claim_units = fresh.claim_spans;
	fresh.next_flushed = flushed;
	state_owner_take(state_addr, tid);
	if (bpf_map_update_elem(&thread_list, &tid, &fresh, BPF_ANY))
		return NULL;
	entry = bpf_map_lookup_elem(&thread_list, &tid);
	if (entry)
		entry->stored = thread_store_set(state_addr, flags);
	return entry;
}

/*
 * A thread's batch_register probe: where its state is, in a layout of its
 * probe ABI; its claims start at the generation it is in, and (ABI 7) its
 * spans at the number it gives.
 */
static __noinline void thread_register(__u64 state_addr, __u64 abi_version)
{
	__u32 flags = thread_layout(abi_version);
	__u64 flushes = 0, flushed = 0;

	bpf_probe_read_user(&flushes, sizeof(flushes), (const void *)(state_addr + flushes_offset(flags)));
	if (flags & KH_THREAD_ABI7)
		bpf_probe_read_user(&flushed, sizeof(flushed),
				    (const void *)(state_addr + KH_TS_FLUSHED_SPANS_OFF));
	thread_entry_learn(state_addr, flags, flushes, flushed);
}

/*
 * The thread's own batch of generation flushes, holding amount: it takes
 * the whole generation (the claim moves to the next one, nothing of it
 * counted) and returns what others had counted of this one.
 */
static __always_inline __u64 claim_take(__u64 *word, __u64 flushes, __u64 amount)
{
	__u64 old = __sync_lock_test_and_set(word, kh_claim(flushes + 1, 0));

	return kh_claim_counted(old, flushes, amount);
}

/* All ones when x is 0, else 0. */
static __always_inline __u64 zero_mask(__u64 x)
{
	x |= 0 - x;
	KH_OPAQUE(x);
	return (x >> 63) - 1;
}

/*
 * Anyone else's take of generation flushes holding amount (a session's
 * start or end, the thread's end or execve): raises the claim to amount and
 * returns what was counted before, amount when nothing is left to count.
 * Two tries: a failed exchange means another party took its part first,
 * and at most one other can.  The thread's own batch moves the claim to a
 * later generation (nothing left then); a second raiser is the thread's
 * end or execve against a session event of another thread, which the
 * program makes one at a time, and the buffer of a thread at its end or
 * execve holds at least what a session's end read of it.  Without a
 * branch: the verifier walks it once, where each exit of a loop of tries
 * multiplied the paths of the thread-end programs (2,200 instructions
 * walked each became 10,000).  The second try runs whatever the first
 * did, and changes nothing when the first settled it (the word then
 * differs from what it expects, or already counts amount).
 */
static __always_inline __u64 claim_raise(__u64 *word, __u64 flushes, __u64 amount)
{
	__u64 old, counted, need, seen, settled, result, settled2, result2;

	amount &= KH_CLAIM_AMOUNT;
	old = *(volatile __u64 *)word;
	counted = kh_claim_counted(old, flushes, amount);
	need = ~zero_mask(amount - counted);
	seen = __sync_val_compare_and_swap(word, old,
					   (old & ~need) | (kh_claim(flushes, amount) & need));
	settled = ~need | zero_mask(seen ^ old);
	result = (counted & need) | (amount & ~need);

	old = seen;
	counted = kh_claim_counted(old, flushes, amount);
	need = ~zero_mask(amount - counted);
	seen = __sync_val_compare_and_swap(word, old,
					   (old & ~need) | (kh_claim(flushes, amount) & need));
	settled2 = ~need | zero_mask(seen ^ old);
	result2 = (counted & need) | (amount & ~need);
	return (result & settled) | (~settled & ((result2 & settled2) | (amount & ~settled2)));
}

/* What another party found in a buffer of one generation; out, what is left of it. */
struct claim_take {
	__u64 count; /* out: the first entry not counted before */
	__u64 bytes;
	__u64 units;
};

/* The three raises of a buffer's claims, out of line: once per caller. */
static __noinline int claims_raise(struct kh_thread_entry *entry, __u64 flushes,
				   struct claim_take *c)
{
	if (!entry || !c)
		return 0;
	c->count = claim_raise(&entry->claim_spans, flushes, c->count);
	c->bytes -= claim_raise(&entry->claim_bytes, flushes, c->bytes);
	c->units -= claim_raise(&entry->claim_units, flushes, c->units);
	return 0;
}

/*
 * Probe ABI 7: the spans a thread handed over that khprof never saw,
 * between what it expected (next_flushed) and the sequence number the
 * thread gives (flushed_spans; 0 before ABI 7).  0 when it saw them all.
 * Without a branch.
 */
static __always_inline __u64 thread_unseen(const struct kh_thread_entry *entry, __u64 flushed)
{
	__u64 d = flushed - entry->next_flushed;

	return d & ~(__u64)((__s64)d >> 63) & (0 - (__u64)((entry->flags / KH_THREAD_ABI7) & 1));
}

#endif /* KHPROF_BUFFERS_BPF_H */
