// SPDX-License-Identifier: MIT
/*
 * hog: a neighbour that takes CPU from everything else on the machine, for
 * recording runs on a busy runner (bench/verdict, test_verdict.c).
 *
 *   hog [THREADS_PER_CPU]
 *
 * Starts THREADS_PER_CPU (default 1) spinning threads pinned to each CPU
 * this process may run on, so that every CPU is contended whatever their
 * count.  Once every thread spins it writes "ready\n" on stdout; it spins
 * until its stdin ends (the caller closes the pipe), then exits 0.  A
 * caller that reads the line and later closes stdin and waits for the exit
 * knows the hogs ran for the whole time between, without sleeping.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static atomic_int stop;
static pthread_barrier_t spinning;

static void *spin(void *arg)
{
	cpu_set_t one;
	volatile unsigned long x = 0;

	CPU_ZERO(&one);
	CPU_SET((int)(long)arg, &one);
	/* A CPU that went away since the mask was read: spin wherever. */
	(void)pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	pthread_barrier_wait(&spinning);
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		x = x * 6364136223846793005ul + 1;
	return NULL;
}

int main(int argc, char **argv)
{
	int per_cpu = argc > 1 ? atoi(argv[1]) : 1, cpus = 0, n = 0;
	pthread_t *threads;
	cpu_set_t mask;
	char c;

	if (per_cpu < 1 || sched_getaffinity(0, sizeof(mask), &mask)) {
		fprintf(stderr, "usage: hog [THREADS_PER_CPU]\n");
		return 2;
	}
	cpus = CPU_COUNT(&mask);
	threads = calloc((size_t)(cpus * per_cpu), sizeof(*threads));
	if (!threads || pthread_barrier_init(&spinning, NULL, (unsigned)(cpus * per_cpu + 1)))
		return 1;
	for (int cpu = 0; cpu < CPU_SETSIZE && n < cpus * per_cpu; cpu++) {
		if (!CPU_ISSET(cpu, &mask))
			continue;
		for (int k = 0; k < per_cpu; k++)
			if (pthread_create(&threads[n++], NULL, spin, (void *)(long)cpu))
				return 1;
	}
	pthread_barrier_wait(&spinning);
	if (printf("ready\n") < 0 || fflush(stdout))
		return 1;
	while (read(STDIN_FILENO, &c, 1) > 0)
		;
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	return 0;
}
