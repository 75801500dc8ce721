// SPDX-License-Identifier: MIT
/*
 * The spans threads left in their batch buffers, counted for their
 * sessions' slots as the BPF side would (buffers.c).  A thread that ended
 * (or execed) sent its buffer as one event (bpf/thread_ends.bpf.h).  After
 * a detach from a live process, the spans its threads completed while
 * khprof was attached but had not handed over yet are read from their
 * buffers with process_vm_readv, where the BPF side learned them
 * (thread_list, which also holds the claims on what of each was counted).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "buffers.h"
#include "counter.h"
#include "khprof.skel.h"
#include "log.h"
#include "misses.h"
#include "tracer_impl.h"

/* The clock of TSC times near anchor (a TSC reading and the kernel time then). */
static void buffer_clock(const struct tracer *t, uint64_t anchor_ticks, uint64_t anchor_ns,
			 struct buffer_clock *clock)
{
	memset(clock, 0, sizeof(*clock));
	clock->now_ticks = anchor_ns ? anchor_ticks : t->skel->bss->tsc_anchor_ticks;
	clock->now_ns = anchor_ns ? anchor_ns : t->skel->bss->tsc_anchor_ns;
	clock->tsc_mult = t->skel->bss->tsc_mult;
	clock->tsc_shift = t->skel->bss->tsc_shift;
	clock->trace_start_ns = t->trace_start_ns;
}

/* A thread that ended (or execed) left spans in its buffer: they count for its slot. */
void drain__thread_ended(struct tracer *t, const struct kh_buffer_event *e)
{
	struct buffer_take take = { 0 };
	struct buffer_clock clock;
	uint32_t slot = e->slot < KH_MAX_SLOTS ? e->slot : KH_OUTSIDE_SLOT;

	if (e->slot >= KH_MAX_SLOTS && e->slot != KH_OUTSIDE_SLOT)
		return; /* after an execve, or calibrating: nobody's session */
	/*
	 * The anchor nearest the buffer's spans, which end by e->ts_ns: this
	 * CPU's last flush, the loader's reading, or one taken now.  Times
	 * are placed by their distance from it at the measured TSC rate, so
	 * an old anchor (a thread that never flushed on a CPU that has not
	 * since) multiplies the rate's error: at 100 ppm, 300 ms away put the
	 * first spans of a session 30 us early, before the session, and they
	 * were dropped as late under load here (test_fault_matrix).
	 */
	uint64_t now_ticks = counter__read(), now_ns = tracer__now_ns();
	uint64_t anchor_ns = e->anchor_ns ? e->anchor_ns : t->skel->bss->tsc_anchor_ns;
	uint64_t old_gap = e->ts_ns > anchor_ns ? e->ts_ns - anchor_ns : anchor_ns - e->ts_ns;
	uint64_t new_gap = now_ns > e->ts_ns ? now_ns - e->ts_ns : e->ts_ns - now_ns;

	if (new_gap < old_gap)
		buffer_clock(t, now_ticks, now_ns, &clock);
	else
		buffer_clock(t, e->anchor_ticks, e->anchor_ns, &clock);
	clock.session_start_ns = e->session_start_ns;
	/*
	 * Every span in the buffer ended before the thread sent it, so a time
	 * after e->ts_ns is the conversion's error, not a span to leave out:
	 * with e->ts_ns as the bound, the last spans before a SIGKILL (a few
	 * us before it) could be dropped without a count, likely the one
	 * "sigkill: 8 of 10" test_fault_matrix saw on this 6.18 host.
	 */
	clock.until_ns = UINT64_MAX;
	take.first = e->first;
	take.input_bytes = e->input_bytes;
	take.input_units = e->input_units;
	buffers__account(e->state, &take, &clock, &t->pending[slot], &t->pending_latency[slot]);
}

static bool thread_of(pid_t pid, __u32 tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%u", pid, tid);
	return access(path, F_OK) == 0;
}

