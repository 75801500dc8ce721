/* SPDX-License-Identifier: MIT */
/*
 * series.h - the bounded time series of a record (--interval): appending
 * sampled intervals (struct kh_series, in record.h) and reading them.
 */
#ifndef KHPROF_SERIES_H
#define KHPROF_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

/*
 * Appends a sampled interval: into the last entry while that one holds
 * fewer than group intervals, else as a new entry, first merging the
 * entries in pairs (and doubling group) when the series is full.
 * 0 or -ENOMEM.
 */
int series__append(struct kh_series *s, const struct kh_interval *iv);
/* into += next (next follows into in time). */
void interval__merge(struct kh_interval *into, const struct kh_interval *next);
void series__free(struct kh_series *s);

/* --interval's bounds: below 10 ms the samples would cost more than they show. */
#define KH_INTERVAL_MIN_NS 10000000ull
#define KH_INTERVAL_MAX_NS 3600000000000ull

/*
 * The live line of an interval, without newline: "12.30s scanning 391.2
 * MiB/s cpu 118% rss 5.2 MiB top: decode 41%, phase1-triggers 30%" (top
 * three stages by their share of the interval's stage time).
 */
void interval__render_line(const struct kh_interval *iv, uint64_t logical_cpus, char *buf,
			   size_t len);
/*
 * The interval's CPU share in percent of one CPU: from its ns when it has
 * them, else its whole ms, capped at 100 % x logical_cpus (0: no cap).
 */
bool interval__cpu_percent(const struct kh_interval *iv, uint64_t logical_cpus, double *out);

#endif /* KHPROF_SERIES_H */
