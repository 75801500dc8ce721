// SPDX-License-Identifier: MIT
/*
 * html_flame.c - the HTML report's flame graphs, one per stage of a record
 * made with --sample: inline SVG drawn here, no script.  A box per
 * function on a path, its width the samples under it; the stage at the
 * bottom, each caller below its callees; a box's <title> says its
 * samples and share, so the figures are there without a mouse's tooltip
 * script (print, or a screen reader).  Titles name functions demangled
 * whole, labels shortened (`Vec<…>::push`) before they are cut to fit.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "html.h"
#include "stacks.h"
#include "utf8.h"

#define FLAME_W 1000.0
#define ROW_H 17.0
/* Boxes narrower than this are not drawn (their samples still count in the parent). */
#define MIN_W 0.25
/* Width of one character of the 11 px label text, for cutting labels to fit. */
#define CHAR_W 6.6

struct flame_node {
	uint32_t name;
	uint64_t count;
	int child, next; /* first child, next sibling; -1 none */
};

struct flame {
	struct flame_node *nodes;
	size_t count, cap;
	int depth;
};

static int flame__node(struct flame *f, uint32_t name)
{
	if (f->count == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 256;
		struct flame_node *grown = realloc(f->nodes, cap * sizeof(*grown));

		if (!grown)
			return -1;
		f->nodes = grown;
		f->cap = cap;
	}
	f->nodes[f->count] = (struct flame_node){ name, 0, -1, -1 };
	return (int)f->count++;
}

/* The tree of stage's stacks; node 0 is the stage. */
static int flame__build(struct flame *f, const struct kh_stacks *s, uint32_t stage)
{
	if (flame__node(f, UINT32_MAX) < 0)
		return -1;
	for (size_t i = 0; i < s->stack_count; i++) {
		const struct kh_stack *st = &s->stacks[i];
		int at = 0;

		if (st->stage != stage)
			continue;
		f->nodes[0].count += st->count;
		for (uint32_t d = 0; d < st->frame_count; d++) {
			int c = f->nodes[at].child;

			while (c >= 0 && f->nodes[c].name != st->frames[d])
				c = f->nodes[c].next;
			if (c < 0) {
				c = flame__node(f, st->frames[d]);
				if (c < 0)
					return -1;
				f->nodes[c].next = f->nodes[at].child;
				f->nodes[at].child = c;
			}
			f->nodes[c].count += st->count;
			at = c;
		}
		if ((int)st->frame_count > f->depth)
			f->depth = (int)st->frame_count;
	}
	return 0;
}

/* Warm colours, chosen by the name so a function keeps its colour on every graph. */
static void flame__colour(struct outbuf *b, const char *name)
{
	uint32_t h = 2166136261u;

	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	if (name[0] == '[') {
		outbuf__puts(b, "#c8c8c8"); /* [jit], [unknown], [FILE]: not a named function */
		return;
	}
	outbuf__printf(b, "rgb(%u,%u,%u)", 205 + h % 50, 90 + (h >> 8) % 120, 40 + (h >> 16) % 50);
}

static void flame__draw(struct outbuf *b, const struct flame *f, const struct kh_stacks *s,
			int node, int depth, double x, double scale, double height,
			const char *root_name)
{
	const struct flame_node *n = &f->nodes[node];
	double w = (double)n->count * scale, y = height - (depth + 1) * ROW_H;
	const char *name = node == 0 ? root_name : s->names[n->name];
	double cx = x;

	if (w < MIN_W)
		return;
	outbuf__printf(b, "<g><title>");
	html__escape(b, name);
	outbuf__printf(b, ": %" PRIu64 " sample%s, %.1f%%</title><rect x=\"%.2f\" y=\"%.1f\" "
		       "width=\"%.2f\" height=\"%.1f\" fill=\"", n->count, n->count == 1 ? "" : "s",
		       100.0 * (double)n->count / (double)f->nodes[0].count, x, y, w, ROW_H - 1);
	if (node == 0)
		outbuf__puts(b, "#9db8d3");
	else
		flame__colour(b, name);
	outbuf__puts(b, "\" stroke=\"#fff\" stroke-width=\"0.5\"/>");
	if (w > 4 * CHAR_W) {
		size_t fit = (size_t)((w - 6) / CHAR_W);
		char *label = node == 0 ? strdup(name) : kh_name__shorten(name);
		size_t chars = label ? utf8__chars(label) : 0;

		outbuf__printf(b, "<text x=\"%.2f\" y=\"%.1f\" font-size=\"11\">", x + 3,
			       y + ROW_H - 5);
		if (!label) {
			b->failed = true;
		} else if (fit < chars) {
			/* Cut between characters, never inside one. */
			label[utf8__prefix(label, fit > 2 ? fit - 2 : 0)] = '\0';
			html__escape(b, label);
			outbuf__puts(b, "..");
		} else {
			html__escape(b, label);
		}
		free(label);
		outbuf__puts(b, "</text>");
	}
	outbuf__puts(b, "</g>\n");
	/* Callees in name order, as flame graphs draw them: the same stacks, the same picture. */
	for (int c = n->child; c >= 0; c = f->nodes[c].next) {
		flame__draw(b, f, s, c, depth + 1, cx, scale, height, root_name);
		cx += (double)f->nodes[c].count * scale;
	}
}

