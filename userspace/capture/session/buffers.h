/* SPDX-License-Identifier: MIT */
/*
 * buffers.h - the spans a thread of the traced program still holds in its
 * batch buffer (struct kh_thread_state, include/keyhog_profile.h), counted
 * as the BPF side counts a batch.  Plain logic: khprof reads the buffers
 * itself after a detach (drain.c); the tests feed it made-up buffers.
 */
#ifndef KHPROF_BUFFERS_H
#define KHPROF_BUFFERS_H

#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "khprof_shared.h"

/* How buffered times are read, and which spans count. */
struct buffer_clock {
	uint64_t now_ticks;        /* a TSC reading ... */
	uint64_t now_ns;           /* ... and CLOCK_MONOTONIC at the same moment */
	uint32_t tsc_mult;         /* ns = ticks * mult >> shift */
	uint32_t tsc_shift;
	uint64_t trace_start_ns;   /* starts before it were left by an earlier tracer */
	uint64_t session_start_ns; /* spans that ended before it are late, begun before it not its */
	uint64_t until_ns;         /* spans that ended after it were not observed */
};

/* What of a thread's buffer is still to count. */
struct buffer_take {
	uint32_t first;       /* the entries before it were counted */
	uint32_t capacity;    /* entries its layout holds: KH_BATCH_CAPACITY, 64 before probe ABI 6 */
	uint64_t input_bytes; /* input not counted yet */
	uint64_t input_units;
	uint64_t unseen;      /* probe ABI 7: spans it handed over that khprof never saw */
};

/*
 * What is left to count of a thread's state (state: its first
 * KH_TS_READ_BYTES bytes, `flushes` at the current layout's place) by
 * the claims of its entry in thread_list (include/khprof_shared.h): what
 * the BPF side takes of a buffer at a thread's end, done by khprof after a
 * detach, when nothing else takes buffers any more.  flushed: the state's
 * flushed_spans (probe ABI 7).
 */
void buffers__take_of(const unsigned char *state, const struct kh_thread_entry *entry,
		      uint64_t flushed, struct buffer_take *take);

/*
 * Adds the spans of one thread's state from take->first on, and take's
 * input and unseen spans, to *out, and each span's raw length to *lat's
 * histograms when lat is not NULL (min and max raw too:
 * latency__add_drained takes the bias off).  Their off-CPU time is unknown
 * (the thread's switch log is gone or khprof detached), so each also
 * counts in offcpu_truncated: a lower bound.  Returns the spans left out
 * because they ended after until_ns.
 */
uint64_t buffers__account(const unsigned char *state, const struct buffer_take *take,
			  const struct buffer_clock *clock, struct kh_slot_stats *out,
			  struct kh_latency *lat);

#endif
