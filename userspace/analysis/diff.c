// SPDX-License-Identifier: MIT
/*
 * Comparing two sets of records for CI.  Times only say something about a
 * change when the runs did the same work under the same conditions, so the
 * identities of all records are bound first; then each item's medians are
 * compared, and with several runs per side a Mann-Whitney interval of the
 * shift decides whether a change beyond the threshold stands out of the
 * run-to-run noise.  The rules are in docs/CI.md; keep the two in step.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "array.h"
#include "diff.h"
#include "outbuf.h"
#include "stats.h"

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...)
{
	va_list ap;
	char *out;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&out, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : out;
}

/* --- names -------------------------------------------------------------- */

const char *diff_verdict__name(enum kh_diff_verdict verdict)
{
	switch (verdict) {
	case KH_DIFF_VERDICT_OK:
		return "ok";
	case KH_DIFF_VERDICT_REGRESSED:
		return "regressed";
	case KH_DIFF_VERDICT_NOT_COMPARABLE:
		return "not-comparable";
	}
	return NULL;
}

const char *diff_mark__name(enum kh_diff_mark mark)
{
	static const char *const names[] = {
		[KH_DIFF_OK] = "ok",		 [KH_DIFF_REGRESSED] = "regressed",
		[KH_DIFF_IMPROVED] = "improved", [KH_DIFF_NOISY] = "noisy",
		[KH_DIFF_SAME] = "same",	 [KH_DIFF_CHANGED] = "changed",
		[KH_DIFF_OFF] = "off",
	};

	return (size_t)mark < sizeof(names) / sizeof(names[0]) ? names[mark] : NULL;
}

const char *diff_metric__name(enum kh_diff_metric metric)
{
	static const char *const names[] = {
		[KH_DIFF_M_WALL] = "wall",	   [KH_DIFF_M_THROUGHPUT] = "throughput",
		[KH_DIFF_M_PEAK_RSS] = "peak_rss", [KH_DIFF_M_ELAPSED] = "elapsed",
		[KH_DIFF_M_CALLS] = "calls",	   [KH_DIFF_M_PER_CALL] = "per_call",
	};

	return (size_t)metric < sizeof(names) / sizeof(names[0]) ? names[metric] : NULL;
}

static bool is_stage_metric(enum kh_diff_metric metric)
{
	return metric >= KH_DIFF_M_ELAPSED;
}

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

#define BIT(f) (1u << (f))
#define ALL_FIELDS (BIT(KH_DIFF_F_COUNT) - 1)

/* Names that stand for several fields. */
static const struct {
	const char *name;
	uint32_t bits;
} field_groups[] = {
	{ "backends", BIT(KH_DIFF_F_BACKEND_REQUESTED) | BIT(KH_DIFF_F_BACKEND_SELECTED) },
	{ "threads", BIT(KH_DIFF_F_SCANNER_THREADS) | BIT(KH_DIFF_F_READER_THREADS) },
	{ "all", ALL_FIELDS },
};

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
		return format("%" PRIu64, *(const uint64_t *)v);
	case F_OPT_U64: {
		const struct kh_opt_u64 *o = v;

		return o->present ? format("%" PRIu64, o->value) : strdup("auto");
	}
	}
	return NULL;
}

/* --- options ------------------------------------------------------------ */

static void threshold__default(struct kh_diff_threshold *t, double pct)
{
	t->set = false;
	t->off = false;
	t->pct = pct;
}

void diff_options__init(struct kh_diff_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	threshold__default(&opts->stages, KH_DIFF_DEFAULT_STAGE_PCT);
	threshold__default(&opts->wall, KH_DIFF_DEFAULT_WALL_PCT);
	threshold__default(&opts->throughput, KH_DIFF_DEFAULT_THROUGHPUT_PCT);
	threshold__default(&opts->peak_rss, KH_DIFF_DEFAULT_PEAK_RSS_PCT);
	for (uint32_t s = 0; s < KH_STAGE_COUNT; s++)
		threshold__default(&opts->stage[s], KH_DIFF_DEFAULT_STAGE_PCT);
	opts->min_change_ns = KH_DIFF_DEFAULT_MIN_CHANGE_NS;
	opts->confidence = KH_DIFF_DEFAULT_CONFIDENCE;
}

/*
 * Waiting is not work: the queue-wait stages are timed only when a thread
 * really blocks, so they move with scheduling and with every other stage.
 * Shown, but gating only when named (--threshold scanner-queue-wait=5).
 */
static const struct kh_diff_threshold queue_wait_default = {
	.set = false,
	.off = true,
	.pct = KH_DIFF_DEFAULT_STAGE_PCT,
};

static bool is_queue_wait(uint32_t stage)
{
	return stage == KH_STAGE_SOURCE_QUEUE_WAIT || stage == KH_STAGE_SCANNER_QUEUE_WAIT;
}

const struct kh_diff_threshold *diff_options__threshold(const struct kh_diff_options *opts,
							enum kh_diff_metric metric,
							uint32_t stage)
{
	switch (metric) {
	case KH_DIFF_M_WALL:
		return &opts->wall;
	case KH_DIFF_M_THROUGHPUT:
		return &opts->throughput;
	case KH_DIFF_M_PEAK_RSS:
		return &opts->peak_rss;
	case KH_DIFF_M_CALLS:
		return NULL;
	case KH_DIFF_M_ELAPSED:
	case KH_DIFF_M_PER_CALL:
		if (stage < KH_STAGE_COUNT && opts->stage[stage].set)
			return &opts->stage[stage];
		if (is_queue_wait(stage))
			return &queue_wait_default;
		return &opts->stages;
	}
	return NULL;
}

