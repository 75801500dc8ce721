// SPDX-License-Identifier: MIT
/*
 * host_scan: what attach --all's first look at a host costs, without
 * attaching to anything: every process in /proc checked for a mapped file
 * with keyhog probes (userspace/cmd/tracing/host_scan.c), cold (every
 * distinct file read) and again warm (each file's verdict remembered).
 * Prints processes=, instrumented=, files=, cold_ms=, warm_ms=
 * (bench/all-cost/run.sh, make bench row 14).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "host_scan.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static size_t scan(struct host_scan *s, size_t *processes)
{
	DIR *proc = opendir("/proc");
	struct dirent *d;
	size_t instrumented = 0;

	*processes = 0;
	while (proc && (d = readdir(proc))) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (*end || pid <= 0 || pid == getpid())
			continue;
		(*processes)++;
		instrumented += host_scan__running(s, (pid_t)pid);
	}
	if (proc)
		closedir(proc);
	return instrumented;
}

int main(void)
{
	struct host_scan *s = host_scan__new();
	size_t processes, instrumented;
	double t0, cold, warm;

	if (!s)
		return 1;
	t0 = now_ms();
	instrumented = scan(s, &processes);
	cold = now_ms() - t0;
	t0 = now_ms();
	scan(s, &processes);
	warm = now_ms() - t0;
	printf("processes=%zu instrumented=%zu files=%zu cold_ms=%.1f warm_ms=%.1f\n", processes,
	       instrumented, host_scan__files_read(s), cold, warm);
	host_scan__free(s);
	return 0;
}
