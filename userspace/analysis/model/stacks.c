// SPDX-License-Identifier: MIT
/*
 * stacks.c - the sampled stacks of a record: the model, its frames named
 * as the outputs show them, folded stacks and the text report's "top
 * functions per stage" table (stacks.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "record.h"
#include "stacks.h"
#include "utf8.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const tag_names[] = {
	[KH_SAMPLE_TAG_STAGE] = "stage",
	[KH_SAMPLE_TAG_NO_STAGE] = "no_stage",
	[KH_SAMPLE_TAG_UNREGISTERED] = "unregistered",
	[KH_SAMPLE_TAG_UNREADABLE] = "unreadable",
	[KH_SAMPLE_TAG_TOO_DEEP] = "too_deep",
};
_Static_assert(ARRAY_SIZE(tag_names) == KH_SAMPLE_TAG_COUNT, "one name per kh_sample_tag");

const char *kh_sample_tag__name(uint32_t tag)
{
	return tag < KH_SAMPLE_TAG_COUNT ? tag_names[tag] : NULL;
}

static const char *const unwind_names[] = {
	[KH_UNWIND_FP] = "frame-pointer",
	[KH_UNWIND_FP_CFI] = "frame-pointer+cfi",
};
_Static_assert(ARRAY_SIZE(unwind_names) == KH_UNWIND_COUNT, "one name per kh_unwind");

const char *kh_unwind__name(uint32_t unwind)
{
	return unwind < KH_UNWIND_COUNT ? unwind_names[unwind] : NULL;
}

int kh_unwind__parse(const char *name, uint32_t *out)
{
	for (uint32_t i = 0; i < KH_UNWIND_COUNT; i++)
		if (!strcmp(name, unwind_names[i])) {
			*out = i;
			return 0;
		}
	return -EINVAL;
}

uint32_t kh_stacks__name(struct kh_stacks *s, const char *name)
{
	char *copy;

	/* Records hold a few hundred names: a linear search is cheap next to symbolizing. */
	for (size_t i = 0; i < s->name_count; i++)
		if (!strcmp(s->names[i], name))
			return (uint32_t)i;
	if (s->name_count == s->name_cap) {
		size_t cap = s->name_cap ? s->name_cap * 2 : 64;
		char **grown = realloc(s->names, cap * sizeof(*grown));

		if (!grown)
			return UINT32_MAX;
		s->names = grown;
		s->name_cap = cap;
	}
	copy = strdup(name);
	if (!copy)
		return UINT32_MAX;
	s->names[s->name_count] = copy;
	return (uint32_t)s->name_count++;
}

