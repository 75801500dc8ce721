/* SPDX-License-Identifier: MIT */
/*
 * spread.h - how much repeated runs of one command varied.
 *
 * `khprof record --repeat` prints this after its runs, so that whoever sets
 * up a CI gate sees the noise its thresholds must clear before trusting a
 * verdict.
 */
#ifndef KHPROF_SPREAD_H
#define KHPROF_SPREAD_H

#include <stddef.h>

#include "record.h"

/*
 * A table of median, min, max and MAD (relative to the median) over n
 * records: wall time, throughput, peak RSS where the records have them, and
 * the elapsed time of each stage any record has, in the seed's wire order.
 * malloc'd text, or NULL (ENOMEM).
 */
char *runs__render_spread(const struct kh_profile *runs, size_t n);

#endif
