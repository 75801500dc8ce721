// SPDX-License-Identifier: MIT
/*
 * A session slot as a record takes it: the kernel's per-CPU totals
 * (slots.c) and distributions (latency.c), with what khprof counted itself
 * from threads' buffers (drain.c, into the tracer's pending totals).
 */
#include <string.h>

#include <bpf/libbpf.h>

#include "khprof.skel.h"
#include "latency.h"
#include "slots.h"
#include "tracer_impl.h"

int tracer__read_slot(struct tracer *t, uint32_t slot, struct kh_slot_stats *sum, bool reset)
{
	return slots__read(bpf_map__fd(t->skel->maps.slot_stats), t->ncpus, slot, sum, reset);
}

void tracer__add_pending(struct tracer *t, uint32_t slot, struct kh_slot_stats *totals,
			 bool reset)
{
	struct kh_slot_stats *d = &t->pending[slot < KH_MAX_SLOTS ? slot : KH_OUTSIDE_SLOT];

	/* Buffers never count probe hits: only the BPF side sees a probe fire. */
	slots__add(totals, d);
	if (reset)
		memset(d, 0, sizeof(*d));
}

int tracer__collect_slot(struct tracer *t, uint32_t slot, bool take, struct kh_slot_stats *totals,
			 struct kh_latency *latency)
{
	uint64_t bias_ns = t->sessions.cfg.span_bias_ns;
	int err = tracer__read_slot(t, slot, totals, take);

	memset(latency, 0, sizeof(*latency));
	if (err && !take)
		return err;
	tracer__add_pending(t, slot, totals, take);
	latency__read_slot(t->skel, t->ncpus, slot, bias_ns, latency);
	latency__add_drained(latency, &t->pending_latency[slot], bias_ns);
	if (take && slot != KH_OUTSIDE_SLOT)
		t->skel->bss->slot_busy[slot] = 0;
	return err;
}
