// SPDX-License-Identifier: MIT
/*
 * The event loop: ring-buffer events go to the session table (session.c) in
 * order; when a session ends, its slot's totals are read from the per-CPU
 * slot map (slots.c) and handed over with the event, and the slot is freed
 * for the BPF side to reuse.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "khprof.skel.h"
#include "latency.h"
#include "log.h"
#include "slots.h"
#include "tracer_impl.h"

int tracer__read_slot(struct tracer *t, uint32_t slot, struct kh_slot_stats *sum, bool reset)
{
	return slots__read(bpf_map__fd(t->skel->maps.slot_stats), t->ncpus, slot, sum, reset);
}

/*
 * Reads and zeroes a session's slot and its distributions (which the
 * session's record takes over), and lets the BPF side reuse the slot.
 */
static void take_slot(struct tracer *t, uint32_t slot, struct kh_slot_stats *totals)
{
	tracer__read_slot(t, slot, totals, true);
	kh_latency__free(&t->sessions.latency);
	latency__read_slot(t->skel, t->ncpus, slot, t->sessions.cfg.span_bias_ns,
			   &t->sessions.latency);
	if (slot != KH_OUTSIDE_SLOT)
		t->skel->bss->slot_busy[slot] = 0;
}

size_t tracer__records_emitted(const struct tracer *t)
{
	return t->sessions.records_emitted;
}

static int handle_event(void *ctx, void *data, size_t len)
{
	struct tracer *t = ctx;
	const struct kh_event *e = data;
	struct kh_slot_stats totals;

	if (len < sizeof(*e))
		return 0;
	if (e->type == KH_EVENT_LOADER_STATE) {
		tracer__attach_mapped(t);
		if (t->opts.stop_on_loader)
			kill(t->pid, SIGCONT);
		return 0;
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
		t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), handle_event, t, NULL);
		if (!t->rb) {
			log__error("cannot open the event ring buffer: %s", strerror(errno));
			return -errno;
		}
	}
	return ring_buffer__poll(t->rb, timeout_ms);
}

int tracer__epoll_fd(const struct tracer *t)
{
	return t->rb ? ring_buffer__epoll_fd(t->rb) : -1;
}

void tracer__finish(struct tracer *t, int exit_status)
{
	uint64_t now = tracer__now_ns();
	struct kh_slot_stats totals;

	if (t->rb)
		ring_buffer__consume(t->rb);
	for (uint32_t slot = 0; slot < KH_MAX_SLOTS; slot++) {
		if (!sessions__is_open(&t->sessions, slot))
			continue;
		take_slot(t, slot, &totals);
		sessions__end(&t->sessions, slot, exit_status, now, &totals);
	}
	if (sessions__none_seen(&t->sessions) &&
	    tracer__read_slot(t, KH_OUTSIDE_SLOT, &totals, false) == 0) {
		/* Spans but no session probes: one record for the whole trace. */
		kh_latency__free(&t->sessions.latency);
		latency__read_slot(t->skel, t->ncpus, KH_OUTSIDE_SLOT,
				   t->sessions.cfg.span_bias_ns, &t->sessions.latency);
		sessions__end_whole_trace(&t->sessions, exit_status, now, &totals);
	}
}
