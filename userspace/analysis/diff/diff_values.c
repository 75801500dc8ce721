// SPDX-License-Identifier: MIT
/*
 * diff_values.c - one record's value of each item `khprof diff` compares:
 * the seed's figures (wall, throughput, peak RSS, a stage's elapsed time
 * and calls, a state's wall and CPU time) and khprof.latency's (a stage's
 * split into on CPU, blocked and runnable, its median and tail span).
 */
#include <math.h>

#include "diff_internal.h"
#include "hist.h"

static const struct kh_state_measurement *find_state(const struct kh_profile *p, uint32_t state)
{
	for (size_t i = 0; i < p->state_count; i++)
		if (p->states[i].state == state)
			return &p->states[i];
	return NULL;
}

bool diff_record__has_state(const struct kh_profile *p, uint32_t state)
{
	return find_state(p, state) != NULL;
}

/*
 * A state's CPU time in ns from the extension's samples (kernel-read, one
 * per resource sample), for the first window of that state as find_state
 * finds it among the seed's windows(2); false when a sample lacks its ns
 * (an older record): the seed's whole milliseconds then.
 */
static bool state_cpu_ns(const struct kh_profile *p, uint32_t state, uint64_t *out)
{
	size_t n = p->transition_count < p->resource_sample_count ? p->transition_count
								   : p->resource_sample_count;

	if (p->ext.sample_count != p->resource_sample_count)
		return false;
	for (size_t i = 0; i + 1 < n; i++) {
		const struct kh_opt_u64 a = p->ext.samples[i].cpu_time_ns,
					b = p->ext.samples[i + 1].cpu_time_ns;

		if (p->transitions[i + 1].elapsed_ns < p->transitions[i].elapsed_ns ||
		    p->transitions[i].state != state)
			continue;
		if (!a.present || !b.present || b.value < a.value)
			return false;
		*out = b.value - a.value;
		return true;
	}
	return false;
}

/*
 * Where a stage's span time went: on CPU (elapsed less off-CPU), blocked
 * and runnable, from a record that measured the split (a stage it lacks
 * took no time).  Spans whose off-CPU time is a lower bound
 * (offcpu_truncated) still give a value here: whether it is complete is
 * diff_run__split_complete's question.
 */
static bool split_value(const struct kh_profile *p, enum kh_diff_metric metric, uint32_t stage,
			double *out)
{
	const struct kh_stage_dist *d = &p->ext.latency.stages[stage];
	const struct kh_stage_measurement *s = profile__find_stage(p, stage);
	double elapsed, off, runnable;

	if (!p->ext.latency.present || !p->ext.latency.off_cpu)
		return false;
	if (!s) {
		*out = 0;
		return true;
	}
	if (!d->present)
		return false;
	elapsed = (double)s->elapsed_ns;
	off = fmin((double)d->off_cpu_ns, elapsed);
	runnable = fmin((double)d->runnable_ns, off);
	switch (metric) {
	case KH_DIFF_M_ON_CPU:
		*out = elapsed - off;
		break;
	case KH_DIFF_M_ON_CPU_PER_CALL:
		*out = s->calls ? (elapsed - off) / (double)s->calls : 0;
		break;
	case KH_DIFF_M_OWN:
		*out = elapsed - runnable;
		break;
	case KH_DIFF_M_BLOCKED:
		*out = off - runnable;
		break;
	default:
		*out = runnable;
		break;
	}
	return true;
}

/*
 * The latency and state items.  Percentiles need the stage's distribution;
 * a stage a record lacks spent no time on decoded content.
 */
static bool latency_value(const struct kh_profile *p, enum kh_diff_metric metric,
			  uint32_t stage, double *out)
{
	const struct kh_stage_dist *d = stage < KH_STAGE_COUNT ? &p->ext.latency.stages[stage]
							       : NULL;
	const struct kh_state_measurement *st;
	const struct kh_stage_measurement *s;
	uint64_t ns;

	switch (metric) {
	case KH_DIFF_M_P50:
	case KH_DIFF_M_P99:
		if (!d || !d->present)
			return false;
		*out = (double)kh_dist__percentile(d, metric == KH_DIFF_M_P50 ? 500 : 990,
						   p->ext.span_bias_ns);
		return true;
	case KH_DIFF_M_DECODED:
		s = profile__find_stage(p, stage);
		*out = s ? (double)s->attributed_ns : 0;
		return true;
	case KH_DIFF_M_STATE_WALL:
		st = find_state(p, stage);
		*out = st ? (double)st->elapsed_ns : 0;
		return st != NULL;
	case KH_DIFF_M_STATE_CPU:
		st = find_state(p, stage);
		if (st && state_cpu_ns(p, stage, &ns)) {
			*out = (double)ns;
			return true;
		}
		if (!st || !st->cpu_time_ms.present)
			return false;
		*out = (double)st->cpu_time_ms.value * 1e6;
		return true;
	default:
		return stage < KH_STAGE_COUNT && diff_metric__is_split(metric) &&
		       split_value(p, metric, stage, out);
	}
}

bool diff_record__value(const struct kh_profile *p, enum kh_diff_metric metric, uint32_t stage,
			double *out)
{
	const struct kh_stage_measurement *s;

	switch (metric) {
	case KH_DIFF_M_WALL:
		*out = (double)p->wall_time_ns;
		return true;
	case KH_DIFF_M_THROUGHPUT:
		if (!p->wall_time_ns)
			return false;
		*out = (double)p->input_bytes * 1e9 / (double)p->wall_time_ns;
		return true;
	case KH_DIFF_M_PEAK_RSS:
		*out = (double)p->resources.max_observed_resident_bytes.value;
		return p->resources.max_observed_resident_bytes.present;
	case KH_DIFF_M_ELAPSED:
	case KH_DIFF_M_CALLS:
	case KH_DIFF_M_PER_CALL:
		/* A stage a record lacks took no time in that run. */
		s = profile__find_stage(p, stage);
		if (!s)
			*out = 0;
		else if (metric == KH_DIFF_M_ELAPSED)
			*out = (double)s->elapsed_ns;
		else if (metric == KH_DIFF_M_CALLS)
			*out = (double)s->calls;
		else
			*out = s->calls ? (double)s->elapsed_ns / (double)s->calls : 0;
		return true;
	default:
		return latency_value(p, metric, stage, out);
	}
}
