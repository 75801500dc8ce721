// SPDX-License-Identifier: MIT
/*
 * first_probe: the smallest traced program.  The first thing main does is
 * read CLOCK_MONOTONIC; it prints how long after KH_BENCH_T0 (set by
 * bench/launch) that was, and whether a tracer had its span probes live at
 * that instant (the USDT semaphore was already set).
 *
 *   attach_ns=D live=0|1
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "keyhog_profile.h"

int main(void)
{
	struct timespec ts;
	unsigned long long t1, t0;
	const char *env;
	int live;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	live = KH_TRACING() ? 1 : 0;
	t1 = ts.tv_sec * 1000000000ull + ts.tv_nsec;
	env = getenv("KH_BENCH_T0");
	t0 = env ? strtoull(env, NULL, 10) : t1;
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	{
		KH_SPAN_SCOPE(KH_STAGE_HOT_PATTERNS);
		KH_INPUT_UNITS(1);
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	printf("attach_ns=%llu live=%d\n", t1 - t0, live);
	return 0;
}
