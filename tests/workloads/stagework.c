// SPDX-License-Identifier: MIT
/*
 * stagework: a scanner-shaped program whose stages cost known amounts of
 * work, for judging `khprof diff`'s verdicts (bench/verdict, and the
 * contended-runner test of tests/integration/commands/test_verdict.c).
 * Built like an outside program: only include/keyhog_profile.h.
 *
 *   stagework single UNITS [STAGE=FACTOR]...
 *   stagework threads UNITS [STAGE=FACTOR]...
 *
 * single: one thread; each unit runs source-read (a little work, and every
 * fourth unit a 200 us sleep first: a blocking stage, as a read that
 * misses the page cache), then phase1-triggers, hot-patterns, entropy,
 * decode (attributed to decoded content) and suppression (compute stages).
 * threads: two workers take units from a shared counter and run the same
 * stages, then merge each unit's result under a lock (result-merge: a
 * little work, and blocked while the other worker holds the lock).
 *
 * A compute stage's cost is a number of iterations of a loop over a
 * thread's 64 KiB buffer: fixed work, not a fixed time, so that a slower
 * CPU or a cache another process used shows as it would in a real
 * program.  STAGE=FACTOR multiplies one stage's iterations (decode=1.1:
 * 10 % more work; entropy=0.5: twice as fast), as a code change would.
 * Prints "units=N" and the iterations each stage ran.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keyhog_profile.h"

#define BUFFER_WORDS (64 * 1024 / 8)
#define QUEUE_SLOTS 8
#define SLEEP_NS 200000L
#define SLEEP_EVERY 4 /* units */

/* Iterations per unit of each stage at factor 1 (about 1 ns each here). */
static const struct {
	enum kh_stage stage;
	const char *name;
	uint64_t iterations;
} costs[] = {
	{ KH_STAGE_SOURCE_READ, "source-read", 10000 },
	{ KH_STAGE_PHASE1_TRIGGERS, "phase1-triggers", 120000 },
	{ KH_STAGE_HOT_PATTERNS, "hot-patterns", 25000 },
	{ KH_STAGE_ENTROPY, "entropy", 15000 },
	{ KH_STAGE_DECODE, "decode", 60000 },
	{ KH_STAGE_SUPPRESSION, "suppression", 20000 },
	{ KH_STAGE_RESULT_MERGE, "result-merge", 3000 }, /* threads: under a lock */
};
#define STAGES (sizeof(costs) / sizeof(costs[0]))

static uint64_t iterations[STAGES];

/* Fixed work the compiler cannot remove: a xorshift walk over the buffer. */
static uint64_t work(uint64_t *buf, uint64_t n, uint64_t x)
{
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[x % BUFFER_WORDS] += x;
	}
	return x;
}

static uint64_t stage(size_t s, uint64_t *buf, uint64_t x)
{
	KH_SPAN_SCOPE(costs[s].stage);
	return work(buf, iterations[s], x);
}

static uint64_t read_unit(uint64_t *buf, long unit, uint64_t x)
{
	struct timespec ts = { 0, SLEEP_NS };

	KH_SPAN_SCOPE(KH_STAGE_SOURCE_READ);
	while (unit % SLEEP_EVERY == 0 && nanosleep(&ts, &ts) && errno == EINTR)
		;
	KH_INPUT_BYTES(4096);
	KH_INPUT_UNITS(1);
	return work(buf, iterations[0], x);
}

static uint64_t scan_unit(uint64_t *buf, uint64_t x)
{
	enum kh_attribution previous;

	x = stage(1, buf, x);
	x = stage(2, buf, x);
	x = stage(3, buf, x);
	previous = kh_set_attribution(KH_ATTRIBUTION_DECODED);
	x = stage(4, buf, x);
	kh_set_attribution(previous);
	return stage(5, buf, x);
}

