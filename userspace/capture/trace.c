// SPDX-License-Identifier: MIT
/*
 * The event loop: every ring-buffer event goes through one switch
 * (handle_event) in order, to the session table (session.c), the buffer
 * counts (drain.c) or the process's attach (process.c, attach.c); when a
 * session ends, its slot's totals and distributions, with what khprof
 * counted itself from the buffers of threads that ended (collect.c), are
 * handed over with the event, and the slot is freed for the BPF side to
 * reuse.
 * Also the --interval samples between polls, the end and the detach.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "khprof.skel.h"
#include "log.h"
#include "misses.h"
#include "sampler.h"
#include "stops.h"
#include "tracer_impl.h"

/*
 * Events first, so that transitions and finished sessions are in before
 * the sample.  Reading one slot costs one map lookup over the CPUs and two
 * /proc reads (docs/PERFORMANCE.md).
 */
static void sample(struct tracer *t, uint64_t now)
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

uint64_t tracer__sample_due(struct tracer *t, uint64_t now, uint64_t wake)
{
	uint64_t next = sessions__next_sample_ns(&t->sessions);

	if (next && now >= next) {
		sample(t, now);
		next = sessions__next_sample_ns(&t->sessions);
	}
	return next && (!wake || next < wake) ? next : wake;
}

int tracer__wait_ms(uint64_t now, uint64_t wake, uint64_t deadline_ns)
{
	if (deadline_ns && (!wake || deadline_ns < wake))
		wake = deadline_ns;
	if (!wake)
		return -1;
	return wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
}

bool tracer__execed(const struct tracer *t)
{
	return t->sessions.end == SESSION_END_EXEC;
}

size_t tracer__records_emitted(const struct tracer *t)
{
	return t->sessions.records_emitted;
}

static void end_sessions(struct tracer *t, int exit_status, uint64_t now);

/* The keeper let a stop of this process, or of a child, go before khprof came to it. */
static void stop_let_go(struct tracer *t)
{
	sessions__note_let_go(&t->sessions);
}

/*
 * A forked child gets its probe sites' original bytes back before it runs
 * (sites.h), followed or not, and even after the traced image's execve:
 * the new image's uprobes are khprof's too.
 */
static void make_child_safe(struct tracer *t, pid_t parent, pid_t child)
{
	uint64_t begin = tracer__now_ns();
	int restored = stops__make_safe(t->opts.stops, child);

	if (restored < 0 && restored != -ESRCH)
		log__warn("PID %d forked by PID %d may crash at a probe site: cannot put its probe "
			  "sites back: %s", child, parent, strerror(-restored));
	else if (restored >= 0)
		log__debug("PID %d forked by PID %d: %d probe sites put back in %.3f ms", child,
			   parent, restored, (double)(tracer__now_ns() - begin) / 1e6);
}

/*
 * A process the traced one forked (or vforked and exec'd), stopped: made
 * safe, followed if asked (not after an execve of the traced image: the
 * new image is not traced, and neither are its children), let go.
 */
static void fork_stopped(struct tracer *t, const struct kh_event *e)
{
	struct kh_stop_key stop;
	pid_t child;

	/* The BPF side names it by the kernel's pid, the stop by khprof's (stops.h). */
	if (!t->opts.stops || !stops__of_event(e, (pid_t)e->arg0, &stop))
		return;
	if (!stops__take_up(t->opts.stops, &stop, &child)) {
		stop_let_go(t);
		return;
	}
	t->children_stopped++;
	if (stop.kind == KH_STOP_FORK)
		make_child_safe(t, t->pid, child);
	if (t->opts.on_fork && !t->ended)
		t->opts.on_fork(t->pid, child, t->opts.fork_ctx);
	if (!stops__release(t->opts.stops, &stop))
		stop_let_go(t);
}

/*
 * The traced process sent itself SIGSTOP.  A wrapper that waits for its
 * child with WUNTRACED (util-linux's nsenter) stops itself when the child
 * does, for a job-control shell to resume: after a stop of khprof's own
 * in a child, khprof resumes it (its SIGSTOP is dropped if still pending).
 * Another self-stop is left to whoever expects it.  The BPF side keeps
 * either as a stop (KH_STOP_SELF), so that the keeper resumes the wrapper
 * if khprof cannot; khprof forgets the ones it leaves.
 */
