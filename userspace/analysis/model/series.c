// SPDX-License-Identifier: MIT
/*
 * series.c - the bounded time series of a record (--interval).
 *
 * Merging neighbours in pairs rather than dropping old intervals keeps
 * every span and byte in the series, so the sums over the intervals stay
 * equal to the record's totals however long the run.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "record.h"
#include "series.h"

static struct kh_opt_u64 opt_sum(struct kh_opt_u64 a, struct kh_opt_u64 b)
{
	if (!a.present || !b.present)
		return (struct kh_opt_u64){ false, 0 };
	return (struct kh_opt_u64){ true, a.value + b.value };
}

void interval__merge(struct kh_interval *into, const struct kh_interval *next)
{
	into->duration_ns = next->start_ns + next->duration_ns - into->start_ns;
	into->state = next->state;
	into->input_bytes += next->input_bytes;
	into->input_units += next->input_units;
	into->cpu_time_ms = opt_sum(into->cpu_time_ms, next->cpu_time_ms);
	into->cpu_time_ns = opt_sum(into->cpu_time_ns, next->cpu_time_ns);
	into->resident_bytes = next->resident_bytes;
	for (int st = 0; st < KH_STAGE_COUNT; st++) {
		into->elapsed_ns[st] += next->elapsed_ns[st];
		into->calls[st] += next->calls[st];
	}
}

/*
 * Halves the series: 0+1, 2+3, ...; entries then hold twice the intervals.
 * An odd last entry stays alone, half full at the new size.
 */
static void series__coarsen(struct kh_series *s)
{
	size_t out = 0;

	for (size_t i = 0; i < s->count; i += 2) {
		s->intervals[out] = s->intervals[i];
		if (i + 1 < s->count) {
			interval__merge(&s->intervals[out], &s->intervals[i + 1]);
			s->merged++;
		}
		out++;
	}
	s->last_fill = s->count % 2 ? s->group : 2 * s->group;
	s->group *= 2;
	s->count = out;
}

int series__append(struct kh_series *s, const struct kh_interval *iv)
{
	if (!s->group) {
		s->group = 1;
		s->last_fill = 0;
	}
	if (s->count && s->last_fill < s->group) {
		interval__merge(&s->intervals[s->count - 1], iv);
		s->last_fill++;
		s->merged++;
		return 0;
	}
	if (s->count >= KH_SERIES_MAX) {
		series__coarsen(s);
		return series__append(s, iv);
	}
	if (array__reserve((void **)&s->intervals, &s->cap, s->count + 1, sizeof(*s->intervals)))
		return -ENOMEM;
	s->intervals[s->count++] = *iv;
	s->last_fill = 1;
	return 0;
}

void series__free(struct kh_series *s)
{
	free(s->intervals);
	memset(s, 0, sizeof(*s));
}

bool interval__cpu_percent(const struct kh_interval *iv, uint64_t logical_cpus, double *out)
{
	struct kh_cpu_share c = kh_cpu_share(
		(struct kh_opt_u64){ iv->cpu_time_ns.present, 0 }, iv->cpu_time_ns,
		(struct kh_opt_u64){ iv->cpu_time_ms.present, 0 }, iv->cpu_time_ms,
		iv->duration_ns, logical_cpus);

	*out = c.percent;
	return c.present;
}

void interval__render_line(const struct kh_interval *iv, uint64_t logical_cpus, char *buf,
			   size_t len)
{
	double cpu;
	uint64_t total = 0;
	bool used[KH_STAGE_COUNT] = { false };
	const char *state = kh_run_state__name(iv->state);
	double secs = (double)iv->duration_ns / 1e9;
	int n;

	n = snprintf(buf, len, "%.2fs %s %.1f MiB/s",
		     (double)(iv->start_ns + iv->duration_ns) / 1e9, state ? state : "?",
		     secs > 0 ? (double)iv->input_bytes / secs / 1048576.0 : 0.0);
	if (interval__cpu_percent(iv, logical_cpus, &cpu))
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0, " cpu %.0f%%", cpu);
	if (iv->resident_bytes.present)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0, " rss %.1f MiB",
			      (double)iv->resident_bytes.value / 1048576.0);
	/* Dispatch wraps the matcher stages: it would always lead. */
	for (int st = 0; st < KH_STAGE_COUNT; st++)
		if (st != KH_STAGE_BACKEND_DISPATCH)
			total += iv->elapsed_ns[st];
	if (!total)
		return;
	n += snprintf(buf + n, len > (size_t)n ? len - n : 0, " top:");
	for (int k = 0; k < 3; k++) {
		int best = -1;

		for (int st = 0; st < KH_STAGE_COUNT; st++)
			if (st != KH_STAGE_BACKEND_DISPATCH && !used[st] && iv->elapsed_ns[st] &&
			    (best < 0 || iv->elapsed_ns[st] > iv->elapsed_ns[best]))
				best = st;
		if (best < 0)
			break;
		used[best] = true;
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0, "%s %s %.0f%%", k ? "," : "",
			      kh_stage__name((uint32_t)best),
			      100.0 * (double)iv->elapsed_ns[best] / (double)total);
	}
}
