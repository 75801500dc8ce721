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
 * An interval must clear this many pooled MADs of the judged values, as well
 * as the threshold: 2 (at 1.5 the bench's kh-scan runs failed identical
 * builds in source-walk, at 3 the archived kh-scan series caught +33 % of
 * source-read 22-61 % of the time at 10 runs a side, at 2 50-91 %), and 3
 * for the wall times, whose runs also differ by waits no record accounts for (a
 * neighbour's preemption outside every span, a queue a preempted thread
 * left empty: at 2, 1.6 % of identical builds beside a hog failed).
 */
#define DIFF_NOISE_K 2.0
#define DIFF_NOISE_K_WALL 3.0

/* Room for an item's label, such as "scanner-queue-wait.per_call". */
#define DIFF_LABEL_LEN 64

/*
 * vasprintf into a fresh string; NULL when out of memory.  Inline, so that
 * the diff's files, which all format messages, need not call diff.c for it
 * (they call one way: diff.c -> diff_values.c, diff_runs.c -> diff_options.c
 * -> diff_bind.c).
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

/* The wall times: judged on the runs not starved of CPU, with their wait factor. */
static inline bool diff_metric__is_wall(enum kh_diff_metric metric)
{
	return metric == KH_DIFF_M_WALL || metric == KH_DIFF_M_THROUGHPUT ||
	       metric == KH_DIFF_M_STATE_WALL;
}

/* Items of a stage's spans split by where their time went (khprof.latency off-CPU). */
static inline bool diff_metric__is_split(enum kh_diff_metric metric)
{
	return metric >= KH_DIFF_M_ON_CPU && metric <= KH_DIFF_M_RUNNABLE;
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
 * "Runs the machine slowed"), from the records' off-CPU split.
 *
 * Starved of CPU: waiting for a CPU for a share of the span time above
 * DIFF_STARVED_FACTOR times the lower quartile of all runs' shares, and at
 * least DIFF_STARVED_POINTS above it (here 17-28 % of the span time when
 * the machine gave the program its CPUs, 35-50 % when a neighbour took
 * one; a program that never waits has a quartile near 0).
 */
#define DIFF_STARVED_FACTOR 1.5
#define DIFF_STARVED_POINTS 0.05
/*
 * A stage that blocks (asleep, on the disk, a lock, a queue) for this share
 * of its own time (on CPU or blocked), in the median run, gates on that own
 * time rather than on its time on CPU alone: each switch out and back in
 * costs the CPU time after it more on a busy runner (a stage that slept
 * 75 times a run here took 10 % more time on CPU with a neighbour spinning
 * on every CPU, and 2.5 % more own time), and a stage that starts to block
 * more has regressed too.
 */
#define DIFF_BLOCKING_SHARE 0.25

/* A record's runnable (waiting for a CPU) share of its stages' time; -1 when unmeasured. */
double diff_run__starved_share(const struct kh_profile *p);
/* The same for one stage of the record; -1 when unmeasured or the stage took no time. */
double diff_run__stage_share(const struct kh_profile *p, uint32_t stage);
/*
 * How much longer the record's threads took for waiting for a CPU:
 * 1 / (1 - its runnable share), 1 when unmeasured.
 */
double diff_run__wait_factor(const struct kh_profile *p);
/*
 * Whether the record split the stage's time completely into on CPU,
 * blocked and runnable: it measured off-CPU time, and no span of the stage
 * had more switches than khprof's per-thread log holds (offcpu_truncated).
 * A stage the record lacks took no time: complete.
 */
bool diff_run__split_complete(const struct kh_profile *p, uint32_t stage);

/*
 * Marks starved[0][i] and starved[1][i] for the runs whose share (-1:
 * unmeasured, never starved) is starved against both sides' shares pooled;
 * counts them in count[2].  0 or -ENOMEM.
 */
int diff_runs__starved(const double *const share[2], const size_t n[2], bool *const starved[2],
		       size_t count[2]);

/*
 * diff_values.c: one record's value of an item (metric, and stage or
 * state); false when the record has none.
 */
bool diff_record__value(const struct kh_profile *p, enum kh_diff_metric metric, uint32_t stage,
			double *out);
bool diff_record__has_state(const struct kh_profile *p, uint32_t state);

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
