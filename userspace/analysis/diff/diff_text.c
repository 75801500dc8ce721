// SPDX-License-Identifier: MIT
/*
 * diff_text.c - a comparison as an aligned text table or a GitHub markdown
 * table, each between a header line and the summary line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "diff_internal.h"
#include "outbuf.h"
#include "utf8.h"

/* --- cells shared by the text and markdown tables ------------------------ */

enum column { C_ITEM, C_BASE, C_CAND, C_CHANGE, C_INTERVAL, C_THRESHOLD, C_VERDICT, C_COUNT };

static const char *const column_titles[C_COUNT] = {
	"item", "base", "candidate", "change", "interval", "threshold", "verdict",
};
static const bool column_right[C_COUNT] = {
	[C_BASE] = true, [C_CAND] = true, [C_CHANGE] = true, [C_THRESHOLD] = true,
};

#define CELL 64

struct time_unit {
	double scale;
	const char *name;
	int digits;
};

static struct time_unit time_unit(double big)
{
	if (big < 1e3)
		return (struct time_unit){ 1, "ns", 0 };
	if (big < 1e6)
		return (struct time_unit){ 1e3, "µs", 2 };
	if (big < 1e9)
		return (struct time_unit){ 1e6, "ms", 2 };
	return (struct time_unit){ 1e9, "s", 3 };
}

/* One unit for both sides of a row, so that their digits line up. */
static void time_cells(double base, double cand, char *b, char *c)
{
	struct time_unit u = time_unit(fmax(base, cand));

	snprintf(b, CELL, "%.*f %s", u.digits, base / u.scale, u.name);
	snprintf(c, CELL, "%.*f %s", u.digits, cand / u.scale, u.name);
}

static bool is_time_metric(enum kh_diff_metric metric)
{
	return metric != KH_DIFF_M_THROUGHPUT && metric != KH_DIFF_M_PEAK_RSS &&
	       metric != KH_DIFF_M_CALLS;
}

/* A signed amount in the row's unit, for a shift from a base of 0. */
static void delta_text(enum kh_diff_metric metric, double v, double big, char *buf, size_t len)
{
	const double mib = 1024.0 * 1024.0;
	struct time_unit u = time_unit(big);

	v += 0.0; /* no "-0" */
	if (is_time_metric(metric))
		snprintf(buf, len, "%+.*f %s", u.digits, v / u.scale, u.name);
	else if (metric == KH_DIFF_M_THROUGHPUT)
		snprintf(buf, len, "%+.1f MiB/s", v / mib);
	else if (metric == KH_DIFF_M_PEAK_RSS)
		snprintf(buf, len, "%+.1f MiB", v / mib);
	else
		snprintf(buf, len, "%+g", v);
}

static void value_cell(enum kh_diff_metric metric, double v, char *buf)
{
	const double mib = 1024.0 * 1024.0;

	if (metric == KH_DIFF_M_THROUGHPUT)
		snprintf(buf, CELL, "%.1f MiB/s", v / mib);
	else if (metric == KH_DIFF_M_PEAK_RSS)
		snprintf(buf, CELL, "%.1f MiB", v / mib);
	else /* calls: a median of an even count may end in .5 */
		snprintf(buf, CELL, v == floor(v) ? "%.0f" : "%.1f", v);
}

static void pct_text(double pct, char *buf, size_t len)
{
	/* A time, an amount or a rate cannot fall by more than all of it. */
	if (pct < -100.0)
		snprintf(buf, len, "<-100%%");
	else if (isinf(pct))
		snprintf(buf, len, "%sinf%%", pct > 0 ? "+" : "-");
	else
		snprintf(buf, len, "%+.1f%%", pct + 0.0); /* no "-0.0" */
}

static void change_cell(const struct kh_diff_item *it, char *buf)
{
	if (it->has_change)
		pct_text(it->change_pct, buf, CELL);
	else
		snprintf(buf, CELL, "%s", it->shift > 0 ? "new" : "n/a");
}

