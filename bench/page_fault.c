// SPDX-License-Identifier: MIT
/*
 * page_fault MIB ROUNDS: touches MIB of fresh anonymous memory one page at
 * a time, ROUNDS times, and prints the fastest round's cost per page fault
 * as "ns_per_fault=N".  bench/run.sh row 8 runs it untraced and under
 * khprof, whose rss_stat watcher (bpf/khprof.bpf.c) runs at every RSS
 * change of the traced process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	size_t len, page = (size_t)sysconf(_SC_PAGESIZE);
	double best = 0;
	int rounds;

	if (argc != 3 || atoi(argv[1]) <= 0 || atoi(argv[2]) <= 0) {
		fprintf(stderr, "usage: page_fault MIB ROUNDS\n");
		return 2;
	}
	len = (size_t)atoi(argv[1]) << 20;
	rounds = atoi(argv[2]);
	for (int r = 0; r < rounds; r++) {
		volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		double t0, t;

		if (p == MAP_FAILED) {
			perror("page_fault: mmap");
			return 1;
		}
		madvise((void *)p, len, MADV_NOHUGEPAGE); /* one fault per page */
		t0 = now_ns();
		for (size_t i = 0; i < len; i += page)
			p[i] = 1;
		t = now_ns() - t0;
		if (r == 0 || t < best)
			best = t;
		munmap((void *)p, len);
	}
	printf("ns_per_fault=%.1f\n", best / (double)(len / page));
	return 0;
}
