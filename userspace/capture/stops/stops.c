// SPDX-License-Identifier: MIT
/*
 * The stops of one command (stops.h): the table and notes every tracer's
 * programs share, the keeper's start, how a stop ends, and the test hook.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "procfs.h"
#include "sites.h"
#include "stops.h"

struct stops {
	int table_fd;  /* kh_stops */
	int notes_fd;  /* kh_stop_notes */
	int sites_fd;  /* the site table's memfd */
	struct site_table *sites;
	pid_t keeper;
	int keeper_fd; /* the keeper's pidfd: readable if it is gone */
	bool keeper_gone_said;
	uint64_t limit_ns;
	size_t let_go;
	int hook_fd;   /* KHPROF_TEST_STOP_HOOK, or -1 */
};

static int pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/*
 * The keeper's child side of clone(CLONE_VM | CLONE_VFORK), as
 * posix_spawn's: it shares khprof's memory until the exec, so it only
 * clears close-on-exec on what the keeper keeps, restores the signal mask
 * and execs; a failure is left in err for khprof.
 */
struct spawn {
	char **argv;
	const int *keep;
	size_t keep_count;
	sigset_t mask;
	int err;
};

static int spawn_keeper(void *arg)
{
	struct spawn *sp = arg;

	for (size_t i = 0; i < sp->keep_count; i++)
		fcntl(sp->keep[i], F_SETFD, 0);
	sigprocmask(SIG_SETMASK, &sp->mask, NULL);
	execv("/proc/self/exe", sp->argv);
	sp->err = errno;
	_exit(127);
}

/*
 * The keeper: khprof's binary again (exec: none of khprof's memory is
 * shared, so none of khprof's later writes fault on copy-on-write pages),
 * with four descriptors, khprof's pid and process group and the limit on
 * its command line.  What starts is the keeper's anchor, which starts the
 * keeper itself in khprof's process group (keeper.c says why).
 */
static int start_keeper(struct stops *s, int self_fd)
{
	static char stack[32768] __attribute__((aligned(16)));
	int keep[] = { s->table_fd, s->notes_fd, s->sites_fd, self_fd };
	char fds[4][16], pid_text[16], limit[24], pgrp[16];
	char *argv[] = { STOPS_KEEPER_NAME, fds[0], fds[1], fds[2], fds[3], pid_text, limit, pgrp,
			 NULL };
	struct spawn sp = { .argv = argv, .keep = keep, .keep_count = 4 };
	sigset_t all;
	pid_t pid;

	for (size_t i = 0; i < 4; i++)
		snprintf(fds[i], sizeof(fds[i]), "%d", keep[i]);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)getpid());
	snprintf(limit, sizeof(limit), "%" PRIu64, s->limit_ns);
	snprintf(pgrp, sizeof(pgrp), "%d", (int)getpgrp());
	/* No handler of khprof's may run in the child, on khprof's memory. */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &sp.mask);
	pid = clone(spawn_keeper, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, &sp);
	sigprocmask(SIG_SETMASK, &sp.mask, NULL);
	if (pid < 0)
		return -errno;
	if (sp.err) {
		waitpid(pid, NULL, 0);
		return -sp.err;
	}
	s->keeper = pid;
	s->keeper_fd = pidfd_open(pid);
	return 0;
}

/* KHPROF_TEST_STOP_HOOK=FD: tests see each step and say when to go on. */
static void open_hook(struct stops *s)
{
	const char *hook = getenv("KHPROF_TEST_STOP_HOOK");
	char *end;
	long fd;

	s->hook_fd = -1;
	if (!hook || !*hook)
		return;
	fd = strtol(hook, &end, 10);
	if (*end || fd < 3 || fcntl((int)fd, F_SETFD, FD_CLOEXEC) != 0)
		return;
	s->hook_fd = (int)fd;
}

