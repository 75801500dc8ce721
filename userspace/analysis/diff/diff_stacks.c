// SPDX-License-Identifier: MIT
/*
 * diff_stacks.c - `khprof diff`'s per-stage top functions when both sides
 * carry --sample's stacks: which function's share of a stage's samples
 * grew (the why of a regressed stage).  Informative: it never gates, the
 * stage times above it do.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "diff_stacks.h"
#include "outbuf.h"

/* Functions shown per stage, largest change first. */
#define TOP_PER_STAGE 5

struct fn_row {
	uint32_t stage;
	const char *name; /* a record's name table owns it */
	uint64_t self[2]; /* base, candidate */
};

struct fn_table {
	struct fn_row *rows;
	size_t count, cap;
	uint64_t stage_total[2][KH_STAGE_COUNT];
};

static int table_add(struct fn_table *t, uint32_t stage, const char *name, int side, uint64_t n)
{
	for (size_t i = 0; i < t->count; i++)
		if (t->rows[i].stage == stage && !strcmp(t->rows[i].name, name)) {
			t->rows[i].self[side] += n;
			return 0;
		}
	if (t->count == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct fn_row *grown = realloc(t->rows, cap * sizeof(*grown));

		if (!grown)
			return -1;
		t->rows = grown;
		t->cap = cap;
	}
	t->rows[t->count] = (struct fn_row){ stage, name, { 0, 0 } };
	t->rows[t->count++].self[side] = n;
	return 0;
}

/* Self samples (innermost frame) per stage and function over every record of a side. */
static int table_side(struct fn_table *t, const struct kh_diff_side *side, int which)
{
	for (size_t r = 0; r < side->count; r++) {
		const struct kh_stacks *s = &side->records[r].ext.stacks;

		for (size_t i = 0; i < s->stack_count; i++) {
			const struct kh_stack *st = &s->stacks[i];

			if (st->stage >= KH_STAGE_COUNT || !st->frame_count ||
			    st->frames[st->frame_count - 1] >= s->name_count)
				continue;
			t->stage_total[which][st->stage] += st->count;
			if (table_add(t, st->stage, s->names[st->frames[st->frame_count - 1]], which,
				      st->count))
				return -1;
		}
	}
	return 0;
}

static bool side_sampled(const struct kh_diff_side *side)
{
	for (size_t r = 0; r < side->count; r++)
		if (side->records[r].ext.stacks.present)
			return true;
	return false;
}

static double share(const struct fn_table *t, const struct fn_row *row, int side)
{
	uint64_t total = t->stage_total[side][row->stage];

	return total ? 100.0 * (double)row->self[side] / (double)total : 0.0;
}

static const struct fn_table *sort_table;

static int by_change(const void *a, const void *b)
{
	const struct fn_row *x = a, *y = b;
	double dx, dy;

	if (x->stage != y->stage)
		return x->stage < y->stage ? -1 : 1;
	dx = fabs(share(sort_table, x, 1) - share(sort_table, x, 0));
	dy = fabs(share(sort_table, y, 1) - share(sort_table, y, 0));
	if (dx != dy)
		return dx < dy ? 1 : -1;
	return strcmp(x->name, y->name);
}

char *diff__render_stack_functions(const struct kh_diff_side *base, const struct kh_diff_side *cand)
{
	struct fn_table t = { 0 };
	struct outbuf o;
	size_t shown = 0;

	outbuf__init(&o);
	if (!side_sampled(base) || !side_sampled(cand))
		return outbuf__finish(&o); /* "": nothing to compare */
	if (table_side(&t, base, 0) || table_side(&t, cand, 1)) {
		free(t.rows);
		return NULL;
	}
	sort_table = &t;
	qsort(t.rows, t.count, sizeof(*t.rows), by_change);
	outbuf__puts(&o, "\ntop functions per stage (share of the stage's samples spent in the "
			 "function itself; informative, never gates):\n");
	outbuf__printf(&o, "  %-24s %-32s %7s %7s %9s\n", "stage", "function", "base", "cand",
		       "change");
	for (size_t i = 0, in_stage = 0; i < t.count; i++) {
		const struct fn_row *row = &t.rows[i];

		if (i && row->stage != t.rows[i - 1].stage)
			in_stage = 0;
		/* Both sides must have sampled the stage for a share to compare. */
		if (!t.stage_total[0][row->stage] || !t.stage_total[1][row->stage] ||
		    in_stage++ >= TOP_PER_STAGE)
			continue;
		outbuf__printf(&o, "  %-24s %-32s %6.1f%% %6.1f%% %+7.1f pp\n",
			       kh_stage__name(row->stage), row->name, share(&t, row, 0),
			       share(&t, row, 1), share(&t, row, 1) - share(&t, row, 0));
		shown++;
	}
	if (!shown)
		outbuf__puts(&o, "  (no stage was sampled on both sides)\n");
	free(t.rows);
	return outbuf__finish(&o);
}
