// SPDX-License-Identifier: MIT
/*
 * latency.c - per-stage histograms and the off-CPU log on the loader's side
 * (include/khprof_hist.h describes the buckets and the memory they take).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "khprof.skel.h"
#include "khprof_shared.h"
#include "latency.h"
#include "log.h"

int latency__configure(struct khprof_bpf *skel, int ncpus)
{
	struct bpf_map *map = skel->maps.hist_blocks;
	int err = bpf_map__set_max_entries(map, (__u32)ncpus * KH_SLOT_MAP_ENTRIES);

	/*
	 * Mappable, so that a live scrape reads the blocks in place (live.c):
	 * a lookup copies all 122.6 KB of a block through a kernel buffer,
	 * about 8 us here, to fold the few stages it needs.  The BPF side's
	 * lookups are the same either way.
	 */
	if (!err)
		err = bpf_map__set_map_flags(map, bpf_map__map_flags(map) | BPF_F_MMAPABLE);
	if (err)
		log__error("cannot size the latency histograms: %s", strerror(-err));
	return err;
}

int latency__attach(struct khprof_bpf *skel, pid_t pid, struct bpf_link *links[KH_LATENCY_LINKS])
{
	struct bpf_program *progs[KH_LATENCY_LINKS] = { skel->progs.kh_sched_switch,
						       skel->progs.kh_sched_wakeup };
	int err = 0;

	/* traced_tgid, which both programs test first, is set already (process.c). */
	(void)pid;
	for (int i = 0; i < KH_LATENCY_LINKS; i++) {
		if (links[i])
			continue;
		links[i] = bpf_program__attach(progs[i]);
		if (!links[i]) {
			err = -errno;
			log__warn("cannot watch context switches (%s): records will have no "
				  "off-CPU time", strerror(errno));
			break;
		}
	}
	return err;
}

static void add_block(struct kh_latency *l, const struct kh_hist_block *b)
{
	l->missed_switches += b->offcpu_missed;
	for (int s = 0; s < KH_STAGE_COUNT; s++) {
		const struct kh_stage_hist *h = &b->stages[s];
		struct kh_stage_dist *d = &l->stages[s];
		uint64_t spans = 0, min = KH_HIST_MIN_TOP - h->min_below_top;

		for (uint32_t i = 0; i < KH_HIST_BUCKETS; i++)
			spans += h->counts[i];
		if (spans == 0)
			continue;
		if (!d->counts && kh_dist__alloc(d))
			continue; /* out of memory: the stage keeps its sums only */
		for (uint32_t i = 0; i < KH_HIST_BUCKETS; i++)
			d->counts[i] += h->counts[i];
		if (!d->present || min < d->min_ns)
			d->min_ns = min;
		if (!d->present || h->max_ns > d->max_ns)
			d->max_ns = h->max_ns;
		d->present = true;
		d->spans += spans;
		d->off_cpu_ns += h->off_cpu_ns;
		d->runnable_ns += h->runnable_ns;
		d->offcpu_truncated += h->offcpu_truncated;
	}
}

int latency__read_slot(struct khprof_bpf *skel, int ncpus, uint32_t slot, uint64_t bias_ns,
		       struct kh_latency *l)
{
	int fd = bpf_map__fd(skel->maps.hist_blocks), err = 0;
	struct kh_hist_block *block = malloc(sizeof(*block));
	static const struct kh_hist_block zero;

	if (!block)
		return -ENOMEM;
	for (int cpu = 0; cpu < ncpus; cpu++) {
		__u32 key = (__u32)cpu * KH_SLOT_MAP_ENTRIES + slot;

		if (bpf_map_lookup_elem(fd, &key, block) ||
		    bpf_map_update_elem(fd, &key, &zero, BPF_ANY)) {
			err = -errno;
			log__error("cannot read the latency histograms of slot %u: %s", slot,
				   strerror(errno));
			break;
		}
		add_block(l, block);
	}
	free(block);
	for (int s = 0; s < KH_STAGE_COUNT; s++) {
		struct kh_stage_dist *d = &l->stages[s];

		if (!d->present)
			continue;
		l->present = true;
		d->min_ns = d->min_ns > bias_ns ? d->min_ns - bias_ns : 0;
		d->max_ns = d->max_ns > bias_ns ? d->max_ns - bias_ns : 0;
	}
	return err;
}

void latency__add_drained(struct kh_latency *into, struct kh_latency *raw, uint64_t bias_ns)
{
	for (int s = 0; s < KH_STAGE_COUNT; s++) {
		const struct kh_stage_dist *d = &raw->stages[s];
		struct kh_stage_dist *o = &into->stages[s];
		uint64_t min = d->min_ns > bias_ns ? d->min_ns - bias_ns : 0;
		uint64_t max = d->max_ns > bias_ns ? d->max_ns - bias_ns : 0;

		if (!d->present || !d->counts || (!o->counts && kh_dist__alloc(o)))
			continue;
		for (uint32_t i = 0; i < KH_HIST_BUCKETS; i++)
			o->counts[i] += d->counts[i];
		if (!o->present || min < o->min_ns)
			o->min_ns = min;
		if (!o->present || max > o->max_ns)
			o->max_ns = max;
		o->present = true;
		o->spans += d->spans;
		o->offcpu_truncated += d->offcpu_truncated;
		into->present = true;
	}
	kh_latency__free(raw);
}
