// SPDX-License-Identifier: MIT
/* The uprobe registration warmer (warmer.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

#include <bpf/bpf.h>

#include "compat.h"
#include "fileio.h"
#include "log.h"
#include "warmer.h"

/*
 * A grace period was never shorter than 4 ms here, and a writer within one
 * of the previous writer does not wait: one registration per 2 ms keeps the
 * semaphore warm with margin.  The cap ends a helper whose tracer never
 * attaches (~260 ms, against loads of 40-60 ms).
 */
#define WARMER_INTERVAL_MS 2
#define WARMER_MAX_LINKS 128

/* stdin, stdout and stderr to /dev/null: no reader of khprof's output waits for the helper. */
static void quiet_stdio(void)
{
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	for (int fd = 0; fd < 3; fd++)
		dup2(null_fd, fd);
}

/*
 * The helper keeps only what a uprobe-multi link needs (CAP_BPF and
 * CAP_PERFMON, if khprof has them): the raw system call, as libcap is not
 * async-signal-safe.  Failing leaves it with khprof's own set.
 */
static void drop_to_links_only(void)
{
	const int kept[] = { CAP_BPF, CAP_PERFMON };

	process__keep_caps(kept, sizeof(kept) / sizeof(kept[0]));
}

/*
 * The helper, after fork: only async-signal-safe calls (khprof may have
 * threads).  Its links stay until it exits.
 */
static void __attribute__((noreturn)) keep_warm(int prog_fd, const char *path, int stop_fd)
{
	__u64 offset = 0, no_semaphore = 0, cookie = 0;
	struct pollfd stop = { .fd = stop_fd, .events = POLLIN };

	drop_to_links_only();

	for (int n = 0; n < WARMER_MAX_LINKS; n++) {
		if (compat__uprobe_multi_link(prog_fd, path, &offset, &no_semaphore, &cookie, 1, 0) < 0)
			break; /* not on this kernel: nothing to keep warm */
		if (poll(&stop, 1, WARMER_INTERVAL_MS) != 0)
			break; /* khprof has attached (EOF), or is gone */
	}
	_exit(0);
}

void warmer__start(struct warmer *w)
{
	int prog_fd, file_fd = -1, stop[2] = { -1, -1 }, quiet[2] = { -1, -1 };
	char path[64];
	pid_t pid;

	w->stop_fd = w->quiet_fd = -1;
	w->pid = -1;
	/* Its uprobe never fires anyway. */
	prog_fd = compat__empty_prog(BPF_PROG_TYPE_KPROBE, KH_BPF_TRACE_UPROBE_MULTI, 0,
				     "kh_warmer");
	if (prog_fd >= 0)
		file_fd = memfd_create("khprof-warmer", MFD_CLOEXEC);
	if (file_fd < 0 || ftruncate(file_fd, 4096) != 0 || pipe2(stop, O_CLOEXEC) != 0 ||
	    pipe2(quiet, O_CLOEXEC) != 0) {
		log__debug("no uprobe warmer: %s", strerror(errno));
		goto out;
	}
	/* The helper's own /proc/self: the descriptor is inherited with its number. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", file_fd);
	/*
	 * The helper is a grandchild, reparented once its parent exits, so it
	 * is never khprof's to reap.  Nothing here waits for either: on a busy
	 * machine a child may not run for milliseconds, and with a child that
	 * took that time first (fork_quiet's handshake), the helper cost a
	 * start-up more than it saved (median 85 against 77 ms, 15 alternating
	 * runs at load 4).  Both run at nice 19 for the same reason: the helper
	 * wakes every 2 ms while khprof loads.  warmer__stop reaps the parent
	 * and waits until the helper has let go of khprof's descriptors.
	 */
	pid = fork();
	if (pid == 0) {
		setpriority(PRIO_PROCESS, 0, 19);
		if (fork() != 0)
			_exit(0);
		quiet_stdio();
		/* quiet[1] too: EOF for khprof */
		process__close_all_but((const int[]){ prog_fd, file_fd, stop[0] }, 3);
		keep_warm(prog_fd, path, stop[0]);
	}
	if (pid < 0) {
		log__debug("no uprobe warmer: fork: %s", strerror(errno));
		goto out;
	}
	w->pid = pid;
	w->stop_fd = stop[1];
	w->quiet_fd = quiet[0];
	stop[1] = quiet[0] = -1;
out:
	for (int i = 0; i < 2; i++) {
		if (stop[i] >= 0)
			close(stop[i]);
		if (quiet[i] >= 0)
			close(quiet[i]);
	}
	if (file_fd >= 0)
		close(file_fd);
	if (prog_fd >= 0)
		close(prog_fd);
}

void warmer__stop(struct warmer *w)
{
	char c;

	if (w->stop_fd >= 0)
		close(w->stop_fd);
	w->stop_fd = -1;
	/* EOF once the helper holds none of khprof's descriptors (long since, as a rule). */
	if (w->quiet_fd >= 0)
		while (read(w->quiet_fd, &c, 1) < 0 && errno == EINTR)
			;
	if (w->quiet_fd >= 0)
		close(w->quiet_fd);
	w->quiet_fd = -1;
	/* The helper's parent, which exits as soon as it has forked the helper. */
	if (w->pid > 0)
		while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
			;
	w->pid = -1;
}