/*
 * A non-negative decimal such as "10" or "2.5", with a trailing '%' when
 * percent: strtod alone would also take blanks, signs, hex, "inf" and
 * "nan", none of which a CI configuration means.
 */
static int parse_amount(const char *text, bool percent, double *out)
{
	char *end;

	if (!isdigit((unsigned char)text[0]) && text[0] != '.')
		return -EINVAL;
	if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
		return -EINVAL;
	errno = 0;
	*out = strtod(text, &end);
	if (percent && *end == '%')
		end++;
	if (end == text || *end || errno || !isfinite(*out))
		return -EINVAL;
	return 0;
}

static int set_threshold(struct kh_diff_threshold *t, const char *value, char *err,
			 size_t errlen)
{
	double pct;

	if (strcmp(value, "off") == 0) {
		t->set = t->off = true;
		return 0;
	}
	if (parse_amount(value, true, &pct)) {
		snprintf(err, errlen, "bad threshold '%s' (a percentage of 0 or more, or off)",
			 value);
		return -EINVAL;
	}
	t->set = true;
	t->off = false;
	t->pct = pct;
	return 0;
}

static struct kh_diff_threshold *threshold_by_name(struct kh_diff_options *opts,
						   const char *name)
{
	uint32_t stage;

	if (strcmp(name, "wall") == 0)
		return &opts->wall;
	if (strcmp(name, "throughput") == 0)
		return &opts->throughput;
	if (strcmp(name, "peak_rss") == 0)
		return &opts->peak_rss;
	if (kh_stage__parse(name, &stage) == 0)
		return &opts->stage[stage];
	return NULL;
}

static void field_list(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < KH_DIFF_F_COUNT && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s, ", fields[i].name);
	for (size_t i = 0; i < sizeof(field_groups) / sizeof(field_groups[0]) && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", field_groups[i].name,
					 i + 1 < sizeof(field_groups) / sizeof(field_groups[0])
						 ? ", " : "");
}

static int allow_one(struct kh_diff_options *opts, const char *name, size_t len, char *err,
		     size_t errlen)
{
	char known[512];

	for (size_t i = 0; i < KH_DIFF_F_COUNT; i++) {
		if (strlen(fields[i].name) == len && !strncmp(fields[i].name, name, len)) {
			opts->allow |= BIT(i);
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof(field_groups) / sizeof(field_groups[0]); i++) {
		const char *group = field_groups[i].name;

		if (strlen(group) == len && !strncmp(group, name, len)) {
			opts->allow |= field_groups[i].bits;
			return 0;
		}
	}
	field_list(known, sizeof(known));
	snprintf(err, errlen, "unknown field '%.*s' (one of %s)", (int)len, name, known);
	return -EINVAL;
}

/* A comma list; blanks around the names are allowed, empty names are not. */
static int allow_list(struct kh_diff_options *opts, const char *list, char *err, size_t errlen)
{
	const char *p = list;

	for (;;) {
		const char *end = strchr(p, ','), *stop;
		int rc;

		if (!end)
			end = p + strlen(p);
		while (p < end && isspace((unsigned char)*p))
			p++;
		stop = end;
		while (stop > p && isspace((unsigned char)stop[-1]))
			stop--;
		if (stop == p) {
			snprintf(err, errlen, "empty field name in '%s'", list);
			return -EINVAL;
		}
		rc = allow_one(opts, p, (size_t)(stop - p), err, errlen);
		if (rc || !*end)
			return rc;
		p = end + 1;
	}
}

int diff_options__set(struct kh_diff_options *opts, const char *key, const char *value,
		      char *err, size_t errlen)
{
	double amount;

	if (strcmp(key, "threshold") == 0)
		return set_threshold(&opts->stages, value, err, errlen);
	if (strncmp(key, "threshold.", 10) == 0) {
		struct kh_diff_threshold *t = threshold_by_name(opts, key + 10);

		if (!t) {
			snprintf(err, errlen,
				 "unknown item '%s' (a stage as the seed spells it, such as "
				 "'hot-patterns', or wall, throughput, peak_rss)", key + 10);
			return -EINVAL;
		}
		return set_threshold(t, value, err, errlen);
	}
	if (strcmp(key, "min_change_ms") == 0) {
		/* The bound keeps the nanosecond count inside 64 bits. */
		if (parse_amount(value, false, &amount) || amount > 1e12) {
			snprintf(err, errlen, "bad minimum change '%s' (milliseconds, 0 or more)",
				 value);
			return -EINVAL;
		}
		opts->min_change_set = true;
		opts->min_change_ns = (uint64_t)llround(amount * 1e6);
		return 0;
	}
	if (strcmp(key, "confidence") == 0) {
		if (parse_amount(value, true, &amount) || amount < KH_DIFF_MIN_CONFIDENCE ||
		    amount > KH_DIFF_MAX_CONFIDENCE) {
			snprintf(err, errlen, "bad confidence '%s' (a percentage from %g to %g)",
				 value, KH_DIFF_MIN_CONFIDENCE, KH_DIFF_MAX_CONFIDENCE);
			return -EINVAL;
		}
		opts->confidence_set = true;
		opts->confidence = amount;
		return 0;
	}
	if (strcmp(key, "allow_mismatch") == 0)
		return allow_list(opts, value, err, errlen);
	snprintf(err, errlen, "unknown setting '%s' (threshold, threshold.NAME, min_change_ms, "
		 "confidence or allow_mismatch)", key);
	return -EINVAL;
}

int diff_config__parse(const char *text, struct kh_diff_options *opts, size_t *line_no,
		       char *err, size_t errlen)
{
	const char *line = text;

	*line_no = 0;
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char *buf = strndup(line, len), *key, *value, *p;
		int rc = 0;

		++*line_no;
		line = nl ? nl + 1 : NULL;
		if (!buf)
			return -ENOMEM;
		if ((p = strchr(buf, '#')))
			*p = '\0';
		for (key = buf; isspace((unsigned char)*key); key++)
			;
		for (p = key + strlen(key); p > key && isspace((unsigned char)p[-1]);)
			*--p = '\0';
		if (*key) {
			value = key + strcspn(key, " \t\r\v\f=");
			p = value;
			/* "key value", and "key = value" as people write it anyway. */
			while (isspace((unsigned char)*value))
				value++;
			if (*value == '=')
				for (value++; isspace((unsigned char)*value); value++)
					;
			*p = '\0';
			if (!*value) {
				snprintf(err, errlen, "'%s' needs a value", key);
				rc = -EINVAL;
			} else {
				rc = diff_options__set(opts, key, value, err, errlen);
			}
		}
		free(buf);
		if (rc)
			return rc;
	}
	return 0;
}

