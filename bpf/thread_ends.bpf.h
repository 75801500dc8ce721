/* SPDX-License-Identifier: GPL-2.0 */
/*
 * thread_ends.bpf.h - part of khprof.bpf.c, included at its end (one BPF
 * object, one skeleton): the buffers of threads that end, exec, or outlive
 * a detach (docs/PROBES.md, "Nothing completed is lost").  Uses the maps,
 * globals and event helpers defined above the include.
 */
#ifndef KHPROF_THREAD_ENDS_BPF_H
#define KHPROF_THREAD_ENDS_BPF_H

/* traced_tgid (above) is 0 while calibrating: these programs then do nothing. */
/* execve calls that are not the program's: record's own exec of COMMAND. */
__u32 execs_expected = 0;
/*
 * The loader attached keyhog probes to the current image.  Until then an
 * execve hands over to the new image instead of ending the records: a
 * shell wrapper (`sh -c 'exec scanner'`) has no probes, the scanner it
 * execs is traced from its first instruction.
 */
__u32 image_traced = 0;
/* The loader saw a batch probe of ABI 2 (no batch_register) in a traced file. */
__u32 abi2_batch_traced = 0;

/*
 * Buffers of ending threads that could not be read (their memory already
 * gone, before Linux 6.16 without fentry, or a page being moved): khprof
 * says how many.
 */
__u64 ends_unreadable = 0;

static __always_inline void count_drops(__u32 slot, enum kh_drop drop, __u64 n)
{
	struct kh_slot_stats *stats;

	kh_preempt_disable();
	stats = stats_of(slot);
	if (stats)
		stats->drops[drop] += n;
	kh_preempt_enable();
}

/*
 * What an ending thread still buffers (it died, or it is about to exec),
 * read from its memory, which the kernel still maps at sched_process_exit
 * and sched_prepare_exec, and handed to khprof in one ring-buffer record:
 * khprof counts it as after a detach (userspace/capture/session/buffers.c),
 * which keeps these programs small (the verifier walks ~200 instructions
 * instead of ~2,600 for counting here, 2.5 ms each at every start).  The
 * record is reserved before the slot is read: a session's end on another
 * CPU either settled this buffer first (the claims then leave nothing) or
 * comes after the record in the ring, which khprof reads in order.  What
 * it takes is claimed, so that a session's end, a failed execve's later
 * batch or a second program never counts it again.  Probe ABI 7: the
 * spans the thread numbered before its buffer that khprof never saw are
 * counted as unseen.  Global, so that the verifier checks it once per
 * program whatever path led there (inlined, each program walked 7,000
 * instructions, 2,200 before the claims); not preempted while it reads
 * and sends the buffer (a few us): a thread preempted inside one of these
 * programs holds it on its CPU, and the kernel skips it there for every
 * other thread's end (the programs after it take those).  Off inside, not around the
 * call: the verifier of Linux 6.12 refuses a global function's call with
 * preemption disabled.
 */
