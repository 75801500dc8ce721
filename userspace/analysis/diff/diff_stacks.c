// SPDX-License-Identifier: MIT
/*
 * diff_stacks.c - `khprof diff`'s per-stage top functions when both sides
 * carry --sample's stacks: which function's share of a stage's samples
 * grew (the why of a regressed stage).  Informative: it never gates, the
 * stage times above it do.  Functions are named as the text report's
 * table names them (demangled, short), which also joins one function's
 * symbols across two builds: a Rust function's hash changes with its
 * crate's build.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "diff_stacks.h"
#include "outbuf.h"
#include "utf8.h"

/* Functions shown per stage, largest change first. */
#define TOP_PER_STAGE 5

struct fn_row {
	uint32_t stage;
	char *name;
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
	t->rows[t->count] = (struct fn_row){ stage, strdup(name), { 0, 0 } };
	if (!t->rows[t->count].name)
		return -1;
	t->rows[t->count++].self[side] = n;
	return 0;
}

static void table_free(struct fn_table *t)
{
	for (size_t i = 0; i < t->count; i++)
		free(t->rows[i].name);
	free(t->rows);
}

/* Self samples (innermost frame) per stage and function over every record of a side. */
static int table_side(struct fn_table *t, const struct kh_diff_side *side, int which)
{
	for (size_t r = 0; r < side->count; r++) {
		struct kh_stacks shown, *s = &shown;
		int err = 0;

		if (kh_stacks__shown(&side->records[r].ext.stacks, KH_NAMES_SHORT, &shown, NULL))
			return -1;
		for (size_t i = 0; !err && i < s->stack_count; i++) {
			const struct kh_stack *st = &s->stacks[i];

			if (st->stage >= KH_STAGE_COUNT || !st->frame_count ||
			    st->frames[st->frame_count - 1] >= s->name_count)
				continue;
			t->stage_total[which][st->stage] += st->count;
			err = table_add(t, st->stage, s->names[st->frames[st->frame_count - 1]], which,
					st->count);
		}
		kh_stacks__free(&shown);
		if (err)
			return -1;
	}
	return 0;
}

/* s, then spaces to width characters (printf's %-*s counts bytes: an ellipsis is 3). */
static void put_padded(struct outbuf *o, const char *s, size_t width)
{
	size_t chars = utf8__chars(s);

	outbuf__printf(o, "%s%*s", s, chars < width ? (int)(width - chars) : 0, "");
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
		table_free(&t);
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
		outbuf__printf(&o, "  %-24s ", kh_stage__name(row->stage));
		put_padded(&o, row->name, 32);
		outbuf__printf(&o, " %6.1f%% %6.1f%% %+7.1f pp\n", share(&t, row, 0),
			       share(&t, row, 1), share(&t, row, 1) - share(&t, row, 0));
		shown++;
	}
	if (!shown)
		outbuf__puts(&o, "  (no stage was sampled on both sides)\n");
	table_free(&t);
	return outbuf__finish(&o);
}
