// SPDX-License-Identifier: MIT
/*
 * The event loop: ring-buffer events go to the session table (session.c) in
 * order; when a session ends, its slot's totals are read from the per-CPU
 * slot map (slots.c), with what khprof counted itself from the buffers of
 * threads that ended (buffers.c), handed over with the event, and the slot
 * is freed for the BPF side to reuse.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "buffers.h"
#include "khprof.skel.h"
#include "latency.h"
#include "log.h"
#include "sampler.h"
#include "slots.h"
#include "tracer_impl.h"

int tracer__read_slot(struct tracer *t, uint32_t slot, struct kh_slot_stats *sum, bool reset)
{
	return slots__read(bpf_map__fd(t->skel->maps.slot_stats), t->ncpus, slot, sum, reset);
}

void tracer__add_pending(struct tracer *t, uint32_t slot, struct kh_slot_stats *totals,
			 bool reset)
{
	struct kh_slot_stats *d = &t->pending[slot < KH_MAX_SLOTS ? slot : KH_OUTSIDE_SLOT];

	/* Buffers never count probe hits: only the BPF side sees a probe fire. */
	slots__add(totals, d);
	if (reset)
		memset(d, 0, sizeof(*d));
}

/*
 * A slot's totals and distributions with what khprof counted itself
 * (buffers of threads that ended, or read after a detach).  take: a
 * session's record takes them over, so the slot is zeroed and the BPF side
 * may reuse it; a take reads whatever it can, a look (the whole-trace
 * record) nothing when the totals cannot be read.  0 or -errno.
 */
static int read_slot(struct tracer *t, uint32_t slot, bool take, struct kh_slot_stats *totals,
		     struct kh_latency *latency)
{
	uint64_t bias_ns = t->sessions.cfg.span_bias_ns;
	int err = tracer__read_slot(t, slot, totals, take);

	memset(latency, 0, sizeof(*latency));
	if (err && !take)
		return err;
	tracer__add_pending(t, slot, totals, take);
	latency__read_slot(t->skel, t->ncpus, slot, bias_ns, latency);
	latency__add_drained(latency, &t->pending_latency[slot], bias_ns);
	if (take && slot != KH_OUTSIDE_SLOT)
		t->skel->bss->slot_busy[slot] = 0;
	return err;
}

void tracer__fill_stacks(struct kh_profile *p, uint64_t start_ns, uint64_t end_ns, void *ctx)
{
	struct tracer *t = ctx;

	if (!t->sampler)
		return;
	/* The samples up to the record's end may still wait in their ring. */
	sampler__drain(t->sampler);
	stack_store__fill(sampler__store(t->sampler), start_ns, end_ns,
			  sampler__ring_full(t->sampler), &p->ext.stacks);
}

uint64_t tracer__next_sample_ns(const struct tracer *t)
{
	return sessions__next_sample_ns(&t->sessions);
}

/*
 * Events first, so that transitions and finished sessions are in before
 * the sample.  Reading one slot costs one map lookup over the CPUs and two
 * /proc reads (docs/PERFORMANCE.md).
 */
void tracer__sample(struct tracer *t, uint64_t now)
{
	struct kh_slot_stats running;

	if (t->rb)
		ring_buffer__consume(t->rb);
	for (uint32_t slot = 0; slot < KH_MAX_SLOTS; slot++) {
		if (!sessions__sample_due(&t->sessions, slot, now))
			continue;
		if (tracer__read_slot(t, slot, &running, false) != 0) {
			sessions__sample(&t->sessions, slot, now, NULL);
			continue;
		}
		/* Buffers of threads that ended belong to the interval they were read in. */
		tracer__add_pending(t, slot, &running, false);
		sessions__sample(&t->sessions, slot, now, &running);
	}
}

