// SPDX-License-Identifier: MIT
#include <string.h>

#include "buffers.h"

static uint64_t ticks_to_ns(uint64_t ticks, uint32_t mult, uint32_t shift)
{
	shift &= 63;
	return (ticks >> shift) * mult + (((ticks & ((1ull << shift) - 1)) * mult) >> shift);
}

/* A buffered time on CLOCK_MONOTONIC; CLOCK_MONOTONIC times pass unchanged. */
static uint64_t time_ns(uint64_t t, const struct buffer_clock *c)
{
	uint64_t ticks;

	if (!(t & KH_TIME_TSC))
		return t;
	t &= ~KH_TIME_TSC;
	if (t <= c->now_ticks) {
		ticks = c->now_ticks - t;
		return c->now_ns - ticks_to_ns(ticks, c->tsc_mult, c->tsc_shift);
	}
	return c->now_ns + ticks_to_ns(t - c->now_ticks, c->tsc_mult, c->tsc_shift);
}

/* One span in its stage's histogram; out of memory: the stage keeps its sums only. */
static void add_to_hist(struct kh_latency *lat, uint32_t stage, uint64_t len)
{
	struct kh_stage_dist *d = &lat->stages[stage];

	if (!d->counts && kh_dist__alloc(d))
		return;
	d->counts[kh_hist_bucket(len)]++;
	if (!d->present || len < d->min_ns)
		d->min_ns = len;
	if (!d->present || len > d->max_ns)
		d->max_ns = len;
	d->present = true;
	d->spans++;
	d->offcpu_truncated++;
	lat->present = true;
}

void buffers__take_of(const unsigned char *state, const struct kh_thread_entry *entry,
		      uint64_t flushed, struct buffer_take *take)
{
	uint32_t count;
	uint64_t input[2], flushes;

	memcpy(&count, state + KH_TS_BATCH_COUNT_OFF, sizeof(count));
	memcpy(input, state + KH_TS_INPUT_OFF, sizeof(input));
	memcpy(&flushes, state + KH_TS_FLUSHES_OFF, sizeof(flushes));
	memset(take, 0, sizeof(*take));
	take->capacity = entry->flags & KH_THREAD_ABI6 ? KH_BATCH_CAPACITY : KH_BATCH_CAPACITY_ABI5;
	if (count > take->capacity)
		count = take->capacity;
	take->first = (uint32_t)kh_claim_counted(entry->claim_spans, flushes, count);
	take->input_bytes = input[0] - kh_claim_counted(entry->claim_bytes, flushes, input[0]);
	take->input_units = input[1] - kh_claim_counted(entry->claim_units, flushes, input[1]);
	if ((entry->flags & KH_THREAD_ABI7) && !kh_claim_ahead(entry->claim_spans, flushes) &&
	    flushed > entry->next_flushed)
		take->unseen = flushed - entry->next_flushed;
}

uint64_t buffers__account(const unsigned char *state, const struct buffer_take *take,
			  const struct buffer_clock *clock, struct kh_slot_stats *out,
			  struct kh_latency *lat)
{
	uint32_t count, first = take->first;
	uint64_t late = 0;

	memcpy(&count, state + KH_TS_BATCH_COUNT_OFF, sizeof(count));
	if (count > KH_BATCH_CAPACITY)
		count = KH_BATCH_CAPACITY;
	/* Before probe ABI 6: 64 entries, nothing read after them. */
	if (take->capacity && count > take->capacity)
		count = take->capacity;
	out->input_bytes += take->input_bytes;
	out->input_units += take->input_units;
	out->drops[KH_DROP_UNSEEN] += take->unseen;
	for (uint32_t i = first; i < count; i++) {
		const unsigned char *raw = state + KH_TS_BATCH_OFF + (size_t)i * 24;
		uint64_t start, end;
		uint32_t stage, attribution;
		struct kh_stage_stats *s;

		memcpy(&start, raw, 8);
		memcpy(&end, raw + 8, 8);
		memcpy(&stage, raw + 16, 4);
		memcpy(&attribution, raw + 20, 4);
		if (start != 0)
			start = time_ns(start, clock);
		end = time_ns(end, clock);
		if (end > clock->until_ns) {
			late++;
			continue;
		}
		if (start == 0 || start < clock->trace_start_ns || start > end) {
			out->drops[KH_DROP_UNMATCHED_EXIT]++;
			continue;
		}
		if (end < clock->session_start_ns) {
			out->drops[KH_DROP_LATE_BATCH]++;
			continue;
		}
		/* Not the session's, as the seed has it (bpf/khprof.bpf.c, span_drop). */
		if (start < clock->session_start_ns) {
			out->begun_before_session++;
			continue;
		}
		if (stage >= KH_STAGE_COUNT) {
			out->drops[KH_DROP_BAD_STAGE]++;
			continue;
		}
		s = &out->stages[stage];
		s->elapsed_ns += end - start;
		s->calls++;
		if (attribution == KH_ATTRIBUTION_DECODED) {
			s->attributed_ns += end - start;
			s->attributed_calls++;
		}
		if (lat)
			add_to_hist(lat, stage, end - start);
	}
	return late;
}