void drain__detached(struct tracer *t, uint64_t detach_ns)
{
	int fd = bpf_map__fd(t->skel->maps.thread_list);
	uint32_t slot = t->skel->bss->active_slot;
	struct kh_slot_stats *out = &t->pending[slot < KH_MAX_SLOTS ? slot : KH_OUTSIDE_SLOT];
	struct kh_latency *lat = &t->pending_latency[slot < KH_MAX_SLOTS ? slot : KH_OUTSIDE_SLOT];
	struct buffer_clock clock;
	uint64_t late = 0, unread = 0;
	__u32 key, next, tid, *prev = NULL;

	if (slot >= KH_MAX_SLOTS)
		return; /* after an execve: nobody's session */
	buffer_clock(t, counter__read(), tracer__now_ns(), &clock);
	clock.session_start_ns = t->skel->bss->slot_start_ns[slot];
	clock.until_ns = detach_ns;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		unsigned char state[KH_TS_READ_BYTES];
		struct kh_thread_entry entry;
		struct buffer_take take;
		struct iovec local = { state, sizeof(state) }, remote;
		uint64_t flushed = 0;

		key = next;
		prev = &key;
		/* Listed by the kernel's id; looked up by khprof's (pid_map.c). */
		tid = (__u32)pid_map__local(t, (pid_t)key);
		if (!tid || !thread_of(t->pid, tid) || bpf_map_lookup_elem(fd, &key, &entry))
			continue;
		if (!(entry.flags & KH_THREAD_ABI3)) {
			unread++;
			continue;
		}
		/*
		 * Before probe ABI 6 the state ends after 64 entries, before
		 * ABI 7 after flushes: read no further, and put its flushes
		 * where buffers__take_of reads it.
		 */
		local.iov_len = entry.flags & KH_THREAD_ABI7   ? KH_TS_READ_BYTES
				: entry.flags & KH_THREAD_ABI6 ? KH_TS_READ_BYTES_ABI6
							       : KH_TS_READ_BYTES_ABI5;
		remote = (struct iovec){ (void *)(uintptr_t)entry.state_addr, local.iov_len };
		if (process_vm_readv(t->pid, &local, 1, &remote, 1, 0) != (ssize_t)local.iov_len) {
			log__debug("cannot read thread %u's buffer: %s", tid, strerror(errno));
			unread++;
			continue;
		}
		if (!(entry.flags & KH_THREAD_ABI6))
			memmove(state + KH_TS_FLUSHES_OFF, state + KH_TS_FLUSHES_OFF_ABI5, 8);
		if (entry.flags & KH_THREAD_ABI7)
			memcpy(&flushed, state + KH_TS_FLUSHED_SPANS_OFF, sizeof(flushed));
		buffers__take_of(state, &entry, flushed, &take);
		late += buffers__account(state, &take, &clock, out, lat);
	}
	out->drops[KH_DROP_EXIT_UNKNOWN] += unread;
	log__debug("after the detach: %" PRIu64 " buffered spans had ended after it", late);
}

/* How often the kernel skipped the thread-end programs on some CPU (any process's end). */
static uint64_t exit_misses(const struct tracer *t)
{
	return program__misses(t->skel->progs.kh_thread_exit) +
	       program__misses(t->skel->progs.kh_thread_exit_again) +
	       program__misses(t->skel->progs.kh_thread_exit_last) +
	       program__misses(t->skel->progs.kh_exit_drain);
}

void drain__say_unread(struct tracer *t, uint64_t left)
{
	uint64_t unseen = left + t->skel->bss->threads_ended_unseen;
	uint64_t unreadable = t->skel->bss->settle_unreadable;
	uint64_t at_end = t->skel->bss->ends_unreadable;

	if (unreadable)
		log__warn("%" PRIu64 " time%s a session's start or end could not read a live thread's "
			  "buffer of PID %d (the kernel was moving its page, as when it collapses memory "
			  "into huge pages): what it held is lost to that session, counted as "
			  "exit_unknown or, for unread spans, exit_unread", unreadable,
			  unreadable == 1 ? "" : "s", t->pid);
	if (at_end)
		log__warn("%" PRIu64 " thread%s of PID %d ended with a buffer khprof could not read "
			  "(its memory already gone, or a page being moved): what %s still buffered is "
			  "lost, counted as exit_unknown or, for unread spans, exit_unread", at_end,
			  at_end == 1 ? "" : "s", t->pid, at_end == 1 ? "it" : "they");
	if (unseen)
		log__warn("%" PRIu64 " thread%s of PID %d ended unseen: the kernel skipped khprof's "
			  "programs for %s end (it skipped them %" PRIu64 " times, another end holding "
			  "them on the same CPU); whatever %s still buffered is lost, counted as "
			  "exit_unknown", unseen, unseen == 1 ? "" : "s", t->pid,
			  unseen == 1 ? "its" : "their", exit_misses(t), unseen == 1 ? "it" : "they");
}

/*
 * The process ended: every thread's end took it out of thread_list
 * (bpf/thread_ends.bpf.h), so a thread still listed is one the kernel ran
 * none of the thread-end programs for, and its buffer went unread.
 * Counted per thread as exit_unknown.  Those whose stack a new thread got
 * were counted by the kernel side when it did (bpf/buffers.bpf.h,
 * state_owners).  Said with the buffers a session's event could not read.
 */
void drain__process_ended(struct tracer *t)
{
	int fd = bpf_map__fd(t->skel->maps.thread_list);
	uint32_t slot = t->skel->bss->active_slot;
	uint64_t left = 0, misses = exit_misses(t);
	__u32 key, next, *prev = NULL;

	if (misses)
		log__debug("the kernel skipped khprof's thread-end programs %" PRIu64 " times "
			   "(another end held them on the same CPU)", misses);
	if (slot < KH_MAX_SLOTS) {
		while (bpf_map_get_next_key(fd, prev, &next) == 0) {
			key = next;
			prev = &key;
			left++;
		}
		t->pending[slot].drops[KH_DROP_EXIT_UNKNOWN] += left;
	}
	drain__say_unread(t, left);
}