/* The clock of TSC times near anchor (a TSC reading and the kernel time then). */
void tracer__buffer_clock(const struct tracer *t, uint64_t anchor_ticks, uint64_t anchor_ns,
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
static void count_thread_buffer(struct tracer *t, const struct kh_buffer_event *e)
{
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
	uint64_t now_ticks = __rdtsc(), now_ns = tracer__now_ns();
	uint64_t anchor_ns = e->anchor_ns ? e->anchor_ns : t->skel->bss->tsc_anchor_ns;
	uint64_t old_gap = e->ts_ns > anchor_ns ? e->ts_ns - anchor_ns : anchor_ns - e->ts_ns;
	uint64_t new_gap = now_ns > e->ts_ns ? now_ns - e->ts_ns : e->ts_ns - now_ns;

	if (new_gap < old_gap)
		tracer__buffer_clock(t, now_ticks, now_ns, &clock);
	else
		tracer__buffer_clock(t, e->anchor_ticks, e->anchor_ns, &clock);
	clock.session_start_ns = e->session_start_ns;
	clock.until_ns = e->ts_ns;
	buffers__account(e->state, &e->info, &clock, &t->pending[slot], &t->pending_latency[slot]);
}

size_t tracer__records_emitted(const struct tracer *t)
{
	return t->sessions.records_emitted;
}

static void end_sessions(struct tracer *t, int exit_status, uint64_t now);

/*
 * A process the traced one forked, stopped until someone resumes it, even
 * after an execve, whose new image is not traced, and neither are its
 * children.
 */
static void fork_stopped(struct tracer *t, const struct kh_event *e)
{
	if (t->opts.on_fork && !t->ended) {
		t->opts.on_fork((pid_t)e->pid, (pid_t)e->arg0, t->opts.fork_ctx);
		return;
	}
	if (!t->ended)
		attach__protect_child(t, (pid_t)e->arg0);
	kill((pid_t)e->arg0, SIGCONT);
}

/*
 * Whether an event of the traced image is still wanted: none is after an
 * execve (the new image is not traced).  First names what the BPF side
 * could not read by layout, for the record the event may end.
 */
static bool image_event(struct tracer *t)
{
	if (t->ended)
		return false;
	tracer__note_layout(t);
	return true;
}

/* The dynamic loader mapped objects: their probes are attached before their code runs. */
static void loader_stopped(struct tracer *t, const struct kh_event *e)
{
	if (t->on_start) {
		/* A watcher's hook is a file's start, not the loader (attach.c). */
		t->on_start(e->pid, t->start_ctx);
		return;
	}
	/* After an execve the new image is not traced, but must not stay stopped. */
	if (image_event(t))
		tracer__attach_mapped(t);
	if (t->opts.stop_on_loader)
		kill(t->pid, SIGCONT);
}

/* The old image's records end here; the new image is not traced. */
static void image_execed(struct tracer *t, const struct kh_event *e)
{
	log__note("PID %d ran execve: its records end there and the new program is "
		  "not traced (docs/PROBES.md)", t->pid);
	sessions__process_execed(&t->sessions);
	end_sessions(t, 0, e->ts_ns);
	t->ended = true;
}

static void session_started(struct tracer *t, const struct kh_event *e)
{
	/* Probe ABI 5 put scoped spans on the stack the sampler reads (docs/PROBES.md). */
	if (t->sampler && e->arg1 < 5 && !t->warned_old_abi) {
		log__warn("PID %d has probe ABI %llu: --sample sees only its KH_SPAN_ENTER spans "
			  "(scoped spans and Rust guards count as (no stage); build it with probe "
			  "ABI 5, docs/SAMPLING.md)", t->pid, (unsigned long long)e->arg1);
		t->warned_old_abi = true;
	}
	/* What khprof counted for the slot's previous user is not this session's. */
	if (e->slot < KH_MAX_SLOTS) {
		memset(&t->pending[e->slot], 0, sizeof(t->pending[e->slot]));
		kh_latency__free(&t->pending_latency[e->slot]);
	}
	sessions__start(&t->sessions, e);
}

/* The session ends: its record takes the slot's totals and distributions. */
static void session_finished(struct tracer *t, const struct kh_event *e)
{
	struct kh_slot_stats totals;
	struct kh_latency latency;

	read_slot(t, sessions__slot_of(e), true, &totals, &latency);
	sessions__finish(&t->sessions, e, &totals, &latency);
}

/*
 * Every event of the events and control rings, in order: the one place an
 * event's type is dispatched (bcc's and retsnoop's handle_event).  Closing
 * (attach__stop_watching_forks), only forks are still answered.
 */
static int handle_event(void *ctx, void *data, size_t len)
{
	struct tracer *t = ctx;
	const struct kh_event *e = data;

	if (len < sizeof(*e) || (t->closing && e->type != KH_EVENT_FORK))
		return 0;
	switch (e->type) {
	case KH_EVENT_FORK:
		fork_stopped(t, e);
		break;
	case KH_EVENT_LOADER_STATE:
		loader_stopped(t, e);
		break;
	case KH_EVENT_THREAD_BUFFER:
		if (!t->ended && len >= sizeof(struct kh_buffer_event))
			count_thread_buffer(t, data);
		break;
	case KH_EVENT_PROCESS_EXIT:
		if (image_event(t))
			sessions__process_ended(&t->sessions, (int)e->arg0);
		break;
	case KH_EVENT_EXEC:
		if (image_event(t))
			image_execed(t, e);
		break;
	case KH_EVENT_SESSION_START:
		if (image_event(t))
			session_started(t, e);
		break;
	case KH_EVENT_IDENTITY:
		if (image_event(t))
			sessions__identity(&t->sessions, e);
		break;
	case KH_EVENT_TRANSITION:
		if (image_event(t))
			sessions__transition(&t->sessions, e);
		break;
	case KH_EVENT_SESSION_REFUSED:
		if (image_event(t))
			sessions__refused(&t->sessions, e);
		break;
	case KH_EVENT_SESSION_FINISH:
		if (image_event(t))
			session_finished(t, e);
		break;
	default:
		if (image_event(t))
			log__debug("ignoring event type %u", e->type);
	}
	return 0;
}

int tracer__poll(struct tracer *t, int timeout_ms)
{
	if (!t->rb) {
		int err;

		t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), handle_event, t, NULL);
		if (!t->rb) {
			log__error("cannot open the event ring buffer: %s", strerror(errno));
			return -errno;
		}
		/* Forks and loader stops, which a burst of events must not crowd out. */
		err = ring_buffer__add(t->rb, bpf_map__fd(t->skel->maps.control), handle_event, t);
		if (err) {
			/* Not half a reader: the next poll would run without the control ring. */
			log__error("cannot open the control ring buffer: %s", strerror(-err));
			ring_buffer__free(t->rb);
			t->rb = NULL;
			return err;
		}
		err = t->sampler ? sampler__add_ring(t->sampler, t->rb) : 0;
		if (err) {
			log__error("cannot open the sample ring buffer: %s", strerror(-err));
			ring_buffer__free(t->rb);
			t->rb = NULL;
			return err;
		}
	}
	return ring_buffer__poll(t->rb, timeout_ms);
}