static __always_inline void send_buffer(__u32 tid, struct kh_thread_entry *entry)
{
	__u64 addr = entry->state_addr, bytes, flushes, flushed = 0, input[2], unseen;
	struct claim_take take;
	struct kh_buffer_event *e;
	__u32 zero = 0, slot, count = 0, first, flags = entry->flags;
	struct batch_buffer *scratch;
	/* Before probe ABI 6 a buffer held 64 entries, and flushes followed them. */
	bool abi6 = flags & KH_THREAD_ABI6;
	__u64 flushes_off = flushes_offset(flags);

	if (!KH_BATCH_PATH)
		return; /* span mode only: no buffers (classic.bpf.h) */
	if (!(flags & KH_THREAD_ABI3)) {
		/* ABI 2: no generation to tell a counted buffer from a new one. */
		if (!bpf_probe_read_user(&count, sizeof(count),
					 (const void *)(addr + KH_TS_BATCH_COUNT_OFF)) && count)
			count_drops(active_slot, KH_DROP_EXIT_UNREAD,
				    count < KH_BATCH_CAPACITY ? count : KH_BATCH_CAPACITY);
		return;
	}
	/* Most threads end with nothing buffered (pthread_exit flushes): no record. */
	if (bpf_probe_read_user(&count, sizeof(count), (const void *)(addr + KH_TS_BATCH_COUNT_OFF)) ||
	    bpf_probe_read_user(input, sizeof(input), (const void *)(addr + KH_TS_INPUT_OFF)) ||
	    bpf_probe_read_user(&flushes, sizeof(flushes), (const void *)(addr + flushes_off)) ||
	    ((flags & KH_THREAD_ABI7) &&
	     bpf_probe_read_user(&flushed, sizeof(flushed),
				 (const void *)(addr + KH_TS_FLUSHED_SPANS_OFF)))) {
		count_drop(active_slot, KH_DROP_EXIT_UNKNOWN);
		__sync_fetch_and_add(&ends_unreadable, 1);
		return;
	}
	/*
	 * No branch until the claims are taken (the verifier walks their code
	 * once for every way into it): the count within the layout's
	 * capacity, and (ABI 7) the spans the thread numbered before its
	 * buffer that khprof's batches never brought, unless its batch had
	 * already taken the buffer (it died inside its flush).
	 */
	count = min_no_branch(count, capacity_of(flags));
	unseen = thread_unseen(entry, flushed) & (kh_claim_ahead(entry->claim_spans, flushes) - 1);
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	slot = active_slot;
	take.count = count;
	take.bytes = input[0];
	take.units = input[1];
	claims_raise(entry, flushes, &take);
	first = take.count;
	input[0] = take.bytes;
	input[1] = take.units;
	if (unseen) {
		count_drops(slot, KH_DROP_UNSEEN, unseen);
		entry->next_flushed = flushed;
	}
	if (first >= count && !input[0] && !input[1]) {
		/* All of it was counted: a settle took it, or it died inside its flush. */
		if (e)
			bpf_ringbuf_discard(e, 0);
		return;
	}
	if (!e) {
		/* The ring buffer is full: the spans are lost, and counted as such. */
		count_drops(slot, KH_DROP_EXIT_UNREAD, count > first ? count - first : 0);
		return;
	}
	if (bpf_probe_read_user(e->state, KH_TS_BATCH_OFF, (const void *)addr)) {
		bpf_ringbuf_discard(e, 0);
		count_drop(slot, KH_DROP_EXIT_UNKNOWN);
		__sync_fetch_and_add(&ends_unreadable, 1);
		return;
	}
	/* The count read first: its entries are the ones claimed. */
	__builtin_memcpy(e->state + KH_TS_BATCH_COUNT_OFF, &count, sizeof(count));
	bytes = (__u64)count * sizeof(struct kh_batch_entry);
	barrier_var(bytes);
	if (bytes > KH_BATCH_CAPACITY * sizeof(struct kh_batch_entry))
		bytes = KH_BATCH_CAPACITY * sizeof(struct kh_batch_entry);
	if (!abi6 && bytes > KH_BATCH_CAPACITY_ABI5 * sizeof(struct kh_batch_entry))
		bytes = KH_BATCH_CAPACITY_ABI5 * sizeof(struct kh_batch_entry);
	if (bytes && bpf_probe_read_user(e->state + KH_TS_BATCH_OFF, bytes,
					 (const void *)(addr + KH_TS_BATCH_OFF))) {
		bpf_ringbuf_discard(e, 0);
		count_drops(slot, KH_DROP_EXIT_UNREAD, count > first ? count - first : 0);
		__sync_fetch_and_add(&ends_unreadable, 1);
		return;
	}
	/* Where khprof reads it, whichever layout the thread has. */
	__builtin_memcpy(e->state + KH_TS_FLUSHES_OFF, &flushes, sizeof(flushes));
	e->type = KH_EVENT_THREAD_BUFFER;
	e->slot = slot;
	e->tid = tid;
	e->first = first;
	e->input_bytes = input[0];
	e->input_units = input[1];
	e->ts_ns = bpf_ktime_get_ns();
	e->session_start_ns = slot < KH_MAX_SLOTS ? slot_start_ns[slot & (KH_MAX_SLOTS - 1)] : 0;
	e->anchor_ticks = tsc_anchor_ticks;
	e->anchor_ns = tsc_anchor_ns;
	scratch = bpf_map_lookup_elem(&batch_scratch, &zero);
	if (scratch && scratch->anchor_ns) {
		e->anchor_ticks = scratch->anchor_ticks;
		e->anchor_ns = scratch->anchor_ns;
	}
	/* khprof needs it only by the session's end, whose event wakes it. */
	event_submit_lazily((struct kh_event *)e);
}

