// SPDX-License-Identifier: MIT
/*
 * Traced workload for the fault matrix (tests/integration/tracing/test_faults.c),
 * built like an outside program: only include/keyhog_profile.h.  Every
 * scenario opens a session, runs DECODE spans and ends in its own way; the
 * program writes how many spans it completed, and the input it counted, to
 * COUNTS (a file, rewritten after each span) so that the test can compare
 * khprof's record with what the program itself knew before it died.  The
 * scenarios that end the process at once from its main thread (_exit,
 * segv, abort, sigkill, exec) then add a second line, the program's own CPU time
 * (CLOCK_PROCESS_CPUTIME_ID, ns) and resident pages (/proc/self/statm)
 * read just before the end, for the sample khprof takes there.
 *
 *   faults SCENARIO COUNTS N
 *
 *   exit         N spans, exit(0) inside the session
 *   _exit        N spans, _exit(3)
 *   thread_exit_group  a second thread runs the N spans, then _exit(4)
 *   segv         N spans, then a SIGSEGV
 *   thread_segv  N spans in each of two threads, then a SIGSEGV in the second
 *   abort        N spans, then abort()
 *   sigkill      N spans, then SIGKILL to itself
 *   exec         N spans, then execve("/bin/true")
 *   exec_fails   N spans, a failing execve, N more spans, a finished session
 *   thread_dies  a thread runs N spans and ends with the raw exit syscall
 *                (no thread-exit handler) while the main thread goes on
 *                and finishes the session
 *   wait         for attach and outside kills: prints "ready PID", then
 *                "spans K" after each span and waits for a line on stdin
 *                before the next; EOF ends the session and the program
 *   twice        N spans, a second KH_SESSION_START, N spans, finish
 *   bare_segv    N spans without any session probe, then a SIGSEGV
 *   unseen       as if batches were lost on the way to khprof: each of three
 *                threads runs N spans and numbers more spans as handed over
 *                than it handed over (probe ABI 7, flushed_spans): 7 on the
 *                main thread, which runs N more and finishes the session, 5
 *                on a thread that then ends, 3 on one that ends with the raw
 *                exit syscall; batch mode counts 15 unseen
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "keyhog_profile.h"

#define INPUT_PER_SPAN 10

static int counts_fd = -1;
static atomic_long spans_done;
static long spans_per_thread;

static pthread_mutex_t counts_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Rewrites COUNTS with the spans completed so far; the test reads the last.
 * Under a lock: two threads' writes could land in the other order, and
 * the file then said 11 of 20 spans (seen on the 7.3 guest).
 */
static void note_span(void)
{
	char text[64];
	long done;
	int len;

	pthread_mutex_lock(&counts_lock);
	done = atomic_fetch_add(&spans_done, 1) + 1;
	len = snprintf(text, sizeof(text), "%020ld %020ld\n", done, done * INPUT_PER_SPAN);
	if (pwrite(counts_fd, text, (size_t)len, 0) != len)
		_exit(120);
	pthread_mutex_unlock(&counts_lock);
}

/*
 * The process as it is about to end, on COUNTS's second line.  Every page
 * it maps is made resident first (mlockall), so that the way out (abort's
 * and execve's libc code, the fault) touches no new page after the read:
 * without it the end found 1-3 pages more here.  CPU time is read last.
 */
static void note_truth(void)
{
	char text[64], statm[128];
	long size = 0, resident = 0;
	struct timespec cpu;
	ssize_t n;
	int fd, len;

	mlockall(MCL_CURRENT);
	fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, statm, sizeof(statm) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0 || (statm[n] = 0, sscanf(statm, "%ld %ld", &size, &resident) != 2))
		_exit(121);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	len = snprintf(text, sizeof(text), "%020lld %020ld\n",
		       (long long)cpu.tv_sec * 1000000000ll + cpu.tv_nsec, resident);
	if (pwrite(counts_fd, text, (size_t)len, 42) != len)
		_exit(120);
}

static void burn(void)
{
	volatile unsigned long x = 0;

	for (int i = 0; i < 20000; i++)
		x += (unsigned long)i * 7;
}

static void spans(long n)
{
	for (long i = 0; i < n; i++) {
		KH_SPAN_ENTER(KH_STAGE_DECODE);
		burn();
		KH_INPUT_BYTES(INPUT_PER_SPAN);
		KH_SPAN_EXIT(KH_STAGE_DECODE);
		note_span();
	}
}

static void begin(void)
{
	KH_SESSION_START();
	KH_IDENTITY("binary_version", "faults 1.0");
	KH_TRANSITION(KH_STATE_SCANNING);
}

