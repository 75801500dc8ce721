// SPDX-License-Identifier: MIT
/*
 * libwall.so, preloaded (LD_PRELOAD) into a benchmarked program: the
 * program's own wall time, from this library's constructor (after the
 * dynamic loader, before main) to its destructor (after exit()'s atexit
 * handlers), so a tracer's start-up and teardown outside the process are
 * not in it.  Only the process whose short name is KH_WALL_PROG writes,
 * appending "own_wall_ns=N" to KH_WALL_OUT; every other process (the
 * tracer, which inherits LD_PRELOAD too) is left alone.
 *
 * KH_WALL_CPU=N pins that process to CPU N before it starts timing, so a
 * benchmark can keep the program on one CPU and its tracer on another
 * (pinning the command line would pin both, or trace only the pinning tool).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned long long start_ns;
static int active;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__attribute__((constructor)) static void wall_start(void)
{
	const char *prog = getenv("KH_WALL_PROG");

	const char *cpu = getenv("KH_WALL_CPU");

	active = prog && getenv("KH_WALL_OUT") && !strcmp(prog, program_invocation_short_name);
	if (!active)
		return;
	if (cpu) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(atoi(cpu), &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	start_ns = now_ns();
}

__attribute__((destructor)) static void wall_stop(void)
{
	unsigned long long elapsed;
	FILE *out;

	if (!active)
		return;
	elapsed = now_ns() - start_ns;
	out = fopen(getenv("KH_WALL_OUT"), "a");
	if (!out)
		return;
	fprintf(out, "own_wall_ns=%llu\n", elapsed);
	fclose(out);
}