int kh_stacks__add(struct kh_stacks *s, uint32_t stage, uint32_t attribution,
		   const uint32_t *frames, uint32_t frame_count, uint64_t count)
{
	struct kh_stack *st;

	if (s->stack_count == s->stack_cap) {
		size_t cap = s->stack_cap ? s->stack_cap * 2 : 64;
		struct kh_stack *grown = realloc(s->stacks, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		s->stacks = grown;
		s->stack_cap = cap;
	}
	st = &s->stacks[s->stack_count];
	st->frames = malloc((frame_count ? frame_count : 1) * sizeof(*frames));
	if (!st->frames)
		return -ENOMEM;
	if (frame_count)
		memcpy(st->frames, frames, frame_count * sizeof(*frames));
	st->stage = stage;
	st->attribution = attribution;
	st->unwind = KH_UNWIND_FP;
	st->incomplete = false;
	st->frame_count = frame_count;
	st->count = count;
	s->stack_count++;
	return 0;
}

void kh_stacks__free(struct kh_stacks *s)
{
	for (size_t i = 0; i < s->name_count; i++)
		free(s->names[i]);
	for (size_t i = 0; i < s->stack_count; i++)
		free(s->stacks[i].frames);
	free(s->names);
	free(s->stacks);
	free(s->timeline);
	free(s->unwinding);
	memset(s, 0, sizeof(*s));
}

struct shown_name {
	char *text;
	uint32_t from; /* index in the record's names */
};

static int by_text(const void *a, const void *b)
{
	const struct shown_name *x = a, *y = b;
	int c = strcmp(x->text, y->text);

	return c ? c : (x->from > y->from) - (x->from < y->from);
}

/*
 * s's names as form shows them, sorted (then by index); NULL without
 * memory.  Each name once per output, not once per frame: demangling and
 * shortening a name took 1.4 to 10 us here (libstdc++'s 5,891 C++ symbols
 * in 16 to 28 ms, load average ~20), and a stack repeats its names.
 */
static struct shown_name *shown_names(const struct kh_stacks *s, enum kh_name_form form)
{
	struct shown_name *names = calloc(s->name_count ? s->name_count : 1, sizeof(*names));

	for (size_t i = 0; names && i < s->name_count; i++) {
		char *full = kh_name__demangle(s->names[i]);

		names[i].from = (uint32_t)i;
		names[i].text = form == KH_NAMES_SHORT && full ? kh_name__shorten(full) : full;
		if (form == KH_NAMES_SHORT)
			free(full);
		if (form != KH_NAMES_DEMANGLED && names[i].text) {
			char *escaped = utf8__escape_dup(names[i].text);

			free(names[i].text);
			names[i].text = escaped;
		}
		for (char *c = names[i].text; form == KH_NAMES_STACKED && c && *c; c++)
			if (*c == ';')
				*c = ':';
		if (!names[i].text) {
			while (i-- > 0)
				free(names[i].text);
			free(names);
			return NULL;
		}
	}
	if (names)
		qsort(names, s->name_count, sizeof(*names), by_text);
	return names;
}

/* The header of s (counts, rate, unwinding) and its timeline into out. */
static int copy_header(const struct kh_stacks *s, struct kh_stacks *out)
{
	*out = *s;
	out->names = NULL;
	out->name_count = out->name_cap = 0;
	out->stacks = NULL;
	out->stack_count = out->stack_cap = 0;
	out->unwinding = s->unwinding ? strdup(s->unwinding) : NULL;
	out->timeline = calloc(s->timeline_count ? s->timeline_count : 1, sizeof(*out->timeline));
	if ((s->unwinding && !out->unwinding) || !out->timeline)
		return -ENOMEM;
	if (s->timeline_count)
		memcpy(out->timeline, s->timeline, s->timeline_count * sizeof(*s->timeline));
	return 0;
}

int kh_stacks__shown(const struct kh_stacks *s, enum kh_name_form form, struct kh_stacks *out,
		     uint32_t **map)
{
	size_t n = s->name_count;
	struct shown_name *sorted = shown_names(s, form);
	uint32_t *first = calloc(n ? n : 1, sizeof(*first)); /* the first name shown alike */
	uint32_t *ids = calloc(n ? n : 1, sizeof(*ids));
	char **text = calloc(n ? n : 1, sizeof(*text));
	int err = copy_header(s, out);

	if (!sorted || !first || !ids || !text || !(out->names = calloc(n ? n : 1, sizeof(char *))))
		err = -ENOMEM;
	/* text owns the names from here. */
	for (size_t i = 0; sorted && i < n; i++) {
		if (!text) {
			free(sorted[i].text);
			continue;
		}
		text[sorted[i].from] = sorted[i].text;
		first[sorted[i].from] = i && !strcmp(sorted[i].text, sorted[i - 1].text)
						? first[sorted[i - 1].from] : sorted[i].from;
	}
	out->name_cap = n;
	/* In the record's order, which breaks the tables' ties as before. */
	for (size_t i = 0; !err && i < n; i++) {
		if (first[i] == i) {
			ids[i] = (uint32_t)out->name_count;
			out->names[out->name_count++] = text[i];
			text[i] = NULL;
		} else {
			ids[i] = ids[first[i]];
		}
	}
	for (size_t i = 0; !err && i < s->stack_count; i++) {
		const struct kh_stack *st = &s->stacks[i];
		struct kh_stack *copy;

		err = kh_stacks__add(out, st->stage, st->attribution, st->frames, st->frame_count,
				     st->count);
		if (err)
			break;
		copy = &out->stacks[out->stack_count - 1];
		copy->unwind = st->unwind;
		copy->incomplete = st->incomplete;
		for (uint32_t f = 0; f < copy->frame_count; f++)
			copy->frames[f] = copy->frames[f] < n ? ids[copy->frames[f]] : UINT32_MAX;
	}
	for (size_t i = 0; text && i < n; i++)
		free(text[i]);
	free(text);
	free(sorted);
	free(first);
	if (err) {
		kh_stacks__free(out);
		free(ids);
		ids = NULL;
	}
	if (map)
		*map = ids;
	else
		free(ids);
	return err;
}

static const char *stage_label(uint32_t stage)
{
	const char *name = stage == KH_NO_STAGE ? NULL : kh_stage__name(stage);

	return name ? name : "(no stage)";
}

struct folded_line {
	char *text;
	uint64_t count;
};

static int folded_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

static void folded_of(const struct kh_stacks *s, struct outbuf *out)
{
	struct folded_line *lines = calloc(s->stack_count ? s->stack_count : 1, sizeof(*lines));
	size_t n = 0;

	if (!lines) {
		out->failed = true;
		return;
	}
	for (size_t i = 0; i < s->stack_count; i++) {
		const struct kh_stack *st = &s->stacks[i];
		struct outbuf line;

		outbuf__init(&line);
		outbuf__puts(&line, stage_label(st->stage));
		for (uint32_t f = 0; f < st->frame_count; f++) {
			outbuf__putc(&line, ';');
			outbuf__puts(&line, st->frames[f] < s->name_count ? s->names[st->frames[f]]
									  : "[unknown]");
		}
		lines[n].text = outbuf__finish(&line);
		if (!lines[n].text) {
			out->failed = true;
			continue;
		}
		lines[n++].count = st->count;
	}
	qsort(lines, n, sizeof(*lines), folded_cmp);
	for (size_t i = 0; i < n; i++) {
		uint64_t count = lines[i].count;

		/* The same stack under both attributions is one line. */
		while (i + 1 < n && !strcmp(lines[i].text, lines[i + 1].text)) {
			free(lines[i].text);
			count += lines[++i].count;
		}
		outbuf__printf(out, "%s %" PRIu64 "\n", lines[i].text, count);
		free(lines[i].text);
	}
	free(lines);
}

void kh_stacks__folded(const struct kh_stacks *s, struct outbuf *out)
{
	struct kh_stacks shown;

	if (kh_stacks__shown(s, KH_NAMES_STACKED, &shown, NULL)) {
		out->failed = true;
		return;
	}
	folded_of(&shown, out);
	kh_stacks__free(&shown);
}

uint64_t kh_stacks__stage_samples(const struct kh_stacks *s, uint32_t stage)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->stack_count; i++)
		if (s->stacks[i].stage == stage)
			n += s->stacks[i].count;
	return n;
}