static void stopped_itself(struct tracer *t, const struct kh_event *e)
{
	struct kh_stop_key stop;
	pid_t self;

	if (!t->opts.stops || !stops__of_event(e, (pid_t)e->pid, &stop)) {
		if (!t->children_stopped)
			return;
		if (t->opts.on_self_stop)
			t->opts.on_self_stop(t->opts.fork_ctx);
		kill(t->pid, SIGCONT); /* not kept (the table was full): resumed all the same */
		return;
	}
	if (!stops__take_up(t->opts.stops, &stop, &self))
		return; /* the keeper resumed it already */
	if (!t->children_stopped) {
		stops__forget(t->opts.stops, &stop);
		return;
	}
	if (t->opts.on_self_stop) /* the child's own stop answered first (trace.h) */
		t->opts.on_self_stop(t->opts.fork_ctx);
	log__debug("PID %d stopped itself as a child it waits for stopped for khprof: resumed",
		   t->pid);
	stops__release(t->opts.stops, &stop);
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

/*
 * The dynamic loader mapped objects: their probes are attached before
 * their code runs, the process stopped meanwhile when khprof is its parent.
 */
static void loader_stopped(struct tracer *t, const struct kh_event *e)
{
	struct kh_stop_key stop;
	bool stopped = t->opts.stops && stops__of_event(e, (pid_t)e->pid, &stop);
	pid_t local = 0;

	if (stopped && !stops__take_up(t->opts.stops, &stop, &local)) {
		/* Let go untraced: a new process is not attached; a library is, late. */
		stop_let_go(t);
		if (t->on_start)
			return;
		stopped = false;
	}
	if (t->on_start) {
		/*
		 * A watcher's hook is a file's start or an execve, not the
		 * loader (process.c); an execve's event names the file.
		 */
		struct tracer_file_key file = { e->arg1, (uint32_t)(e->arg0 >> 32),
						(uint32_t)e->arg0 };

		if (!stopped)
			local = pid_map__local(t, (pid_t)e->pid);
		/* Not in khprof's namespace: never stopped (stops.bpf.h), nothing to trace. */
		if (local)
			t->on_start(local, e->arg1 ? &file : NULL, stopped ? &stop : NULL,
				    t->start_ctx);
		return;
	}
	/* After an execve the new image is not traced, but must not stay stopped. */
	if (image_event(t))
		tracer__attach_mapped(t);
	if (stopped && !stops__release(t->opts.stops, &stop))
		stop_let_go(t);
}

/* The old image's records end here; the new image is not traced. */
static void image_execed(struct tracer *t, const struct kh_event *e)
{
	log__note("PID %d ran execve: its records end there and the new program is "
		  "not traced (docs/PROBES.md)", t->pid);
	sessions__process_execed(&t->sessions);
	tracer__note_misses(t);
	end_sessions(t, 0, e->ts_ns);
	t->ended = true;
}

/*
 * An identity probe the BPF side could not read, the process stopped at it
 * (bpf/khprof.bpf.c's on_identity): its strings are read from the process
 * while it waits, then it runs on, whatever came of the read.  Closing,
 * it is only resumed.
 */
static void identity_stopped(struct tracer *t, const struct kh_event *e)
{
	struct kh_stop_key stop;
	bool stopped = t->opts.stops && stops__of_event(e, (pid_t)e->pid, &stop);
	pid_t local;

	/* The keeper let it go first (khprof was too slow): read late, as unstopped. */
	if (stopped && !stops__take_up(t->opts.stops, &stop, &local))
		stopped = false;
	if (!t->closing && image_event(t))
		sessions__identity(&t->sessions, e);
	if (stopped && !stops__release(t->opts.stops, &stop))
		stop_let_go(t);
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

/*
 * A batch that took the slot before its session ended may still be adding
 * to it on another CPU (bpf/batch.bpf.h, slot_inflight): microseconds, or
 * as long as its thread is preempted inside the program.  Its spans are
 * the session's, so the slot is read once it is done.
 */
static void slot_wait_quiet(struct tracer *t, uint32_t slot)
{
	const __u32 *inflight = &t->skel->bss->slot_inflight[slot];
	uint64_t deadline = tracer__now_ns() + 1000000000ull;

	while (__atomic_load_n(inflight, __ATOMIC_ACQUIRE)) {
		if (tracer__now_ns() > deadline) {
			log__warn("a batch was still being counted into session slot %u after 1 s: "
				  "its spans may be missing from the record", slot);
			return;
		}
		sched_yield();
	}
}

/* The session ends: its record takes the slot's totals and distributions. */
static void session_finished(struct tracer *t, const struct kh_event *e)
{
	struct kh_slot_stats totals;
	struct kh_latency latency;

	slot_wait_quiet(t, sessions__slot_of(e));
	tracer__collect_slot(t, sessions__slot_of(e), true, &totals, &latency);
	tracer__note_misses(t);
	sessions__finish(&t->sessions, e, &totals, &latency);
}

/* Closing: a process stopped at the loader is let go, nothing attached. */
static void let_loader_stop_go(struct tracer *t, const struct kh_event *e)
{
	struct kh_stop_key stop;

	pid_t local;

	if (t->opts.stops && stops__of_event(e, (pid_t)e->pid, &stop) &&
	    stops__take_up(t->opts.stops, &stop, &local))
		stops__release(t->opts.stops, &stop);
}

/*
 * Every event of the events and control rings, in order: the one place an
 * event's type is dispatched (bcc's and retsnoop's handle_event).  Closing
 * (attach__stop_watching_forks), only stops are still answered.
 */
static int handle_event(void *ctx, void *data, size_t len)
{
	struct tracer *t = ctx;
	const struct kh_event *e = data;

	if (len < sizeof(*e))
		return 0;
	if (t->closing && e->type == KH_EVENT_LOADER_STATE)
		let_loader_stop_go(t, e);
	if (t->closing && e->type != KH_EVENT_FORK && e->type != KH_EVENT_SELF_STOP &&
	    e->type != KH_EVENT_IDENTITY_STOPPED)
		return 0;
	switch (e->type) {
	case KH_EVENT_FORK:
		fork_stopped(t, e);
		break;
	case KH_EVENT_SELF_STOP:
		stopped_itself(t, e);
		break;
	case KH_EVENT_LOADER_STATE:
		loader_stopped(t, e);
		break;
	case KH_EVENT_THREAD_BUFFER:
		if (!t->ended && len >= sizeof(struct kh_buffer_event))
			drain__thread_ended(t, data);
		break;
	case KH_EVENT_PROCESS_EXIT:
		if (!image_event(t))
			break;
		sessions__note_end_sample(&t->sessions, e);
		sessions__process_ended(&t->sessions, (int)e->arg0);
		break;
	case KH_EVENT_EXEC:
		if (!image_event(t))
			break;
		sessions__note_end_sample(&t->sessions, e);
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
	case KH_EVENT_IDENTITY_STOPPED:
		identity_stopped(t, e);
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
	int n;

	/*
	 * Called again from one of its own events' callbacks (on_self_stop,
	 * on_fork), libbpf would hand it the event being handled a second
	 * time: its consumer position moves only after the callback.
	 */
	if (t->polling)
		return 0;
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
	t->polling = true;
	n = ring_buffer__poll(t->rb, timeout_ms);
	t->polling = false;
	return n;
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
		slot_wait_quiet(t, slot);
		tracer__collect_slot(t, slot, true, &totals, &latency);
		sessions__end(&t->sessions, slot, exit_status, now, &totals, &latency);
	}
	/* Spans but no session probes: one record for the whole trace. */
	if (sessions__none_seen(&t->sessions) &&
	    tracer__collect_slot(t, KH_OUTSIDE_SLOT, false, &totals, &latency) == 0)
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
	if (exit_status >= 0 && !t->detached)
		drain__process_ended(t);
	else
		drain__say_unread(t, 0);
	tracer__note_misses(t);
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
