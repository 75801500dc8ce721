// SPDX-License-Identifier: MIT
/*
 * The stops of one command (stops.h): the table and notes every tracer's
 * programs share, the keeper's start, how a stop ends, and the test hook.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "procfs.h"
#include "sites.h"
#include "stops.h"
#include "trace.h"

/*
 * The keeper's start, on a thread of its own (stops__open): its command
 * line, and what the child side needs until it has exec'd.
 */
struct spawn {
	/*
	 * The table, the notes, the sites, khprof's pidfd, the keeper's test
	 * hook (or -1), the read end of the pipe khprof says "quit" on.
	 */
	int keep[6];
	char text[7][24];
	char *argv[11];
	sigset_t mask;
	int err;     /* the exec's errno, left by the child */
	pid_t pid;
	pthread_t thread;
	bool started; /* the thread runs until stops__ready joins it */
	uint64_t took_ns;
};

/* What khprof ends sooner than this needs no look at the process (stops__end). */
#define STOP_YOUNG_NS 1000000ull

struct stops {
	int table_fd;  /* kh_stops */
	int notes_fd;  /* kh_stop_notes */
	int sites_fd;  /* the site table's memfd */
	struct site_table *sites;
	struct spawn spawn;
	int start_err; /* the keeper's start failed: -errno, once stops__ready knows */
	uint64_t open_ns; /* what stops__open took on khprof's own thread */
	pid_t keeper;
	int keeper_fd; /* the keeper's pidfd: readable if it is gone */
	int quit_fd;   /* a byte written here ends the keeper (stops__close) */
	bool keeper_gone_said;
	uint64_t limit_ns;
	size_t let_go;
	int hook_fd;   /* KHPROF_TEST_STOP_HOOK, or -1 */
};

static int pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

