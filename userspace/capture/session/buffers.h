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
	uint64_t session_start_ns; /* spans that ended before it are late */
	uint64_t until_ns;         /* spans that ended after it were not observed */
};

/*
 * Adds the spans and input of one thread's state (state: its first
 * KH_TS_READ_BYTES bytes) to *out, skipping what info marks as counted,
 * and each span's raw length to *lat's histograms when lat is not NULL
 * (min and max raw too: latency__add_drained takes the bias off).  Their
 * off-CPU time is unknown (the thread's switch log is gone or khprof
 * detached), so each also counts in offcpu_truncated: a lower bound.
 * Returns the spans left out because they ended after until_ns.
 */
uint64_t buffers__account(const unsigned char *state, const struct kh_thread_info *info,
			  const struct buffer_clock *clock, struct kh_slot_stats *out,
			  struct kh_latency *lat);

#endif
