/* SPDX-License-Identifier: MIT */
/*
 * tsc.h - the CPU's counter as batch mode's clock: the TSC, or on
 * aarch64 CNTVCT_EL0 (counter.h), "TSC" wherever the probe ABI names it.
 *
 * Probe sites read the counter for batched spans (include/keyhog_profile.h);
 * the BPF side turns ticks into nanoseconds with a scale measured here
 * against CLOCK_MONOTONIC_RAW, which the kernel itself derives from the
 * counter whenever it is its clocksource.  Whether the counter may be used
 * at all is span_clock.h's question.
 */
#ifndef KHPROF_TSC_H
#define KHPROF_TSC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tsc_sample {
	uint64_t ticks;
	uint64_t raw_ns; /* CLOCK_MONOTONIC_RAW */
};

/* A TSC reading paired with the clock, from the tightest of a few tries. */
void tsc__sample(struct tsc_sample *s);

/*
 * mult and shift such that ns = ticks * mult >> shift over the interval
 * from a to b.  -EINVAL when the interval is too short to be precise or the
 * rate is implausible.
 */
int tsc__scale(const struct tsc_sample *a, const struct tsc_sample *b, uint32_t *mult,
	       uint32_t *shift);

#endif
