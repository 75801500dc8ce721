/* SPDX-License-Identifier: MIT */
/*
 * diff_internal.h - what the diff modules share and no caller needs:
 * diff.c (items and the verdict), diff_options.c, diff_bind.c (identity
 * and warnings), diff_text.c and diff_json.c.  The public API is diff.h.
 */
#ifndef KHPROF_DIFF_INTERNAL_H
#define KHPROF_DIFF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diff.h"

#define DIFF_BIT(f) (1u << (f))
#define DIFF_ALL_FIELDS (DIFF_BIT(KH_DIFF_F_COUNT) - 1)

/* Sides with this many runs each lose their run farthest from the median. */
#define DIFF_TRIM_MIN_RUNS 5
/* An interval must clear this many pooled MADs of the runs, as well as the threshold. */
#define DIFF_NOISE_K 3.0

/* Room for an item's label, such as "scanner-queue-wait.per_call". */
#define DIFF_LABEL_LEN 64

/* vasprintf into a fresh string; NULL when out of memory. */
char *diff__format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline bool diff_metric__is_stage(enum kh_diff_metric metric)
{
	return metric >= KH_DIFF_M_ELAPSED && metric <= KH_DIFF_M_DECODED;
}

/* Items whose interval leaves out each side's farthest run (diff.c). */
static inline bool diff_metric__trims(enum kh_diff_metric metric)
{
	return metric >= KH_DIFF_M_P50;
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