const char *diff_item__adjustment(const struct kh_diff_item *it)
{
	bool some_out = it->base_used < it->base_n || it->cand_used < it->cand_n;

	if (it->wait_adjusted && some_out)
		return "the values of the runs not starved of CPU, each divided by its wait factor, "
		       "1 / (1 - its share of span time waiting for a CPU), against their median";
	if (it->wait_adjusted)
		return "every run's value divided by its wait factor, 1 / (1 - its share of span "
		       "time waiting for a CPU), against their median";
	if (!some_out)
		return NULL;
	if (it->left_out == KH_DIFF_LEFT_INCOMPLETE)
		return "the values of the runs whose off-CPU split of the stage is complete";
	if (diff_metric__is_wall(it->metric))
		return "the values of the runs not starved of CPU";
	return "the values of the runs in which the stage did not wait for a CPU far longer "
	       "than usual";
}

static bool item_adjusted(const struct kh_diff_item *it)
{
	return diff_item__adjustment(it) != NULL;
}

void diff_item__verdict(const struct kh_diff *d, const struct kh_diff_item *it, bool markdown,
			char *buf, size_t len)
{
	if (it->verdict == KH_DIFF_UNJUDGED && d->method != KH_DIFF_METHOD_MANN_WHITNEY)
		/* Too few runs a side: what moved, without a verdict. */
		snprintf(buf, len, "%s", it->beyond > 0 ? "worse, unjudged"
					 : it->beyond < 0 ? "better, unjudged" : "unjudged");
	else if (it->verdict == KH_DIFF_UNJUDGED)
		snprintf(buf, len, "unjudged (%s)",
			 it->unjudged == KH_DIFF_STARVED ? "starved" : "too few runs");
	else if (it->verdict == KH_DIFF_REGRESSED && it->gating)
		snprintf(buf, len, markdown ? "**regressed**" : "regressed");
	else if (it->verdict == KH_DIFF_REGRESSED)
		snprintf(buf, len, "regressed*");
	else if (it->floor_only)
		/* Beyond the threshold, but by less than --min-change-ms. */
		snprintf(buf, len, "ok (below floor)");
	else
		snprintf(buf, len, "%s", diff_mark__name(it->verdict));
}

static bool item_changed(const struct kh_diff_item *it);

/* "hot-patterns.elapsed" for a stage's items, "wall" for the others. */
void diff_item__label(const struct kh_diff_item *it, char *buf, size_t len)
{
	if (diff_metric__is_stage(it->metric))
		snprintf(buf, len, "%s.%s", it->name, diff_metric__name(it->metric));
	else if (diff_metric__is_state(it->metric))
		snprintf(buf, len, "%s.%s", it->name,
			 it->metric == KH_DIFF_M_STATE_WALL ? "wall" : "cpu");
	else
		snprintf(buf, len, "%s", it->name);
}

