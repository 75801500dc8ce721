// SPDX-License-Identifier: MIT
#include "keyhog_profile.h"
#include "calibrate.h"
#include "trace.h"

__attribute__((noinline)) uint64_t calibrate__spans(int n)
{
	uint64_t start = tracer__now_ns();

	for (int i = 0; i < n; i++) {
		KH_SPAN_SCOPE(CALIBRATION_STAGE);
		__asm__ __volatile__("" ::: "memory");
	}
	return tracer__now_ns() - start;
}

void calibrate__flush(void)
{
#if KH_PROBES_ENABLED
	kh__batch_flush();
#endif
}