static void threshold__merge(struct kh_diff_threshold *t, const struct kh_diff_threshold *over)
{
	if (over->set)
		*t = *over;
}

void diff_options__merge(struct kh_diff_options *opts, const struct kh_diff_options *over)
{
	threshold__merge(&opts->stages, &over->stages);
	threshold__merge(&opts->wall, &over->wall);
	threshold__merge(&opts->throughput, &over->throughput);
	threshold__merge(&opts->peak_rss, &over->peak_rss);
	for (uint32_t s = 0; s < KH_STAGE_COUNT; s++)
		threshold__merge(&opts->stage[s], &over->stage[s]);
	if (over->min_change_set) {
		opts->min_change_set = true;
		opts->min_change_ns = over->min_change_ns;
	}
	if (over->confidence_set) {
		opts->confidence_set = true;
		opts->confidence = over->confidence;
	}
	opts->allow |= over->allow;
}

static bool threshold_valid(const struct kh_diff_threshold *t)
{
	return t->off || (isfinite(t->pct) && t->pct >= 0);
}

static bool options_valid(const struct kh_diff_options *o)
{
	bool ok = threshold_valid(&o->stages) && threshold_valid(&o->wall) &&
		  threshold_valid(&o->throughput) && threshold_valid(&o->peak_rss);

	for (uint32_t s = 0; s < KH_STAGE_COUNT; s++)
		ok = ok && threshold_valid(&o->stage[s]);
	return ok && o->confidence >= KH_DIFF_MIN_CONFIDENCE &&
	       o->confidence <= KH_DIFF_MAX_CONFIDENCE;
}

/* --- the builder: mismatches and warnings ------------------------------- */

struct builder {
	struct kh_diff *d;
	const struct kh_diff_side *base, *cand;
	size_t mismatch_cap, warning_cap;
};

static const char *side_name(const struct kh_diff_side *s, size_t i)
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
	m->allowed = b->d->opts.allow & BIT(field);
	m->base_value = field_text(f, place__record(first));
	m->cand_value = field_text(f, place__record(other));
	m->base_file = strdup(side_name(first.side, first.index));
	m->cand_file = strdup(side_name(other.side, other.index));
	if (!m->base_value || !m->cand_value || !m->base_file || !m->cand_file)
		return -ENOMEM;
	m->message = format("records differ in '%s': '%s' in '%s', '%s' in '%s'", f->name,
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
			message = format("records differ in '%s': '%" PRIu64 "' in '%s', '%" PRIu64
					 "' in '%s' (the runs did different work)", name, ref,
					 side_name(b->base, 0), v, side_name(sides[s], i));
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
		next = format("%s%s%" PRIu64 " %s", out, *out ? ", " : "", ext->drops[i],
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
				    drops ? format("record '%s' lost spans or events: %s "
						   "(its stage times undercount)", name, drops)
					  : NULL);
		free(drops);
	}
	if (!err && ext->started_mid_session)
		err = builder__warn(b, KH_DIFF_WARN_STARTED_MID,
				    format("record '%s' started mid-session: khprof attached "
					   "after the session began (earlier work is missing)",
					   name));
	if (!err && ext->ended_mid_session)
		err = builder__warn(b, KH_DIFF_WARN_ENDED_MID,
				    format("record '%s' ended mid-session: the session had not "
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
						      side_name(sides[s], i));
	return err;
}

/* --- items -------------------------------------------------------------- */

