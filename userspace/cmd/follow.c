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
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "follow.h"
#include "live_metrics.h"
#include "log.h"

struct followed {
	pid_t pid;
	int pid_fd;
	struct tracer *tracer;
	struct output_state out;
	char path[PATH_MAX];   /* -o PATH with ".PID" before the extension */
	struct followed *next;
};

struct follow {
	const struct trace_cli *cli;
	struct live_metrics *metrics;
	struct tracer_calibration calibration;
	bool calibrated;
	int epoll_fd;
	struct followed *list;
	bool write_failed;
	/*
	 * A tracer opened and loaded ahead of the next fork: loading is most
	 * of the 41-68 ms a child otherwise waits stopped.
	 */
	struct followed *spare;
};

enum tag_kind { TAG_RING, TAG_EXIT };

static uint64_t tag(enum tag_kind kind, struct followed *p)
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
	f->metrics = metrics;
	f->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (f->epoll_fd < 0) {
		log__error("cannot follow forks: epoll_create1 failed: %s", strerror(errno));
		free(f);
		return -errno;
	}
	*out = f;
	return 0;
}

int follow__epoll_fd(const struct follow *f)
{
	return f->epoll_fd;
}

bool follow__write_failed(const struct follow *f)
{
	return f->write_failed;
}

void follow__set_calibration(struct follow *f, struct tracer *first)
{
	tracer__calibration(first, &f->calibration);
	f->calibrated = true;
}

static struct followed *followed_open(struct follow *f);

void follow__prepare(struct follow *f)
{
	if (!f->spare && f->calibrated)
		f->spare = followed_open(f);
}

static void on_fork(pid_t parent, pid_t child, void *ctx);

void follow__configure(struct follow *f, struct trace_options *opts)
{
	opts->follow_forks = true;
	opts->on_fork = on_fork;
	opts->fork_ctx = f;
}

/* Detaching waits for the kernel (tens of ms per link): not in the loop. */
static void *close_tracer(void *t)
{
	tracer__close(t);
	return NULL;
}

static void close_tracer_later(struct tracer *t)
{
	pthread_attr_t attr;
	pthread_t thread;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&thread, &attr, close_tracer, t) != 0)
		tracer__close(t);
	pthread_attr_destroy(&attr);
}

/* A followed process's tracer, opened and loaded, not yet attached. */
static struct followed *followed_open(struct follow *f)
{
	struct trace_options opts = { 0 };
	struct followed *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid_fd = -1;
	trace_options_from(f->cli, NULL, &p->out, &opts);
	p->out.metrics = f->metrics;
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

static void followed_discard(struct followed *p)
{
	tracer__close(p->tracer);
	if (p->pid_fd >= 0)
		close(p->pid_fd);
	free(p);
}

/* The child runs on, stopped or not: its tracer is attached, or it never will be. */
static void attach_child(struct follow *f, pid_t parent, pid_t child)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct followed *p = f->spare ? f->spare : followed_open(f);
	char exe[64];
	int err;

	f->spare = NULL;
	if (!p)
		goto untraced;
	p->pid = child;
	p->pid_fd = (int)syscall(SYS_pidfd_open, child, 0);
	if (p->pid_fd < 0) {
		f->spare = p; /* gone already (killed while stopped) */
		return;
	}
	if (f->cli->output) {
		char suffix[24];

		snprintf(suffix, sizeof(suffix), ".%d", child);
		path_with_tag(f->cli->output, suffix, p->path, sizeof(p->path));
		p->out.path = p->path;
	}
	snprintf(exe, sizeof(exe), "/proc/%d/exe", child);
	err = tracer__attach(p->tracer, child, exe);
	if (!err)
		err = tracer__attach_mapped(p->tracer);
	if (!err)
		err = tracer__poll(p->tracer, 0) < 0 ? -EIO : 0;
	if (err) {
		if (err != -ESRCH)
			log__warn("PID %d forked by PID %d cannot be traced; going on without it",
				  child, parent);
		followed_discard(p);
		goto untraced;
	}
	ev.data.u64 = tag(TAG_RING, p);
	epoll_ctl(f->epoll_fd, EPOLL_CTL_ADD, tracer__epoll_fd(p->tracer), &ev);
	ev.data.u64 = tag(TAG_EXIT, p);
	epoll_ctl(f->epoll_fd, EPOLL_CTL_ADD, p->pid_fd, &ev);
	live_metrics__add_tracer(f->metrics, p->tracer, child);
	p->next = f->list;
	f->list = p;
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

/* One followed process's trace ends: exited, or detached (still running). */
static void followed_end(struct follow *f, struct followed *p, bool exited)
{
	struct followed **link;

	tracer__poll(p->tracer, 0);
	if (!exited)
		tracer__detach(p->tracer);
	tracer__finish(p->tracer, exited ? 1 : -1);
	if (p->out.write_failed)
		f->write_failed = true;
	live_metrics__remove_tracer(f->metrics, p->tracer);
	epoll_ctl(f->epoll_fd, EPOLL_CTL_DEL, tracer__epoll_fd(p->tracer), NULL);
	epoll_ctl(f->epoll_fd, EPOLL_CTL_DEL, p->pid_fd, NULL);
	close(p->pid_fd);
	if (exited)
		close_tracer_later(p->tracer);
	else
		tracer__close(p->tracer);
	for (link = &f->list; *link != p; link = &(*link)->next)
		;
	*link = p->next;
	free(p);
}

void follow__service(struct follow *f)
{
	struct epoll_event events[16];
	int n = epoll_wait(f->epoll_fd, events, 16, 0);

	for (int i = 0; i < n; i++) {
		enum tag_kind kind = (enum tag_kind)(events[i].data.u64 & 1);
		struct followed *p = (struct followed *)(uintptr_t)(events[i].data.u64 & ~1ull);

		if (kind == TAG_RING) {
			tracer__poll(p->tracer, 0);
			continue;
		}
		followed_end(f, p, true);
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
	ev.data.fd = f->epoll_fd;
	epoll_ctl(epoll_fd, EPOLL_CTL_ADD, f->epoll_fd, &ev);
	if (f->list)
		log__debug("the command exited; waiting for the processes it forked");
	while (f->list) {
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
	while (f->list)
		followed_end(f, f->list, false);
}

void follow__close(struct follow *f)
{
	if (!f)
		return;
	while (f->list)
		followed_end(f, f->list, false);
	if (f->spare)
		followed_discard(f->spare);
	close(f->epoll_fd);
	free(f);
}