static void identity(const char *mode, const char *threads)
{
	char class[64];

	snprintf(class, sizeof(class), "stagework-%s", mode);
	KH_IDENTITY("binary_version", "stagework 1.0");
	KH_IDENTITY("detector_digest", "det-stagework");
	KH_IDENTITY("config_digest", "cfg-stagework");
	KH_IDENTITY("source_kind", "synthetic");
	KH_IDENTITY("workload_class", class);
	KH_IDENTITY("backend_requested", "auto");
	KH_IDENTITY("backend_selected", "cpu");
	KH_IDENTITY("cache_state", "warm");
	KH_IDENTITY("scanner_threads", threads);
	KH_IDENTITY("reader_threads", "1");
}

/* --- two workers: units from a shared counter, results merged under a lock -- */

static long units;
static atomic_long next_unit;
static pthread_mutex_t results = PTHREAD_MUTEX_INITIALIZER;
static uint64_t merged;

static void *worker(void *arg)
{
	uint64_t *buf = calloc(BUFFER_WORDS, sizeof(*buf)), x = (uintptr_t)arg;
	long unit;

	if (!buf)
		abort();
	while ((unit = atomic_fetch_add(&next_unit, 1)) < units) {
		x = scan_unit(buf, read_unit(buf, unit, x + (uint64_t)unit));
		{
			/* Blocks while the other worker holds the lock: waiting on the program. */
			KH_SPAN_SCOPE(KH_STAGE_RESULT_MERGE);
			pthread_mutex_lock(&results);
			merged ^= work(buf, iterations[6], x);
			pthread_mutex_unlock(&results);
		}
	}
	free(buf);
	return NULL;
}

static int parse_factor(const char *arg)
{
	const char *eq = strchr(arg, '=');
	char *end;
	double f;

	for (size_t s = 0; eq && s < STAGES; s++) {
		if (strlen(costs[s].name) != (size_t)(eq - arg) ||
		    strncmp(arg, costs[s].name, (size_t)(eq - arg)))
			continue;
		f = strtod(eq + 1, &end);
		if (*end || !(f > 0 && f < 100))
			break;
		iterations[s] = (uint64_t)((double)costs[s].iterations * f + 0.5);
		return 0;
	}
	fprintf(stderr, "stagework: bad STAGE=FACTOR '%s'\n", arg);
	return -1;
}

int main(int argc, char **argv)
{
	uint64_t x = 1, *buf;
	int threads;

	if (argc < 3 || (strcmp(argv[1], "single") && strcmp(argv[1], "threads"))) {
		fprintf(stderr, "usage: stagework single|threads UNITS [STAGE=FACTOR]...\n");
		return 2;
	}
	threads = !strcmp(argv[1], "threads");
	units = atol(argv[2]);
	for (size_t s = 0; s < STAGES; s++)
		iterations[s] = costs[s].iterations;
	for (int i = 3; i < argc; i++)
		if (parse_factor(argv[i]))
			return 2;
	buf = calloc(BUFFER_WORDS, sizeof(*buf));
	if (!buf || units <= 0)
		return 2;

	KH_SESSION_START();
	identity(argv[1], threads ? "2" : "1");
	KH_TRANSITION(KH_STATE_SCANNING);
	if (threads) {
		pthread_t w[2];

		for (int i = 0; i < 2; i++)
			pthread_create(&w[i], NULL, worker, (void *)(uintptr_t)(i + 2));
		for (int i = 0; i < 2; i++)
			pthread_join(w[i], NULL);
		x ^= merged;
	} else {
		for (long u = 0; u < units; u++)
			x = scan_unit(buf, read_unit(buf, u, x + (uint64_t)u));
	}
	KH_TRANSITION(KH_STATE_REPORTING);
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	printf("units=%ld checksum=%llx\n", units, (unsigned long long)x);
	for (size_t s = 0; s < STAGES - !threads; s++)
		printf("%s=%llu\n", costs[s].name, (unsigned long long)iterations[s]);
	free(buf);
	return 0;
}
