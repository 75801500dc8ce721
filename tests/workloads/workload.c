// SPDX-License-Identifier: MIT
/*
 * Traced workload for the integration tests, built like an outside program:
 * only include/keyhog_profile.h.  Each scenario prints what the program
 * itself knows (counts, its own clock measurements) on stdout so the tests
 * can compare khprof's record with it.
 *
 *   workload nested N          N x (hot-patterns { entropy x2 } ), decode attributed
 *   workload threads N         two threads, N spans each, input bytes/units
 *   workload sessions K        K sessions one after another
 *   workload timed US N        N spans of US microseconds each (own clock)
 *   workload library N         N spans inside the linked library, then N in a dlopen'ed one
 *   workload redzone N         leaf function with red-zone locals around probe sites
 *   workload serve             for attach: "ready", then one session per "session" line
 *                              (and "begin", "identity", "spans", "hist", "stages", "end":
 *                              see serve)
 *   workload nosession N       spans without any session probes
 *   workload straddle          one session, a span begun before its start and ended
 *                              in it, one inside it, one begun in it and ended after
 *                              its finish: the session's is the inside one alone
 *   workload deep N            one chain of N nested spans (deeper than the bounds)
 *   workload mix N             N spans: 99% of 10 us, 1% of 1 ms; own percentiles
 *   workload sleep N MS        N spans of 1 ms of work then a sleep of MS ms; own off-CPU
 *   workload compute N US      N spans of US us of work; own off-CPU
 *   workload sleep2 N MS       sleep N MS in two threads, one stage each
 *   workload migrate N US      as timed, but each span moves to another CPU half way;
 *                              also how many did and the clock the probes were asked for
 *   workload waits N           N scanner-queue-wait spans, each blocked once on a pipe
 *                              that a second thread fills, as a scanner waits on its queue
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keyhog_profile.h"

unsigned long khwork_burn(unsigned long iterations);
unsigned long khwork_entropy_span(unsigned long iterations);

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void identity(void)
{
	KH_IDENTITY("binary_version", "workload 1.0");
	KH_IDENTITY("detector_digest", "det-test");
	KH_IDENTITY("config_digest", "cfg-test");
	KH_IDENTITY("source_kind", "synthetic");
	KH_IDENTITY("workload_class", "integration");
	KH_IDENTITY("backend_requested", "auto");
	KH_IDENTITY("backend_selected", "cpu");
	KH_IDENTITY("cache_state", "cold");
	KH_IDENTITY("scanner_threads", "2");
	KH_IDENTITY("reader_threads", "1");
	KH_IDENTITY("scanner_threads", "4"); /* the latest value wins */
}

