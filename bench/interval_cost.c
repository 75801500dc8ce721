// SPDX-License-Identifier: MIT
/*
 * What one --interval sample costs khprof (bench/run.sh, row 7): the work
 * tracer__sample_due() does per open session, timed in a loop.  A per-CPU
 * array map with the kernel's slot layout stands in for the loaded one (the same
 * lookup syscall over the same bytes), and /proc is sampled from a live
 * process, so the figure is khprof's CPU time per sample.  The traced
 * program does nothing for a sample; its cost is the span cost of row 2.
 *
 *   interval_cost PID [ITERATIONS]   prints "<µs per sample> <µs map> <µs proc>"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "procfs.h"
#include "session.h"
#include "slots.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	pid_t pid = argc > 1 ? (pid_t)atoi(argv[1]) : getpid();
	long n = argc > 2 ? atol(argv[2]) : 20000;
	int ncpus = libbpf_num_possible_cpus();
	struct session_config cfg = { .pid = pid, .interval_ns = 1000, .page_size = 4096 };
	struct session_table tbl;
	struct kh_slot_stats running;
	struct kh_resource_snapshot snap;
	struct kh_event start;
	double t0, t_map, t_proc, t_all;
	int fd;

	fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "kh_bench_slots", sizeof(uint32_t),
			    sizeof(struct kh_slot_stats), KH_SLOT_MAP_ENTRIES, NULL);
	if (fd < 0 || ncpus <= 0) {
		perror("interval_cost: cannot create the per-CPU map (run as root)");
		return 1;
	}
	t0 = now_us();
	for (long i = 0; i < n; i++)
		slots__read(fd, ncpus, 1, &running, false);
	t_map = (now_us() - t0) / n;
	t0 = now_us();
	for (long i = 0; i < n; i++)
		procfs__sample(pid, &snap);
	t_proc = (now_us() - t0) / n;

	/* The whole sample as the tracer does it, into a real session's series. */
	sessions__init(&tbl, &cfg);
	memset(&start, 0, sizeof(start));
	start.type = KH_EVENT_SESSION_START;
	start.slot = 1;
	start.ts_ns = 1;
	sessions__start(&tbl, &start);
	t0 = now_us();
	for (long i = 0; i < n; i++) {
		slots__read(fd, ncpus, 1, &running, false);
		sessions__sample(&tbl, 1, 1000 * (uint64_t)(i + 2), &running);
	}
	t_all = (now_us() - t0) / n;
	printf("%.2f %.2f %.2f\n", t_all, t_map, t_proc);
	sessions__free(&tbl);
	close(fd);
	return 0;
}