static void item_cells(const struct kh_diff *d, const struct kh_diff_item *it, bool markdown,
		       char cells[C_COUNT][CELL])
{
	char lo[CELL / 2 - 4], hi[CELL / 2 - 4];
	size_t len;

	for (int c = 0; c < C_COUNT; c++)
		cells[c][0] = '\0';
	diff_item__label(it, cells[C_ITEM], CELL);
	/* Judged on adjusted values: a footnote says how. */
	if (item_adjusted(it)) {
		len = strlen(cells[C_ITEM]);
		snprintf(cells[C_ITEM] + len, CELL - len, "†");
	}
	if (is_time_metric(it->metric)) {
		time_cells(it->base_median, it->cand_median, cells[C_BASE], cells[C_CAND]);
	} else {
		value_cell(it->metric, it->base_median, cells[C_BASE]);
		value_cell(it->metric, it->cand_median, cells[C_CAND]);
	}
	change_cell(it, cells[C_CHANGE]);
	if (it->has_interval && it->has_change) {
		pct_text(it->interval_low_pct, lo, sizeof(lo));
		pct_text(it->interval_high_pct, hi, sizeof(hi));
	} else if (it->has_interval) {
		double big = fmax(fabs(it->interval_low), fabs(it->interval_high));

		delta_text(it->metric, it->interval_low, big, lo, sizeof(lo));
		delta_text(it->metric, it->interval_high, big, hi, sizeof(hi));
	}
	if (it->has_interval)
		snprintf(cells[C_INTERVAL], CELL, "[%s, %s]", lo, hi);
	if (it->has_threshold && it->threshold_off)
		snprintf(cells[C_THRESHOLD], CELL, "off");
	else if (it->has_threshold)
		snprintf(cells[C_THRESHOLD], CELL, "%g%%", it->threshold_pct);
	diff_item__verdict(d, it, markdown, cells[C_VERDICT], CELL);
	/* Moved by no more than the mode can resolve in one span: a footnote says so. */
	if (item_changed(it) && it->within_span_error) {
		len = strlen(cells[C_VERDICT]);
		snprintf(cells[C_VERDICT] + len, CELL - len, " (within span error)");
	}
}

static void method_text(const struct kh_diff *d, char *buf, size_t len)
{
	switch (d->method) {
	case KH_DIFF_METHOD_MANN_WHITNEY:
		snprintf(buf, len, "change: Hodges-Lehmann shift, interval: its Mann-Whitney %g%% "
			 "interval", d->opts.confidence);
		break;
	case KH_DIFF_METHOD_FEW_RUNS:
		snprintf(buf, len, "too few runs for a %g%% interval (%zu per side needed): nothing "
			 "judged", d->opts.confidence, d->runs_needed);
		break;
	case KH_DIFF_METHOD_SINGLE:
		snprintf(buf, len, "single runs: nothing judged");
		break;
	}
}

static void header(struct outbuf *o, const struct kh_diff *d, bool markdown)
{
	const char *q = markdown ? "`" : "'";
	char method[160];

	method_text(d, method, sizeof(method));
	outbuf__printf(o, "%skhprof diff%s: base %s%s%s (%zu record%s), candidate %s%s%s "
		       "(%zu record%s); %s\n",
		       markdown ? "**" : "", markdown ? "**" : "", q, d->base.path, q,
		       d->base.count, d->base.count == 1 ? "" : "s", q, d->cand.path, q,
		       d->cand.count, d->cand.count == 1 ? "" : "s", method);
}

/* "wall, throughput, scanning.wall and 2 more": the gating items not judged. */
static void unjudged_list(struct outbuf *o, const struct kh_diff *d)
{
	size_t listed = 0;

	for (size_t i = 0; i < d->item_count; i++) {
		const struct kh_diff_item *it = &d->items[i];
		char label[DIFF_LABEL_LEN];

		if (!it->gating || it->verdict != KH_DIFF_UNJUDGED)
			continue;
		if (listed++ == 4) {
			outbuf__printf(o, " and %zu more", d->unjudged_count - 4);
			break;
		}
		diff_item__label(it, label, sizeof(label));
		outbuf__printf(o, "%s%s", listed > 1 ? ", " : "", label);
	}
}

char *diff__cannot_reason(const struct kh_diff *d)
{
	struct outbuf o;

	if (d->verdict != KH_DIFF_VERDICT_CANNOT_JUDGE)
		return NULL;
	outbuf__init(&o);
	if (d->method != KH_DIFF_METHOD_MANN_WHITNEY) {
		outbuf__printf(&o, "too few runs (%zu base, %zu candidate record%s; %zu a side "
			       "needed for a %g%% interval)", d->base.count, d->cand.count,
			       d->cand.count == 1 ? "" : "s", d->runs_needed, d->opts.confidence);
	} else if (d->cannot == KH_DIFF_STARVED) {
		outbuf__printf(&o, "%zu of %zu base and %zu of %zu candidate runs were starved of "
			       "CPU, too few left to judge ", d->starved[0], d->base.count,
			       d->starved[1], d->cand.count);
		unjudged_list(&o, d);
		outbuf__puts(&o, "; nothing that was judged regressed");
	} else {
		outbuf__puts(&o, "too few records have a value of ");
		unjudged_list(&o, d);
		outbuf__printf(&o, " for a %g%% interval", d->opts.confidence);
	}
	return outbuf__finish(&o);
}

