// SPDX-License-Identifier: MIT
/*
 * site_cost: the fixed costs a traced run pays besides its spans, timed by
 * the program itself under `khprof record`:
 *
 *   first_hit_ns    the first hit of a probe site (the kernel rewrites the
 *                   nop into a call to its uprobe trampoline), median of
 *                   SITES distinct sites
 *   second_hit_ns   the same sites' second hit
 *   steady_hit_ns   one hit of a site already rewritten (one kernel entry)
 *   woken_event_ns  KH_TRANSITION: a ring-buffer event that wakes khprof
 *   lazy_event_ns   KH_IDENTITY: an event delivered with the next wakeup
 *
 * Untraced, every figure is a few nanoseconds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "keyhog_profile.h"

#define SITES 8
#define STEADY 2000
#define EVENTS 200

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int compare(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return (x > y) - (x < y);
}

static unsigned long long median(unsigned long long *v, int n)
{
	qsort(v, n, sizeof(*v), compare);
	return v[n / 2];
}

/* Each expansion is a distinct site; the argument keeps them apart. */
#define HIT(i) KH_INPUT_UNITS(i)
/* Hits sites 0..SITES-1 once each, timing every hit. */
static void hit_all(unsigned long long *ns)
{
	unsigned long long t[SITES + 1];

	t[0] = now_ns(); HIT(0);
	t[1] = now_ns(); HIT(1);
	t[2] = now_ns(); HIT(2);
	t[3] = now_ns(); HIT(3);
	t[4] = now_ns(); HIT(4);
	t[5] = now_ns(); HIT(5);
	t[6] = now_ns(); HIT(6);
	t[7] = now_ns(); HIT(7);
	t[8] = now_ns();
	for (int i = 0; i < SITES; i++)
		ns[i] = t[i + 1] - t[i];
}

int main(void)
{
	unsigned long long first[SITES], second[SITES], t0, steady, woken, lazy;

	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	hit_all(first);
	hit_all(second);
	t0 = now_ns();
	for (int i = 0; i < STEADY; i++)
		KH_INPUT_UNITS(1);
	steady = (now_ns() - t0) / STEADY;
	/* Lazy events first: woken ones keep khprof busy sampling /proc for a while. */
	t0 = now_ns();
	for (int i = 0; i < EVENTS; i++)
		KH_IDENTITY("workload_class", "site-cost");
	lazy = (now_ns() - t0) / EVENTS;
	t0 = now_ns();
	for (int i = 0; i < EVENTS; i++)
		KH_TRANSITION(KH_STATE_SCANNING);
	woken = (now_ns() - t0) / EVENTS;
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	printf("first_hit_ns=%llu second_hit_ns=%llu steady_hit_ns=%llu woken_event_ns=%llu "
	       "lazy_event_ns=%llu\n", median(first, SITES), median(second, SITES), steady, woken,
	       lazy);
	return 0;
}