static int nested(long n)
{
	KH_SESSION_START();
	identity();
	KH_TRANSITION(KH_STATE_ACQUIRING);
	{
		KH_SPAN_SCOPE(KH_STAGE_SOURCE_WALK);
		khwork_burn(1000);
	}
	KH_TRANSITION(KH_STATE_SCANNING);
	for (long i = 0; i < n; i++) {
		enum kh_attribution previous;

		KH_INPUT_BYTES(4096);
		KH_INPUT_UNITS(1);
		KH_SPAN_ENTER(KH_STAGE_HOT_PATTERNS);
		for (int j = 0; j < 2; j++) {
			KH_SPAN_SCOPE(KH_STAGE_ENTROPY);
			khwork_burn(200);
		}
		KH_SPAN_EXIT(KH_STAGE_HOT_PATTERNS);
		previous = kh_set_attribution(KH_ATTRIBUTION_DECODED);
		{
			KH_SPAN_SCOPE(KH_STAGE_DECODE);
			khwork_burn(100);
		}
		kh_set_attribution(previous);
	}
	KH_TRANSITION(KH_STATE_REPORTING);
	{
		KH_SPAN_SCOPE(KH_STAGE_REPORTING);
		khwork_burn(1000);
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	printf("nested n=%ld pid=%d\n", n, (int)getpid());
	return 0;
}

static long spans_per_thread;

static void *thread_main(void *arg)
{
	long stage = (long)arg;

	for (long i = 0; i < spans_per_thread; i++) {
		KH_SPAN_SCOPE(stage);
		KH_INPUT_BYTES(10);
		khwork_burn(50);
	}
	KH_INPUT_UNITS(1);
	return NULL;
}

static int threads(long n)
{
	pthread_t a, b;

	spans_per_thread = n;
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	pthread_create(&a, NULL, thread_main, (void *)(long)KH_STAGE_HOT_PATTERNS);
	pthread_create(&b, NULL, thread_main, (void *)(long)KH_STAGE_GENERIC_DETECTION);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	return 0;
}

static int sessions(long k)
{
	for (long s = 0; s < k; s++) {
		char version[32];

		KH_SESSION_START();
		snprintf(version, sizeof(version), "session-%ld", s);
		KH_IDENTITY("binary_version", version);
		KH_TRANSITION(KH_STATE_SCANNING);
		for (long i = 0; i <= s; i++) {
			KH_SPAN_SCOPE(KH_STAGE_PREPROCESS);
			khwork_burn(100);
		}
		KH_SESSION_FINISH(s % 2 ? KH_STATE_FAILED : KH_STATE_COMPLETED);
	}
	return 0;
}

/* Spins until `us` microseconds have passed on the program's own clock. */
static unsigned long long spin_us(long us)
{
	unsigned long long start = now_ns(), end;

	do
		end = now_ns();
	while (end - start < (unsigned long long)us * 1000);
	return end - start;
}

/*
 * own_total_ns: the spans' time read inside the probes (after the enter,
 * before the exit); outer_total_ns: read outside them.  A span khprof
 * measured lies between the two, however loaded the machine.
 */
static int timed(long us, long n)
{
	unsigned long long own_total = 0, outer_total = 0;

	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	for (long i = 0; i < n; i++) {
		unsigned long long o0, t0, t1, o1;

		o0 = now_ns();
		KH_SPAN_ENTER(KH_STAGE_CONFIRMED_PATTERNS);
		t0 = now_ns();
		spin_us(us);
		t1 = now_ns();
		KH_SPAN_EXIT(KH_STAGE_CONFIRMED_PATTERNS);
		o1 = now_ns();
		own_total += t1 - t0;
		outer_total += o1 - o0;
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	printf("own_total_ns=%llu\nouter_total_ns=%llu\n", own_total, outer_total);
	return 0;
}

/* Pins the calling thread to one CPU; false when it may not run there. */
static int pin_to(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one) == 0;
}

/*
 * timed's spans, each entered on one CPU and left on another (the first
 * two this thread may run on, in turn each way), so that the span's two
 * clock readings come from different CPUs.  migrated: spans that did end
 * on another CPU (0 where only one is allowed).  monotonic_clock: whether
 * the probes were asked for CLOCK_MONOTONIC instead of the TSC while
 * traced (probe ABI 4's semaphore), read inside the first span.
 */
static int migrate(long n, long us)
{
	unsigned long long own_total = 0, outer_total = 0;
	int cpus[2] = { -1, -1 }, found = 0;
	unsigned int monotonic = 0;
	long migrated = 0;
	cpu_set_t allowed;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return 2;
	for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[found++] = c;
	if (found < 2)
		cpus[1] = cpus[0];
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	for (long i = 0; i < n; i++) {
		unsigned long long o0, t0, t1, o1;
		int from = cpus[i % 2], to = cpus[(i + 1) % 2], started;

		pin_to(from);
		o0 = now_ns();
		KH_SPAN_ENTER(KH_STAGE_CONFIRMED_PATTERNS);
		t0 = now_ns();
		started = sched_getcpu();
		if (i == 0)
			monotonic = keyhog_semaphores.s.monotonic;
		spin_us(us / 2);
		pin_to(to);
		spin_us(us - us / 2);
		migrated += sched_getcpu() != started;
		t1 = now_ns();
		KH_SPAN_EXIT(KH_STAGE_CONFIRMED_PATTERNS);
		o1 = now_ns();
		own_total += t1 - t0;
		outer_total += o1 - o0;
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	printf("own_total_ns=%llu\nouter_total_ns=%llu\nmigrated=%ld\nmonotonic_clock=%u\n",
	       own_total, outer_total, migrated, monotonic != 0);
	return 0;
}

static int library(long n, const char *plugin)
{
	unsigned long (*plugin_span)(unsigned long);
	void *handle;

	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	for (long i = 0; i < n; i++)
		khwork_entropy_span(100);
	handle = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		fprintf(stderr, "workload: cannot dlopen '%s': %s\n", plugin, dlerror());
		return 2;
	}
	plugin_span = (unsigned long (*)(unsigned long))dlsym(handle, "khwork_entropy_span");
	for (long i = 0; i < n; i++)
		plugin_span(100);
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	return 0;
}

/*
 * A leaf function keeping locals in the red zone below %rsp, with probe
 * sites between their stores and loads.  If a traced site wrote below %rsp
 * the result would change.
 */
__attribute__((noinline)) static long leaf(long a, long b)
{
	volatile long x = a * 3, y = b + 7;

	KH_INPUT_BYTES(1);
	x += y;
	KH_INPUT_UNITS(1);
	return x - y + b;
}

static int redzone(long n)
{
	long wrong = 0;

	KH_SESSION_START();
	for (long i = 0; i < n; i++)
		if (leaf(i, i ^ 0x5a5a) != i * 3 + (i ^ 0x5a5a))
			wrong++;
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	printf("wrong=%ld of %ld\n", wrong, n);
	return wrong ? 1 : 0;
}

static void serve_hist(void);
static void serve_stages(void);

static int serve(void)
{
	char line[64];

	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (strncmp(line, "session", 7) == 0) {
			nested(10);
		} else if (strncmp(line, "begin", 5) == 0) {
			/* Leaves a session open for a mid-session attach. */
			KH_SESSION_START();
			KH_TRANSITION(KH_STATE_SCANNING);
		} else if (strncmp(line, "identity", 8) == 0) {
			/* A value in a stack buffer, gone before a later attach reads it. */
			char threads[8];

			snprintf(threads, sizeof(threads), "%d", 4);
			KH_IDENTITY("binary_version", "serve 2.0");
			KH_IDENTITY("source_kind", "git");
			KH_IDENTITY("scanner_threads", threads);
			KH_IDENTITY("binary_version", "serve 2.1"); /* the latest wins */
		} else if (strncmp(line, "spans", 5) == 0) {
			for (int i = 0; i < 5; i++) {
				KH_SPAN_SCOPE(KH_STAGE_HOT_PATTERNS);
				khwork_burn(100);
			}
		} else if (strncmp(line, "end", 3) == 0) {
			KH_SESSION_FINISH(KH_STATE_COMPLETED);
		} else if (strncmp(line, "hist", 4) == 0) {
			serve_hist();
		} else if (strncmp(line, "stages", 6) == 0) {
			serve_stages();
		}
		printf("done\n");
		fflush(stdout);
	}
	return 0;
}

