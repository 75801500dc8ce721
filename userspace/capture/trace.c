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

	for (int s = 0; s < KH_STAGE_COUNT; s++) {
		totals->stages[s].elapsed_ns += d->stages[s].elapsed_ns;
		totals->stages[s].calls += d->stages[s].calls;
		totals->stages[s].attributed_ns += d->stages[s].attributed_ns;
		totals->stages[s].attributed_calls += d->stages[s].attributed_calls;
	}
	totals->input_bytes += d->input_bytes;
	totals->input_units += d->input_units;
	for (int i = 0; i < KH_DROP_COUNT; i++)
		totals->drops[i] += d->drops[i];
	if (reset)
		memset(d, 0, sizeof(*d));
}

/*
 * Reads and zeroes a session's slot and its distributions (which the
 * session's record takes over), and lets the BPF side reuse the slot.
 */
static void take_slot(struct tracer *t, uint32_t slot, struct kh_slot_stats *totals)
{
	tracer__read_slot(t, slot, totals, true);
	tracer__add_pending(t, slot, totals, true);
	kh_latency__free(&t->sessions.latency);
	latency__read_slot(t->skel, t->ncpus, slot, t->sessions.cfg.span_bias_ns,
			   &t->sessions.latency);
	latency__add_drained(&t->sessions.latency, &t->pending_latency[slot],
			     t->sessions.cfg.span_bias_ns);
	if (slot != KH_OUTSIDE_SLOT)
		t->skel->bss->slot_busy[slot] = 0;
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

static int handle_event(void *ctx, void *data, size_t len)
{
	struct tracer *t = ctx;
	const struct kh_event *e = data;
	struct kh_slot_stats totals;

	if (len < sizeof(*e) || (t->closing && e->type != KH_EVENT_FORK))
		return 0;
	if (e->type == KH_EVENT_LOADER_STATE && t->on_start) {
		/* A watcher's hook is a file's start, not the loader (attach.c). */
		t->on_start(e->pid, t->start_ctx);
		return 0;
	}
	if (e->type == KH_EVENT_FORK) {
		/*
		 * Stopped until someone resumes it, even after an execve, whose
		 * new image is not traced, and neither are its children.
		 */
		if (t->opts.on_fork && !t->ended) {
			t->opts.on_fork((pid_t)e->pid, (pid_t)e->arg0, t->opts.fork_ctx);
			return 0;
		}
		if (!t->ended)
			attach__protect_child(t, (pid_t)e->arg0);
		kill((pid_t)e->arg0, SIGCONT);
		return 0;
	}
	if (e->type == KH_EVENT_THREAD_BUFFER && !t->ended) {
		if (len >= sizeof(struct kh_buffer_event))
			count_thread_buffer(t, data);
		return 0;
	}
	if (t->ended) {
		/* After an execve: the new image is not traced, but must not stay stopped. */
		if (e->type == KH_EVENT_LOADER_STATE && t->opts.stop_on_loader)
			kill(t->pid, SIGCONT);
		return 0;
	}
	tracer__note_layout(t);
	sessions__note_end_sample(&t->sessions, e);
	if (e->type == KH_EVENT_PROCESS_EXIT) {
		sessions__process_ended(&t->sessions, (int)e->arg0);
		return 0;
	}
	if (e->type == KH_EVENT_EXEC) {
		/* The old image's records end here; the new image is not traced. */
		log__note("PID %d ran execve: its records end there and the new program is "
			  "not traced (docs/PROBES.md)", t->pid);
		sessions__process_execed(&t->sessions);
		end_sessions(t, 0, e->ts_ns);
		t->ended = true;
		return 0;
	}
	if (e->type == KH_EVENT_LOADER_STATE) {
		tracer__attach_mapped(t);
		if (t->opts.stop_on_loader)
			kill(t->pid, SIGCONT);
		return 0;
	}
	/* Probe ABI 5 put scoped spans on the stack the sampler reads (docs/PROBES.md). */
	if (e->type == KH_EVENT_SESSION_START && t->sampler && e->arg1 < 5 && !t->warned_old_abi) {
		log__warn("PID %d has probe ABI %llu: --sample sees only its KH_SPAN_ENTER spans "
			  "(scoped spans and Rust guards count as (no stage); build it with probe "
			  "ABI 5, docs/SAMPLING.md)", t->pid, (unsigned long long)e->arg1);
		t->warned_old_abi = true;
	}
	if (e->type == KH_EVENT_SESSION_START && e->slot < KH_MAX_SLOTS) {
		memset(&t->pending[e->slot], 0, sizeof(t->pending[e->slot]));
		kh_latency__free(&t->pending_latency[e->slot]);
	}
	if (!sessions__event_ends_session(e)) {
		sessions__event(&t->sessions, e, NULL);
		return 0;
	}
	take_slot(t, sessions__slot_of(e), &totals);
	sessions__event(&t->sessions, e, &totals);
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

	/* What ran since the last probe: the readers and workers of a Ctrl-C'd scan. */
	sessions__set_end_peaks(&t->sessions, t->skel->bss->peak_threads,
				t->skel->bss->peak_resident_pages);
	for (uint32_t slot = 0; slot < KH_MAX_SLOTS; slot++) {
		if (!sessions__is_open(&t->sessions, slot))
			continue;
		take_slot(t, slot, &totals);
		sessions__end(&t->sessions, slot, exit_status, now, &totals);
	}
	if (sessions__none_seen(&t->sessions) &&
	    tracer__read_slot(t, KH_OUTSIDE_SLOT, &totals, false) == 0) {
		/* Spans but no session probes: one record for the whole trace. */
		tracer__add_pending(t, KH_OUTSIDE_SLOT, &totals, false);
		kh_latency__free(&t->sessions.latency);
		latency__read_slot(t->skel, t->ncpus, KH_OUTSIDE_SLOT,
				   t->sessions.cfg.span_bias_ns, &t->sessions.latency);
		latency__add_drained(&t->sessions.latency, &t->pending_latency[KH_OUTSIDE_SLOT],
				     t->sessions.cfg.span_bias_ns);
		sessions__end_whole_trace(&t->sessions, exit_status, now, &totals);
	}
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