/* One record's value of an item; false when the record has none. */
static bool record_value(const struct kh_profile *p, enum kh_diff_metric metric, uint32_t stage,
			 double *out)
{
	const struct kh_stage_measurement *s;

	switch (metric) {
	case KH_DIFF_M_WALL:
		*out = (double)p->wall_time_ns;
		return true;
	case KH_DIFF_M_THROUGHPUT:
		if (!p->wall_time_ns)
			return false;
		*out = (double)p->input_bytes * 1e9 / (double)p->wall_time_ns;
		return true;
	case KH_DIFF_M_PEAK_RSS:
		*out = (double)p->resources.max_observed_resident_bytes.value;
		return p->resources.max_observed_resident_bytes.present;
	case KH_DIFF_M_ELAPSED:
	case KH_DIFF_M_CALLS:
	case KH_DIFF_M_PER_CALL:
		/* A stage a record lacks took no time in that run. */
		s = profile__find_stage(p, stage);
		if (!s)
			*out = 0;
		else if (metric == KH_DIFF_M_ELAPSED)
			*out = (double)s->elapsed_ns;
		else if (metric == KH_DIFF_M_CALLS)
			*out = (double)s->calls;
		else
			*out = s->calls ? (double)s->elapsed_ns / (double)s->calls : 0;
		return true;
	}
	return false;
}

static size_t side_values(const struct kh_diff_side *s, enum kh_diff_metric metric,
			  uint32_t stage, double *out)
{
	size_t n = 0;

	for (size_t i = 0; i < s->count; i++)
		if (record_value(&s->records[i], metric, stage, &out[n]))
			n++;
	return n;
}

/*
 * The item's interval of the shift; none with fewer than two values on a
 * side (a single run says nothing about the spread) or too few for the
 * confidence.
 */
static int item__interval(struct kh_diff_item *it, const struct kh_diff_options *o,
			  const double *vb, const double *vc)
{
	int err;

	if (it->base_n < 2 || it->cand_n < 2)
		return 0;
	err = stats__shift_interval(vb, it->base_n, vc, it->cand_n, o->confidence,
				    &it->interval_low, &it->interval_high);
	if (err == -ERANGE)
		return 0;
	if (err)
		return err;
	it->has_interval = true;
	if (it->has_change) {
		it->interval_low_pct = 100.0 * it->interval_low / it->base_median;
		it->interval_high_pct = 100.0 * it->interval_high / it->base_median;
	}
	return 0;
}

/*
 * The rules of docs/CI.md.  The comparisons multiply out the percentage so
 * that a change of exactly the threshold is not beyond it, whatever
 * rounding a division would bring, and so that from a base of 0 any
 * increase is beyond every threshold.
 */
static int item__judge(struct kh_diff_item *it, const struct kh_diff_options *o,
		       const double *vb, const double *vc)
{
	const struct kh_diff_threshold *t = diff_options__threshold(o, it->metric, it->stage);
	double b = it->base_median, c = it->cand_median, limit, least_bad, most_bad;
	int bad = it->metric == KH_DIFF_M_THROUGHPUT ? -1 : 1;
	bool worse, better;
	int err;

	it->has_change = b != 0;
	it->change_pct = it->has_change ? (c / b - 1.0) * 100.0 : 0.0;
	if (!t) {
		it->verdict = b == c ? KH_DIFF_SAME : KH_DIFF_CHANGED;
		return 0;
	}
	it->has_threshold = true;
	it->threshold_off = t->off;
	it->threshold_pct = t->pct;
	it->gating = it->metric != KH_DIFF_M_PER_CALL;
	err = item__interval(it, o, vb, vc);
	if (err)
		return err;
	if (t->off) {
		it->verdict = KH_DIFF_OFF;
		return 0;
	}
	if (it->below_floor) {
		it->verdict = KH_DIFF_OK;
		return 0;
	}
	limit = t->pct * b;
	worse = bad * (c - b) * 100.0 > limit;
	better = -bad * (c - b) * 100.0 > limit;
	if (!it->has_interval) {
		it->verdict = worse ? KH_DIFF_REGRESSED : better ? KH_DIFF_IMPROVED : KH_DIFF_OK;
		return 0;
	}
	/*
	 * Sure of a change beyond the budget, not merely of some change: the
	 * whole interval must lie beyond the threshold.  A gate that fails on
	 * any confident movement fails identical builds, with ~18 items a
	 * comparison and stages that spread by 15 % a run.
	 */
	least_bad = bad > 0 ? it->interval_low : -it->interval_high;
	most_bad = bad > 0 ? it->interval_high : -it->interval_low;
	if (least_bad * 100.0 > limit)
		it->verdict = KH_DIFF_REGRESSED;
	else if (-most_bad * 100.0 > limit)
		it->verdict = KH_DIFF_IMPROVED;
	else
		it->verdict = worse || better ? KH_DIFF_NOISY : KH_DIFF_OK;
	return 0;
}

/* Median input of a side, in bytes; 0 when unknown. */
static double side_input_bytes(const struct kh_diff_side *s)
{
	double *v = malloc(s->count * sizeof(*v)), median;

	if (!v)
		return 0;
	for (size_t i = 0; i < s->count; i++)
		v[i] = (double)s->records[i].input_bytes;
	median = stats__median(v, s->count);
	free(v);
	return isnan(median) ? 0 : median;
}

