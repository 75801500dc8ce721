// SPDX-License-Identifier: MIT
/*
 * Threads that end in waves, each with a partly filled batch buffer, in
 * every way a thread can end while its spans still belong to a session
 * (issue 29; tests/integration/tracing/test_soak.c).  Built like an
 * outside program: only include/keyhog_profile.h, with -fexceptions so
 * that pthread_exit unwinds through KH_SPAN_SCOPE's cleanups, as a C++
 * exception would.
 *
 *   waves SESSIONS WAVES THREADS ITERATIONS
 *
 * Each session runs WAVES waves of THREADS threads; thread i of a wave runs
 * ITERATIONS + (37 i mod 100) iterations of one hot-patterns span and one
 * entropy span (10 input bytes an iteration, 1 input unit a thread), so
 * that threads end with their buffers filled to different depths.  Wave w
 * of session s ends its threads in shape (s * WAVES + w) mod 5:
 *
 *   0 joined     pthread_join, which waits for the key destructor's flush
 *   1 signalled  detached threads that signal their end and return: the
 *                main thread goes on while their key destructors run
 *   2 pooled     jobs for a pool of THREADS workers that lives across the
 *                sessions: idle, they keep their buffers across a session's
 *                end; the pool drops (its workers end, unjoined) after the
 *                last session
 *   3 racing     detached threads that signal, then wait for a release that
 *                the main thread gives just before it finishes the session:
 *                they end while it finishes
 *   4 unwound    detached threads whose last entropy span is left by
 *                pthread_exit, unwinding through the span's scope
 *
 * Then the main thread runs ITERATIONS decode spans, attributed decoded,
 * and finishes the session.  Every span completed before the session
 * event that follows it (the threads signal only after their last one),
 * so the record of each session must hold exactly what it printed:
 *
 *   session S hot-patterns=N entropy=N decode=N input_bytes=N input_units=N
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyhog_profile.h"

#define SHAPES 5

struct counts {
	unsigned long long hot, entropy, decode, bytes, units;
};

/* What the threads of the current wave report done, and shape 3's releases. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static long done, releases;

/* The pool of shape 2: jobs of ITERATIONS each, taken by idle workers. */
static long jobs_queued, jobs_done, pool_started, pool_closing;
static long job_iterations[64];

static void burn(volatile unsigned long *x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		*x = *x * 6364136223846793005ull + i;
}

static void iteration(void)
{
	volatile unsigned long x = 0;

	KH_INPUT_BYTES(10);
	{
		KH_SPAN_SCOPE(KH_STAGE_HOT_PATTERNS);
		burn(&x, 20);
	}
	{
		KH_SPAN_SCOPE(KH_STAGE_ENTROPY);
		burn(&x, 20);
	}
}

