// SPDX-License-Identifier: MIT
/*
 * The stop keeper (stops.h): khprof's binary started again as
 * khprof-keeper by stops__open, once per command.  It sleeps in epoll on
 * four things: the notes ring (a BPF program stopped a process), a timer
 * (the oldest stop reaches the limit), khprof's pidfd (khprof has ended,
 * however) and a pipe khprof writes to as it ends in order (stops__close:
 * it waits for the keeper, which then holds none of its output open).  It lets a process go only by taking the stop's entry from the
 * table (stops__end), so it never ends a stop khprof has ended, nor
 * khprof one it has.
 *
 * Its cost, measured here (docs/PROBES.md, "When khprof cannot let go"):
 * one exec at khprof's start (about 1 ms of CPU), off khprof's path, and
 * about 8 us of CPU a stop: a wake-up to read the note, and a map
 * deletion when the stop's limit comes (one wake-up per 10 ms of them).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fileio.h"
#include "log.h"
#include "sites.h"
#include "stops.h"
#include "trace.h"

#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* Deadlines are rounded up to this: one wake-up serves every stop due within it. */
#define KEEPER_SLACK_NS 10000000ull

struct keeper {
	int table_fd;
	int notes_fd;
	int khprof_fd;      /* khprof's pidfd */
	int quit_fd;        /* readable: khprof is ending in order */
	pid_t khprof;
	int timer_fd;
	uint64_t limit_ns;  /* 0: stops wait for khprof's end only */
	struct site_table *sites;
	/* Stops noted, oldest first: each is let go at its stamp + limit unless ended before. */
	struct kh_stop_key *queue;
	size_t head, tail, cap;
	size_t let_go;      /* at the limit, while khprof lived */
	int hook_fd;        /* KHPROF_TEST_KEEPER_HOOK (stops.c), or -1 */
};

static int on_note(void *ctx, void *data, size_t len)
{
	struct keeper *k = ctx;
	const struct kh_stop *note = data;

	if (len < sizeof(*note) || !k->limit_ns)
		return 0;
	if (k->head > 0 && k->tail == k->cap) {
		memmove(k->queue, k->queue + k->head, (k->tail - k->head) * sizeof(*k->queue));
		k->tail -= k->head;
		k->head = 0;
	}
	if (k->tail == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 256;
		struct kh_stop_key *grown = realloc(k->queue, cap * sizeof(*grown));

		/* Without room the stop is still let go when khprof ends. */
		if (!grown)
			return 0;
		k->queue = grown;
		k->cap = cap;
	}
	k->queue[k->tail++] = note->key;
	return 0;
}

static bool ended_by_keeper(enum stop_end end)
{
	return end == STOP_ENDED || end == STOP_HANDED_OVER;
}

/*
 * Test hook: "limit PID KIND" when a stop reaches its limit, and the test
 * answers y (let it go now) or n (leave it to khprof, or to khprof's end):
 * a test lets go exactly the stop it chose, while khprof is frozen at the
 * step it chose, however long khprof took to get there.  Then "ended PID
 * HOW" (how: stop_end_name), which needs no answer.
 */
static bool test_allows(struct keeper *k, const struct kh_stop_key *key)
{
	char line[64], answer = 'y';
	int len;

	if (k->hook_fd < 0)
		return true;
	len = snprintf(line, sizeof(line), "limit %u %s\n", key->tgid, stops__kind_name(key->kind));
	if (write(k->hook_fd, line, (size_t)len) != len || read(k->hook_fd, &answer, 1) != 1) {
		close(k->hook_fd);
		k->hook_fd = -1;
	}
	return answer == 'y';
}

/* Lets go every noted stop whose limit has come, then sets the timer for the next. */
static void let_go_due(struct keeper *k)
{
	uint64_t now = tracer__now_ns();
	struct itimerspec next = { 0 };
	struct kh_stop held;

	/*
	 * Stops khprof ended already leave the queue as soon as they reach its
	 * head, not at their limit: with a long limit and many stops the queue
	 * holds only what is still stopped (one lookup a wake-up, as a rule).
	 */
	while (k->head < k->tail &&
	       bpf_map_lookup_elem(k->table_fd, &k->queue[k->head], &held) != 0)
		k->head++;
	while (k->head < k->tail && k->queue[k->head].stamp_ns + k->limit_ns <= now) {
		const struct kh_stop_key *key = &k->queue[k->head++];
		enum stop_end end;

		if (!test_allows(k, key))
			continue;
		end = stops__end(k->table_fd, key, true, k->sites);
		if (ended_by_keeper(end))
			k->let_go++;
		if (k->hook_fd >= 0)
			dprintf(k->hook_fd, "ended %u %s\n", key->tgid, stops__end_name(end));
	}
	if (k->head < k->tail) {
		uint64_t at = k->queue[k->head].stamp_ns + k->limit_ns;

		at = (at + KEEPER_SLACK_NS - 1) / KEEPER_SLACK_NS * KEEPER_SLACK_NS;
		next.it_value.tv_sec = (time_t)(at / 1000000000u);
		next.it_value.tv_nsec = (long)(at % 1000000000u);
	}
	timerfd_settime(k->timer_fd, TFD_TIMER_ABSTIME, &next, NULL);
}

