// SPDX-License-Identifier: MIT
/*
 * cpu_share.c - khprof's own CPU share of a window, which the record's
 * states and the --interval series both state (record.c, series.c).
 */
#include "record.h"

/*
 * khprof's own CPU share (docs/REPORTS.md, "CPU shares"): the seed's
 * whole milliseconds make a 47 us state with 1 ms of CPU read 2141 %, so
 * khprof prefers the samples' nanoseconds and never states more than
 * 100 % per logical CPU.  The kernel's per-thread runtimes lag by up to a
 * tick on other CPUs, so even nanoseconds can overshoot a tiny window.
 */
struct kh_cpu_share kh_cpu_share(struct kh_opt_u64 start_ns, struct kh_opt_u64 finish_ns,
				 struct kh_opt_u64 start_ms, struct kh_opt_u64 finish_ms,
				 uint64_t elapsed_ns, uint64_t logical_cpus)
{
	struct kh_cpu_share out = { 0 };
	double cap = logical_cpus ? 100.0 * (double)logical_cpus : 0;

	if (!elapsed_ns)
		return out;
	if (kh_opt_u64__ordered(start_ns, finish_ns)) {
		out.present = true;
		out.from_ns = true;
		out.cpu_ns = finish_ns.value - start_ns.value;
	} else if (kh_opt_u64__ordered(start_ms, finish_ms)) {
		out.present = true;
		out.cpu_ns = (finish_ms.value - start_ms.value) * 1000000u;
	} else {
		return out;
	}
	out.percent = (double)out.cpu_ns * 100.0 / (double)elapsed_ns;
	if (cap > 0 && out.percent > cap) {
		out.percent = cap;
		out.capped = true;
	}
	return out;
}
