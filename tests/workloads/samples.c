// SPDX-License-Identifier: MIT
/*
 * Traced workload for tests/integration/tracing/test_samples.c, built like an
 * outside program: only include/keyhog_profile.h.  Each scenario prints
 * what the program itself knows on stdout, one "name value" per line.
 *
 *   samples identity   identity strings from a never-touched .rodata page
 *                      (unmapped after the probes), a new stack page and
 *                      the heap, then one unreadable
 *   samples cpu        burns CPU in two states, measuring its own CPU time
 *                      (CLOCK_PROCESS_CPUTIME_ID) around each transition
 *   samples peaks      two worker threads and 64 MiB touched and freed
 *                      between two transitions
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "keyhog_profile.h"

/*
 * Identity literals alone in a 64 KiB-aligned, 64 KiB-long block: the
 * kernel's fault-around maps at most the 64 KiB window around a faulting
 * page, so no other read of .rodata maps this one in.
 */
#define FAR_BLOCK 65536
static const struct {
	char key[32];
	char value[32];
	char digest_key[32];
	char digest[32];
	char pad[FAR_BLOCK - 128];
} far __attribute__((aligned(FAR_BLOCK))) = {
	"binary_version", "9.8.7", "detector_digest", "rodata-digest", { 0 },
};

/* Whether the page holding p is mapped in this process (pagemap bit 63). */
static int page_present(const void *p)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t entry = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	off_t at = (off_t)((uintptr_t)p / (uintptr_t)page) * (off_t)sizeof(entry);

	if (fd < 0 || pread(fd, &entry, sizeof(entry), at) != (ssize_t)sizeof(entry)) {
		perror("samples: cannot read /proc/self/pagemap");
		exit(2);
	}
	close(fd);
	return (int)(entry >> 63);
}

/* A frame deeper than anything before it: its buffer is on a new stack page. */
static __attribute__((noinline)) void stack_identity(void)
{
	volatile char frame[128 * 1024];
	char *value = (char *)frame;

	snprintf(value, 32, "stack-%d", 42);
	KH_IDENTITY("config_digest", value);
	frame[sizeof(frame) - 1] = 0;
}

static int identity(void)
{
	char *heap = malloc(4 << 20); /* above the mmap threshold: fresh pages */

	/* Before any probe: the far block must not be mapped yet. */
	printf("rodata_present_before %d\n", page_present(far.key));
	KH_SESSION_START();
	KH_IDENTITY(far.key, far.value);
	KH_IDENTITY(far.digest_key, far.digest);
	/*
	 * A string is the program's again once KH_IDENTITY returns (a stack
	 * buffer is fine): the block is gone before anything could wake
	 * khprof, so a tracer that reads it later from the process finds
	 * nothing there.
	 */
	if (munmap((void *)&far, sizeof(far)) != 0) {
		perror("samples: cannot unmap the identity block");
		return 2;
	}
	stack_identity();
	snprintf(heap + (2 << 20), 32, "heap-%d", 7);
	KH_IDENTITY("source_kind", heap + (2 << 20));
	/* Memory nobody can read: reported, never taken as an empty key. */
	KH_IDENTITY("workload_class", (const char *)16);
	KH_IDENTITY((const char *)16, "x");
	KH_TRANSITION(KH_STATE_SCANNING);
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	free(heap);
	return 0;
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

/*
 * "NAME_before" and "NAME_after": the process's CPU time just before and
 * just after the probe; "NAME_window": wall time around both readings.
 */
static void report(const char *name, uint64_t wall0, uint64_t before, uint64_t after,
		   uint64_t wall1)
{
	printf("%s_before %llu\n%s_after %llu\n%s_window %llu\n", name,
	       (unsigned long long)before, name, (unsigned long long)after, name,
	       (unsigned long long)(wall1 - wall0));
}

/* Spins until this process has used ms more CPU milliseconds. */
static void burn_ms(unsigned int ms)
{
	uint64_t until = cpu_ns() + ms * 1000000ull;
	volatile unsigned long x = 0;

	while (cpu_ns() < until)
		for (int i = 0; i < 1000; i++)
			x += (unsigned long)i;
}

static int cpu(void)
{
	uint64_t wall0, before, after, wall1;

	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_ACQUIRING);
	burn_ms(30);
	wall0 = clock_ns(CLOCK_MONOTONIC);
	before = cpu_ns();
	KH_TRANSITION(KH_STATE_SCANNING);
	after = cpu_ns();
	wall1 = clock_ns(CLOCK_MONOTONIC);
	report("scanning", wall0, before, after, wall1);
	burn_ms(3);
	wall0 = clock_ns(CLOCK_MONOTONIC);
	before = cpu_ns();
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	after = cpu_ns();
	wall1 = clock_ns(CLOCK_MONOTONIC);
	report("completed", wall0, before, after, wall1);
	return 0;
}

static pthread_barrier_t all_running;

static void *worker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&all_running);
	return NULL;
}

static uint64_t own_rss_bytes(void)
{
	char line[256];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/self/status", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

static int peaks(void)
{
	size_t len = 64 << 20;
	pthread_t a, b;
	char *block;

	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	/* Three threads alive at once: the barrier holds both workers. */
	pthread_barrier_init(&all_running, NULL, 3);
	pthread_create(&a, NULL, worker, NULL);
	pthread_create(&b, NULL, worker, NULL);
	pthread_barrier_wait(&all_running);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("threads_together 3\n");
	block = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (block == MAP_FAILED) {
		perror("samples: mmap");
		return 2;
	}
	memset(block, 1, len);
	printf("rss_while_held %llu\n", (unsigned long long)own_rss_bytes());
	munmap(block, len);
	KH_TRANSITION(KH_STATE_REPORTING);
	printf("rss_after_free %llu\n", (unsigned long long)own_rss_bytes());
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "identity"))
		return identity();
	if (argc == 2 && !strcmp(argv[1], "cpu"))
		return cpu();
	if (argc == 2 && !strcmp(argv[1], "peaks"))
		return peaks();
	fprintf(stderr, "usage: samples identity|cpu|peaks\n");
	return 2;
}
