// SPDX-License-Identifier: MIT
/*
 * The tracer as it stands, for live metrics (--serve): open sessions' slots
 * and latency histograms read without resetting them, and the event ring
 * buffer's fill.  Nothing here stops or slows the traced program: per-CPU
 * map lookups and read-only mappings, in khprof's own time.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "khprof.skel.h"
#include "log.h"
#include "tracer_impl.h"

static bool has_calls(const struct kh_slot_stats *sum)
{
	for (int st = 0; st < KH_STAGE_COUNT; st++)
		if (sum->stages[st].calls)
			return true;
	return false;
}

/*
 * The histogram blocks of every (CPU, slot), mapped read-only once per
 * tracer (latency.c makes the map mappable): a scrape then reads only the
 * stages it folds, in place.  NULL when mapping failed; the caller looks
 * the blocks up instead.
 */
static const struct kh_hist_block *hist_view(struct tracer *t)
{
	struct bpf_map *map = t->skel->maps.hist_blocks;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (size_t)bpf_map__max_entries(map) * sizeof(struct kh_hist_block);
	void *view;

	_Static_assert(sizeof(struct kh_hist_block) % 8 == 0,
		       "the kernel lays array elements out 8-byte aligned");
	if (t->hist_view || t->hist_view_failed)
		return t->hist_view;
	len = (len + page - 1) / page * page;
	view = mmap(NULL, len, PROT_READ, MAP_SHARED, bpf_map__fd(map), 0);
	if (view == MAP_FAILED) {
		log__debug("cannot map the latency histograms (%s): scrapes copy them",
			   strerror(errno));
		t->hist_view_failed = true;
		return NULL;
	}
	t->hist_view = view;
	t->hist_view_len = len;
	return t->hist_view;
}

void live__unmap(struct tracer *t)
{
	if (t->hist_view)
		munmap((void *)t->hist_view, t->hist_view_len);
	t->hist_view = NULL;
}

/*
 * slot's histograms folded onto the bounds of khprof_stage_span_seconds,
 * summed over the CPUs, without resetting them, and the spans khprof read
 * from ended threads' buffers itself (sum has those already).  Each CPU's
 * block is read in place, only the stages with spans on that CPU: 4.5 us
 * a scrape for a slot with all 25 stages on this 2-CPU machine, against
 * 19.4 us when each block is looked up (copied), the fallback, and 27.5 us
 * with lookups and one fold loop per bound (docs/FLEET.md).  A slot
 * without calls, such as the outside slot usually, is not read at all;
 * spans that arrive after its totals were read show at the next scrape.
 */
static int read_spans(struct tracer *t, uint32_t slot, const struct kh_slot_stats *sum,
		      struct kh_hist_block *copy, struct kh_span_fold spans[KH_STAGE_COUNT])
{
	int fd = bpf_map__fd(t->skel->maps.hist_blocks);
	const struct kh_latency *pending = &t->pending_latency[slot];
	const struct kh_hist_block *view;

	memset(spans, 0, KH_STAGE_COUNT * sizeof(*spans));
	if (!has_calls(sum))
		return 0;
	view = hist_view(t);
	for (int cpu = 0; cpu < t->ncpus; cpu++) {
		__u32 key = (__u32)cpu * KH_SLOT_MAP_ENTRIES + slot;
		const struct kh_hist_block *block = view ? &view[key] : copy;

		if (!view && bpf_map_lookup_elem(fd, &key, copy))
			return -errno;
		for (int st = 0; st < KH_STAGE_COUNT; st++) {
			const struct kh_stage_hist *h = &block->stages[st];

			/* min_below_top is 0 until the CPU's first span of the stage. */
			if (h->min_below_top)
				kh_span_fold__add_u32(&spans[st], h->counts);
		}
	}
	for (int st = 0; st < KH_STAGE_COUNT; st++)
		if (pending->stages[st].present && pending->stages[st].counts)
			kh_span_fold__add(&spans[st], pending->stages[st].counts);
	return 0;
}

int tracer__read_live(struct tracer *t, tracer_live_fn fn, void *ctx)
{
	uint64_t bias = t->sessions.cfg.span_bias_ns;
	struct tracer_live_slot live;
	struct kh_hist_block *block = malloc(sizeof(*block));
	int err = 0;

	if (!block)
		return -ENOMEM;
	for (uint32_t slot = 0; slot < KH_MAX_SLOTS; slot++) {
		const struct open_session *s = &t->sessions.slots[slot];

		if (slot != KH_OUTSIDE_SLOT && !s->open)
			continue;
		err = tracer__read_slot(t, slot, &live.sum, false);
		if (err)
			break;
		/* Spans of threads that ended are the session's too (drain.c). */
		tracer__add_pending(t, slot, &live.sum, false);
		err = read_spans(t, slot, &live.sum, block, live.spans);
		if (err)
			break;
		for (int st = 0; st < KH_STAGE_COUNT; st++) {
			struct kh_stage_stats *m = &live.sum.stages[st];

			m->elapsed_ns = sessions__unbias(m->elapsed_ns, m->calls, bias);
			m->attributed_ns = sessions__unbias(m->attributed_ns, m->attributed_calls,
							    bias);
		}
		live.profile = s->open ? &s->profile : NULL;
		live.state = s->last_state;
		fn(&live, ctx);
	}
	free(block);
	return err;
}

/*
 * The ring buffer's consumer and producer positions, from read-only
 * mappings of its first two pages (libbpf 1.1 does not expose them).
 */
int tracer__ringbuf_usage(const struct tracer *t, uint64_t *used, uint64_t *size)
{
	int fd = bpf_map__fd(t->skel->maps.events);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const unsigned long *consumer, *producer;

	*size = bpf_map__max_entries(t->skel->maps.events);
	*used = 0;
	consumer = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	if (consumer == MAP_FAILED)
		return -errno;
	producer = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, (off_t)page);
	if (producer == MAP_FAILED) {
		munmap((void *)consumer, page);
		return -errno;
	}
	*used = __atomic_load_n(producer, __ATOMIC_ACQUIRE) -
		__atomic_load_n(consumer, __ATOMIC_ACQUIRE);
	munmap((void *)producer, page);
	munmap((void *)consumer, page);
	return 0;
}
