// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <unistd.h>

#include "keyhog_profile.h"
#include "calibrate.h"
#include "khprof.skel.h"
#include "log.h"
#include "stats.h"
#include "tracer_impl.h"

/*
 * Any stage will do: the calibration slot holds nothing but these spans,
 * and its sums over all stages are read.
 */
#define CALIBRATION_STAGE KH_STAGE_SOURCE_ACQUIRE

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
	kh__batch_flush(0);
#endif
}

#define CALIBRATION_ROUNDS 5
/*
 * One whole batch a round, so that each traced round pays the one kernel
 * entry per KH_BATCH_CAPACITY spans a traced program pays (at its 256th
 * span, inside the timing): with 200 a round and 256-span batches, no
 * round would have entered the kernel at all.
 */
#define CALIBRATION_SPANS KH_BATCH_CAPACITY

/* Spans and their summed length in the calibration slot, which is zeroed. */
static int read_calibration(struct tracer *t, uint64_t *calls, uint64_t *elapsed_ns)
{
	struct kh_slot_stats sum;

	if (tracer__read_slot(t, KH_CALIBRATION_SLOT, &sum, true))
		return -EIO;
	*calls = *elapsed_ns = 0;
	for (int s = 0; s < KH_STAGE_COUNT; s++) {
		*calls += sum.stages[s].calls;
		*elapsed_ns += sum.stages[s].elapsed_ns;
	}
	return 0;
}

static double least(const double *v, size_t n)
{
	double m = v[0];

	for (size_t i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

/*
 * Traces khprof's own probe sites for a few hundred empty spans: the median
 * per-span slowdown is what one span costs a traced program, and the least
 * recorded length of an empty span is the bias every recorded span carries.
 * Runs before the target is attached, with the BPF side counting into the
 * calibration slot, which is zeroed after each round.
 */
int calibrate__run(struct tracer *t)
{
	double untraced[CALIBRATION_ROUNDS], traced[CALIBRATION_ROUNDS], bias[CALIBRATION_ROUNDS];
	size_t links_before = t->link_fd_count, probes_before = t->probe_count;
	double traced_ns, untraced_ns;
	uint64_t calls, elapsed_ns, link_ns;
	int err;

	for (int r = 0; r < CALIBRATION_ROUNDS; r++)
		untraced[r] = calibrate__spans(CALIBRATION_SPANS);
	t->pid = getpid();
	/*
	 * Only the span sites: khprof never fires its own session and identity
	 * probes, and the identity sites would take a second link.  Each site
	 * is a uprobe that the kernel writes into khprof's running text: with
	 * the header's copies in 44 files (221 sites, 45 of them batch sites;
	 * the Makefile now leaves calibrate.c's alone), attach latency went from
	 * a median of 74.5 to 61.0 ms here (9 alternating runs, load 3.5).
	 */
	t->spans_only = true;
	link_ns = tracer__now_ns();
	err = attach__object(t, "/proc/self/exe");
	link_ns = tracer__now_ns() - link_ns;
	t->spans_only = false;
	t->probe_count = probes_before;
	t->skel->bss->image_traced = 0; /* khprof's own probes: not the traced image's */
	if (err || t->link_fd_count == links_before) {
		log__debug("calibration skipped: cannot trace khprof itself");
		return 0;
	}
	t->skel->bss->active_slot = KH_CALIBRATION_SLOT;
	for (int r = 0; r < CALIBRATION_ROUNDS; r++) {
		traced[r] = calibrate__spans(CALIBRATION_SPANS);
		calibrate__flush();
		err = read_calibration(t, &calls, &elapsed_ns);
		if (err)
			break;
		bias[r] = calls ? elapsed_ns / calls : 0;
	}
	t->skel->bss->active_slot = KH_OUTSIDE_SLOT;
	if (err)
		return err;
	/*
	 * The least of the rounds' means: noise only lengthens an empty span,
	 * and one interrupt in a round of 256 spans of ~25 ns adds ~80 ns to
	 * its mean.  A median let that through when most rounds were hit (a
	 * loaded host, a guest under TCG), and a bias longer than an outer
	 * span took whole stages to 0 (test_nested_all_modes, seen in CI).
	 */
	t->sessions.cfg.span_bias_ns = (uint64_t)least(bias, CALIBRATION_ROUNDS);
	traced_ns = stats__median(traced, CALIBRATION_ROUNDS);
	untraced_ns = stats__median(untraced, CALIBRATION_ROUNDS);
	t->sessions.cfg.span_cost_ns = traced_ns > untraced_ns
		? (uint64_t)(traced_ns - untraced_ns) / CALIBRATION_SPANS : 0;
	log__debug("calibration: a span costs %" PRIu64 " ns and appears %" PRIu64 " ns long "
		   "(linked in %.1f ms, done %.1f ms after start)", t->sessions.cfg.span_cost_ns,
		   t->sessions.cfg.span_bias_ns, (double)link_ns / 1e6,
		   (double)(tracer__now_ns() - t->trace_start_ns) / 1e6);
	return 0;
}