__noinline int kh_send_buffer(__u32 tid)
{
	struct kh_thread_entry *entry = bpf_map_lookup_elem(&thread_list, &tid);

	if (!entry || !entry->state_addr)
		return 0;
	kh_preempt_disable();
	send_buffer(tid, entry);
	kh_preempt_enable();
	return 0;
}

/*
 * Before Linux 6.16 sched_process_exit fires after exit_mm(): the thread's
 * memory is gone there, so its buffer is read at the start of do_exit()
 * instead (kh_exit_drain, an fentry program, loaded only there), and the
 * tracepoint's program does the rest.
 */
const volatile bool drain_at_do_exit = 0;

/*
 * The process at its end, as at a transition (layout.bpf.h), in the
 * event that says it ended: CPU time and threads read here; memory here
 * when the thread still has it, else the latest the kernel showed
 * (end_resident_pages, khprof.bpf.c).
 */
static __always_inline void sample_end(struct kh_event *e, bool mm_gone)
{
	__u64 resident = end_resident_pages, virtual = end_virtual_pages;

	kh_sample_task(e);
	if (mm_gone) {
		e->resident_pages = resident;
		e->virtual_pages = virtual;
	}
}

static __always_inline void thread_end(struct task_struct *task, bool group_dead, bool drain,
				       bool mm_gone)
{
	struct kh_thread_entry *entry;
	struct kh_event *e;
	__u32 tid;

	tid = task->pid;
	offcpu_thread_end(task);
	entry = bpf_map_lookup_elem(&thread_list, &tid);
	if (entry && entry->state_addr) {
		if (drain)
			kh_send_buffer(tid);
		else if (drain_at_do_exit) {
			/* kh_exit_drain, which takes the entry out, did not run for it. */
			count_drop(active_slot, KH_DROP_EXIT_UNKNOWN);
			__sync_fetch_and_add(&threads_ended_unseen, 1);
		}
		bpf_map_delete_elem(&thread_list, &tid);
	} else if (abi2_batch_traced) {
		/* ABI 2: its buffer is unknown. */
		count_drop(active_slot, KH_DROP_EXIT_UNKNOWN);
	}
	kh_task_state_exit(&thread_store, &task_stacks); /* hash maps only (task_state.bpf.h) */
	if (!group_dead)
		return;
	e = event_reserve(KH_EVENT_PROCESS_EXIT, active_slot);
	if (!e)
		return;
	e->arg0 = task->exit_code;
	sample_end(e, mm_gone);
	event_submit(e);
}

static __always_inline bool traced_thread(const struct task_struct *task)
{
	return traced_tgid && task->tgid == traced_tgid;
}

/*
 * The threads whose end one of the programs below took, by thread id, with
 * the task's start time (a thread id the kernel gives again is another
 * thread's).  LRU: the marks of ended threads are evicted in time, and no
 * program takes them out (kh_thread_exit_last says why).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} thread_ends_taken SEC(".maps");

/*
 * Test hook (KHPROF_TEST_SKIP_THREAD_EXITS, userspace/capture/process.c):
 * the traced process's threads end as if the kernel had skipped the first
 * N of the three programs below.
 */
__u32 test_skip_thread_exits = 0;

/* One of the programs below took this thread's end. */
static __always_inline bool end_taken(const struct task_struct *task)
{
	__u32 tid = task->pid;
	__u64 *born = bpf_map_lookup_elem(&thread_ends_taken, &tid);

	return born && *born == task->start_time;
}

/* 0 when marked; a program that cannot mark the end leaves it to the next. */
static __always_inline long end_take(const struct task_struct *task)
{
	__u32 tid = task->pid;
	__u64 born = task->start_time;

	return bpf_map_update_elem(&thread_ends_taken, &tid, &born, BPF_ANY);
}