static void signal_done(void)
{
	pthread_mutex_lock(&lock);
	done++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

static void wait_done(long n)
{
	pthread_mutex_lock(&lock);
	while (done < n)
		pthread_cond_wait(&changed, &lock);
	pthread_mutex_unlock(&lock);
}

struct worker {
	int shape;
	long iterations;
	long release; /* shape 3: ends once releases passes it */
};

/* Runs after the span scopes of the same function, the unwound one's too. */
static void done_at_exit(int *unused)
{
	(void)unused;
	signal_done();
}

static void *unwound(long iterations)
{
	int signal __attribute__((cleanup(done_at_exit), unused)) = 0;
	volatile unsigned long x = 0;

	for (long i = 0; i + 1 < iterations; i++)
		iteration();
	KH_INPUT_BYTES(10);
	{
		KH_SPAN_SCOPE(KH_STAGE_HOT_PATTERNS);
		burn(&x, 20);
	}
	KH_INPUT_UNITS(1);
	{
		KH_SPAN_SCOPE(KH_STAGE_ENTROPY);
		burn(&x, 20);
		pthread_exit(NULL);
	}
	return NULL;
}

static void *wave_thread(void *arg)
{
	struct worker *w = arg;
	long iterations = w->iterations, release = w->release;
	int shape = w->shape;

	free(w);
	if (shape == 4)
		return unwound(iterations);
	for (long i = 0; i < iterations; i++)
		iteration();
	KH_INPUT_UNITS(1);
	if (shape == 1 || shape == 3)
		signal_done();
	if (shape == 3) {
		pthread_mutex_lock(&lock);
		while (releases <= release)
			pthread_cond_wait(&changed, &lock);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void *pool_worker(void *arg)
{
	(void)arg;
	for (;;) {
		long iterations;

		pthread_mutex_lock(&lock);
		while (!jobs_queued && !pool_closing)
			pthread_cond_wait(&changed, &lock);
		if (!jobs_queued) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		iterations = job_iterations[--jobs_queued];
		pthread_mutex_unlock(&lock);
		for (long i = 0; i < iterations; i++)
			iteration();
		KH_INPUT_UNITS(1);
		pthread_mutex_lock(&lock);
		jobs_done++;
		pthread_cond_broadcast(&changed);
		pthread_mutex_unlock(&lock);
	}
}

static int start_detached(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t t;
	int err;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return err;
}

/* One wave; adds what it ran to *c.  Shape 3's threads wait for release_racers(). */
static int wave(int shape, long threads, long iterations, struct counts *c)
{
	pthread_t joined[64];

	long release;

	pthread_mutex_lock(&lock);
	done = 0;
	release = releases;
	pthread_mutex_unlock(&lock);
	for (long i = 0; i < threads; i++) {
		long n = iterations + (37 * i) % 100;

		c->hot += n;
		c->entropy += n;
		c->bytes += 10 * n;
		c->units += 1;
		if (shape == 2) {
			pthread_mutex_lock(&lock);
			job_iterations[jobs_queued++] = n;
			pthread_cond_broadcast(&changed);
			pthread_mutex_unlock(&lock);
			continue;
		}
		struct worker *w = malloc(sizeof(*w));

		if (!w)
			return -1;
		w->shape = shape;
		w->iterations = n;
		w->release = release;
		if (shape == 0 ? pthread_create(&joined[i], NULL, wave_thread, w)
			       : start_detached(wave_thread, w)) {
			free(w);
			return -1;
		}
	}
	if (shape == 0) {
		for (long i = 0; i < threads; i++)
			pthread_join(joined[i], NULL);
	} else if (shape == 2) {
		pthread_mutex_lock(&lock);
		while (jobs_done < threads)
			pthread_cond_wait(&changed, &lock);
		jobs_done = 0;
		pthread_mutex_unlock(&lock);
	} else {
		wait_done(threads);
	}
	return 0;
}

static void release_racers(void)
{
	pthread_mutex_lock(&lock);
	releases++;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

int main(int argc, char **argv)
{
	long sessions, waves, threads, iterations;

	if (argc != 5) {
		fprintf(stderr, "usage: waves SESSIONS WAVES THREADS ITERATIONS\n");
		return 2;
	}
	sessions = atol(argv[1]);
	waves = atol(argv[2]);
	threads = atol(argv[3]);
	iterations = atol(argv[4]);
	if (sessions < 1 || waves < 1 || threads < 1 || threads > 64 || iterations < 1) {
		fprintf(stderr, "waves: SESSIONS, WAVES and ITERATIONS at least 1, THREADS 1 to 64\n");
		return 2;
	}
	for (long s = 0; s < sessions; s++) {
		struct counts c = { 0 };
		enum kh_attribution prev;

		KH_SESSION_START();
		KH_IDENTITY("binary_version", "waves 1.0");
		KH_TRANSITION(KH_STATE_SCANNING);
		for (long w = 0; w < waves; w++) {
			int shape = (int)((s * waves + w) % SHAPES);

			if (shape == 2 && !pool_started) {
				for (long i = 0; i < threads; i++)
					if (start_detached(pool_worker, NULL))
						return 1;
				pool_started = 1;
			}
			if (wave(shape, threads, iterations, &c))
				return 1;
		}
		prev = kh_set_attribution(KH_ATTRIBUTION_DECODED);
		for (long i = 0; i < iterations; i++) {
			volatile unsigned long x = 0;

			KH_SPAN_SCOPE(KH_STAGE_DECODE);
			burn(&x, 20);
			c.decode++;
		}
		kh_set_attribution(prev);
		release_racers();
		KH_SESSION_FINISH(KH_STATE_COMPLETED);
		printf("session %ld hot-patterns=%llu entropy=%llu decode=%llu input_bytes=%llu "
		       "input_units=%llu\n", s, c.hot, c.entropy, c.decode, c.bytes, c.units);
	}
	/* The pool drops: its workers end, unjoined, while the process exits. */
	pthread_mutex_lock(&lock);
	pool_closing = 1;
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
	return 0;
}