static void nest(long depth)
{
	if (depth == 0)
		return;
	KH_SPAN_ENTER(KH_STAGE_PHASE2_WHOLE_CHUNK);
	nest(depth - 1);
	KH_SPAN_EXIT(KH_STAGE_PHASE2_WHOLE_CHUNK);
}

static int deep(long n)
{
	KH_SESSION_START();
	nest(n);
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	return 0;
}

/*
 * One span timed from inside the probes (after the enter, before the exit)
 * and from outside them, each with the thread's CPU time read so that the
 * inner off-CPU figure can only be too low and the outer one too high:
 * whatever khprof records must lie between them (tests/integration).
 */
struct own_span {
	unsigned long long inner_ns, outer_ns;
	unsigned long long inner_cpu_ns, outer_cpu_ns;
	unsigned long long slept_ns; /* requested sleep */
};

static unsigned long long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void own_span(long stage, long work_us, long sleep_ms, struct own_span *o)
{
	unsigned long long o0, o1, i0, i1, oc0, oc1, ic0, ic1;

	o0 = now_ns();
	oc0 = thread_cpu_ns();
	KH_SPAN_ENTER(stage);
	ic0 = thread_cpu_ns();
	i0 = now_ns();
	spin_us(work_us);
	if (sleep_ms) {
		struct timespec ts = { sleep_ms / 1000, sleep_ms % 1000 * 1000000 };

		nanosleep(&ts, NULL);
	}
	i1 = now_ns();
	ic1 = thread_cpu_ns();
	KH_SPAN_EXIT(stage);
	oc1 = thread_cpu_ns();
	o1 = now_ns();
	o->inner_ns = i1 - i0;
	o->outer_ns = o1 - o0;
	o->inner_cpu_ns = ic1 - ic0; /* over more than the inner window */
	o->outer_cpu_ns = oc1 - oc0; /* over less than the outer window */
	o->slept_ns = sleep_ms * 1000000ull;
}

