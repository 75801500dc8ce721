// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "counter.h"
#include "tsc.h"

#define SAMPLE_TRIES 8
#define SCALE_SHIFT 24
/* 0.5 ms of interval keeps the scale within a few ppm of the clock. */
#define MIN_INTERVAL_NS 500000ull

static uint64_t raw_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void tsc__sample(struct tsc_sample *s)
{
	uint64_t best = UINT64_MAX;

	/* An interrupt between the reads shows as a wide bracket; keep the narrowest. */
	for (int i = 0; i < SAMPLE_TRIES; i++) {
		uint64_t before = raw_ns();
		uint64_t ticks = counter__read();
		uint64_t after = raw_ns();

		if (after - before < best) {
			best = after - before;
			s->ticks = ticks;
			s->raw_ns = before + (after - before) / 2;
		}
	}
}

int tsc__scale(const struct tsc_sample *a, const struct tsc_sample *b, uint32_t *mult,
	       uint32_t *shift)
{
	double ns_per_tick, scaled;

	if (b->raw_ns < a->raw_ns + MIN_INTERVAL_NS || b->ticks <= a->ticks)
		return -EINVAL;
	ns_per_tick = (double)(b->raw_ns - a->raw_ns) / (double)(b->ticks - a->ticks);
	scaled = ns_per_tick * (1u << SCALE_SHIFT) + 0.5;
	/* Below 1 MHz or above 256 GHz is no TSC (aarch64's counter: 1 GHz at most, by the architecture). */
	if (scaled < 1 || scaled >= 4294967296.0 || ns_per_tick > 1000)
		return -EINVAL;
	*mult = (uint32_t)scaled;
	*shift = SCALE_SHIFT;
	return 0;
}