/* khprof has ended: every stop still in the table is let go, then the keeper exits. */
static size_t let_go_all(struct keeper *k)
{
	struct kh_stop_key key, last = { 0 };
	size_t count = 0, tries = 0;

	while (tries++ < 2 * KH_STOPS_MAX && bpf_map_get_next_key(k->table_fd, NULL, &key) == 0) {
		if (ended_by_keeper(stops__end(k->table_fd, &key, true, k->sites)))
			count++;
		else if (!memcmp(&key, &last, sizeof(key)))
			bpf_map_delete_elem(k->table_fd, &key); /* cannot be taken: do not loop on it */
		last = key;
	}
	return count;
}

/*
 * What the keeper keeps of root's: signalling other users' processes
 * (CAP_KILL), writing a forked child's text and reading its maps
 * (CAP_SYS_PTRACE), the table's map operations on kernels that want
 * CAP_BPF for them; the anchor keeps nothing.  No new privileges either.
 */
static void keep_only(const int *kept, size_t count)
{
	process__keep_caps(kept, count);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/*
 * Out of the way of what ends khprof: the terminal's and a job's signals
 * are ignored (SIGKILL alone is not; the kernel's OOM killer is told to
 * pick anything else).  Nothing of khprof's stays open but stderr, for
 * one line if khprof ends holding stops, and what the keeper needs.
 */
static void step_aside(const int *keep, size_t keep_count)
{
	static const int ignored[] = { SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGHUP,
				       SIGTERM, SIGPIPE, SIGUSR1, SIGUSR2 };
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC), adj;
	sigset_t none;

	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (null_fd >= 0) {
		dup2(null_fd, STDIN_FILENO);
		dup2(null_fd, STDOUT_FILENO);
		close(null_fd);
	}
	process__close_all_but(keep, keep_count);
	if (chdir("/") != 0) {
		/* A keeper in a removed directory still works. */
	}
	prctl(PR_SET_NAME, STOPS_KEEPER_NAME, 0, 0, 0);
	adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (adj >= 0) {
		if (write(adj, "-1000", 5) != 5) {
			/* Without CAP_SYS_RESOURCE: it is tiny, and rarely the one picked. */
		}
		close(adj);
	}
}

/*
 * The anchor.  A process group whose last tie to its session goes (no
 * member left with a parent in another group of the session) while one
 * of its members is stopped is an orphaned group, and the kernel sends
 * every member SIGHUP, then SIGCONT (POSIX job control): the stopped
 * command khprof records, and its children, die of it.  The tie is often
 * khprof itself (a shell's job), or a parent that ends when it does
 * (timeout, sudo): measured here, a child stopped at its fork died of
 * SIGHUP in 3 of 4 kills of khprof under timeout.  So under record
 * (group: khprof's) the keeper joins khprof's group, and its own parent,
 * the anchor, sits in a group of its own in the same session: the keeper
 * is a tie as long as it lives, and it lets every stop go before it
 * exits.  Under attach (group 0) the processes stopped are in groups of
 * their own, and the keeper stays in the anchor's, out of the way of a
 * kill aimed at khprof's.  The anchor holds nothing and waits.  Returns
 * in the keeper; the anchor exits when the keeper does.
 */
static void anchor(pid_t group)
{
	pid_t keeper;

	if (setpgid(0, 0) != 0)
		return; /* a session leader already: no group to hold */
	keeper = fork();
	if (keeper < 0)
		return; /* the anchor keeps, from a group of its own */
	if (keeper == 0) {
		/* Failing (khprof's group is gone), the keeper stays in the anchor's. */
		if (group > 0)
			setpgid(0, group);
		return;
	}
	process__close_all_but(NULL, 0);
	dup2(STDIN_FILENO, STDERR_FILENO);
	keep_only(NULL, 0);
	while (waitpid(keeper, NULL, 0) < 0 && errno == EINTR)
		;
	_exit(0);
}