int tracer__epoll_fd(const struct tracer *t)
{
	return t->rb ? ring_buffer__epoll_fd(t->rb) : -1;
}

/* Closes the sessions still open at now, and the whole-trace record if due. */
static void end_sessions(struct tracer *t, int exit_status, uint64_t now)
{
	struct kh_slot_stats totals;
	struct kh_latency latency;

	/* What ran since the last probe: the readers and workers of a Ctrl-C'd scan. */
	sessions__set_end_peaks(&t->sessions, t->skel->bss->peak_threads,
				t->skel->bss->peak_resident_pages);
	for (uint32_t slot = 0; slot < KH_MAX_SLOTS; slot++) {
		if (!sessions__is_open(&t->sessions, slot))
			continue;
		read_slot(t, slot, true, &totals, &latency);
		sessions__end(&t->sessions, slot, exit_status, now, &totals, &latency);
	}
	/* Spans but no session probes: one record for the whole trace. */
	if (sessions__none_seen(&t->sessions) &&
	    read_slot(t, KH_OUTSIDE_SLOT, false, &totals, &latency) == 0)
		sessions__end_whole_trace(&t->sessions, exit_status, now, &totals, &latency);
}

void tracer__process_ended(struct tracer *t, int wait_status)
{
	sessions__process_ended(&t->sessions, wait_status);
}

void tracer__finish(struct tracer *t, int exit_status)
{
	uint64_t now = tracer__now_ns();

	if (t->rb)
		ring_buffer__consume(t->rb);
	if (t->ended)
		return;
	/* A whole-trace record of a process that ended says how. */
	if (exit_status >= 0 && t->sessions.end == SESSION_END_EXIT)
		exit_status = t->sessions.end_code;
	else if (exit_status >= 0 && t->sessions.end == SESSION_END_SIGNAL)
		exit_status = 128 + t->sessions.end_code;
	end_sessions(t, exit_status, t->detached ? t->detach_ns : now);
	t->ended = true;
}

void tracer__detach(struct tracer *t)
{
	uint64_t detach_ns = tracer__now_ns();

	attach__stop_watching_forks(t, false);
	for (size_t i = 0; i < t->link_fd_count; i++)
		close(t->link_fds[i]);
	t->link_fd_count = 0;
	for (size_t i = 0; i < sizeof(t->end_links) / sizeof(t->end_links[0]); i++) {
		bpf_link__destroy(t->end_links[i]);
		t->end_links[i] = NULL;
	}
	for (size_t i = 0; i < sizeof(t->sched_links) / sizeof(t->sched_links[0]); i++) {
		bpf_link__destroy(t->sched_links[i]);
		t->sched_links[i] = NULL;
	}
	if (t->rb)
		ring_buffer__consume(t->rb);
	sampler__detach(t->sampler);
	t->detached = true;
	t->detach_ns = detach_ns;
	drain__detached(t, detach_ns);
}