/*
 * Every thread's end: normal exit, exit_group from any thread, a fatal
 * signal, the other threads of an execve.  Also drops the thread's switch
 * log (latency.bpf.h).  Since Linux 6.16 the tracepoint fires before the
 * thread lets go of its memory (exit_mm).
 *
 * Three programs, because the kernel may skip each: it runs a tracing
 * program at most once per CPU at a time, and an entry while another
 * thread is preempted inside it is dropped, counted only in the program's
 * recursion_misses.  Tracepoints run preemptible on newer kernels (under
 * SRCU: 7.3's cloud kernel has tracepoint_srcu, this 6.18 host has not;
 * the guest runs preempt=full).  Two threads of a process that a signal
 * kills end together: one of them lost its whole buffer in about one run
 * of three on 7.3 under QEMU (test_fault_matrix, thread_segv in batch
 * mode; in pair mode the end sample went missing the same way).  A thread
 * preempted inside one program holds only that one, so the next runs for
 * the next thread; each marks the thread taken for those after it.  With
 * two, 7.3 under TCG still skipped both for one thread in about one record
 * in 20 of test_soak's Rust waves (4 to 6 skips a record): the dead
 * thread's entry stayed in thread_list, and once the C library gave its
 * stack to a new thread, a session's end counted that thread's buffer
 * twice (buffers.bpf.h, state_owners, now takes such an entry out).  The
 * third runs the body only when both others were skipped: in 60 records
 * there, 1 thread's end was skipped by all three (counted and said), and
 * no buffer was counted twice.  Each thread still runs every program's
 * first lines: a lookup, which takes no lock (kh_thread_exit_last).
 * Cost: one more program at every exit on the machine, which returns at
 * the tgid check (with kernel.bpf_stats_enabled each took ~600 ns per
 * exit of an untraced /bin/true here, 2,400 exits, most of it the
 * statistics' own clock reads), and one LRU-hash update per traced
 * thread.  What the kernel skips three times is counted where the
 * thread's stack comes back (buffers.bpf.h) or at the process's end
 * (thread_list, userspace/capture/drain.c).
 */
/*
 * The nth of the three programs (1 to 3, a constant): takes the end unless
 * one before it did (the first has none before it), and marks it for those
 * after it; not marked, not done, so that the next does it then.
 */
static __always_inline void thread_exit_nth(struct task_struct *task, bool group_dead, __u32 n)
{
	if (!traced_thread(task) || test_skip_thread_exits >= n)
		return;
	if (n > 1 && end_taken(task))
		return;
	if (n < 3 && end_take(task))
		return;
	thread_end(task, group_dead, true, false);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(kh_thread_exit, struct task_struct *task, bool group_dead)
{
	thread_exit_nth(task, group_dead, 1);
	return 0;
}

/* The same thread's end where the kernel skipped kh_thread_exit. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(kh_thread_exit_again, struct task_struct *task, bool group_dead)
{
	thread_exit_nth(task, group_dead, 2);
	return 0;
}

/*
 * The same where the kernel skipped both.  The mark stays, for the LRU to
 * evict: a delete takes the map's lock, whose release is a point where a
 * preemptible kernel switches tasks, and a thread preempted there holds
 * this program too, for every end on that CPU (with the delete, 7.3 under
 * TCG skipped it 2 or 3 times a record of test_soak's Rust waves, and
 * test_skipped_thread_end lost a thread_segv buffer, with the first two
 * skipped by the test hook, in a run of the matrix).  Lookups take no lock.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(kh_thread_exit_last, struct task_struct *task, bool group_dead)
{
	thread_exit_nth(task, group_dead, 3);
	return 0;
}

/*
 * The same before Linux 6.16, whose tracepoint has no group_dead: do_exit
 * took the thread off signal->live before it, so the last one finds 0.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(kh_thread_exit_old, struct task_struct *task)
{
	bool group_dead;

	if (!traced_thread(task))
		return 0;
	group_dead = BPF_CORE_READ(task, signal, live.counter) == 0;
	/*
	 * The memory as kh_exit_drain and kh_rss_stat left it, even on a
	 * kernel that still maps it here: the fallback then runs as it
	 * would before 6.16 (tests/run-all.sh's second pass).
	 */
	thread_end(task, group_dead, !drain_at_do_exit, true);
	return 0;
}

/* Kernels before 6.16: the buffer while the thread still has its memory. */
SEC("fentry/do_exit")
int BPF_PROG(kh_exit_drain, long code)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct kh_thread_entry *entry;
	struct mm_struct *mm;
	__u32 tid;

	if (!traced_tgid || task->tgid != traced_tgid)
		return 0;
	mm = kh_task_mm(task);
	if (mm) {
		end_resident_pages = resident_pages_of(mm);
		end_virtual_pages = BPF_CORE_READ(mm, total_vm);
	}
	tid = task->pid;
	entry = bpf_map_lookup_elem(&thread_list, &tid);
	if (entry && entry->state_addr) {
		kh_send_buffer(tid);
		/*
		 * Out of the list at once: kh_thread_exit_old counts a thread
		 * still listed as one this program missed, and a session's
		 * end must not read a stack the C library may give to a new
		 * thread once exit_mm() has cleared this one's id.
		 */
		bpf_map_delete_elem(&thread_list, &tid);
	}
	return 0;
}