static int compare_ull(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank, as khprof's record defines its percentiles. */
static unsigned long long nearest_rank(const unsigned long long *sorted, long n, long permille)
{
	long rank = (n * permille + 999) / 1000;

	return sorted[(rank < 1 ? 1 : rank > n ? n : rank) - 1];
}

static void print_percentiles(const char *name, unsigned long long *v, long n)
{
	static const long permille[] = { 500, 900, 990, 999, 1000 };

	qsort(v, n, sizeof(*v), compare_ull);
	printf("%s", name);
	for (size_t q = 0; q < sizeof(permille) / sizeof(permille[0]); q++)
		printf(" %llu", nearest_rank(v, n, permille[q]));
	printf("\n");
}

static int mix(long n)
{
	unsigned long long *inner = calloc(n, sizeof(*inner)), *outer = calloc(n, sizeof(*outer));
	struct own_span o;

	if (!inner || !outer)
		return 2;
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	for (long i = 0; i < n; i++) {
		own_span(KH_STAGE_CONFIRMED_PATTERNS, i % 100 == 99 ? 1000 : 10, 0, &o);
		inner[i] = o.inner_ns;
		outer[i] = o.outer_ns;
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	print_percentiles("inner", inner, n);
	print_percentiles("outer", outer, n);
	free(inner);
	free(outer);
	return 0;
}

/*
 * serve's "hist": 40 confirmed-patterns spans, 30 of 2 us and 10 of 100 us
 * interleaved, each timed inside and outside the probes, against 16383 ns,
 * one of the bounds of khprof_stage_span_seconds (4^7 - 1 ns).  Prints
 *   hist below=B above=A straddle=S
 * (spans whose outer time is at most the bound, whose inner time is above
 * it, and the rest, which khprof may put either side), then the 20th and
 * 36th shortest inner and outer times (ranks of the 0.5 and 0.9 quantiles):
 *   hist_rank inner20=.. outer20=.. inner36=.. outer36=..
 * A span khprof measured lies between its inner and outer time.
 */
#define SERVE_HIST_BOUND_NS 16383ull
#define SERVE_HIST_SPANS 40

static void serve_hist(void)
{
	unsigned long long inner[SERVE_HIST_SPANS], outer[SERVE_HIST_SPANS];
	long below = 0, above = 0, straddle = 0;
	struct own_span o;

	for (int i = 0; i < SERVE_HIST_SPANS; i++) {
		own_span(KH_STAGE_CONFIRMED_PATTERNS, i % 4 == 3 ? 100 : 2, 0, &o);
		inner[i] = o.inner_ns;
		outer[i] = o.outer_ns;
		if (o.outer_ns <= SERVE_HIST_BOUND_NS)
			below++;
		else if (o.inner_ns > SERVE_HIST_BOUND_NS)
			above++;
		else
			straddle++;
	}
	qsort(inner, SERVE_HIST_SPANS, sizeof(*inner), compare_ull);
	qsort(outer, SERVE_HIST_SPANS, sizeof(*outer), compare_ull);
	printf("hist below=%ld above=%ld straddle=%ld\n", below, above, straddle);
	printf("hist_rank inner20=%llu outer20=%llu inner36=%llu outer36=%llu\n", inner[19],
	       outer[19], inner[35], outer[35]);
}

/* serve's "stages": a span of every stage of 1 to 10 us, 10 times: all 25 histograms. */
static void serve_stages(void)
{
	for (int round = 0; round < 10; round++)
		for (int st = 0; st < KH_STAGE_COUNT; st++) {
			KH_SPAN_SCOPE(st);
			spin_us(1 + round);
		}
}

struct split_totals {
	long stage, spans, work_us, sleep_ms;
	unsigned long long inner_ns, outer_ns, off_low_ns, off_high_ns, slept_ns;
};

static void *split_spans(void *arg)
{
	struct split_totals *t = arg;
	struct own_span o;

	for (long i = 0; i < t->spans; i++) {
		own_span(t->stage, t->work_us, t->sleep_ms, &o);
		t->inner_ns += o.inner_ns;
		t->outer_ns += o.outer_ns;
		t->off_low_ns += o.inner_ns > o.inner_cpu_ns ? o.inner_ns - o.inner_cpu_ns : 0;
		t->off_high_ns += o.outer_ns - o.outer_cpu_ns;
		t->slept_ns += o.slept_ns;
	}
	return NULL;
}

static void print_split(const struct split_totals *t)
{
	printf("stage=%ld inner_ns=%llu outer_ns=%llu off_low_ns=%llu off_high_ns=%llu "
	       "slept_ns=%llu\n", t->stage, t->inner_ns, t->outer_ns, t->off_low_ns,
	       t->off_high_ns, t->slept_ns);
}

/* threads 1: on the main thread; 2: two threads, one stage each. */
static int split(long threads, long n, long work_us, long sleep_ms)
{
	struct split_totals t[2] = {
		{ .stage = KH_STAGE_SOURCE_READ, .spans = n, .work_us = work_us, .sleep_ms = sleep_ms },
		{ .stage = KH_STAGE_DECODE, .spans = n, .work_us = work_us, .sleep_ms = sleep_ms },
	};
	pthread_t tid[2];

	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	if (threads == 1) {
		split_spans(&t[0]);
	} else {
		for (int i = 0; i < 2; i++)
			pthread_create(&tid[i], NULL, split_spans, &t[i]);
		for (int i = 0; i < 2; i++)
			pthread_join(tid[i], NULL);
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	for (long i = 0; i < threads; i++)
		print_split(&t[i]);
	return 0;
}

/* waits: the second thread answers each byte the main thread sends. */
static int wait_pipes[2][2];

static void *answer_waits(void *arg)
{
	long n = (long)arg;
	char c;

	for (long i = 0; i < n; i++)
		if (read(wait_pipes[0][0], &c, 1) != 1 || write(wait_pipes[1][1], &c, 1) != 1)
			break;
	return NULL;
}

/*
 * n spans, each a wait for the second thread's answer: every span switches
 * out once, so a batch of them needs a logged switch a span for its
 * off-CPU split (include/khprof_hist.h, KH_OFFCPU_LOG).
 */
static int waits(long n)
{
	pthread_t t;
	char c = 'w';

	if (pipe(wait_pipes[0]) || pipe(wait_pipes[1]) ||
	    pthread_create(&t, NULL, answer_waits, (void *)n))
		return 1;
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	for (long i = 0; i < n; i++) {
		if (write(wait_pipes[0][1], &c, 1) != 1)
			return 1;
		KH_SPAN_SCOPE(KH_STAGE_SCANNER_QUEUE_WAIT);
		if (read(wait_pipes[1][0], &c, 1) != 1)
			return 1;
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	pthread_join(t, NULL);
	printf("waits n=%ld\n", n);
	return 0;
}

static int nosession(long n)
{
	for (long i = 0; i < n; i++) {
		KH_SPAN_SCOPE(KH_STAGE_SUPPRESSION);
		khwork_burn(10);
	}
	return 0;
}

/*
 * The seed counts a span for a session only when the session was open as
 * the span began, and only until its finish takes the counts: of these
 * three spans, preprocess alone is the session's.
 */
static int straddle(void)
{
	KH_SPAN_ENTER(KH_STAGE_INCREMENTAL_LOOKUP);
	khwork_burn(100);
	KH_SESSION_START();
	identity();
	KH_TRANSITION(KH_STATE_SCANNING);
	khwork_burn(100);
	KH_SPAN_EXIT(KH_STAGE_INCREMENTAL_LOOKUP);
	{
		KH_SPAN_SCOPE(KH_STAGE_PREPROCESS);
		khwork_burn(100);
	}
	KH_SPAN_ENTER(KH_STAGE_LIVE_VERIFICATION);
	khwork_burn(100);
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	KH_SPAN_EXIT(KH_STAGE_LIVE_VERIFICATION);
	return 0;
}

int main(int argc, char **argv)
{
	const char *scenario = argc > 1 ? argv[1] : "";
	long a = argc > 2 ? atol(argv[2]) : 100;
	long b = argc > 3 ? atol(argv[3]) : 100;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(scenario, "nested"))
		return nested(a);
	if (!strcmp(scenario, "threads"))
		return threads(a);
	if (!strcmp(scenario, "sessions"))
		return sessions(a);
	if (!strcmp(scenario, "timed"))
		return timed(a, b);
	if (!strcmp(scenario, "library"))
		return library(a, argc > 3 ? argv[3] : "libkhplugin.so");
	if (!strcmp(scenario, "redzone"))
		return redzone(a);
	if (!strcmp(scenario, "serve"))
		return serve();
	if (!strcmp(scenario, "nosession"))
		return nosession(a);
	if (!strcmp(scenario, "deep"))
		return deep(a);
	if (!strcmp(scenario, "mix"))
		return mix(a);
	if (!strcmp(scenario, "sleep"))
		return split(1, a, 1000, b);
	if (!strcmp(scenario, "compute"))
		return split(1, a, b, 0);
	if (!strcmp(scenario, "sleep2"))
		return split(2, a, 1000, b);
	if (!strcmp(scenario, "migrate"))
		return migrate(a, b);
	if (!strcmp(scenario, "waits"))
		return waits(a);
	if (!strcmp(scenario, "straddle"))
		return straddle();
	fprintf(stderr, "usage: workload nested|threads|sessions|timed|library|redzone|serve|nosession ...\n");
	return 2;
}