const char *stops__kind_name(uint32_t kind)
{
	static const char *const names[] = {
		[KH_STOP_NONE] = "none", [KH_STOP_LOADER] = "loader", [KH_STOP_START] = "start",
		[KH_STOP_FORK] = "fork", [KH_STOP_EXEC] = "exec",     [KH_STOP_SELF] = "self",
		[KH_STOP_IDENTITY] = "identity",
	};
	_Static_assert(sizeof(names) / sizeof(names[0]) == KH_STOP_KIND_LAST + 1,
		       "a stop kind without a name");

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

/*
 * The child side of clone(CLONE_VM | CLONE_VFORK), as posix_spawn's: it
 * shares khprof's memory until the exec, so it only clears close-on-exec
 * on what the keeper keeps, restores the signal mask and execs; a failure
 * is left in err for khprof.
 */
static int spawn_child(void *arg)
{
	struct spawn *sp = arg;

	for (size_t i = 0; i < sizeof(sp->keep) / sizeof(sp->keep[0]); i++)
		if (sp->keep[i] >= 0)
			fcntl(sp->keep[i], F_SETFD, 0);
	sigprocmask(SIG_SETMASK, &sp->mask, NULL);
	execv("/proc/self/exe", sp->argv);
	sp->err = errno;
	_exit(127);
}

/*
 * The keeper: khprof's binary again (exec: none of khprof's memory is
 * shared, so none of khprof's later writes fault on copy-on-write pages),
 * with its descriptors, khprof's pid, the process group to hold (0: none)
 * and the limit on its command line.  What starts is the keeper's anchor,
 * which starts the keeper itself (keeper.c says why).
 *
 * On a thread: the vfork waits until the child has exec'd, which took
 * 0.1 ms on an idle CPU and up to 30 ms here at load 15 on 2 CPUs,
 * waiting for a CPU; the programs' load goes on meanwhile, and the keeper
 * is waited for only before the first program that stops is attached.
 */
static void *spawn_thread(void *arg)
{
	static char stack[32768] __attribute__((aligned(16)));
	struct spawn *sp = arg;
	uint64_t begin = tracer__now_ns();
	sigset_t all;

	/* No handler of khprof's may run in the child, on khprof's memory. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &sp->mask);
	sp->pid = clone(spawn_child, stack + sizeof(stack), CLONE_VM | CLONE_VFORK | SIGCHLD, sp);
	if (sp->pid < 0)
		sp->err = errno;
	else if (sp->err)
		waitpid(sp->pid, NULL, 0);
	pthread_sigmask(SIG_SETMASK, &sp->mask, NULL);
	/*
	 * khprof's own pidfd, the keeper's hook and the quit pipe's read end:
	 * the child holds its copies from the clone on.
	 */
	close(sp->keep[3]);
	if (sp->keep[4] >= 0)
		close(sp->keep[4]);
	close(sp->keep[5]);
	sp->took_ns = tracer__now_ns() - begin;
	return NULL;
}

static int start_keeper(struct stops *s, int self_fd, bool hold_group, int keeper_hook,
			int quit_read)
{
	struct spawn *sp = &s->spawn;
	int err;

	sp->keep[0] = s->table_fd;
	sp->keep[1] = s->notes_fd;
	sp->keep[2] = s->sites_fd;
	sp->keep[3] = self_fd;
	sp->keep[4] = keeper_hook;
	sp->keep[5] = quit_read;
	sp->argv[0] = STOPS_KEEPER_NAME;
	for (size_t i = 0; i < 4; i++) {
		snprintf(sp->text[i], sizeof(sp->text[i]), "%d", sp->keep[i]);
		sp->argv[1 + i] = sp->text[i];
	}
	snprintf(sp->text[4], sizeof(sp->text[4]), "%d", (int)getpid());
	sp->argv[5] = sp->text[4];
	if (asprintf(&sp->argv[6], "%" PRIu64, s->limit_ns) < 0 ||
	    asprintf(&sp->argv[7], "%d", hold_group ? (int)getpgrp() : 0) < 0)
		return -ENOMEM;
	snprintf(sp->text[5], sizeof(sp->text[5]), "%d", keeper_hook);
	sp->argv[8] = sp->text[5];
	snprintf(sp->text[6], sizeof(sp->text[6]), "%d", quit_read);
	sp->argv[9] = sp->text[6];
	sp->argv[10] = NULL;
	err = pthread_create(&sp->thread, NULL, spawn_thread, sp);
	if (err)
		return -err;
	sp->started = true;
	return 0;
}

int stops__ready(struct stops *s)
{
	struct spawn *sp;

	if (!s || !s->spawn.started)
		return s ? s->start_err : 0;
	sp = &s->spawn;
	pthread_join(sp->thread, NULL);
	sp->started = false;
	if (sp->pid < 0 || sp->err) {
		s->start_err = -(sp->err ? sp->err : EAGAIN);
		log__error("cannot start the stop keeper: %s (khprof stops no process without one, "
			   "docs/PROBES.md)", strerror(-s->start_err));
		return s->start_err;
	}
	s->keeper = sp->pid;
	s->keeper_fd = pidfd_open(sp->pid);
	log__debug("start-up: stops opened in %.2f ms, their keeper (PID %d) started in %.2f ms "
		   "on a thread (stops let go after %.3g s, or when khprof ends)",
		   (double)s->open_ns / 1e6, (int)s->keeper, (double)sp->took_ns / 1e6,
		   (double)s->limit_ns / 1e9);
	return 0;
}

/*
 * Test hooks, descriptors named in the environment: KHPROF_TEST_STOP_HOOK
 * for khprof's steps (hook below), KHPROF_TEST_KEEPER_HOOK for the
 * keeper's (keeper.c).  Close-on-exec, so that COMMAND does not get them.
 */
static int test_hook(const char *name)
{
	const char *hook = getenv(name);
	char *end;
	long fd;

	if (!hook || !*hook)
		return -1;
	fd = strtol(hook, &end, 10);
	if (*end || fd < 3 || fcntl((int)fd, F_SETFD, FD_CLOEXEC) != 0)
		return -1;
	return (int)fd;
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
	len = snprintf(line, sizeof(line), "%s %u %s\n", step, key->tgid, stops__kind_name(key->kind));
	if (write(s->hook_fd, line, (size_t)len) != len || read(s->hook_fd, line, 1) != 1) {
		close(s->hook_fd);
		s->hook_fd = -1;
	}
}

int stops__open(struct stops **out, uint64_t limit_ns, bool hold_group)
{
	struct stops *s = calloc(1, sizeof(*s));
	uint64_t begin = tracer__now_ns();
	int self_fd = -1, quit[2] = { -1, -1 }, keeper_hook = -1, err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->table_fd = s->notes_fd = s->sites_fd = s->keeper_fd = s->quit_fd = s->hook_fd = -1;
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
	if (self_fd < 0 || pipe2(quit, O_CLOEXEC) != 0) {
		err = -errno;
	} else {
		s->quit_fd = quit[1];
		keeper_hook = test_hook("KHPROF_TEST_KEEPER_HOOK");
		err = start_keeper(s, self_fd, hold_group, keeper_hook, quit[0]);
	}
	if (err) {
		if (self_fd >= 0)
			close(self_fd);
		if (quit[0] >= 0)
			close(quit[0]);
		if (keeper_hook >= 0)
			close(keeper_hook);
		log__error("cannot start the stop keeper: %s (khprof stops no process without "
			   "one, docs/PROBES.md)", strerror(-err));
		goto fail;
	}
	s->hook_fd = test_hook("KHPROF_TEST_STOP_HOOK");
	s->open_ns = tracer__now_ns() - begin;
	*out = s;
	return 0;
fail:
	stops__close(s);
	return err;
}

/*
 * How long khprof's end waits for its keeper's: the keeper needs about a
 * millisecond (its last look at the table, its exit, the anchor's); a
 * keeper that takes longer is left to see khprof's end on its own.
 */
#define KEEPER_QUIT_WAIT_MS 1000

/*
 * khprof ends in order: the keeper is told to quit now, and waited for, so
 * that nothing of khprof's (stderr: a pipe its caller reads to EOF) stays
 * open once khprof has exited.  Whatever stop is still held it lets go first.
 */
static void quit_keeper(struct stops *s)
{
	struct pollfd exited = { .fd = s->keeper_fd, .events = POLLIN };
	uint64_t begin = tracer__now_ns();

	if (s->keeper <= 0 || s->keeper_fd < 0 || s->keeper_gone_said ||
	    write(s->quit_fd, "q", 1) != 1)
		return;
	while (poll(&exited, 1, KEEPER_QUIT_WAIT_MS) < 0 && errno == EINTR)
		;
	if (exited.revents & POLLIN) {
		waitpid(s->keeper, NULL, 0);
		log__debug("the stop keeper ended in %.2f ms", (double)(tracer__now_ns() - begin) / 1e6);
	} else
		log__debug("the stop keeper (PID %d) did not end within %d ms of khprof's asking",
			   (int)s->keeper, KEEPER_QUIT_WAIT_MS);
}

void stops__close(struct stops *s)
{
	if (!s)
		return;
	stops__ready(s);
	quit_keeper(s);
	free(s->spawn.argv[6]);
	free(s->spawn.argv[7]);
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
	if (s->quit_fd >= 0)
		close(s->quit_fd);
	free(s);
}

int stops__share_maps(const struct stops *s, struct bpf_map *table, struct bpf_map *notes)
{
	int err = bpf_map__reuse_fd(table, s->table_fd);

	return err ? err : bpf_map__reuse_fd(notes, s->notes_fd);
}

bool stops__of_event(const struct kh_event *e, pid_t stopped, struct kh_stop_key *key)
{
	if (e->stop_kind == KH_STOP_NONE || e->stop_kind > KH_STOP_KIND_LAST)
		return false;
	key->tgid = (uint32_t)stopped;
	key->kind = e->stop_kind;
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

bool stops__take_up(struct stops *s, const struct kh_stop_key *key, pid_t *local)
{
	struct kh_stop stop;

	hook(s, "stop", key);
	check_keeper(s);
	if (bpf_map_lookup_elem(s->table_fd, key, &stop) == 0) {
		*local = (pid_t)stop.local_tgid;
		return true;
	}
	s->let_go++;
	log__debug("PID %d was let go by the stop keeper before khprof came to it", key->tgid);
	return false;
}

bool stops__release(struct stops *s, const struct kh_stop_key *key)
{
	enum stop_end end;
	uint64_t begin;

	hook(s, "release", key);
	begin = tracer__now_ns();
	end = stops__end(s->table_fd, key, false, NULL);
	log__debug("PID %d: stop (%s) ended in %.1f us, %.1f us after it was made", key->tgid,
		   stops__kind_name(key->kind), (double)(tracer__now_ns() - begin) / 1e3,
		   (double)(tracer__now_ns() - key->stamp_ns) / 1e3);
	if (end == STOP_NOT_HELD) {
		s->let_go++;
		log__debug("PID %d was let go by the stop keeper while khprof attached", key->tgid);
		return false;
	}
	hook(s, "released", key);
	return end == STOP_ENDED;
}

void stops__forget(struct stops *s, const struct kh_stop_key *key)
{
	bpf_map_delete_elem(s->table_fd, key);
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

const char *stops__end_name(enum stop_end end)
{
	static const char *const names[] = { [STOP_ENDED] = "ended",
					     [STOP_HANDED_OVER] = "handed-over",
					     [STOP_GONE] = "gone",
					     [STOP_NOT_HELD] = "not-held" };

	return (size_t)end < sizeof(names) / sizeof(names[0]) ? names[end] : "?";
}

enum stop_end stops__end(int map_fd, const struct kh_stop_key *key, bool late,
			 struct site_table *sites)
{
	struct procfs_stop_view view;
	struct kh_stop stop;
	enum stop_end end = STOP_GONE;
	int pid_fd;

	if (take_entry(map_fd, key, &stop))
		return STOP_NOT_HELD;
	/*
	 * A stop khprof ends within a millisecond (a dlopen's, ~0.1 ms here)
	 * is let go at once: its process cannot have been replaced, and a
	 * stop signal of someone else's landing in so short a window is not
	 * worth the two /proc reads (20-35 us each here, where the rest of
	 * the end costs ~5 us: 22 against 5 us a dlopen stop).
	 */
	if (!late && tracer__now_ns() - key->stamp_ns < STOP_YOUNG_NS)
		return kill((pid_t)stop.local_tgid, SIGCONT) == 0 ? STOP_ENDED : STOP_GONE;
	/*
	 * The pidfd first: if the stat is the stopped process's, so is the
	 * pidfd.  Only a stop ended late (the keeper's) can have outlived its
	 * process and had its pid reused; khprof ends one within the time it
	 * takes to attach, and skips that read.
	 */
	pid_fd = pidfd_open((pid_t)stop.local_tgid);
	if (pid_fd < 0)
		return STOP_GONE;
	if (procfs__stop_view((pid_t)stop.local_tgid, late, &view) ||
	    (late && view.start_ticks != start_ticks_of(stop.start_boottime_ns)))
		goto out;
	/* A child that cannot be made safe still runs: stopped, it would wait for good. */
	if (sites && key->kind == KH_STOP_FORK)
		sites__restore(sites, (pid_t)stop.local_tgid);
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