/*
 * The process as the old image leaves it: taken where the execve's buffer
 * check runs, while the old memory is still mapped, and sent with the
 * KH_EVENT_EXEC of the same thread (kh_exec) if the execve goes through.
 * The peaks are left as they were, for an execve that fails.  Static: the
 * skeleton does not show it.
 */
static struct kh_event exec_sample;

static __always_inline void exec_check(struct task_struct *task)
{
	struct kh_thread_entry *entry;
	__u32 tid;

	if (!traced_tgid || task->tgid != traced_tgid)
		return;
	if (image_traced && !execs_expected) {
		kh_sample_task(&exec_sample);
		exec_sample.tid = task->pid;
		peak_threads = exec_sample.peak_threads;
		peak_resident_pages = exec_sample.peak_resident_pages;
	}
	tid = task->pid;
	entry = bpf_map_lookup_elem(&thread_list, &tid);
	if (entry && entry->state_addr)
		kh_send_buffer(tid);
}

/*
 * An execve replaces the caller's memory: its buffer is read at
 * sched_prepare_exec, which the kernel fires just before the point of no
 * return, while the old image is still mapped (the tracepoint exists for
 * this, Linux 6.10).  Not a sys_enter program: with one attached, every
 * syscall takes the traced slow path, and on this kernel every
 * optimized-uprobe hit is a syscall (it cost batch mode 1.7 ns per span,
 * 4%).  An exec can still fail after it; the mark keeps the next flush or
 * the thread's end from counting the buffer twice.
 */
SEC("tp_btf/sched_prepare_exec")
int BPF_PROG(kh_exec_check, struct task_struct *task, struct linux_binprm *bprm)
{
	exec_check(task);
	return 0;
}

/*
 * Before Linux 6.10: the start of begin_new_exec(), where that tracepoint
 * fires now, with the old image still mapped.
 */
SEC("fentry/begin_new_exec")
int BPF_PROG(kh_exec_check_old, struct linux_binprm *bprm)
{
	exec_check(bpf_get_current_task_btf());
	return 0;
}

/*
 * The execve succeeded: the old image's record ends here.  Spans of the new
 * image go to the calibration slot, which nobody reads any more (khprof
 * does not trace the new image, docs/PROBES.md).
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(kh_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	struct kh_event *e;
	__u32 tid;

	if (!traced_tgid || task->tgid != traced_tgid)
		return 0;
	if (execs_expected) {
		execs_expected--;
		return 0;
	}
	/*
	 * An image without keyhog probes (a wrapper, a container runtime)
	 * hands over to the new one, whose files khprof attaches before its
	 * first instruction, through its own root (a container's loader is
	 * not the host's): named and stopped as the loader's events are.
	 */
	if (!image_traced)
		return loader_stop(0, 0);
	/* The thread's buffer went with the old image. */
	kh_task_state_delete(&thread_store, task);
	tid = task->pid;
	bpf_map_delete_elem(&thread_list, &tid);
	tid = old_pid;
	bpf_map_delete_elem(&thread_list, &tid);
	e = event_reserve(KH_EVENT_EXEC, active_slot);
	active_slot = KH_CALIBRATION_SLOT;
	if (!e)
		return 0;
	e->arg0 = old_pid;
	/* No sample without an execve check (no hook for it): the end's memory unknown. */
	if (exec_sample.threads && exec_sample.tid == (__u32)old_pid) {
		e->cpu_ns = exec_sample.cpu_ns;
		e->resident_pages = exec_sample.resident_pages;
		e->virtual_pages = exec_sample.virtual_pages;
		e->threads = exec_sample.threads;
		e->peak_resident_pages = exec_sample.peak_resident_pages;
		e->peak_threads = exec_sample.peak_threads;
		e->sampled_ns = exec_sample.sampled_ns;
	} else {
		sample_end(e, true);
		e->resident_pages = 0;
		e->virtual_pages = 0;
	}
	exec_sample.threads = 0;
	event_submit(e);
	return 0;
}

#endif /* KHPROF_THREAD_ENDS_BPF_H */
