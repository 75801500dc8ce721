// SPDX-License-Identifier: MIT
/*
 * switch_cost N: two threads pinned to one CPU hand a byte back and forth
 * through two pipes N times, so that every hand-over is a context switch
 * (with a blocking read on each side).  Prints ns_per_switch=X, the
 * median over 5 rounds of the round trip's time / 2.  Row 7 of
 * bench/run.sh runs it untraced, traced by khprof (the sched_switch and
 * sched_wakeup programs log each switch), and untraced while khprof traces
 * another process (the filter every other process pays).
 *
 * switch_cost N spans: each blocking read is a scanner-queue-wait span, as
 * a scanner's wait on its queue: every span switches out once, so every
 * batch of them takes the off-CPU pass, which places each span among the
 * thread's logged switches (bpf/latency.bpf.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keyhog_profile.h"

static int ping[2], pong[2];
static long rounds;
static int spans;

/* A blocking read of one byte, a queue-wait span with `spans`. */
static int wait_byte(int fd, char *c)
{
	if (spans) {
		KH_SPAN_SCOPE(KH_STAGE_SCANNER_QUEUE_WAIT);
		return read(fd, c, 1) == 1;
	}
	return read(fd, c, 1) == 1;
}

static void pin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *echo(void *arg)
{
	char c;

	(void)arg;
	pin();
	for (long i = 0; i < rounds; i++)
		if (!wait_byte(ping[0], &c) || write(pong[1], &c, 1) != 1)
			break;
	return NULL;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	double r[5];

	rounds = argc > 1 ? atol(argv[1]) : 20000;
	spans = argc > 2 && !strcmp(argv[2], "spans");
	pin();
	KH_SESSION_START(); /* probes, so that khprof traces this process */
	for (int k = 0; k < 5; k++) {
		pthread_t t;
		double t0;
		char c = 'x';

		if (pipe(ping) || pipe(pong))
			return 1;
		pthread_create(&t, NULL, echo, NULL);
		t0 = now_ns();
		for (long i = 0; i < rounds; i++)
			if (write(ping[1], &c, 1) != 1 || !wait_byte(pong[0], &c))
				return 1;
		r[k] = (now_ns() - t0) / rounds / 2;
		pthread_join(t, NULL);
		close(ping[0]);
		close(ping[1]);
		close(pong[0]);
		close(pong[1]);
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	qsort(r, 5, sizeof(r[0]), cmp);
	printf("ns_per_switch=%.1f\n", r[2]);
	return 0;
}
