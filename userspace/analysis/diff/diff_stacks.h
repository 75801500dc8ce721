/* SPDX-License-Identifier: MIT */
/*
 * diff_stacks.h - per-stage top functions of two sides' stack samples.
 */
#ifndef KHPROF_DIFF_STACKS_H
#define KHPROF_DIFF_STACKS_H

#include "diff.h"

/*
 * For every stage both sides sampled (--sample), the functions whose share
 * of the stage's self samples changed most, base against candidate; ""
 * when either side has no samples.  malloc'd, or NULL (ENOMEM).
 */
char *diff__render_stack_functions(const struct kh_diff_side *base, const struct kh_diff_side *cand);

#endif /* KHPROF_DIFF_STACKS_H */
