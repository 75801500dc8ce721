/* SPDX-License-Identifier: MIT */
/*
 * span_clock.h - which clock the traced program times batched spans with,
 * decided from evidence once per boot.
 *
 * The TSC costs ~11 ns a reading here against ~26 for the vDSO's
 * CLOCK_MONOTONIC, so batch mode uses it wherever its readings on two CPUs
 * can be compared; on aarch64 the same holds for CNTVCT_EL0 (counter.h:
 * "TSC" below is the CPU's counter).  The name of the kernel's clocksource
 * is the wrong test for that: a KVM guest keeps time with kvm-clock over a
 * TSC that is in step on every vCPU.  The evidence, in order:
 *
 *  1. the CPU's word that the counter runs at a constant rate
 *     (counter__constant_rate): x86-64's invariant-TSC bit (cpuid
 *     0x80000007 EDX bit 8), without which the TSC stops or changes rate
 *     with power states; on aarch64 the architecture's promise, given a
 *     frequency in CNTFRQ_EL0;
 *  2. the kernel's own verdict where it gives one: a perf event's mmap
 *     page has cap_user_time only when sched_clock is the TSC and stable
 *     (on aarch64, when it is the architected counter);
 *  3. a cross-CPU check: a thread pinned to each CPU reads the TSC in turn
 *     under one shared lock, as the kernel's TSC warp check does, and no
 *     reading may be below the one before it (bounded to 20 ms);
 *  4. the TSC's rate against CLOCK_MONOTONIC_RAW (load.c, set_tsc_scale):
 *     a TSC that does not advance with the clock is not used.
 *
 * A verdict from 1 and 3 holds until the machine reboots: it is kept in
 * the CO-RE cache's directory (btf_cache.h), keyed by the boot id, and an
 * inconclusive check (a CPU that never took its turn on a loaded machine)
 * is not kept, so the next run checks again.
 *
 * Test hook: KHPROF_TEST_TSC=untrusted makes the cross-CPU check report a
 * warp and keeps no verdict (tests/integration/tracing/test_clock.c; documented in
 * docs/PROBES.md).  It only ever makes khprof choose the slower clock.
 */
#ifndef KHPROF_SPAN_CLOCK_H
#define KHPROF_SPAN_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#define SPAN_CLOCK_REASON_MAX 256

struct span_clock_verdict {
	bool tsc_trusted;
	char reason[SPAN_CLOCK_REASON_MAX]; /* why, for the record and stderr */
};

/*
 * The verdict for this boot: from the cache, or gathered (and cached, as
 * root) on the first call; the same for every later call in the process.
 */
const struct span_clock_verdict *span_clock__verdict(void);

/*
 * The cross-CPU check alone, run afresh: each CPU khprof may run on reads
 * the TSC in turn for up to max_ns.  Fills *backwards with the readings
 * below the one before them, *turns_min with the fewest turns any CPU took
 * after another CPU's reading, *cpus with the CPUs checked.  0 or -errno.
 */
int span_clock__warp_check(uint64_t max_ns, uint64_t *backwards, uint64_t *turns_min,
			   int *cpus);

#endif