/* The absolute change under which an item is never judged. */
static bool item__below_floor(const struct kh_diff *d, const struct kh_diff_item *it,
			      const struct kh_diff_side *base)
{
	double change = fabs(it->cand_median - it->base_median);
	double min_ns = (double)d->opts.min_change_ns;

	switch (it->metric) {
	case KH_DIFF_M_THROUGHPUT: {
		/*
		 * A throughput change is judged by the time it makes: how much
		 * longer or shorter the base's input takes at the candidate's
		 * throughput (the wall time change, when inputs are equal).
		 */
		double b = it->base_median, c = it->cand_median;

		if (b <= 0 || c <= 0)
			return b == c;
		return side_input_bytes(base) * fabs(1.0 / c - 1.0 / b) * 1e9 < min_ns;
	}
	case KH_DIFF_M_PEAK_RSS:
		return change < (double)KH_DIFF_RSS_MIN_CHANGE_BYTES;
	case KH_DIFF_M_PER_CALL: {
		/*
		 * The floor is for the stage's whole time: a per-call change
		 * counts when, over the calls of the busier side, it adds up to
		 * the floor.  The calls item comes just before.
		 */
		const struct kh_diff_item *calls = &d->items[d->item_count - 1];
		double n = fmax(calls->base_median, calls->cand_median);

		return change < (n > 1 ? min_ns / n : min_ns);
	}
	default:
		return change < min_ns;
	}
}

/* Adds one item when both sides have a value for it; 0 or -errno. */
static int diff__add_item(struct kh_diff *d, const struct kh_diff_side *base,
			  const struct kh_diff_side *cand, enum kh_diff_metric metric,
			  uint32_t stage, double *vb, double *vc)
{
	struct kh_diff_item *it = &d->items[d->item_count];
	int err;

	memset(it, 0, sizeof(*it));
	it->metric = metric;
	it->stage = stage;
	it->name = is_stage_metric(metric) ? kh_stage__name(stage) : diff_metric__name(metric);
	it->base_n = side_values(base, metric, stage, vb);
	it->cand_n = side_values(cand, metric, stage, vc);
	if (!it->base_n || !it->cand_n)
		return 0;
	it->base_median = stats__median(vb, it->base_n);
	it->cand_median = stats__median(vc, it->cand_n);
	if (isnan(it->base_median) || isnan(it->cand_median))
		return -ENOMEM;
	it->below_floor = metric != KH_DIFF_M_CALLS && item__below_floor(d, it, base);
	err = item__judge(it, &d->opts, vb, vc);
	if (err)
		return err;
	d->item_count++;
	if (!it->gating)
		d->calls_changed_count += it->verdict == KH_DIFF_CHANGED;
	else if (it->verdict == KH_DIFF_REGRESSED)
		d->regression_count++;
	else if (it->verdict == KH_DIFF_IMPROVED)
		d->improved_count++;
	else if (it->verdict == KH_DIFF_NOISY)
		d->noisy_count++;
	return 0;
}

static bool any_record(const struct kh_diff_side *s, bool (*pred)(const struct kh_profile *,
								  uint32_t),
		       uint32_t arg)
{
	for (size_t i = 0; i < s->count; i++)
		if (pred(&s->records[i], arg))
			return true;
	return false;
}

static bool has_input(const struct kh_profile *p, uint32_t unused)
{
	(void)unused;
	return p->input_bytes != 0;
}

static bool has_stage(const struct kh_profile *p, uint32_t stage)
{
	return profile__find_stage(p, stage) != NULL;
}

static int diff__items(struct kh_diff *d, const struct kh_diff_side *base,
		       const struct kh_diff_side *cand)
{
	static const enum kh_diff_metric per_stage[] = { KH_DIFF_M_ELAPSED, KH_DIFF_M_CALLS,
							 KH_DIFF_M_PER_CALL };
	double *vb = malloc(base->count * sizeof(*vb)), *vc = malloc(cand->count * sizeof(*vc));
	int err = vb && vc ? 0 : -ENOMEM;

	if (!err)
		err = diff__add_item(d, base, cand, KH_DIFF_M_WALL, 0, vb, vc);
	if (!err && (any_record(base, has_input, 0) || any_record(cand, has_input, 0)))
		err = diff__add_item(d, base, cand, KH_DIFF_M_THROUGHPUT, 0, vb, vc);
	if (!err)
		err = diff__add_item(d, base, cand, KH_DIFF_M_PEAK_RSS, 0, vb, vc);
	for (uint32_t s = 0; !err && s < KH_STAGE_COUNT; s++) {
		if (!any_record(base, has_stage, s) && !any_record(cand, has_stage, s))
			continue;
		for (size_t m = 0; !err && m < sizeof(per_stage) / sizeof(per_stage[0]); m++)
			err = diff__add_item(d, base, cand, per_stage[m], s, vb, vc);
	}
	free(vb);
	free(vc);
	return err;
}

/* --- the comparison ----------------------------------------------------- */

static int side_info__copy(struct kh_diff_side_info *info, const struct kh_diff_side *s)
{
	info->path = strdup(s->path ? s->path : "");
	info->names = calloc(s->count, sizeof(*info->names));
	if (!info->path || !info->names)
		return -ENOMEM;
	info->count = s->count;
	for (size_t i = 0; i < s->count; i++)
		if (!(info->names[i] = strdup(side_name(s, i))))
			return -ENOMEM;
	return 0;
}

/* The method for sides of these sizes; items with fewer values may fall back. */
static int diff__method(struct kh_diff *d, size_t nb, size_t nc)
{
	size_t k;
	int err;

	d->runs_needed = stats__shift_runs_needed(d->opts.confidence);
	if (nb < 2 || nc < 2) {
		d->method = KH_DIFF_METHOD_SINGLE;
		return 0;
	}
	err = stats__shift_rank(nb, nc, d->opts.confidence, STATS_RANK_AUTO, &k);
	if (err && err != -ERANGE)
		return err;
	d->method = err ? KH_DIFF_METHOD_FEW_RUNS : KH_DIFF_METHOD_MANN_WHITNEY;
	return 0;
}