static int fn_cmp(const void *a, const void *b)
{
	const struct kh_stack_fn *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return x->name < y->name ? -1 : x->name > y->name;
}

size_t kh_stacks__functions(const struct kh_stacks *s, uint32_t stage, struct kh_stack_fn **out)
{
	struct kh_stack_fn *fns = calloc(s->name_count ? s->name_count : 1, sizeof(*fns));
	uint64_t *seen = calloc(s->name_count ? s->name_count : 1, sizeof(*seen));
	size_t n = 0;

	*out = NULL;
	if (!fns || !seen) {
		free(fns);
		free(seen);
		return 0;
	}
	for (size_t i = 0; i < s->name_count; i++)
		fns[i].name = (uint32_t)i;
	for (size_t i = 0; i < s->stack_count; i++) {
		const struct kh_stack *st = &s->stacks[i];

		if (st->stage != stage || !st->frame_count)
			continue;
		if (st->frames[st->frame_count - 1] < s->name_count)
			fns[st->frames[st->frame_count - 1]].self += st->count;
		/* Recursion counts a function once per stack; i + 1 marks "seen in stack i". */
		for (uint32_t f = 0; f < st->frame_count; f++) {
			uint32_t name = st->frames[f];

			if (name < s->name_count && seen[name] != i + 1) {
				seen[name] = i + 1;
				fns[name].total += st->count;
			}
		}
	}
	free(seen);
	qsort(fns, s->name_count, sizeof(*fns), fn_cmp);
	while (n < s->name_count && fns[n].total)
		n++;
	*out = fns;
	return n;
}

/* Functions named per stage in the text table. */
#define TOP_FUNCTIONS 5

static void top_table_of(const struct kh_stacks *s, struct outbuf *out)
{
	uint32_t order[KH_STAGE_COUNT + 1];
	size_t rows = 0;

	outbuf__printf(out, "stack samples: %" PRIu64 " at %" PRIu64 " Hz (%s)", s->samples,
		       s->rate_hz, s->unwinding ? s->unwinding : "unknown unwinding");
	if (s->unwind_failed || s->truncated || s->ring_full || s->threads_missed)
		outbuf__printf(out, "; %" PRIu64 " without a user stack, %" PRIu64
			       " truncated, %" PRIu64 " lost (ring buffer full), %" PRIu64
			       " threads not sampled",
			       s->unwind_failed, s->truncated, s->ring_full, s->threads_missed);
	outbuf__putc(out, '\n');
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++)
		if (kh_stacks__stage_samples(s, st))
			order[rows++] = st;
	if (kh_stacks__stage_samples(s, KH_NO_STAGE))
		order[rows++] = KH_NO_STAGE;
	if (!rows)
		return;
	outbuf__printf(out, "  %-24s %8s %6s  %s\n", "stage", "samples", "share",
		       "top functions (self samples)");
	for (size_t r = 0; r < rows; r++) {
		uint64_t n = kh_stacks__stage_samples(s, order[r]);
		struct kh_stack_fn *fns;
		size_t count = kh_stacks__functions(s, order[r], &fns), shown = 0;

		outbuf__printf(out, "  %-24s %8" PRIu64 " %5.1f%% ", stage_label(order[r]), n,
			       s->samples ? 100.0 * (double)n / (double)s->samples : 0.0);
		for (size_t i = 0; i < count && shown < TOP_FUNCTIONS; i++) {
			if (!fns[i].self)
				break;
			outbuf__printf(out, "%s %s %.1f%%", shown ? "," : "", s->names[fns[i].name],
				       100.0 * (double)fns[i].self / (double)n);
			shown++;
		}
		outbuf__putc(out, '\n');
		free(fns);
	}
}

void kh_stacks__top_table(const struct kh_stacks *s, struct outbuf *out)
{
	struct kh_stacks shown;

	if (!s->present)
		return;
	if (kh_stacks__shown(s, KH_NAMES_SHORT, &shown, NULL)) {
		out->failed = true;
		return;
	}
	top_table_of(&shown, out);
	kh_stacks__free(&shown);
}
