/* SPDX-License-Identifier: MIT */
/*
 * slots.h - reading the kernel's per-CPU session slots (struct
 * kh_slot_stats in include/khprof_shared.h) as one total per slot.
 */
#ifndef KHPROF_SLOTS_H
#define KHPROF_SLOTS_H

#include <stdbool.h>
#include <stdint.h>

#include "khprof_shared.h"

/*
 * Sums slot over ncpus CPUs of the per-CPU array map_fd into *sum; with
 * reset, zeroes it for the slot's next user.  0 or -errno (one line said).
 */
int slots__read(int map_fd, int ncpus, uint32_t slot, struct kh_slot_stats *sum, bool reset);

/*
 * Adds every counter of add to sum: the one place a slot's fields are
 * summed, over the CPUs (slots__read) and with what khprof counted itself
 * from threads' buffers (trace.c), so a new field is added once.
 */
void slots__add(struct kh_slot_stats *sum, const struct kh_slot_stats *add);

#endif