int diff__compare(const struct kh_diff_side *base, const struct kh_diff_side *cand,
		  const struct kh_diff_options *opts, struct kh_diff *out)
{
	struct builder b = { .d = out, .base = base, .cand = cand };
	int err;

	memset(out, 0, sizeof(*out));
	if (!base->count || !cand->count || !options_valid(opts))
		return -EINVAL;
	out->opts = *opts;
	err = diff__method(out, base->count, cand->count);
	if (!err)
		err = side_info__copy(&out->base, base);
	if (!err)
		err = side_info__copy(&out->cand, cand);
	if (!err)
		err = builder__bind(&b);
	/* Medians of unlike runs mean nothing: no items to misread then. */
	if (!err && !out->blocking_count)
		err = diff__items(out, base, cand);
	if (err) {
		diff__free(out);
		return err;
	}
	if (out->blocking_count)
		out->verdict = KH_DIFF_VERDICT_NOT_COMPARABLE;
	else if (out->regression_count)
		out->verdict = KH_DIFF_VERDICT_REGRESSED;
	else
		out->verdict = KH_DIFF_VERDICT_OK;
	return 0;
}

static void side_info__free(struct kh_diff_side_info *info)
{
	for (size_t i = 0; info->names && i < info->count; i++)
		free(info->names[i]);
	free(info->names);
	free(info->path);
}

void diff__free(struct kh_diff *d)
{
	for (size_t i = 0; i < d->mismatch_count; i++) {
		struct kh_diff_mismatch *m = &d->mismatches[i];

		free(m->base_value);
		free(m->cand_value);
		free(m->base_file);
		free(m->cand_file);
		free(m->message);
	}
	for (size_t i = 0; i < d->warning_count; i++)
		free(d->warnings[i].message);
	free(d->mismatches);
	free(d->warnings);
	side_info__free(&d->base);
	side_info__free(&d->cand);
	memset(d, 0, sizeof(*d));
}

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
	return metric == KH_DIFF_M_WALL || metric == KH_DIFF_M_ELAPSED ||
	       metric == KH_DIFF_M_PER_CALL;
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
	if (isinf(pct))
		snprintf(buf, len, "%sinf%%", pct > 0 ? "+" : "-");
	else
		snprintf(buf, len, "%+.1f%%", pct + 0.0); /* no "-0.0" */
}

static void change_cell(const struct kh_diff_item *it, char *buf)
{
	if (it->has_change)
		pct_text(it->change_pct, buf, CELL);
	else
		snprintf(buf, CELL, "%s", it->cand_median > 0 ? "new" : "n/a");
}

/* "hot-patterns.elapsed" for a stage's items, "wall" for the others. */
static void item_label(const struct kh_diff_item *it, char *buf, size_t len)
{
	if (is_stage_metric(it->metric))
		snprintf(buf, len, "%s.%s", it->name, diff_metric__name(it->metric));
	else
		snprintf(buf, len, "%s", it->name);
}

static void item_cells(const struct kh_diff_item *it, bool markdown, char cells[C_COUNT][CELL])
{
	char lo[CELL / 2 - 4], hi[CELL / 2 - 4];

	for (int c = 0; c < C_COUNT; c++)
		cells[c][0] = '\0';
	item_label(it, cells[C_ITEM], CELL);
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
	/* Capitals only where the job fails, so that it stands out. */
	if (it->verdict == KH_DIFF_REGRESSED && it->gating)
		snprintf(cells[C_VERDICT], CELL, markdown ? "**REGRESSED**" : "REGRESSED");
	else
		snprintf(cells[C_VERDICT], CELL, "%s", diff_mark__name(it->verdict));
}

