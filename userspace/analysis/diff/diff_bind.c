// SPDX-License-Identifier: MIT
/*
 * diff_bind.c - binding the records of a comparison: the identity fields
 * that must agree across all records (mismatches, fatal unless allowed),
 * and what is worth a warning (different input sizes, lost spans, sessions
 * seen only in part).
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "diff.h"
#include "diff_internal.h"

/* --- identity fields ---------------------------------------------------- */

enum field_type { F_STRING, F_OPT_STRING, F_CACHE, F_DAEMON, F_U64, F_OPT_U64, F_MODE };

struct identity_field {
	const char *name;
	enum field_type type;
	size_t offset; /* in struct kh_profile */
};

#define FIELD(id, member, type) \
	[KH_DIFF_F_##id] = { #member, type, offsetof(struct kh_profile, identity.member) }
static const struct identity_field fields[KH_DIFF_F_COUNT] = {
	FIELD(BINARY_VERSION, binary_version, F_STRING),
	FIELD(DETECTOR_DIGEST, detector_digest, F_STRING),
	FIELD(CONFIG_DIGEST, config_digest, F_STRING),
	FIELD(SOURCE_KIND, source_kind, F_STRING),
	FIELD(WORKLOAD_CLASS, workload_class, F_STRING),
	FIELD(BACKEND_REQUESTED, backend_requested, F_STRING),
	FIELD(BACKEND_SELECTED, backend_selected, F_OPT_STRING),
	FIELD(CACHE_STATE, cache_state, F_CACHE),
	FIELD(DAEMON_STATE, daemon_state, F_DAEMON),
	FIELD(SCANNER_THREADS, scanner_threads, F_U64),
	FIELD(READER_THREADS, reader_threads, F_OPT_U64),
	FIELD(LOGICAL_CPUS, logical_cpus, F_U64),
	[KH_DIFF_F_MODE] = { "mode", F_MODE, offsetof(struct kh_profile, ext.mode) },
};
#undef FIELD

const char *diff_field__name(enum kh_diff_field field)
{
	return (size_t)field < KH_DIFF_F_COUNT ? fields[field].name : NULL;
}

static const void *field_ptr(const struct identity_field *f, const struct kh_profile *p)
{
	return (const char *)p + f->offset;
}

/* Whether p has a value to compare: a record without khprof's extension has no mode. */
static bool field_present(const struct identity_field *f, const struct kh_profile *p)
{
	return f->type != F_MODE || *(char *const *)field_ptr(f, p) != NULL;
}

static bool field_equal(const struct identity_field *f, const struct kh_profile *a,
			const struct kh_profile *b)
{
	const void *pa = field_ptr(f, a), *pb = field_ptr(f, b);

	switch (f->type) {
	case F_STRING:
	case F_OPT_STRING:
	case F_MODE: {
		const char *sa = *(char *const *)pa, *sb = *(char *const *)pb;

		/* A missing backend_selected (None) differs from every name. */
		if (!sa || !sb)
			return sa == sb;
		return strcmp(sa, sb) == 0;
	}
	case F_CACHE:
		return *(const enum kh_cache_state *)pa == *(const enum kh_cache_state *)pb;
	case F_DAEMON:
		return *(const enum kh_daemon_state *)pa == *(const enum kh_daemon_state *)pb;
	case F_U64:
		return *(const uint64_t *)pa == *(const uint64_t *)pb;
	case F_OPT_U64: {
		const struct kh_opt_u64 *oa = pa, *ob = pb;

		return oa->present == ob->present && (!oa->present || oa->value == ob->value);
	}
	}
	return false;
}

/* The value as the seed's text report shows it, so that users recognise it. */
static char *field_text(const struct identity_field *f, const struct kh_profile *p)
{
	const void *v = field_ptr(f, p);
	const char *name;

	switch (f->type) {
	case F_STRING:
	case F_OPT_STRING:
	case F_MODE:
		name = *(char *const *)v;
		return strdup(name ? name : f->type == F_MODE ? "none" : "unselected");
	case F_CACHE:
		name = kh_cache_state__name(*(const enum kh_cache_state *)v);
		return strdup(name ? name : "?");
	case F_DAEMON:
		name = kh_daemon_state__name(*(const enum kh_daemon_state *)v);
		return strdup(name ? name : "?");
	case F_U64:
		return diff__format("%" PRIu64, *(const uint64_t *)v);
	case F_OPT_U64: {
		const struct kh_opt_u64 *o = v;

		return o->present ? diff__format("%" PRIu64, o->value) : strdup("auto");
	}
	}
	return NULL;
}

/* --- the builder: mismatches and warnings ------------------------------- */

struct builder {
	struct kh_diff *d;
	const struct kh_diff_side *base, *cand;
	size_t mismatch_cap, warning_cap;
};

const char *diff_side__name(const struct kh_diff_side *s, size_t i)
{
	return s->names && s->names[i] ? s->names[i] : s->path ? s->path : "?";
}

/* Takes ownership of message, even on failure. */
static int builder__warn(struct builder *b, enum kh_diff_warning_kind kind, char *message)
{
	struct kh_diff *d = b->d;

	if (!message || array__reserve((void **)&d->warnings, &b->warning_cap,
				       d->warning_count + 1, sizeof(*d->warnings))) {
		free(message);
		return -ENOMEM;
	}
	d->warnings[d->warning_count++] = (struct kh_diff_warning){ kind, message };
	return 0;
}

/* A record's place: which side, which index. */
struct place {
	const struct kh_diff_side *side;
	size_t index;
};

static const struct kh_profile *place__record(struct place p)
{
	return &p.side->records[p.index];
}

static int builder__mismatch(struct builder *b, enum kh_diff_field field, int within,
			     struct place first, struct place other)
{
	const struct identity_field *f = &fields[field];
	struct kh_diff *d = b->d;
	struct kh_diff_mismatch *m;

	if (array__reserve((void **)&d->mismatches, &b->mismatch_cap, d->mismatch_count + 1,
			   sizeof(*d->mismatches)))
		return -ENOMEM;
	m = &d->mismatches[d->mismatch_count++];
	memset(m, 0, sizeof(*m));
	m->field = field;
	m->within = within;
	m->allowed = b->d->opts.allow & DIFF_BIT(field);
	m->base_value = field_text(f, place__record(first));
	m->cand_value = field_text(f, place__record(other));
	m->base_file = strdup(diff_side__name(first.side, first.index));
	m->cand_file = strdup(diff_side__name(other.side, other.index));
	if (!m->base_value || !m->cand_value || !m->base_file || !m->cand_file)
		return -ENOMEM;
	m->message = diff__format("records differ in '%s': '%s' in '%s', '%s' in '%s'", f->name,
			    m->base_value, m->base_file, m->cand_value, m->cand_file);
	if (!m->message)
		return -ENOMEM;
	if (!m->allowed)
		d->blocking_count++;
	return 0;
}

/* The first record of a side with a value for f, or -1. */
static long first_present(const struct identity_field *f, const struct kh_diff_side *s)
{
	for (size_t i = 0; i < s->count; i++)
		if (field_present(f, &s->records[i]))
			return (long)i;
	return -1;
}

/* The first record of a side whose value differs from ref's, or -1. */
static long first_differing(const struct identity_field *f, const struct kh_diff_side *s,
			    const struct kh_profile *ref)
{
	for (size_t i = 0; i < s->count; i++)
		if (field_present(f, &s->records[i]) && !field_equal(f, ref, &s->records[i]))
			return (long)i;
	return -1;
}

/*
 * Equality is transitive (an absent mode aside, which is why only records
 * with a value take part), so every pair of records agrees exactly when
 * each side agrees with its first record and the two first records agree.
 * One mismatch per field is enough to tell the user what to fix.
 */
static int builder__bind_field(struct builder *b, enum kh_diff_field field)
{
	const struct identity_field *f = &fields[field];
	long ib = first_present(f, b->base), ic = first_present(f, b->cand), j;

	if (ib >= 0 && (j = first_differing(f, b->base, &b->base->records[ib])) >= 0)
		return builder__mismatch(b, field, 1, (struct place){ b->base, (size_t)ib },
					 (struct place){ b->base, (size_t)j });
	if (ic >= 0 && (j = first_differing(f, b->cand, &b->cand->records[ic])) >= 0)
		return builder__mismatch(b, field, 2, (struct place){ b->cand, (size_t)ic },
					 (struct place){ b->cand, (size_t)j });
	if (ib >= 0 && ic >= 0 &&
	    !field_equal(f, &b->base->records[ib], &b->cand->records[ic]))
		return builder__mismatch(b, field, 0, (struct place){ b->base, (size_t)ib },
					 (struct place){ b->cand, (size_t)ic });
	return 0;
}

/* Input sizes: different work, worth a warning but not a refusal. */
static int builder__input(struct builder *b, const char *name, size_t offset)
{
	const struct kh_diff_side *sides[2] = { b->base, b->cand };
	uint64_t ref = *(const uint64_t *)((const char *)&b->base->records[0] + offset);
	char *message;

	for (size_t s = 0; s < 2; s++) {
		for (size_t i = 0; i < sides[s]->count; i++) {
			uint64_t v = *(const uint64_t *)((const char *)&sides[s]->records[i] +
							 offset);

			if (v == ref)
				continue;
			message = diff__format("records differ in '%s': '%" PRIu64 "' in '%s', '%" PRIu64
					 "' in '%s' (the runs did different work)", name, ref,
					 diff_side__name(b->base, 0), v, diff_side__name(sides[s], i));
			return builder__warn(b, KH_DIFF_WARN_INPUT, message);
		}
	}
	return 0;
}

/* Spans or events a record lost, as "3 ringbuf_full, 1 unmatched_exit". */
static char *drops_text(const struct kh_profile_ext *ext)
{
	char *out = strdup(""), *next;

	for (uint32_t i = 0; out && i < KH_DROP_COUNT; i++) {
		if (!ext->drops[i])
			continue;
		next = diff__format("%s%s%" PRIu64 " %s", out, *out ? ", " : "", ext->drops[i],
			      kh_drop__name(i));
		free(out);
		out = next;
	}
	return out;
}

/* What makes one record's times incomplete. */
static int builder__record_quality(struct builder *b, const struct kh_profile *p,
				   const char *name)
{
	const struct kh_profile_ext *ext = &p->ext;
	bool dropped = false;
	int err = 0;

	for (uint32_t i = 0; i < KH_DROP_COUNT; i++)
		dropped |= ext->drops[i] != 0;
	if (dropped) {
		char *drops = drops_text(ext);

		err = builder__warn(b, KH_DIFF_WARN_DROPS,
				    drops ? diff__format("record '%s' lost spans or events: %s "
						   "(its stage times undercount)", name, drops)
					  : NULL);
		free(drops);
	}
	if (!err && ext->started_mid_session)
		err = builder__warn(b, KH_DIFF_WARN_STARTED_MID,
				    diff__format("record '%s' started mid-session: khprof attached "
					   "after the session began (earlier work is missing)",
					   name));
	if (!err && ext->ended_mid_session)
		err = builder__warn(b, KH_DIFF_WARN_ENDED_MID,
				    diff__format("record '%s' ended mid-session: the session had not "
					   "finished when tracing stopped (later work is missing)",
					   name));
	return err;
}

static int builder__bind(struct builder *b)
{
	const struct kh_diff_side *sides[2] = { b->base, b->cand };
	int err = 0;

	for (int f = 0; !err && f < KH_DIFF_F_COUNT; f++)
		err = builder__bind_field(b, (enum kh_diff_field)f);
	if (!err)
		err = builder__input(b, "input_bytes", offsetof(struct kh_profile, input_bytes));
	if (!err)
		err = builder__input(b, "input_units", offsetof(struct kh_profile, input_units));
	for (size_t s = 0; s < 2; s++)
		for (size_t i = 0; !err && i < sides[s]->count; i++)
			err = builder__record_quality(b, &sides[s]->records[i],
						      diff_side__name(sides[s], i));
	return err;
}

int diff__bind(struct kh_diff *d, const struct kh_diff_side *base,
	       const struct kh_diff_side *cand)
{
	struct builder b = { .d = d, .base = base, .cand = cand };

	return builder__bind(&b);
}