static void *worker_exit_group(void *unused)
{
	(void)unused;
	spans(spans_per_thread);
	_exit(4);
}

static pthread_barrier_t both_done;

/* A real fault, not raise(): the kernel sends SIGSEGV from the faulting thread. */
static void fault(void)
{
	static volatile int *volatile nowhere;

	*nowhere = 1;
}

static void *worker_segv(void *unused)
{
	(void)unused;
	spans(spans_per_thread);
	pthread_barrier_wait(&both_done);
	fault();
	return NULL;
}

static void *worker_dies(void *unused)
{
	(void)unused;
	spans(spans_per_thread);
	syscall(SYS_exit, 0);
	return NULL;
}

/* unseen's threads: N spans, then a gap of `lost` in their numbering. */
static void lose_spans(long lost)
{
#if KH_PROBES_ENABLED
	kh_thread_state7.flushed_spans += (uint64_t)lost;
#else
	(void)lost;
#endif
}

static void *worker_unseen(void *lost)
{
	spans(spans_per_thread);
	lose_spans((long)lost);
	return NULL;
}

static void *worker_unseen_dies(void *lost)
{
	spans(spans_per_thread);
	lose_spans((long)lost);
	syscall(SYS_exit, 0);
	return NULL;
}

static int wait_loop(void)
{
	char line[16];
	long k = 0;

	begin();
	printf("ready %d\n", (int)getpid());
	for (;;) {
		spans(1);
		printf("spans %ld\n", ++k);
		if (!fgets(line, sizeof(line), stdin))
			break;
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	return 0;
}

int main(int argc, char **argv)
{
	const char *scenario = argc > 1 ? argv[1] : "";
	pthread_t thread;

	if (argc < 4) {
		fprintf(stderr, "usage: faults SCENARIO COUNTS N\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	counts_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (counts_fd < 0)
		return 2;
	spans_per_thread = atol(argv[3]);
	if (!strcmp(scenario, "wait"))
		return wait_loop();
	if (!strcmp(scenario, "bare_segv")) {
		spans(spans_per_thread);
		fault();
		return 1;
	}
	begin();
	if (!strcmp(scenario, "thread_exit_group")) {
		pthread_create(&thread, NULL, worker_exit_group, NULL);
		pthread_join(thread, NULL);
		return 1; /* not reached: the worker ends the process */
	}
	if (!strcmp(scenario, "thread_segv")) {
		pthread_barrier_init(&both_done, NULL, 2);
		pthread_create(&thread, NULL, worker_segv, NULL);
		spans(spans_per_thread);
		pthread_barrier_wait(&both_done);
		pthread_join(thread, NULL);
		return 1;
	}
	if (!strcmp(scenario, "unseen")) {
		spans(spans_per_thread);
		lose_spans(7);
		pthread_create(&thread, NULL, worker_unseen, (void *)5L);
		pthread_join(thread, NULL);
		pthread_create(&thread, NULL, worker_unseen_dies, (void *)3L);
		pthread_join(thread, NULL);
		spans(spans_per_thread);
		KH_SESSION_FINISH(KH_STATE_COMPLETED);
		return 0;
	}
	if (!strcmp(scenario, "thread_dies")) {
		pthread_create(&thread, NULL, worker_dies, NULL);
		pthread_join(thread, NULL);
		KH_SESSION_FINISH(KH_STATE_COMPLETED);
		return 0;
	}
	spans(spans_per_thread);
	if (!strcmp(scenario, "_exit") || !strcmp(scenario, "segv") || !strcmp(scenario, "abort") ||
	    !strcmp(scenario, "sigkill") || !strcmp(scenario, "exec"))
		note_truth();
	if (!strcmp(scenario, "exit"))
		exit(0);
	if (!strcmp(scenario, "_exit"))
		_exit(3);
	if (!strcmp(scenario, "segv"))
		fault();
	if (!strcmp(scenario, "abort"))
		abort();
	if (!strcmp(scenario, "sigkill"))
		raise(SIGKILL);
	if (!strcmp(scenario, "exec"))
		execl("/bin/true", "true", (char *)NULL);
	if (!strcmp(scenario, "exec_fails")) {
		execl("/nonexistent/khprof-test", "x", (char *)NULL);
		spans(spans_per_thread);
		KH_SESSION_FINISH(KH_STATE_COMPLETED);
		return 0;
	}
	if (!strcmp(scenario, "twice")) {
		KH_SESSION_START();
		spans(spans_per_thread);
		KH_SESSION_FINISH(KH_STATE_COMPLETED);
		return 0;
	}
	fprintf(stderr, "faults: unknown scenario '%s'\n", scenario);
	return 2;
}
