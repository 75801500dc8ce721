/* SPDX-License-Identifier: MIT */
/*
 * hist.h - per-stage latency distributions and on-CPU/off-CPU split of a
 * record (the khprof extension's "latency" object): bucket arithmetic of
 * include/khprof_hist.h and percentiles read from the buckets.
 */
#ifndef KHPROF_HIST_ANALYSIS_H
#define KHPROF_HIST_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "khprof_hist.h"

/*
 * One stage's distribution.  Bucket counts are of the spans' raw lengths, as
 * the probes measured them; min_ns, max_ns and the percentiles have the
 * calibrated bias (span_bias_ns) subtracted, like the stage's elapsed_ns.
 */
struct kh_stage_dist {
	bool present;
	uint64_t spans;            /* sum of the bucket counts */
	uint64_t min_ns;
	uint64_t max_ns;
	uint64_t off_cpu_ns;       /* not running: blocked, sleeping or waiting for a CPU */
	uint64_t runnable_ns;      /* of off_cpu_ns: runnable, waiting for a CPU */
	uint64_t offcpu_truncated; /* spans with more switches than the log held */
	uint64_t *counts;          /* KH_HIST_BUCKETS, malloc'd; NULL when absent */
};

/* The khprof extension's "latency" object. */
struct kh_latency {
	bool present;
	bool off_cpu;          /* the off-CPU split was measured (docs/SCHEMA.md) */
	uint64_t missed_switches; /* switches whose other half was not seen */
	struct kh_stage_dist stages[KH_STAGE_COUNT];
};

void kh_latency__free(struct kh_latency *l);

/* Percentiles the record and the report give, in parts per 1000. */
#define KH_DIST_PERCENTILES 4
extern const unsigned int kh_dist_permille[KH_DIST_PERCENTILES]; /* 500 900 990 999 */
extern const char *const kh_dist_percentile_name[KH_DIST_PERCENTILES]; /* "p50"... */

/* Lower edge and width in ns of bucket i (< KH_HIST_BUCKETS). */
uint64_t kh_hist_bucket_low(uint32_t i);
uint64_t kh_hist_bucket_width(uint32_t i);

/*
 * The q-th percentile (0 < permille <= 1000) by nearest rank: the middle of
 * the bucket that holds the ceil(q * spans)-th shortest span, less bias_ns,
 * clamped to [min_ns, max_ns]; max_ns for the longest span and the last
 * bucket, which holds every longer span too.  Within half a bucket (1.6%) of the exact
 * value, and exact for one span, equal spans and spans under 64 ns.  0 when
 * the distribution has no spans.
 */
uint64_t kh_dist__percentile(const struct kh_stage_dist *d, unsigned int permille,
			     uint64_t bias_ns);

/* Allocates the counts; 0 or -ENOMEM. */
int kh_dist__alloc(struct kh_stage_dist *d);
void kh_dist__free(struct kh_stage_dist *d);
/* Deep copy; 0 or -ENOMEM. */
int kh_dist__copy(struct kh_stage_dist *dst, const struct kh_stage_dist *src);

/*
 * The fixed bounds of the OpenMetrics histogram khprof_stage_span_seconds
 * (docs/FLEET.md): spans of at most 4^k - 1 ns, k = 4..19, from 255 ns to
 * 274.9 s.  Span lengths are whole nanoseconds, so "at most 4^k - 1 ns" is
 * "below 4^k ns", and 4^k ns is the lower edge of log-linear bucket
 * KH_SPAN_EDGE(j): a bound's count is a sum of whole buckets, exact, never
 * interpolated (an le of 4^k ns itself would wrongly leave out spans of
 * exactly 4^k ns, which share a bucket with longer ones).
 */
#define KH_SPAN_BOUNDS 16
#define KH_SPAN_FIRST_LOG4 4
/* First bucket above bound j: 4^(j+4) = 2^(2j+8), whose bucket is 32 * (2j + 8 - 4). */
#define KH_SPAN_EDGE(j) (64u * (j) + 128u)
_Static_assert(KH_SPAN_EDGE(KH_SPAN_BOUNDS - 1) < KH_HIST_BUCKETS - 1,
	       "the top bound lies below the last, open-ended bucket");

/* Bound j (< KH_SPAN_BOUNDS) in ns: 4^(j + 4) - 1. */
uint64_t kh_span_bound_ns(unsigned int j);

/*
 * A stage's spans folded onto those bounds: counts[j] spans longer than
 * bound j - 1 and at most bound j; counts[KH_SPAN_BOUNDS] the spans above
 * the top bound.  Not cumulative: the writer sums them up.
 */
struct kh_span_fold {
	uint64_t counts[KH_SPAN_BOUNDS + 1];
};

/* Adds KH_HIST_BUCKETS bucket counts (a record's, or one CPU's u32 ones). */
void kh_span_fold__add(struct kh_span_fold *f, const uint64_t *counts);
void kh_span_fold__add_u32(struct kh_span_fold *f, const uint32_t *counts);
void kh_span_fold__merge(struct kh_span_fold *into, const struct kh_span_fold *f);
/* Spans folded in: the histogram's _count. */
uint64_t kh_span_fold__total(const struct kh_span_fold *f);

/* Exact nearest-rank percentile of sorted values, for tests and workloads. */
uint64_t kh_exact_percentile(const uint64_t *sorted, uint64_t n, unsigned int permille);

#endif /* KHPROF_HIST_ANALYSIS_H */