static const struct kh_stacks *sort_names;

static int by_name(const void *a, const void *b)
{
	return strcmp(sort_names->names[((const struct flame_node *)a)->name],
		      sort_names->names[((const struct flame_node *)b)->name]);
}

/* Relinks every node's children in name order. */
static int flame__sort(struct flame *f, const struct kh_stacks *s)
{
	struct flame_node *tmp = malloc((f->count ? f->count : 1) * sizeof(*tmp));
	int *index = malloc((f->count ? f->count : 1) * sizeof(*index));

	if (!tmp || !index) {
		free(tmp);
		free(index);
		return -1;
	}
	sort_names = s;
	for (size_t i = 0; i < f->count; i++) {
		size_t n = 0;

		for (int c = f->nodes[i].child; c >= 0; c = f->nodes[c].next) {
			tmp[n] = f->nodes[c];
			tmp[n++].next = c; /* remember the index in next while sorting */
		}
		qsort(tmp, n, sizeof(*tmp), by_name);
		for (size_t k = 0; k < n; k++)
			index[k] = tmp[k].next;
		f->nodes[i].child = n ? index[0] : -1;
		for (size_t k = 0; k < n; k++)
			f->nodes[index[k]].next = k + 1 < n ? index[k + 1] : -1;
	}
	free(tmp);
	free(index);
	return 0;
}

static void flame__figure(struct outbuf *b, const struct kh_stacks *s, uint32_t stage)
{
	const char *label = stage == KH_NO_STAGE ? "(no stage)" : kh_stage__name(stage);
	struct flame f = { 0 };
	double height;

	if (flame__build(&f, s, stage) || !f.nodes[0].count || flame__sort(&f, s)) {
		free(f.nodes);
		return;
	}
	height = (f.depth + 1) * ROW_H;
	outbuf__printf(b, "<figure id=\"flame-%s\">\n<figcaption><b>",
		       stage == KH_NO_STAGE ? "no-stage" : label);
	html__escape(b, label);
	outbuf__printf(b, "</b>: %" PRIu64 " samples (%.1f%% of all)</figcaption>\n",
		       f.nodes[0].count, s->samples ? 100.0 * (double)f.nodes[0].count /
							  (double)s->samples : 0.0);
	outbuf__printf(b, "<svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"flame graph of ",
		       FLAME_W, height);
	html__escape(b, label);
	outbuf__puts(b, "\">\n");
	flame__draw(b, &f, s, 0, 0, 0, FLAME_W / (double)f.nodes[0].count, height, label);
	outbuf__puts(b, "</svg>\n</figure>\n");
	free(f.nodes);
}

void html__render_flames(struct outbuf *b, const struct kh_profile *p)
{
	struct kh_stacks shown, *s = &shown;
	uint32_t order[KH_STAGE_COUNT + 1];
	size_t n = 0;

	if (!p->ext.stacks.present)
		return;
	/* Boxes of one function under two symbols (a Rust hash, an LLVM clone) are one box. */
	if (kh_stacks__shown(&p->ext.stacks, KH_NAMES_PRINTED, &shown, NULL)) {
		b->failed = true;
		return;
	}
	outbuf__puts(b, "<section id=\"flame-graphs\">\n<h2>Which code, per stage</h2>\n");
	outbuf__printf(b, "<p class=\"lead\">%" PRIu64 " stack samples at %" PRIu64 " Hz of each "
		       "thread's CPU time, by the stage the thread had open. Each box is a "
		       "function, as wide as the samples in it and the functions it called "
		       "(above it); hover or read its title for the figures.</p>\n",
		       s->samples, s->rate_hz);
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++)
		if (kh_stacks__stage_samples(s, st))
			order[n++] = st;
	/* Most samples first, as the stage bars. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && kh_stacks__stage_samples(s, order[j]) >
					      kh_stacks__stage_samples(s, order[j - 1]); j--) {
			uint32_t t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	if (kh_stacks__stage_samples(s, KH_NO_STAGE))
		order[n++] = KH_NO_STAGE;
	if (!n)
		outbuf__puts(b, "<p>No sample was taken.</p>\n");
	for (size_t i = 0; i < n; i++)
		flame__figure(b, s, order[i]);
	outbuf__puts(b, "</section>\n");
	kh_stacks__free(&shown);
}