/* Characters on screen: UTF-8 continuation bytes take no column. */
static size_t display_width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void method_text(const struct kh_diff *d, char *buf, size_t len)
{
	switch (d->method) {
	case KH_DIFF_METHOD_MANN_WHITNEY:
		snprintf(buf, len, "Mann-Whitney %g%% interval of the shift", d->opts.confidence);
		break;
	case KH_DIFF_METHOD_FEW_RUNS:
		snprintf(buf, len, "plain thresholds on medians (too few runs for a %g%% interval: "
			 "%zu per side needed)", d->opts.confidence, d->runs_needed);
		break;
	case KH_DIFF_METHOD_SINGLE:
		snprintf(buf, len, "single runs: plain thresholds");
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

static const char *summary_label(const struct kh_diff_item *it, char *buf, size_t len)
{
	if (it->metric == KH_DIFF_M_ELAPSED)
		snprintf(buf, len, "stage %s", it->name);
	else
		snprintf(buf, len, "%s", it->name);
	return buf;
}

char *diff__summary(const struct kh_diff *d)
{
	struct outbuf o;
	size_t listed = 0;

	outbuf__init(&o);
	if (d->verdict == KH_DIFF_VERDICT_NOT_COMPARABLE) {
		outbuf__printf(&o, "diff: not comparable (%zu identity difference%s)",
			       d->blocking_count, d->blocking_count == 1 ? "" : "s");
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
			outbuf__printf(&o, "%s %s %s", listed++ ? "," : "",
				       summary_label(it, label, sizeof(label)), change);
		}
	}
	return outbuf__finish(&o);
}

static void table_text(struct outbuf *o, const struct kh_diff *d)
{
	char (*cells)[C_COUNT][CELL] = malloc((d->item_count + 1) * sizeof(*cells));
	size_t width[C_COUNT];

	if (!cells) {
		o->failed = true;
		return;
	}

	for (int c = 0; c < C_COUNT; c++)
		width[c] = display_width(column_titles[c]);
	for (size_t i = 0; i < d->item_count; i++) {
		item_cells(&d->items[i], false, cells[i]);
		for (int c = 0; c < C_COUNT; c++)
			if (display_width(cells[i][c]) > width[c])
				width[c] = display_width(cells[i][c]);
	}
	for (size_t row = 0; row <= d->item_count; row++) {
		size_t start = o->len, end;

		for (int c = 0; c < C_COUNT; c++) {
			const char *cell = row ? cells[row - 1][c] : column_titles[c];
			int pad = (int)(width[c] - display_width(cell));

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
}

static void table_markdown(struct outbuf *o, const struct kh_diff *d)
{
	char cells[C_COUNT][CELL];

	for (int c = 0; c < C_COUNT; c++)
		outbuf__printf(o, "| %s ", column_titles[c]);
	outbuf__puts(o, "|\n");
	for (int c = 0; c < C_COUNT; c++)
		outbuf__puts(o, column_right[c] ? "|--:" : "|:--");
	outbuf__puts(o, "|\n");
	for (size_t i = 0; i < d->item_count; i++) {
		item_cells(&d->items[i], true, cells);
		for (int c = 0; c < C_COUNT; c++)
			outbuf__printf(o, "| %s ", cells[c]);
		outbuf__puts(o, "|\n");
	}
}

static char *render(const struct kh_diff *d, bool markdown)
{
	char *summary = diff__summary(d);
	struct outbuf o;

	outbuf__init(&o);
	if (!summary)
		return NULL;
	header(&o, d, markdown);
	outbuf__putc(&o, '\n');
	if (markdown) {
		table_markdown(&o, d);
		outbuf__printf(&o, "\n**%s**\n", summary);
	} else {
		table_text(&o, d);
		outbuf__printf(&o, "%s\n", summary);
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

/* --- JSON --------------------------------------------------------------- */

static bool add_string_or_null(cJSON *obj, const char *key, const char *value)
{
	return value ? cJSON_AddStringToObject(obj, key, value) != NULL
		     : cJSON_AddNullToObject(obj, key) != NULL;
}

/* Non-finite numbers (a bound from a base of 0) have no JSON spelling: null. */
static bool add_number_or_null(cJSON *obj, const char *key, bool present, double value)
{
	return present && isfinite(value) ? cJSON_AddNumberToObject(obj, key, value) != NULL
					  : cJSON_AddNullToObject(obj, key) != NULL;
}

static bool add_threshold(cJSON *obj, const char *key, const struct kh_diff_threshold *t)
{
	return add_number_or_null(obj, key, !t->off, t->pct);
}

static bool add_to_array(cJSON *array, cJSON *item)
{
	if (!item || !cJSON_AddItemToArray(array, item)) {
		cJSON_Delete(item);
		return false;
	}
	return true;
}

/* [low, high], or null when absent. */
static bool add_pair_or_null(cJSON *obj, const char *key, bool present, double low, double high)
{
	cJSON *pair;

	if (!present)
		return cJSON_AddNullToObject(obj, key) != NULL;
	pair = cJSON_AddArrayToObject(obj, key);
	return pair &&
	       add_to_array(pair, isfinite(low) ? cJSON_CreateNumber(low) : cJSON_CreateNull()) &&
	       add_to_array(pair, isfinite(high) ? cJSON_CreateNumber(high) : cJSON_CreateNull());
}

static cJSON *side_json(const struct kh_diff_side_info *s)
{
	cJSON *o = cJSON_CreateObject(), *paths;
	bool ok = o && cJSON_AddStringToObject(o, "path", s->path) &&
		  (paths = cJSON_AddArrayToObject(o, "paths")) &&
		  cJSON_AddNumberToObject(o, "records", (double)s->count);

	for (size_t i = 0; ok && i < s->count; i++)
		ok = add_to_array(paths, cJSON_CreateString(s->names[i]));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *options_json(const struct kh_diff *d)
{
	const struct kh_diff_options *opts = &d->opts;
	cJSON *o = cJSON_CreateObject(), *t, *stages, *allow;
	bool ok;

	t = o ? cJSON_AddObjectToObject(o, "thresholds") : NULL;
	ok = t && add_threshold(t, "default_stage", &opts->stages) &&
	     add_threshold(t, "wall", &opts->wall) &&
	     add_threshold(t, "throughput", &opts->throughput) &&
	     add_threshold(t, "peak_rss", &opts->peak_rss);
	stages = ok ? cJSON_AddObjectToObject(t, "stages") : NULL;
	ok = stages != NULL;
	for (uint32_t s = 0; ok && s < KH_STAGE_COUNT; s++)
		if (opts->stage[s].set || is_queue_wait(s))
			ok = add_threshold(stages, kh_stage__name(s),
					   diff_options__threshold(opts, KH_DIFF_M_ELAPSED, s));
	ok = ok && cJSON_AddNumberToObject(o, "min_change_ns", (double)opts->min_change_ns) &&
	     cJSON_AddNumberToObject(o, "peak_rss_min_change_bytes",
				     (double)KH_DIFF_RSS_MIN_CHANGE_BYTES) &&
	     cJSON_AddNumberToObject(o, "confidence", opts->confidence) &&
	     cJSON_AddStringToObject(o, "method", d->method == KH_DIFF_METHOD_MANN_WHITNEY
							  ? "mann-whitney" : "threshold");
	allow = ok ? cJSON_AddArrayToObject(o, "allow_mismatch") : NULL;
	ok = allow != NULL;
	for (int f = 0; ok && f < KH_DIFF_F_COUNT; f++)
		if (opts->allow & BIT(f))
			ok = add_to_array(allow, cJSON_CreateString(fields[f].name));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *mismatch_json(const struct kh_diff_mismatch *m)
{
	static const char *const within[] = { NULL, "base", "candidate" };
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddStringToObject(o, "field", fields[m->field].name) ||
	    !cJSON_AddStringToObject(o, "base", m->base_value) ||
	    !cJSON_AddStringToObject(o, "candidate", m->cand_value) ||
	    !cJSON_AddStringToObject(o, "base_file", m->base_file) ||
	    !cJSON_AddStringToObject(o, "candidate_file", m->cand_file) ||
	    !add_string_or_null(o, "within", within[m->within]) ||
	    !cJSON_AddBoolToObject(o, "allowed", m->allowed)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *warning_json(const struct kh_diff_warning *w)
{
	static const char *const kinds[] = {
		[KH_DIFF_WARN_INPUT] = "input",
		[KH_DIFF_WARN_DROPS] = "drops",
		[KH_DIFF_WARN_STARTED_MID] = "started-mid-session",
		[KH_DIFF_WARN_ENDED_MID] = "ended-mid-session",
	};
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddStringToObject(o, "kind", kinds[w->kind]) ||
	    !cJSON_AddStringToObject(o, "message", w->message)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static const char *metric_unit(enum kh_diff_metric metric)
{
	switch (metric) {
	case KH_DIFF_M_THROUGHPUT:
		return "bytes/s";
	case KH_DIFF_M_PEAK_RSS:
		return "bytes";
	case KH_DIFF_M_CALLS:
		return "calls";
	default:
		return "ns";
	}
}

static cJSON *item_json(const struct kh_diff_item *it)
{
	cJSON *o = cJSON_CreateObject();
	char name[CELL];
	bool ok;

	item_label(it, name, sizeof(name));
	ok = o && cJSON_AddStringToObject(o, "name", name) &&
	     add_string_or_null(o, "stage", is_stage_metric(it->metric) ? it->name : NULL) &&
	     cJSON_AddStringToObject(o, "metric", diff_metric__name(it->metric)) &&
	     cJSON_AddStringToObject(o, "unit", metric_unit(it->metric)) &&
	     cJSON_AddNumberToObject(o, "base_runs", (double)it->base_n) &&
	     cJSON_AddNumberToObject(o, "candidate_runs", (double)it->cand_n) &&
	     cJSON_AddNumberToObject(o, "base_median", it->base_median) &&
	     cJSON_AddNumberToObject(o, "candidate_median", it->cand_median) &&
	     add_number_or_null(o, "change_pct", it->has_change, it->change_pct);
	ok = ok && add_pair_or_null(o, "interval", it->has_interval, it->interval_low,
				    it->interval_high) &&
	     add_pair_or_null(o, "interval_pct", it->has_interval && it->has_change,
			      it->interval_low_pct, it->interval_high_pct) &&
	     add_number_or_null(o, "threshold_pct", it->has_threshold && !it->threshold_off,
				it->threshold_pct) &&
	     cJSON_AddBoolToObject(o, "gating", it->gating) &&
	     cJSON_AddBoolToObject(o, "below_floor", it->below_floor) &&
	     cJSON_AddStringToObject(o, "verdict", diff_mark__name(it->verdict));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

char *diff__to_json(const struct kh_diff *d)
{
	cJSON *root = cJSON_CreateObject(), *array;
	char *printed = NULL, *out = NULL;
	bool ok;

	ok = root && cJSON_AddStringToObject(root, "schema", "khprof-diff-v1") &&
	     cJSON_AddItemToObject(root, "base", side_json(&d->base)) &&
	     cJSON_AddItemToObject(root, "candidate", side_json(&d->cand)) &&
	     cJSON_AddItemToObject(root, "options", options_json(d)) &&
	     cJSON_AddStringToObject(root, "verdict", diff_verdict__name(d->verdict)) &&
	     cJSON_AddNumberToObject(root, "regressions", (double)d->regression_count) &&
	     cJSON_AddNumberToObject(root, "improved", (double)d->improved_count) &&
	     cJSON_AddNumberToObject(root, "noisy", (double)d->noisy_count);
	array = ok ? cJSON_AddArrayToObject(root, "mismatches") : NULL;
	for (size_t i = 0; array && i < d->mismatch_count; i++)
		if (!add_to_array(array, mismatch_json(&d->mismatches[i])))
			array = NULL;
	array = array ? cJSON_AddArrayToObject(root, "warnings") : NULL;
	for (size_t i = 0; array && i < d->warning_count; i++)
		if (!add_to_array(array, warning_json(&d->warnings[i])))
			array = NULL;
	array = array ? cJSON_AddArrayToObject(root, "items") : NULL;
	for (size_t i = 0; array && i < d->item_count; i++)
		if (!add_to_array(array, item_json(&d->items[i])))
			array = NULL;
	if (array)
		printed = cJSON_Print(root);
	cJSON_Delete(root);
	if (printed) {
		out = format("%s\n", printed);
		cJSON_free(printed);
	}
	if (!out)
		errno = ENOMEM;
	return out;
}
