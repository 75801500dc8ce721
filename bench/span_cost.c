// SPDX-License-Identifier: MIT
/*
 * Cost of one span (enter + exit) measured by the program itself:
 *
 *   span_cost probes N [THREADS]   the header's spans (traced or not: run it
 *                                  under khprof or bpftrace to measure tracing)
 *   span_cost bare N               the same loop without spans
 *   span_cost inproc-off N         the seed's in-process design, disabled
 *   span_cost inproc-on N          the seed's in-process design, enabled
 *   span_cost clocks N             two CLOCK_MONOTONIC reads a span and nothing
 *                                  else: the floor of any design that times
 *                                  each span with that clock
 *
 * Prints "ns_per_span=X" (median of 5 rounds of N spans per thread).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keyhog_profile.h"

#define ROUNDS 5

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A C port of the seed's span: relaxed load, two clock reads, atomic adds. */
static atomic_bool inproc_enabled;
static _Atomic unsigned long long inproc_elapsed[KH_STAGE_COUNT], inproc_calls[KH_STAGE_COUNT];

static inline unsigned long long inproc_enter(void)
{
	return atomic_load_explicit(&inproc_enabled, memory_order_relaxed) ? now_ns() : 0;
}

static inline void inproc_exit(int stage, unsigned long long start)
{
	if (!start)
		return;
	atomic_fetch_add_explicit(&inproc_elapsed[stage], now_ns() - start, memory_order_relaxed);
	atomic_fetch_add_explicit(&inproc_calls[stage], 1, memory_order_relaxed);
}

static volatile unsigned long sink;
static long spans;

/* One loop per variant, so no variant pays for another's branches. */
__attribute__((noinline)) static void spans_probes(long n)
{
	for (long i = 0; i < n; i++) {
		KH_SPAN_SCOPE(KH_STAGE_HOT_PATTERNS);
		sink = i;
	}
}

__attribute__((noinline)) static void spans_bare(long n)
{
	for (long i = 0; i < n; i++)
		sink = i;
}

__attribute__((noinline)) static void spans_inproc(long n)
{
	for (long i = 0; i < n; i++) {
		unsigned long long start = inproc_enter();

		sink = i;
		inproc_exit(KH_STAGE_HOT_PATTERNS, start);
	}
}

__attribute__((noinline)) static void spans_clocks(long n)
{
	for (long i = 0; i < n; i++) {
		unsigned long long start = now_ns();

		sink = i;
		sink = now_ns() - start;
	}
}

static void (*run_spans)(long n);

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void *thread_main(void *arg)
{
	double *result = arg, rounds[ROUNDS];

	for (int r = 0; r < ROUNDS; r++) {
		unsigned long long t0 = now_ns();

		run_spans(spans);
		rounds[r] = (double)(now_ns() - t0) / spans;
	}
	qsort(rounds, ROUNDS, sizeof(double), cmp);
	*result = rounds[ROUNDS / 2];
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 3 ? atoi(argv[3]) : 1;
	pthread_t tid[16];
	double result[16], worst = 0;

	if (argc < 3 || threads < 1 || threads > 16) {
		fprintf(stderr, "usage: span_cost probes|bare|inproc-off|inproc-on|clocks N [THREADS]\n");
		return 2;
	}
	spans = atol(argv[2]);
	if (!strcmp(argv[1], "probes"))
		run_spans = spans_probes;
	else if (!strcmp(argv[1], "bare"))
		run_spans = spans_bare;
	else if (!strcmp(argv[1], "clocks"))
		run_spans = spans_clocks;
	else if (!strncmp(argv[1], "inproc", 6)) {
		run_spans = spans_inproc;
		atomic_store(&inproc_enabled, !strcmp(argv[1], "inproc-on"));
	} else {
		fprintf(stderr, "span_cost: unknown variant '%s'\n", argv[1]);
		return 2;
	}
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	for (int t = 0; t < threads; t++)
		pthread_create(&tid[t], NULL, thread_main, &result[t]);
	for (int t = 0; t < threads; t++) {
		pthread_join(tid[t], NULL);
		if (result[t] > worst)
			worst = result[t];
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	printf("ns_per_span=%.3f\n", worst);
	return 0;
}