char *diff__summary(const struct kh_diff *d)
{
	struct outbuf o;
	size_t listed = 0, beyond = 0;
	char *reason;

	outbuf__init(&o);
	if (d->verdict == KH_DIFF_VERDICT_NOT_COMPARABLE) {
		outbuf__printf(&o, "diff: not comparable (%zu identity difference%s)",
			       d->blocking_count, d->blocking_count == 1 ? "" : "s");
	} else if (d->verdict == KH_DIFF_VERDICT_CANNOT_JUDGE) {
		if (!(reason = diff__cannot_reason(d))) {
			free(outbuf__finish(&o));
			return NULL;
		}
		outbuf__printf(&o, "diff: cannot judge: %s", reason);
		free(reason);
		for (size_t i = 0; i < d->item_count; i++)
			beyond += d->items[i].gating && d->items[i].beyond && !d->items[i].below_floor;
		if (d->method != KH_DIFF_METHOD_MANN_WHITNEY)
			outbuf__printf(&o, ": %zu item%s beyond %s threshold%s, not judged", beyond,
				       beyond == 1 ? "" : "s", beyond == 1 ? "its" : "their",
				       beyond == 1 ? "" : "s");
	} else if (!d->regression_count) {
		outbuf__printf(&o, "diff: no regression (%zu improved, %zu noisy)",
			       d->improved_count, d->noisy_count);
	} else {
		outbuf__printf(&o, "diff: %zu regression%s:", d->regression_count,
			       d->regression_count == 1 ? "" : "s");
		for (size_t i = 0; i < d->item_count; i++) {
			const struct kh_diff_item *it = &d->items[i];
			char label[64], change[CELL];

			if (!it->gating || it->verdict != KH_DIFF_REGRESSED)
				continue;
			change_cell(it, change);
			diff_item__label(it, label, sizeof(label));
			outbuf__printf(&o, "%s %s %s", listed++ ? "," : "", label, change);
		}
	}
	return outbuf__finish(&o);
}

/* What a reader looks for first: an item that moved, by verdict or calls. */
static bool item_changed(const struct kh_diff_item *it)
{
	return it->verdict == KH_DIFF_REGRESSED || it->verdict == KH_DIFF_IMPROVED ||
	       it->verdict == KH_DIFF_NOISY || it->verdict == KH_DIFF_CHANGED ||
	       it->verdict == KH_DIFF_MACHINE ||
	       (it->verdict == KH_DIFF_UNJUDGED &&
		(it->beyond || (it->gating && it->unjudged == KH_DIFF_STARVED)));
}

/* How much an item moved, for the order: "new" (from 0) first. */
static double item_size(const struct kh_diff_item *it)
{
	if (!it->has_change)
		return it->shift > 0 ? INFINITY : 0;
	return fabs(it->change_pct);
}

/*
 * Which rows lead: what fails the job, what could not be judged, the
 * gating figures that moved, then the items that say why (per call,
 * percentiles, waiting, elapsed where on_cpu gates).
 */
static int item_rank(const struct kh_diff_item *it)
{
	if (!it->gating)
		return 3;
	return it->verdict == KH_DIFF_REGRESSED ? 0 : it->verdict == KH_DIFF_UNJUDGED ? 1 : 2;
}

/* Whether row a goes before row b: by rank, then larger change first. */
static bool row_before(const struct kh_diff_item *a, const struct kh_diff_item *b)
{
	if (item_rank(a) != item_rank(b))
		return item_rank(a) < item_rank(b);
	return item_size(a) > item_size(b);
}

