/* SPDX-License-Identifier: MIT */
/*
 * diff_internal.h - what the diff modules share and no caller needs:
 * diff.c (items and the verdict), diff_options.c, diff_bind.c (identity
 * and warnings), diff_text.c and diff_json.c.  The public API is diff.h.
 */
#ifndef KHPROF_DIFF_INTERNAL_H
#define KHPROF_DIFF_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "diff.h"

#define DIFF_BIT(f) (1u << (f))
#define DIFF_ALL_FIELDS (DIFF_BIT(KH_DIFF_F_COUNT) - 1)

/*
 * Sides with this many runs each lose their run farthest from the median;
 * for the median spans, a quarter of their runs (2 of 8), at least one.
 */
#define DIFF_TRIM_MIN_RUNS 5
#define DIFF_TRIM_P50_DIVISOR 4
/* An interval must clear this many pooled MADs of the runs, as well as the threshold. */
#define DIFF_NOISE_K 3.0

/* Room for an item's label, such as "scanner-queue-wait.per_call". */
#define DIFF_LABEL_LEN 64

/*
 * vasprintf into a fresh string; NULL when out of memory.  Inline, so that
 * the diff's files, which all format messages, need not call diff.c for it
 * (they call one way: diff.c -> diff_runs.c -> diff_options.c -> diff_bind.c).
 */
__attribute__((format(printf, 1, 2))) static inline char *diff__format(const char *fmt, ...)
{
	va_list ap;
	char *out;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&out, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : out;
}

static inline bool diff_metric__is_stage(enum kh_diff_metric metric)
{
	return metric >= KH_DIFF_M_ELAPSED && metric <= KH_DIFF_M_DECODED;
}

/* Items whose interval leaves out each side's farthest run (diff.c). */
static inline bool diff_metric__trims(enum kh_diff_metric metric)
{
	return metric >= KH_DIFF_M_P50;
}

/*
 * Items whose values are divided by each run's speed index before the
 * interval: a stage's median span (leaving its own stage out of the index)
 * and the wall times; the wall times also leave out runs starved of CPU.
 */
static inline bool diff_metric__speed_adjusted(enum kh_diff_metric metric)
{
	return metric == KH_DIFF_M_P50 || metric == KH_DIFF_M_WALL ||
	       metric == KH_DIFF_M_THROUGHPUT || metric == KH_DIFF_M_STATE_WALL;
}

static inline bool diff_metric__leaves_starved(enum kh_diff_metric metric)
{
	return metric == KH_DIFF_M_WALL || metric == KH_DIFF_M_THROUGHPUT ||
	       metric == KH_DIFF_M_STATE_WALL;
}

static inline bool diff_metric__is_state(enum kh_diff_metric metric)
{
	return metric == KH_DIFF_M_STATE_WALL || metric == KH_DIFF_M_STATE_CPU;
}

/* diff_options.c */
bool diff_stage__is_queue_wait(uint32_t stage);
/*
 * The thresholds with a name of their own (--threshold NAME=PCT) besides
 * the stages', in the order the JSON lists them after default_stage.
 */
#define DIFF_NAMED_THRESHOLDS 9
const char *diff_threshold__name(size_t i);
const struct kh_diff_threshold *diff_options__named(const struct kh_diff_options *opts,
						    size_t i);
bool diff_options__valid(const struct kh_diff_options *o);

/*
 * diff_runs.c: the conditions each run was recorded under (docs/CI.md,
 * "Runs the machine slowed").  A run's median span of a stage counts from
 * DIFF_SPEED_MIN_SPANS spans (fewer give a coarse median); a speed index
 * needs DIFF_SPEED_MIN_STAGES reference stages, and is 1 otherwise.
 */
#define DIFF_SPEED_MIN_SPANS 100
#define DIFF_SPEED_MIN_STAGES 3
/* Pairs of runs whose speed indexes differ by less (5 %) say nothing of a sensitivity. */
#define DIFF_SPEED_MIN_SPREAD 0.05
#define DIFF_SENSITIVITY_MAX 2.0
/*
 * Starved of CPU: waiting for a CPU for over 1.5 times the lower quartile
 * of all runs' share of span time (here 17-28 % of it when the machine
 * gave the program its CPUs, 35-50 % when a neighbour took one).
 */
#define DIFF_STARVED_FACTOR 1.5

struct diff_runs {
	bool many_spans[KH_STAGE_COUNT]; /* DIFF_SPEED_MIN_SPANS spans in every record */
	bool reference[KH_STAGE_COUNT]; /* stages the speed index reads: many spans, no queue wait */
	double median[KH_STAGE_COUNT];  /* their median span over both sides' runs */
	size_t reference_count;
	bool *starved[2];               /* per record of base [0] and candidate [1] */
	size_t starved_count[2];
};

/* 0 or -ENOMEM; diff_runs__free() after either. */
int diff_runs__init(struct diff_runs *r, const struct kh_diff_side *base,
		    const struct kh_diff_side *cand);
void diff_runs__free(struct diff_runs *r);

/* Whether every record of both sides has DIFF_SPEED_MIN_SPANS spans of the stage. */
bool diff_runs__many_spans(const struct diff_runs *r, uint32_t stage);

/*
 * Each record's speed index: the median, over the reference stages but
 * skip (KH_STAGE_COUNT for none), of its median span against both sides'
 * median of that stage.  1.2: the run's spans were 20 % slower than usual.
 */
void diff_runs__speed(const struct diff_runs *r, const struct kh_diff_side *s, uint32_t skip,
		      double *speed);

/*
 * How strongly a stage's values v follow the speed indexes u: the median
 * slope of log v against log u over pairs of runs of one side whose
 * indexes differ by more than DIFF_SPEED_MIN_SPREAD (a Theil-Sen slope).
 * Pairs across the sides are left out, so that a change between the
 * sides is never taken for the machine's.  Clamped to [0,
 * DIFF_SENSITIVITY_MAX]; 1 without such pairs or memory.
 */
double diff_run__sensitivity(const double *vb, const double *ub, size_t m, const double *vc,
			     const double *uc, size_t n);

/* A record's runnable (waiting for a CPU) share of its stages' time; -1 when unmeasured. */
double diff_run__starved_share(const struct kh_profile *p);
/*
 * How much longer the record's threads took for waiting for a CPU:
 * 1 / (1 - its runnable share), 1 when unmeasured.
 */
double diff_run__wait_factor(const struct kh_profile *p);

/* diff_bind.c: how messages name record i of a side. */
const char *diff_side__name(const struct kh_diff_side *s, size_t i);

/*
 * Binds the identities of all records into d->mismatches (counting those
 * not allowed in d->blocking_count) and adds d->warnings.  0 or -ENOMEM.
 */
int diff__bind(struct kh_diff *d, const struct kh_diff_side *base,
	       const struct kh_diff_side *cand);

/* diff_text.c: "hot-patterns.elapsed" for a stage's items, "wall" for the others. */
void diff_item__label(const struct kh_diff_item *it, char *buf, size_t len);

#endif /* KHPROF_DIFF_INTERNAL_H */
