// SPDX-License-Identifier: MIT
/*
 * The tracer as it stands, for live metrics (--serve): open sessions' slots
 * read without resetting them, and the event ring buffer's fill.  Nothing
 * here stops or slows the traced program: per-CPU map lookups and two
 * read-only page mappings, in khprof's own time.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "khprof.skel.h"
#include "tracer_impl.h"

int tracer__read_live(struct tracer *t, tracer_live_fn fn, void *ctx)
{
	uint64_t bias = t->sessions.cfg.span_bias_ns;
	struct tracer_live_slot live;

	for (uint32_t slot = 0; slot < KH_MAX_SLOTS; slot++) {
		const struct open_session *s = &t->sessions.slots[slot];
		int err;

		if (slot != KH_OUTSIDE_SLOT && !s->open)
			continue;
		err = tracer__read_slot(t, slot, &live.sum, false);
		if (err)
			return err;
		/* Spans of threads that ended are the session's too (drain.c). */
		tracer__add_pending(t, slot, &live.sum, false);
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
	return 0;
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