/*
 * The rows in print order: the changed items by row_before (ties in the
 * record's order), then with opts.all the others in theirs.  Returns the
 * number of rows; *rest the items left out.
 */
static size_t table_rows(const struct kh_diff *d, size_t *order, size_t *rest)
{
	size_t n = 0;

	for (size_t i = 0; i < d->item_count; i++)
		if (item_changed(&d->items[i]))
			order[n++] = i;
	/* Insertion sort, stable: at most KH_DIFF_MAX_ITEMS rows. */
	for (size_t i = 1; i < n; i++) {
		size_t v = order[i], j = i;

		while (j > 0 && row_before(&d->items[v], &d->items[order[j - 1]])) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = v;
	}
	*rest = d->item_count - n;
	if (d->opts.all) {
		for (size_t i = 0; i < d->item_count; i++)
			if (!item_changed(&d->items[i]))
				order[n++] = i;
		*rest = 0;
	}
	return n;
}

static bool any_clipped(const struct kh_diff *d, const size_t *order, size_t n)
{
	for (size_t r = 0; r < n; r++) {
		const struct kh_diff_item *it = &d->items[order[r]];

		if (it->has_interval && it->has_change && it->interval_low_pct < -100.0)
			return true;
	}
	return false;
}

static bool any_nongating_regressed(const struct kh_diff *d, const size_t *order, size_t n)
{
	for (size_t r = 0; r < n; r++)
		if (d->items[order[r]].verdict == KH_DIFF_REGRESSED && !d->items[order[r]].gating)
			return true;
	return false;
}

/*
 * One footnote line per way the rows' judged values were adjusted
 * (docs/CI.md, "What each item is judged on"), each naming its rows.
 */
static void adjusted_footer(struct outbuf *o, const struct kh_diff *d, const size_t *order,
			    size_t n)
{
	const char *seen[8];
	size_t kinds = 0;

	for (size_t r = 0; r < n; r++) {
		const char *how = diff_item__adjustment(&d->items[order[r]]);
		size_t listed = 0, k;

		for (k = 0; how && k < kinds && seen[k] != how; k++)
			;
		if (!how || k < kinds || kinds == sizeof(seen) / sizeof(seen[0]))
			continue;
		seen[kinds++] = how;
		outbuf__puts(o, "† ");
		for (size_t q = r; q < n; q++) {
			char label[DIFF_LABEL_LEN];

			if (diff_item__adjustment(&d->items[order[q]]) != how)
				continue;
			diff_item__label(&d->items[order[q]], label, sizeof(label));
			outbuf__printf(o, "%s%s", listed++ ? ", " : "", label);
		}
		outbuf__printf(o, ": judged on %s; base and candidate are their medians\n", how);
	}
}

/* What the table left out, and what its marks mean. */
static void table_footer(struct outbuf *o, const struct kh_diff *d, const size_t *order,
			 size_t n, size_t rest)
{
	if (!n)
		outbuf__printf(o, "no item changed beyond its threshold (%zu items)\n", rest);
	else if (rest)
		outbuf__printf(o, "%zu more item%s within %s threshold%s (--all lists them)\n", rest,
			       rest == 1 ? "" : "s", rest == 1 ? "its" : "their",
			       rest == 1 ? "" : "s");
	if (any_nongating_regressed(d, order, n))
		outbuf__puts(o, "* regressed in an item that does not fail the job: it says why a "
				"gating item moved, or what waiting cost\n");
	adjusted_footer(o, d, order, n);
	for (size_t r = 0; r < n; r++) {
		const struct kh_diff_item *it = &d->items[order[r]];

		if (item_changed(it) && it->within_span_error) {
			outbuf__printf(o, "within span error: the median span moved by no more than "
					  "the tracing mode's calibrated bias per span (%.0f ns), "
					  "all it can tell apart in one span (docs/REPORTS.md)\n",
				       it->span_error_ns);
			break;
		}
	}
	if (any_clipped(d, order, n))
		outbuf__puts(o, "<-100%: the interval's low end is below -100% (too few or too "
				"spread runs); nothing falls below 0, the JSON has the bound\n");
}

