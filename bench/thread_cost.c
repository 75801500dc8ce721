// SPDX-License-Identifier: MIT
/*
 * thread_cost N: starts and joins N threads one after another, each running
 * one batched span, and prints the mean cost of one such thread
 * (ns_per_thread=...).  Traced, the difference against an untraced run is
 * what batch mode costs per thread: the batch_register probe, the thread's
 * flush at its end and the BPF side's work at its exit (docs/PERFORMANCE.md).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "keyhog_profile.h"

static void *one_span(void *unused)
{
	(void)unused;
	KH_SPAN_ENTER(KH_STAGE_DECODE);
	__asm__ __volatile__("" ::: "memory");
	KH_SPAN_EXIT(KH_STAGE_DECODE);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, one_span, NULL) != 0)
			return 1;
		pthread_join(t, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("ns_per_thread=%.1f\n",
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)n);
	return 0;
}
