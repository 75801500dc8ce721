// SPDX-License-Identifier: MIT
/* The span clock's evidence (span_clock.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "counter.h"
#include "log.h"
#include "span_clock.h"

/*
 * 20 ms bounds the check, the kernel's own first TSC warp check's length;
 * it ends sooner once every CPU has taken TURNS_ENOUGH turns.  A CPU with
 * fewer than TURNS_NEEDED turns makes the check inconclusive.
 */
#define WARP_CHECK_NS 20000000ull
#define TURNS_ENOUGH 2000
#define TURNS_NEEDED 200
#define MAX_CHECKED_CPUS 256
#define CACHE_VERSION "1"

/*
 * The CO-RE cache's directory and ownership rule (btf_cache.c), restated:
 * btf_cache.o links libbpf and this file must not, so that the unit tests
 * that link the plain capture objects can link it too.
 */
static const char *cache_dir(void)
{
	const char *dir = getenv("KHPROF_CACHE_DIR");

	return dir && *dir ? dir : "/var/cache/khprof";
}

static bool root_only(const struct stat *st, mode_t type)
{
	return (st->st_mode & S_IFMT) == type && st->st_uid == 0 &&
	       !(st->st_mode & (S_IWGRP | S_IWOTH));
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The kernel's verdict: 1 when a perf event's mmap page says user space
 * may convert TSC readings to the kernel's time (cap_user_time), 0 when
 * the kernel does not say so (its sched_clock is not the native TSC, as
 * under kvm-clock, or not stable), -errno when no page could be read.
 */
static int kernel_vouches_for_tsc(void)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_DUMMY,
		.disabled = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	long page_size = sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *page;
	int fd, vouches;
	uint32_t seq;

	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	page = mmap(NULL, (size_t)page_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (page == MAP_FAILED)
		return -errno;
	do {
		seq = __atomic_load_n(&page->lock, __ATOMIC_ACQUIRE);
		vouches = page->cap_user_time && page->time_mult != 0;
	} while (__atomic_load_n(&page->lock, __ATOMIC_ACQUIRE) != seq);
	munmap(page, (size_t)page_size);
	return vouches;
}

/*
 * The shared line of the cross-CPU check.  The CPUs take turns in a ring,
 * each reading the TSC only once the CPU before it has stored its own
 * reading: every reading is then later than the one it is compared with,
 * and any that is lower is a warp.  (Contending for a lock, as the kernel
 * does, gave 280 handoffs in 20 ms on this loaded 2-vCPU machine: the CPU
 * that releases the lock mostly takes it again.)
 */
struct warp_line {
	atomic_int turn; /* index of the thread whose turn it is */
	atomic_int done;
	atomic_int go;   /* every thread is started: threads is final */
	int threads;
	uint64_t last;
	uint64_t backwards;
} __attribute__((aligned(64)));

struct warp_thread {
	struct warp_line *line;
	pthread_t thread;
	int cpu;
	int index;
	bool started;
	uint64_t turns;
	uint64_t deadline_ns;
};

static void *warp_run(void *arg)
{
	struct warp_thread *w = arg;
	struct warp_line *line = w->line;
	uint64_t spins = 0;
	int threads;

	while (!atomic_load_explicit(&line->go, memory_order_acquire))
		if (atomic_load(&line->done))
			return NULL;
	threads = line->threads;
	while (!atomic_load_explicit(&line->done, memory_order_relaxed)) {
		uint64_t now;

		if (atomic_load_explicit(&line->turn, memory_order_acquire) != w->index) {
			counter__relax();
			/* Waiting for a CPU that does not run (preempted, loaded host) is bounded. */
			if ((++spins & 1023) == 0 && monotonic_ns() > w->deadline_ns)
				atomic_store(&line->done, 1);
			continue;
		}
		/* Ordered: the reading is taken after the turn was seen. */
		now = counter__read_ordered();
		if (now < line->last)
			line->backwards++;
		line->last = now;
		w->turns++;
		/* The last thread of the ring ends a round; TURNS_ENOUGH rounds end the check. */
		if (w->index == threads - 1 && w->turns >= TURNS_ENOUGH)
			atomic_store(&line->done, 1);
		atomic_store_explicit(&line->turn, (w->index + 1) % threads, memory_order_release);
	}
	return NULL;
}

/*
 * Every CPU the system has, not only those khprof may run on: `taskset -c 0
 * khprof record` must not vouch for the CPU the program runs on.  A CPU a
 * thread cannot be pinned to (offline, outside the cpuset) is skipped.
 */
int span_clock__warp_check(uint64_t max_ns, uint64_t *backwards, uint64_t *turns_min, int *cpus)
{
	static struct warp_line line;
	struct warp_thread *threads;
	int n = 0, err = 0, possible = get_nprocs_conf();
	uint64_t deadline = monotonic_ns() + max_ns;

	memset(&line, 0, sizeof(line));
	*backwards = 0;
	*turns_min = 0;
	*cpus = 0;
	if (possible > MAX_CHECKED_CPUS)
		possible = MAX_CHECKED_CPUS;
	threads = calloc((size_t)(possible > 0 ? possible : 1), sizeof(*threads));
	if (!threads)
		return -ENOMEM;
	for (int cpu = 0; cpu < possible; cpu++) {
		struct warp_thread *w = &threads[n];
		pthread_attr_t attr;
		cpu_set_t one;

		w->line = &line;
		w->index = n;
		w->cpu = cpu;
		w->deadline_ns = deadline;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		pthread_attr_init(&attr);
		pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		err = -pthread_create(&w->thread, &attr, warp_run, w);
		pthread_attr_destroy(&attr);
		if (err == -EINVAL)
			continue; /* not a CPU this thread may run on */
		if (err) {
			atomic_store(&line.done, 1);
			break;
		}
		w->started = true;
		n++;
	}
	line.threads = n;
	atomic_store_explicit(&line.go, 1, memory_order_release);
	*turns_min = UINT64_MAX;
	for (int i = 0; i < n; i++) {
		if (!threads[i].started)
			continue;
		pthread_join(threads[i].thread, NULL);
		if (threads[i].turns < *turns_min)
			*turns_min = threads[i].turns;
	}
	if (*turns_min == UINT64_MAX)
		*turns_min = 0;
	*backwards = line.backwards;
	*cpus = n;
	free(threads);
	return err;
}

/* Gathers the evidence; *conclusive: the verdict may be kept for the boot. */
static void gather(struct span_clock_verdict *v, bool *conclusive)
{
	const char *hook = getenv("KHPROF_TEST_TSC"), *name = counter__name();
	char what[128];
	uint64_t backwards = 0, turns = 0;
	int cpus = 0, kernel, err;

	*conclusive = false;
	if (!counter__constant_rate(what, sizeof(what))) {
		*conclusive = true;
		snprintf(v->reason, sizeof(v->reason), "%s", what);
		return;
	}
	kernel = kernel_vouches_for_tsc();
	if (hook && strcmp(hook, "untrusted") == 0) {
		snprintf(v->reason, sizeof(v->reason),
			 "the %s went backwards between CPUs (simulated: KHPROF_TEST_TSC=untrusted)",
			 name);
		return;
	}
	err = span_clock__warp_check(WARP_CHECK_NS, &backwards, &turns, &cpus);
	if (!err && cpus == 0)
		err = -ESRCH;
	if (err) {
		snprintf(v->reason, sizeof(v->reason), "the cross-CPU %s check could not run: %s",
			 name, strerror(-err));
		return;
	}
	if (backwards) {
		*conclusive = true;
		snprintf(v->reason, sizeof(v->reason),
			 "the %s went backwards between CPUs (%llu of the readings on %d CPUs)", name,
			 (unsigned long long)backwards, cpus);
		return;
	}
	if (kernel == 1) {
		*conclusive = true;
		v->tsc_trusted = true;
		snprintf(v->reason, sizeof(v->reason),
			 "%s, which the kernel keeps time with (perf cap_user_time); "
			 "in step across %d CPUs", what, cpus);
		return;
	}
	if (cpus > 1 && turns < TURNS_NEEDED) {
		snprintf(v->reason, sizeof(v->reason),
			 "the cross-CPU %s check was inconclusive (a CPU took %llu turns of the "
			 "%d needed in 20 ms)", name, (unsigned long long)turns, TURNS_NEEDED);
		return;
	}
	/* Kept for the boot only when every online CPU was checked. */
	*conclusive = cpus >= get_nprocs();
	v->tsc_trusted = true;
	if (cpus == 1)
		snprintf(v->reason, sizeof(v->reason),
			 "%s, and one CPU to read it on; the kernel does not vouch for "
			 "it (%s)", what, kernel == 0 ? "no perf cap_user_time" : "no perf mmap page");
	else
		snprintf(v->reason, sizeof(v->reason),
			 "%s, in step across %d CPUs (none of %llu+ cross-CPU readings "
			 "went backwards); the kernel does not vouch for it (%s)", what, cpus,
			 (unsigned long long)turns * (unsigned long long)cpus,
			 kernel == 0 ? "no perf cap_user_time" : "no perf mmap page");
}

static bool boot_id(char *id, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	bool ok = f && fgets(id, (int)len, f);

	if (f)
		fclose(f);
	if (ok)
		id[strcspn(id, "\n")] = '\0';
	return ok && id[0] && !strchr(id, '/');
}

static bool cache_path(char *path, size_t len)
{
	char id[64];

	if (geteuid() != 0 || !boot_id(id, sizeof(id)))
		return false;
	return (size_t)snprintf(path, len, "%s/tsc-%s-v%s", cache_dir(), id, CACHE_VERSION) <
	       len;
}

/* "tsc REASON" or "monotonic REASON", one line, root's file alone. */
static bool cache_read(const char *path, struct span_clock_verdict *v)
{
	char text[SPAN_CLOCK_REASON_MAX + 32];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = fstat(fd, &st) == 0 && root_only(&st, S_IFREG)
		    ? read(fd, text, sizeof(text) - 1) : -1;
	close(fd);
	if (n <= 0)
		return false;
	text[n] = '\0';
	text[strcspn(text, "\n")] = '\0';
	if (strncmp(text, "tsc ", 4) == 0)
		v->tsc_trusted = true;
	else if (strncmp(text, "monotonic ", 10) == 0)
		v->tsc_trusted = false;
	else
		return false;
	snprintf(v->reason, sizeof(v->reason), "%s", strchr(text, ' ') + 1);
	return v->reason[0] != '\0';
}

static void cache_write(const char *path, const struct span_clock_verdict *v)
{
	char tmp[PATH_MAX + 16], text[SPAN_CLOCK_REASON_MAX + 32];
	struct stat st;
	int fd, n;
	bool ok;

	if (mkdir(cache_dir(), 0755) != 0 && errno != EEXIST)
		return;
	if (stat(cache_dir(), &st) != 0 || !root_only(&st, S_IFDIR))
		return;
	n = snprintf(text, sizeof(text), "%s %s\n", v->tsc_trusted ? "tsc" : "monotonic",
		     v->reason);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	ok = write(fd, text, (size_t)n) == n;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) != 0)
		unlink(tmp);
}

const struct span_clock_verdict *span_clock__verdict(void)
{
	static struct span_clock_verdict verdict;
	static bool decided;
	char path[PATH_MAX];
	bool have_path, conclusive;
	uint64_t start;

	if (decided)
		return &verdict;
	decided = true;
	/* The hook never reads nor writes the cache: its verdict is not this boot's. */
	have_path = !getenv("KHPROF_TEST_TSC") && cache_path(path, sizeof(path));
	if (have_path && cache_read(path, &verdict)) {
		log__debug("span clock: %s, this boot's verdict from '%s': %s",
			   verdict.tsc_trusted ? counter__name() : "CLOCK_MONOTONIC", path,
			   verdict.reason);
		return &verdict;
	}
	start = monotonic_ns();
	gather(&verdict, &conclusive);
	log__debug("span clock: %s after %.2f ms of checks: %s",
		   verdict.tsc_trusted ? counter__name() : "CLOCK_MONOTONIC",
		   (double)(monotonic_ns() - start) / 1e6, verdict.reason);
	if (have_path && conclusive)
		cache_write(path, &verdict);
	return &verdict;
}
