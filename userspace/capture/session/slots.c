// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "log.h"
#include "slots.h"

void slots__add(struct kh_slot_stats *sum, const struct kh_slot_stats *add)
{
	for (int s = 0; s < KH_STAGE_COUNT; s++) {
		sum->stages[s].elapsed_ns += add->stages[s].elapsed_ns;
		sum->stages[s].calls += add->stages[s].calls;
		sum->stages[s].attributed_ns += add->stages[s].attributed_ns;
		sum->stages[s].attributed_calls += add->stages[s].attributed_calls;
	}
	sum->input_bytes += add->input_bytes;
	sum->input_units += add->input_units;
	sum->probe_hits += add->probe_hits;
	for (int d = 0; d < KH_DROP_COUNT; d++)
		sum->drops[d] += add->drops[d];
	sum->begun_before_session += add->begun_before_session;
}

int slots__read(int map_fd, int ncpus, uint32_t slot, struct kh_slot_stats *sum, bool reset)
{
	size_t size = (size_t)ncpus * sizeof(struct kh_slot_stats);
	struct kh_slot_stats *percpu = calloc(ncpus, sizeof(*percpu));
	int err;

	memset(sum, 0, sizeof(*sum));
	if (!percpu)
		return -ENOMEM;
	err = bpf_map_lookup_elem(map_fd, &slot, percpu);
	if (err) {
		err = -errno;
		log__error("cannot read session slot %u: %s", slot, strerror(errno));
		goto out;
	}
	for (int cpu = 0; cpu < ncpus; cpu++)
		slots__add(sum, &percpu[cpu]);
	memset(percpu, 0, size);
	if (reset && bpf_map_update_elem(map_fd, &slot, percpu, BPF_ANY)) {
		err = -errno;
		log__error("cannot reset session slot %u: %s", slot, strerror(errno));
	}
out:
	free(percpu);
	return err;
}