static int parse_fd(const char *text, int *fd)
{
	char *end;
	long v = strtol(text, &end, 10);

	if (*end || v < 0 || v > 1 << 20)
		return -1;
	*fd = (int)v;
	return 0;
}

int stops__keeper_main(int argc, char **argv)
{
	static const int kept_caps[] = { CAP_KILL, CAP_SYS_PTRACE, CAP_BPF };
	struct keeper k = { .timer_fd = -1, .hook_fd = -1, .quit_fd = -1 };
	struct ring_buffer *rb = NULL;
	struct epoll_event ev = { .events = EPOLLIN };
	int sites_fd, epoll_fd, khprof_pid, group;
	unsigned long long limit;
	size_t at_end;
	char *end;

	/* khprof-keeper TABLE NOTES SITES KHPROF_PIDFD KHPROF_PID LIMIT_NS KHPROF_PGRP HOOK QUIT */
	if (argc != 10 || parse_fd(argv[9], &k.quit_fd) || parse_fd(argv[1], &k.table_fd) || parse_fd(argv[2], &k.notes_fd) ||
	    parse_fd(argv[3], &sites_fd) || parse_fd(argv[4], &k.khprof_fd) ||
	    parse_fd(argv[5], &khprof_pid) || parse_fd(argv[7], &group)) {
		log__error("'%s' is started by khprof, not by hand", STOPS_KEEPER_NAME);
		return 2;
	}
	k.khprof = (pid_t)khprof_pid;
	limit = strtoull(argv[6], &end, 10);
	k.limit_ns = *end ? 0 : limit;
	if (strcmp(argv[8], "-1") && parse_fd(argv[8], &k.hook_fd))
		k.hook_fd = -1;
	{
		const int keep[] = { k.table_fd, k.notes_fd, sites_fd, k.khprof_fd, k.hook_fd,
				     k.quit_fd };

		step_aside(keep, 6);
		anchor((pid_t)group);
	}
	keep_only(kept_caps, sizeof(kept_caps) / sizeof(kept_caps[0]));
	if (sites__map(&k.sites, sites_fd))
		k.sites = NULL; /* forked children are let go without being made safe */
	close(sites_fd);
	libbpf_set_print(NULL);
	rb = ring_buffer__new(k.notes_fd, on_note, &k, NULL);
	k.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (epoll_fd >= 0) {
		ev.data.fd = k.khprof_fd;
		epoll_ctl(epoll_fd, EPOLL_CTL_ADD, k.khprof_fd, &ev);
		ev.data.fd = k.quit_fd;
		epoll_ctl(epoll_fd, EPOLL_CTL_ADD, k.quit_fd, &ev);
		if (rb) {
			ev.data.fd = ring_buffer__epoll_fd(rb);
			epoll_ctl(epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
		}
		if (k.timer_fd >= 0) {
			ev.data.fd = k.timer_fd;
			epoll_ctl(epoll_fd, EPOLL_CTL_ADD, k.timer_fd, &ev);
		}
	}
	/*
	 * Without its ring or timer it still does its first duty, on khprof's
	 * end; without epoll it waits for that end in poll.
	 */
	for (bool ended = false; !ended;) {
		struct epoll_event got[4];
		int n = epoll_fd >= 0 ? epoll_wait(epoll_fd, got, 4, -1) : -1;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			struct pollfd p = { .fd = k.khprof_fd, .events = POLLIN };

			while (poll(&p, 1, -1) < 0 && errno == EINTR)
				;
			break;
		}
		for (int i = 0; i < n; i++) {
			if (got[i].data.fd == k.khprof_fd || got[i].data.fd == k.quit_fd) {
				ended = true;
			} else if (got[i].data.fd == k.timer_fd) {
				uint64_t expirations;

				if (read(k.timer_fd, &expirations, sizeof(expirations)) < 0) {
					/* Spurious: the queue is looked at anyway. */
				}
			}
		}
		if (rb)
			ring_buffer__consume(rb);
		if (!ended && k.timer_fd >= 0)
			let_go_due(&k);
	}
	if (rb)
		ring_buffer__consume(rb);
	at_end = let_go_all(&k);
	if (at_end)
		log__warn("khprof (PID %d) ended while %zu process%s waited stopped for it: its "
			  "stop keeper let %s go untraced (docs/PROBES.md)", (int)k.khprof, at_end,
			  at_end == 1 ? "" : "es", at_end == 1 ? "it" : "them");
	ring_buffer__free(rb);
	sites__unmap(k.sites);
	free(k.queue);
	return 0;
}
