// SPDX-License-Identifier: MIT
/* One tracer per process, shared by attach --exe and record --follow-forks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "live_metrics.h"
#include "process_trace.h"

struct process_trace *process_trace__new(void)
{
	struct process_trace *p = calloc(1, sizeof(*p));

	if (p)
		p->pid_fd = -1;
	return p;
}

void process_trace__discard(struct process_trace *p)
{
	tracer__close(p->tracer);
	if (p->pid_fd >= 0)
		close(p->pid_fd);
	free(p);
}

int process_set__attach(struct process_set *s, struct process_trace *p, pid_t pid,
			const char *output, uint64_t ring_tag, uint64_t exit_tag)
{
	struct epoll_event ev = { .events = EPOLLIN };
	char exe[64];
	int err;

	p->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pid_fd < 0)
		return -ECHILD;
	p->pid = pid;
	if (output) {
		char tag[24];

		snprintf(tag, sizeof(tag), ".%d", pid);
		path_with_tag(output, tag, p->path, sizeof(p->path));
		p->out.path = p->path;
	}
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	err = tracer__attach(p->tracer, pid, exe);
	if (!err)
		err = tracer__attach_mapped(p->tracer);
	if (!err)
		err = tracer__poll(p->tracer, 0) < 0 ? -EIO : 0;
	if (err)
		return err;
	ev.data.u64 = ring_tag;
	epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, tracer__epoll_fd(p->tracer), &ev);
	ev.data.u64 = exit_tag;
	epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, p->pid_fd, &ev);
	live_metrics__add_tracer(s->metrics, p->tracer, pid);
	p->next = s->list;
	s->list = p;
	return 0;
}

void process_set__end(struct process_set *s, struct process_trace *p, bool exited)
{
	struct process_trace **link;

	tracer__poll(p->tracer, 0);
	if (!exited)
		tracer__detach(p->tracer);
	tracer__finish(p->tracer, exited ? 1 : -1);
	output__end(&p->out);
	if (p->out.write_failed)
		s->write_failed = true;
	if (p->out.path)
		s->records += p->out.records;
	live_metrics__remove_tracer(s->metrics, p->tracer);
	epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, tracer__epoll_fd(p->tracer), NULL);
	epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, p->pid_fd, NULL);
	close(p->pid_fd);
	if (exited)
		tracer__close_later(p->tracer);
	else
		tracer__close(p->tracer);
	for (link = &s->list; *link != p; link = &(*link)->next)
		;
	*link = p->next;
	free(p);
}

struct process_trace *process_set__find(const struct process_set *s, pid_t pid)
{
	for (struct process_trace *p = s->list; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}