static void table_text(struct outbuf *o, const struct kh_diff *d)
{
	char (*cells)[C_COUNT][CELL] = malloc((d->item_count + 1) * sizeof(*cells));
	size_t order[KH_DIFF_MAX_ITEMS], rows, rest;
	size_t width[C_COUNT];

	if (!cells) {
		o->failed = true;
		return;
	}
	rows = table_rows(d, order, &rest);
	for (int c = 0; c < C_COUNT; c++)
		width[c] = utf8__chars(column_titles[c]);
	for (size_t i = 0; i < rows; i++) {
		item_cells(d, &d->items[order[i]], false, cells[i]);
		for (int c = 0; c < C_COUNT; c++)
			if (utf8__chars(cells[i][c]) > width[c])
				width[c] = utf8__chars(cells[i][c]);
	}
	for (size_t row = 0; rows && row <= rows; row++) {
		size_t start = o->len, end;

		for (int c = 0; c < C_COUNT; c++) {
			const char *cell = row ? cells[row - 1][c] : column_titles[c];
			int pad = (int)(width[c] - utf8__chars(cell));

			if (column_right[c])
				outbuf__printf(o, "%*s%s  ", pad, "", cell);
			else
				outbuf__printf(o, "%s%*s  ", cell, pad, "");
		}
		/* No padding after the last filled cell. */
		for (end = o->len; !o->failed && end > start && o->data[end - 1] == ' '; end--)
			;
		if (!o->failed) {
			o->len = end;
			o->data[end] = '\0';
		}
		outbuf__putc(o, '\n');
	}
	free(cells);
	table_footer(o, d, order, rows, rest);
}

static void table_markdown(struct outbuf *o, const struct kh_diff *d)
{
	size_t order[KH_DIFF_MAX_ITEMS], rows, rest;
	char cells[C_COUNT][CELL];

	rows = table_rows(d, order, &rest);
	if (!rows) {
		table_footer(o, d, order, rows, rest);
		return;
	}
	for (int c = 0; c < C_COUNT; c++)
		outbuf__printf(o, "| %s ", column_titles[c]);
	outbuf__puts(o, "|\n");
	for (int c = 0; c < C_COUNT; c++)
		outbuf__puts(o, column_right[c] ? "|--:" : "|:--");
	outbuf__puts(o, "|\n");
	for (size_t i = 0; i < rows; i++) {
		item_cells(d, &d->items[order[i]], true, cells);
		for (int c = 0; c < C_COUNT; c++)
			outbuf__printf(o, "| %s ", cells[c]);
		outbuf__puts(o, "|\n");
	}
	outbuf__putc(o, '\n');
	table_footer(o, d, order, rows, rest);
}

static char *render(const struct kh_diff *d, bool markdown)
{
	char *summary = diff__summary(d);
	struct outbuf o;

	outbuf__init(&o);
	if (!summary)
		return NULL;
	/* The verdict first: what a reader of a CI log or a PR comment wants. */
	if (markdown) {
		outbuf__printf(&o, "**%s**\n\n", summary);
		header(&o, d, markdown);
		outbuf__putc(&o, '\n');
		table_markdown(&o, d);
	} else {
		outbuf__printf(&o, "%s\n", summary);
		header(&o, d, markdown);
		outbuf__putc(&o, '\n');
		table_text(&o, d);
	}
	free(summary);
	return outbuf__finish(&o);
}

char *diff__render_text(const struct kh_diff *d)
{
	return render(d, false);
}

char *diff__render_markdown(const struct kh_diff *d)
{
	return render(d, true);
}