static const char *kind_name(uint32_t kind)
{
	static const char *const names[] = { "none", "loader", "start", "fork", "exec" };

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

/*
 * Test hook: says "STEP PID KIND" and waits for a byte.  A test kills or
 * stops khprof there, at a known step of a known stop; no sleep decides.
 */
static void hook(struct stops *s, const char *step, const struct kh_stop_key *key)
{
	char line[96];
	int len;

	if (s->hook_fd < 0)
		return;
	len = snprintf(line, sizeof(line), "%s %u %s\n", step, key->tgid, kind_name(key->kind));
	if (write(s->hook_fd, line, (size_t)len) != len || read(s->hook_fd, line, 1) != 1) {
		close(s->hook_fd);
		s->hook_fd = -1;
	}
}

int stops__open(struct stops **out, uint64_t limit_ns)
{
	struct stops *s = calloc(1, sizeof(*s));
	int self_fd = -1, err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->table_fd = s->notes_fd = s->sites_fd = s->keeper_fd = s->hook_fd = -1;
	s->limit_ns = limit_ns;
	s->table_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "kh_stops", sizeof(struct kh_stop_key),
				     sizeof(struct kh_stop), KH_STOPS_MAX, NULL);
	if (s->table_fd < 0) {
		err = -errno;
		log__error("cannot create the table of stopped processes: %s", strerror(errno));
		goto fail;
	}
	s->notes_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "kh_stop_notes", 0, 0,
				     KH_STOP_NOTES_BYTES, NULL);
	if (s->notes_fd < 0) {
		err = -errno;
		log__error("cannot create the stop keeper's ring buffer: %s", strerror(errno));
		goto fail;
	}
	err = sites__create(&s->sites, &s->sites_fd);
	if (err) {
		log__error("cannot create the table of probe sites: %s", strerror(-err));
		goto fail;
	}
	self_fd = pidfd_open(getpid());
	err = self_fd < 0 ? -errno : start_keeper(s, self_fd);
	if (self_fd >= 0)
		close(self_fd);
	if (err) {
		log__error("cannot start the stop keeper: %s (khprof stops no process without "
			   "one, docs/PROBES.md)", strerror(-err));
		goto fail;
	}
	open_hook(s);
	log__debug("stop keeper PID %d: stops let go after %.3f s, or when khprof ends",
		   (int)s->keeper, (double)limit_ns / 1e9);
	*out = s;
	return 0;
fail:
	stops__close(s);
	return err;
}

void stops__close(struct stops *s)
{
	if (!s)
		return;
	if (s->let_go)
		log__warn("%zu process%s released untraced after waiting %.3g s for khprof (the "
			  "stop limit: --stop-limit, docs/PROBES.md)", s->let_go,
			  s->let_go == 1 ? "" : "es", (double)s->limit_ns / 1e9);
	sites__unmap(s->sites);
	if (s->hook_fd >= 0)
		close(s->hook_fd);
	if (s->table_fd >= 0)
		close(s->table_fd);
	if (s->notes_fd >= 0)
		close(s->notes_fd);
	if (s->sites_fd >= 0)
		close(s->sites_fd);
	if (s->keeper_fd >= 0)
		close(s->keeper_fd);
	free(s);
}

int stops__share_maps(const struct stops *s, struct bpf_map *table, struct bpf_map *notes)
{
	int err = bpf_map__reuse_fd(table, s->table_fd);

	return err ? err : bpf_map__reuse_fd(notes, s->notes_fd);
}

bool stops__of_event(const struct kh_event *e, pid_t stopped, struct kh_stop_key *key)
{
	if (e->arg1 == KH_STOP_NONE || e->arg1 > KH_STOP_EXEC)
		return false;
	key->tgid = (uint32_t)stopped;
	key->kind = (uint32_t)e->arg1;
	key->stamp_ns = e->ts_ns;
	return true;
}

/* The keeper is gone (killed on its own): said once; stops still end through khprof. */
static void check_keeper(struct stops *s)
{
	struct pollfd exited = { .fd = s->keeper_fd, .events = POLLIN };

	if (s->keeper_gone_said || s->keeper_fd < 0)
		return;
	/* A pidfd is readable once its process has exited (the anchor, once the keeper has). */
	if (poll(&exited, 1, 0) == 0)
		return;
	waitpid(s->keeper, NULL, WNOHANG);
	s->keeper_gone_said = true;
	log__warn("the stop keeper (PID %d) is gone: a process khprof stops now waits for khprof "
		  "alone (docs/PROBES.md)", (int)s->keeper);
}

