// SPDX-License-Identifier: MIT
/*
 * Traced workload for tests/integration/tracing/test_stacks.c (khprof --sample),
 * built like an outside program: only include/keyhog_profile.h, with
 * frame pointers.  Its stages spend their CPU in known functions in known
 * proportions:
 *
 *   phase1-triggers  work_alpha and work_beta, 3:1 (an explicit span)
 *   decode           work_gamma alone (a scoped span, attribution decoded)
 *   (no stage)       work_delta, between the spans
 *
 *   stackwork ROUNDS [late-thread|exit|wait]
 *   prints "own_wall_ns=N cpu_ns=N" at the end (make bench row 11)
 *     late-thread: a thread started after the session began does the
 *             rounds, the main thread waits for it; exit: the program
 *             exits from inside a decode span half-way, without finishing
 *             its session; wait: prints "ready", waits for a line on stdin
 *             (a tracer attaching meanwhile), then as late-thread
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keyhog_profile.h"
#include "spin.h"

#define UNIT 200000ull

__attribute__((noinline, noipa)) void work_alpha(uint64_t n) { SPIN(n, 6364136223846793005ull); }
__attribute__((noinline, noipa)) void work_beta(uint64_t n) { SPIN(n, 2862933555777941757ull); }
__attribute__((noinline, noipa)) void work_gamma(uint64_t n) { SPIN(n, 3202034522624059733ull); }
__attribute__((noinline, noipa)) void work_delta(uint64_t n) { SPIN(n, 1181783497276652981ull); }

static unsigned rounds;
static int exit_mid_run;

__attribute__((noinline, noipa)) static void one_round(unsigned r)
{
	enum kh_attribution prev;

	KH_SPAN_ENTER(KH_STAGE_PHASE1_TRIGGERS);
	work_alpha(3 * UNIT);
	work_beta(UNIT);
	KH_SPAN_EXIT(KH_STAGE_PHASE1_TRIGGERS);
	/* Decoded around the whole span: every decode sample is decoded. */
	prev = kh_set_attribution(KH_ATTRIBUTION_DECODED);
	{
		KH_SPAN_SCOPE(KH_STAGE_DECODE);

		work_gamma(2 * UNIT);
		if (exit_mid_run && r == rounds / 2)
			exit(0); /* no session finish: the record ends with the process */
	}
	kh_set_attribution(prev);
	work_delta(UNIT);
}

static void *worker(void *unused)
{
	(void)unused;
	for (unsigned r = 0; r < rounds; r++)
		one_round(r);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t thread;
	struct timespec t0, t1, cpu;
	int threaded, waits;
	char line[16];

	if (argc < 2) {
		fprintf(stderr, "usage: stackwork ROUNDS [late-thread|exit|wait]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rounds = (unsigned)strtoul(argv[1], NULL, 10);
	waits = argc > 2 && !strcmp(argv[2], "wait");
	threaded = waits || (argc > 2 && !strcmp(argv[2], "late-thread"));
	exit_mid_run = argc > 2 && !strcmp(argv[2], "exit");
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	if (waits) {
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	if (threaded) {
		if (pthread_create(&thread, NULL, worker, NULL) || pthread_join(thread, NULL))
			return 1;
	} else {
		worker(NULL);
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	printf("own_wall_ns=%lld cpu_ns=%lld\n",
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec),
	       (long long)cpu.tv_sec * 1000000000ll + cpu.tv_nsec);
	return 0;
}
