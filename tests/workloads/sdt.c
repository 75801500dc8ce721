// SPDX-License-Identifier: MIT
/*
 * A scanner instrumented with the standard <sys/sdt.h> macros (Debian's
 * systemtap-sdt-dev) instead of include/keyhog_profile.h: the keyhog probe
 * ABI (docs/PROBES.md) emitted by hand, as a program whose build already
 * uses <sys/sdt.h>, or another language through it, would.  Built twice:
 * `sdt` with a semaphore per probe (_SDT_HAS_SEMAPHORES, the probes'
 * arguments prepared only while one is set), `sdt-nosem` without any (the
 * probes always fire).
 *
 *   sdt spans N M     one session: N spans of hot-patterns (root), M of
 *                     decode (decoded), identity, transitions; then prints
 *                     "semaphores span_enter=S span_exit=S span=S" as seen
 *                     at the session's end
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef KH_SDT_NO_SEMAPHORES
#define _SDT_HAS_SEMAPHORES 1
/* One per probe, in .probes, named as <sys/sdt.h> expects them. */
#define SEMAPHORE(name) \
	__extension__ unsigned short keyhog_##name##_semaphore __attribute__((section(".probes")))
SEMAPHORE(span_enter);
SEMAPHORE(span_exit);
SEMAPHORE(span);
SEMAPHORE(session_start);
SEMAPHORE(identity);
SEMAPHORE(transition);
SEMAPHORE(session_finish);
#define ENABLED(name) (keyhog_##name##_semaphore != 0)
#else
#define ENABLED(name) 1
#endif

#include <sys/sdt.h>

/* The wire numbers of docs/PROBES.md, written out: this program has no keyhog header. */
enum {
	STAGE_HOT_PATTERNS = 6,
	STAGE_DECODE = 16,
	STATE_SCANNING = 2,
	STATE_REPORTING = 5,
	STATE_COMPLETED = 6,
	ATTRIBUTION_ROOT = 0,
	ATTRIBUTION_DECODED = 1,
	PROBE_ABI = 3,
};

static volatile unsigned long sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void work(void)
{
	for (unsigned long i = 0; i < 2000; i++)
		sink += i * i;
}

/*
 * One span as the header fires it: span_enter at the enter, span_exit and
 * span (with the enter's CLOCK_MONOTONIC time) at the exit; khprof's mode
 * picks which it attaches.  The clock is read only when span is traced.
 */
static void one_span(uint64_t stage, uint64_t attribution)
{
	uint64_t start = ENABLED(span) ? now_ns() : 0;

	STAP_PROBE1(keyhog, span_enter, stage);
	work();
	STAP_PROBE2(keyhog, span_exit, stage, attribution);
	STAP_PROBE3(keyhog, span, stage, start, attribution);
}

static int spans(long n, long m)
{
	uint64_t sequence = 0;

	STAP_PROBE2(keyhog, session_start, sequence, (uint64_t)PROBE_ABI);
	STAP_PROBE2(keyhog, identity, "binary_version", "sdt-scanner 1.2");
	STAP_PROBE2(keyhog, identity, "source_kind", "filesystem");
	STAP_PROBE2(keyhog, identity, "scanner_threads", "3");
	STAP_PROBE1(keyhog, transition, (uint64_t)STATE_SCANNING);
	for (long i = 0; i < n; i++)
		one_span(STAGE_HOT_PATTERNS, ATTRIBUTION_ROOT);
	for (long i = 0; i < m; i++)
		one_span(STAGE_DECODE, ATTRIBUTION_DECODED);
	STAP_PROBE1(keyhog, transition, (uint64_t)STATE_REPORTING);
	printf("semaphores span_enter=%d span_exit=%d span=%d\n", ENABLED(span_enter),
	       ENABLED(span_exit), ENABLED(span));
	STAP_PROBE1(keyhog, session_finish, (uint64_t)STATE_COMPLETED);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "spans"))
		return spans(atol(argv[2]), atol(argv[3]));
	fprintf(stderr, "usage: sdt spans N M\n");
	return 2;
}