bool stops__take_up(struct stops *s, const struct kh_stop_key *key)
{
	struct kh_stop stop;

	hook(s, "stop", key);
	check_keeper(s);
	if (bpf_map_lookup_elem(s->table_fd, key, &stop) == 0)
		return true;
	s->let_go++;
	log__debug("PID %d was let go by the stop keeper before khprof came to it", key->tgid);
	return false;
}

bool stops__release(struct stops *s, const struct kh_stop_key *key)
{
	enum stop_end end;

	hook(s, "release", key);
	end = stops__end(s->table_fd, key, NULL);
	if (end == STOP_NOT_HELD) {
		s->let_go++;
		log__debug("PID %d was let go by the stop keeper while khprof attached", key->tgid);
		return false;
	}
	hook(s, "released", key);
	return end == STOP_ENDED;
}

size_t stops__let_go(const struct stops *s)
{
	return s->let_go;
}

int stops__publish_sites(struct stops *s, const char *path, const __u64 *offsets,
			 size_t count)
{
	return sites__publish(s->sites, path, offsets, count);
}

int stops__make_safe(struct stops *s, pid_t pid)
{
	return sites__restore(s->sites, pid);
}

/*
 * Takes the stop's entry: whoever does ends the stop.  Read and deleted at
 * once where the kernel can (Linux 5.14); before, the delete decides.
 */
static int take_entry(int map_fd, const struct kh_stop_key *key, struct kh_stop *stop)
{
	if (bpf_map_lookup_and_delete_elem(map_fd, key, stop) == 0)
		return 0;
	if (errno == ENOENT)
		return -ENOENT;
	if (bpf_map_lookup_elem(map_fd, key, stop) != 0 || bpf_map_delete_elem(map_fd, key) != 0)
		return -errno;
	return 0;
}

/*
 * The start time /proc/PID/stat shows for a process that started at
 * start_boottime_ns: in clock ticks, shifted by this process's time
 * namespace's boottime offset (/proc/self/timens_offsets, usually absent).
 */
static uint64_t start_ticks_of(uint64_t start_boottime_ns)
{
	static long tick_ns;
	static int64_t offset_ns;

	if (!tick_ns) {
		FILE *f = fopen("/proc/self/timens_offsets", "re");
		char name[16];
		long long sec, nsec;

		tick_ns = 1000000000L / sysconf(_SC_CLK_TCK);
		while (f && fscanf(f, "%15s %lld %lld", name, &sec, &nsec) == 3)
			if (!strcmp(name, "boottime"))
				offset_ns = sec * 1000000000LL + nsec;
		if (f)
			fclose(f);
	}
	return (uint64_t)((int64_t)start_boottime_ns + offset_ns) / (uint64_t)tick_ns;
}

enum stop_end stops__end(int map_fd, const struct kh_stop_key *key, struct site_table *sites)
{
	struct procfs_stop_view view;
	struct kh_stop stop;
	enum stop_end end = STOP_GONE;
	int pid_fd;

	if (take_entry(map_fd, key, &stop))
		return STOP_NOT_HELD;
	/* The pidfd first: if the stat is the stopped process's, so is the pidfd. */
	pid_fd = pidfd_open((pid_t)key->tgid);
	if (pid_fd < 0)
		return STOP_GONE;
	if (procfs__stop_view((pid_t)key->tgid, &view) ||
	    view.start_ticks != start_ticks_of(stop.start_boottime_ns))
		goto out;
	/* A child that cannot be made safe still runs: stopped, it would wait for good. */
	if (sites && key->kind == KH_STOP_FORK)
		sites__restore(sites, (pid_t)key->tgid);
	/*
	 * Stopped by khprof, then asked to stop by someone else (a shell's
	 * Ctrl-Z): SIGCONT would throw their stop away.  Theirs to end.
	 */
	if (view.state == 'T' && view.stop_pending) {
		end = STOP_HANDED_OVER;
		goto out;
	}
	end = syscall(SYS_pidfd_send_signal, pid_fd, SIGCONT, NULL, 0) == 0 ? STOP_ENDED
									     : STOP_GONE;
out:
	close(pid_fd);
	return end;
}
