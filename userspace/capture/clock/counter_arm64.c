// SPDX-License-Identifier: MIT
/*
 * aarch64's counter (counter.h): CNTVCT_EL0, the generic timer's virtual
 * count, which Linux lets user space read (the vDSO's clock_gettime reads
 * it too).  The architecture makes it what x86-64's invariant-TSC bit
 * promises: one system counter, at a constant rate, seen by every CPU,
 * whose frequency the firmware writes to CNTFRQ_EL0.  On CPUs with a
 * counter erratum the kernel traps the read and returns a corrected value:
 * still right, a few hundred ns a reading.
 */
#if defined(__aarch64__)
#include <stdio.h>

#include "counter.h"

const char *counter__name(void)
{
	return "CNTVCT_EL0";
}

const char *counter__clock(void)
{
	return "cntvct";
}

uint64_t counter__read(void)
{
	uint64_t v;

	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}

/* isb, as the kernel's __arch_counter_get_cntvct: not read ahead of earlier instructions. */
uint64_t counter__read_ordered(void)
{
	uint64_t v;

	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}

void counter__relax(void)
{
	__asm__ __volatile__("yield" : : : "memory");
}

bool counter__constant_rate(char *what, size_t len)
{
	uint64_t hz;

	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(hz));
	if (hz == 0) {
		snprintf(what, len, "CNTFRQ_EL0 is 0: the firmware never set the counter's frequency");
		return false;
	}
	snprintf(what, len, "CNTVCT_EL0 at %.2f MHz (CNTFRQ_EL0)", (double)hz / 1e6);
	return true;
}
#endif
