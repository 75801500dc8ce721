// SPDX-License-Identifier: MIT
/* x86-64's counter (counter.h): the TSC. */
#if defined(__x86_64__)
#include <cpuid.h>
#include <stdio.h>
#include <x86intrin.h>

#include "counter.h"

const char *counter__name(void)
{
	return "TSC";
}

const char *counter__clock(void)
{
	return "tsc";
}

uint64_t counter__read(void)
{
	return __rdtsc();
}

/* lfence, as the kernel's rdtsc_ordered. */
uint64_t counter__read_ordered(void)
{
	_mm_lfence();
	return __rdtsc();
}

void counter__relax(void)
{
	_mm_pause();
}

/* Without the invariant-TSC bit the TSC stops or changes rate with power states. */
bool counter__constant_rate(char *what, size_t len)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007 ||
	    (__get_cpuid(0x80000007, &a, &b, &c, &d), !(d & (1u << 8)))) {
		snprintf(what, len,
			 "the CPU does not report an invariant TSC (cpuid 0x80000007 EDX bit 8)");
		return false;
	}
	snprintf(what, len, "invariant TSC");
	return true;
}
#endif
