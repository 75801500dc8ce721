// SPDX-License-Identifier: MIT
/*
 * record --follow-forks.  The BPF side (bpf/follow.bpf.h) stops every new
 * process the traced one forks before it runs a user instruction and sends
 * its pid; here a tracer of its own is attached to it (uprobe-multi links
 * filter by process) and it is resumed.  A child is a copy of its parent:
 * it may be inside a session the parent had open, which its tracer joins
 * as attach -p does (its record starts at the attach, "partial"); spans
 * its parent had buffered before the fork are the parent's, and end before
 * the child's record starts.  Followed processes follow their own forks.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "follow.h"
#include "log.h"
#include "process_trace.h"

struct follow {
	const struct trace_cli *cli;
	struct tracer_calibration calibration;
	bool calibrated;
	struct process_set set; /* the followed processes, in set.epoll_fd */
	/*
	 * A tracer opened and loaded ahead of the next fork: loading is most
	 * of the 41-68 ms a child otherwise waits stopped.
	 */
	struct process_trace *spare;
};

enum tag_kind { TAG_RING, TAG_EXIT };

static uint64_t tag(enum tag_kind kind, struct process_trace *p)
{
	return (uint64_t)(uintptr_t)p | kind; /* malloc'd: the low bits are free */
}

int follow__open(struct follow **out, const struct trace_cli *cli, struct live_metrics *metrics)
{
	struct follow *f = calloc(1, sizeof(*f));

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->cli = cli;
	f->set.metrics = metrics;
	f->set.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (f->set.epoll_fd < 0) {
		log__error("cannot follow forks: epoll_create1 failed: %s", strerror(errno));
		free(f);
		return -errno;
	}
	*out = f;
	return 0;
}

int follow__epoll_fd(const struct follow *f)
{
	return f->set.epoll_fd;
}

bool follow__write_failed(const struct follow *f)
{
	return f->set.write_failed;
}

size_t follow__records(const struct follow *f)
{
	return f->set.records;
}

void follow__set_calibration(struct follow *f, struct tracer *first)
{
	tracer__calibration(first, &f->calibration);
	f->calibrated = true;
}

static struct process_trace *followed_open(struct follow *f);

void follow__prepare(struct follow *f)
{
	if (!f->spare && f->calibrated)
		f->spare = followed_open(f);
}

static void on_fork(pid_t parent, pid_t child, void *ctx);
static void on_self_stop(void *ctx);

void follow__configure(struct follow *f, struct trace_options *opts)
{
	opts->follow_forks = true;
	opts->on_fork = on_fork;
	opts->on_self_stop = on_self_stop;
	opts->fork_ctx = f;
}

/* A followed process's tracer, opened and loaded, not yet attached. */
static struct process_trace *followed_open(struct follow *f)
{
	struct trace_options opts = { 0 };
	struct process_trace *p = process_trace__new();

	if (!p)
		return NULL;
	trace_options_from(f->cli, NULL, &p->out, &opts);
	p->out.metrics = f->set.metrics;
	/* The series needs the event loop's timer, which samples the first process only. */
	opts.interval_ns = 0;
	opts.on_interval = NULL;
	opts.stop_on_loader = true; /* a dlopen in the child stops it as in the first */
	opts.joins_running_process = true;
	opts.calibration = f->calibrated ? &f->calibration : NULL;
	follow__configure(f, &opts);
	if (tracer__open(&p->tracer, &opts) != 0) {
		free(p);
		return NULL;
	}
	return p;
}

/* The child runs on, stopped or not: its tracer is attached, or it never will be. */
static void attach_child(struct follow *f, pid_t parent, pid_t child)
{
	struct process_trace *p = f->spare ? f->spare : followed_open(f);
	int err;

	f->spare = NULL;
	if (!p)
		goto untraced;
	err = process_set__attach(&f->set, p, child, f->cli->output, tag(TAG_RING, p),
				  tag(TAG_EXIT, p));
	if (err == -ECHILD) {
		f->spare = p; /* gone already (killed while stopped) */
		return;
	}
	if (err) {
		if (err != -ESRCH)
			log__warn("PID %d forked by PID %d cannot be traced; going on without it",
				  child, parent);
		process_trace__discard(p);
		goto untraced;
	}
	log__debug("following PID %d, forked by PID %d", child, parent);
untraced:
	kill(child, SIGCONT);
}

static void on_fork(pid_t parent, pid_t child, void *ctx)
{
	uint64_t begin = tracer__now_ns();

	struct follow *f = ctx;

	attach_child(f, parent, child);
	log__debug("following PID %d took %.1f ms", child,
		   (double)(tracer__now_ns() - begin) / 1e6);
	/* The next fork's tracer, loaded while this child runs. */
	follow__prepare(f);
}

/*
 * A traced process stopped itself as a child it waits for stopped
 * (nsenter) and is about to be resumed, whereupon it resumes the child at
 * once: every followed process's pending events are handled first, so
 * that a child khprof stopped at its execve or in its loader is attached
 * and resumed by its own tracer (trace.c, stopped_itself).  epoll's order
 * does not ensure it: with khprof busy (loading the next fork's tracer),
 * the parent's event and the child's come in one batch, the parent's
 * often first, and the child ran untraced: no record.  A tracer polling
 * further up the stack is skipped (tracer__poll).
 */
static void on_self_stop(void *ctx)
{
	struct follow *f = ctx;

	for (struct process_trace *p = f->set.list; p; p = p->next)
		tracer__poll(p->tracer, 0);
}

void follow__service(struct follow *f)
{
	struct epoll_event events[16];
	int n = epoll_wait(f->set.epoll_fd, events, 16, 0);

	for (int i = 0; i < n; i++) {
		enum tag_kind kind = (enum tag_kind)(events[i].data.u64 & 1);
		struct process_trace *p =
			(struct process_trace *)(uintptr_t)(events[i].data.u64 & ~1ull);

		if (kind == TAG_RING) {
			tracer__poll(p->tracer, 0);
			continue;
		}
		process_set__end(&f->set, p, true);
		return; /* later events of this batch may name p: epoll says again */
	}
}

void follow__wait(struct follow *f, int signal_fd)
{
	int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };

	if (epoll_fd < 0)
		goto detach;
	ev.data.fd = signal_fd;
	epoll_ctl(epoll_fd, EPOLL_CTL_ADD, signal_fd, &ev);
	ev.data.fd = f->set.epoll_fd;
	epoll_ctl(epoll_fd, EPOLL_CTL_ADD, f->set.epoll_fd, &ev);
	if (f->set.list)
		log__debug("the command exited; waiting for the processes it forked");
	while (f->set.list) {
		struct epoll_event got;
		int n = epoll_wait(epoll_fd, &got, 1, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (got.data.fd == signal_fd) {
			struct signalfd_siginfo si;

			if (read(signal_fd, &si, sizeof(si)) < 0)
				log__debug("cannot read the signal: %s", strerror(errno));
			break;
		}
		follow__service(f);
	}
	close(epoll_fd);
detach:
	while (f->set.list)
		process_set__end(&f->set, f->set.list, false);
}

void follow__close(struct follow *f)
{
	if (!f)
		return;
	while (f->set.list)
		process_set__end(&f->set, f->set.list, false);
	if (f->spare)
		process_trace__discard(f->spare);
	close(f->set.epoll_fd);
	free(f);
}
