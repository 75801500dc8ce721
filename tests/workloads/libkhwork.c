// SPDX-License-Identifier: MIT
/*
 * A shared library with its own keyhog probes, linked by the workload
 * (DT_NEEDED) and also opened with dlopen under another name, so the tests
 * cover probes in both kinds of library.
 */
#include "keyhog_profile.h"

/* Busy work the compiler cannot remove. */
unsigned long khwork_burn(unsigned long iterations)
{
	volatile unsigned long x = 0;

	for (unsigned long i = 0; i < iterations; i++)
		x = x * 6364136223846793005ul + i;
	return x;
}

/* One entropy span per call, from inside the library. */
unsigned long khwork_entropy_span(unsigned long iterations)
{
	unsigned long r;

	KH_SPAN_ENTER(KH_STAGE_ENTROPY);
	r = khwork_burn(iterations);
	KH_SPAN_EXIT(KH_STAGE_ENTROPY);
	return r;
}
