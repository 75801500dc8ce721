// SPDX-License-Identifier: MIT
/*
 * What khprof's stops cost a program (docs/PROBES.md, "When khprof cannot
 * let go"): a loop of the operations khprof stops a process for, timed by
 * the program itself, to run untraced and under `khprof record`.
 *
 *   stop_cost forks N     N times: fork a child that runs one span on the
 *                         site its parent made hot, and wait for it (each
 *                         child is stopped at its fork and made safe where
 *                         khprof stops the forks it does not follow)
 *   stop_cost dlopens N   N times: dlopen libkhplugin.so and dlclose it
 *                         (two loader stops under record: the map after
 *                         each change), with build/workloads on
 *                         LD_LIBRARY_PATH
 *
 * Prints "per_op_us=X" (wall time of the loop / N).  Built by hand:
 *   gcc -O2 -Iinclude -o build/stop_cost bench/stop_cost.c -ldl
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keyhog_profile.h"

static volatile unsigned long sink;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void span(void)
{
	KH_SPAN_SCOPE(KH_STAGE_DECODE);
	sink++;
}

static int forks(long n)
{
	for (long i = 0; i < n; i++) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			span();
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			return 1;
	}
	return 0;
}

static int dlopens(long n)
{
	for (long i = 0; i < n; i++) {
		void *h = dlopen("libkhplugin.so", RTLD_NOW | RTLD_LOCAL);

		if (!h) {
			fprintf(stderr, "stop_cost: %s\n", dlerror());
			return 1;
		}
		dlclose(h);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc == 3 ? atol(argv[2]) : 0;
	double begin;
	int err;

	if (n <= 0 || (strcmp(argv[1], "forks") && strcmp(argv[1], "dlopens"))) {
		fprintf(stderr, "usage: stop_cost forks|dlopens N\n");
		return 2;
	}
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	for (int i = 0; i < 1000; i++)
		span(); /* the sites hot, as a scanner's are */
	begin = now_us();
	err = !strcmp(argv[1], "forks") ? forks(n) : dlopens(n);
	printf("per_op_us=%.1f\n", (now_us() - begin) / (double)n);
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	return err;
}
