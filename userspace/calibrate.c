// SPDX-License-Identifier: MIT
#include <time.h>

#include "keyhog_profile.h"
#include "calibrate.h"

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) uint64_t calibrate__spans(int n)
{
	uint64_t start = monotonic_ns();

	for (int i = 0; i < n; i++) {
		KH_SPAN_SCOPE(CALIBRATION_STAGE);
		__asm__ __volatile__("" ::: "memory");
	}
	return monotonic_ns() - start;
}

void calibrate__flush(void)
{
#if KH_PROBES_ENABLED
	kh__batch_flush();
#endif
}
