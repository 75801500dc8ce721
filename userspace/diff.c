// SPDX-License-Identifier: MIT
/*
 * Comparing two records.  A record's times only say something about a
 * change when the runs did the same work under the same conditions, so the
 * comparison first lists every identity or input field that differs, and
 * every sign that a record is incomplete, before it judges the times.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "diff.h"

void diff_options__init(struct kh_diff_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->threshold_pct = KH_DIFF_DEFAULT_THRESHOLD_PCT;
	opts->min_ns = KH_DIFF_DEFAULT_MIN_NS;
}

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
	switch (mark) {
	case KH_DIFF_UNCHANGED:
		return "unchanged";
	case KH_DIFF_REGRESSED:
		return "regressed";
	case KH_DIFF_IMPROVED:
		return "improved";
	}
	return NULL;
}

static const char *warning_kind_name(enum kh_diff_warning_kind kind)
{
	switch (kind) {
	case KH_DIFF_WARN_IDENTITY:
		return "identity";
	case KH_DIFF_WARN_INPUT:
		return "input";
	case KH_DIFF_WARN_MODE:
		return "mode";
	case KH_DIFF_WARN_DROPS:
		return "drops";
	case KH_DIFF_WARN_STARTED_MID:
		return "started-mid-session";
	case KH_DIFF_WARN_ENDED_MID:
		return "ended-mid-session";
	}
	return "unknown";
}

/* --- comparability ------------------------------------------------------ */

enum field_type { F_STRING, F_OPT_STRING, F_CACHE, F_DAEMON, F_U64, F_OPT_U64 };

struct identity_field {
	const char *name;
	enum field_type type;
	size_t offset;
};

/*
 * The RunIdentity fields that change what a run costs.  run_id and
 * binary_version are left out on purpose: they differ between any two runs
 * and between the two builds CI compares, which is the point of comparing.
 */
#define FIELD(name, type) { #name, type, offsetof(struct kh_identity, name) }
static const struct identity_field identity_fields[] = {
	FIELD(detector_digest, F_STRING),
	FIELD(config_digest, F_STRING),
	FIELD(source_kind, F_STRING),
	FIELD(workload_class, F_STRING),
	FIELD(backend_requested, F_STRING),
	FIELD(backend_selected, F_OPT_STRING),
	FIELD(cache_state, F_CACHE),
	FIELD(daemon_state, F_DAEMON),
	FIELD(scanner_threads, F_U64),
	FIELD(reader_threads, F_OPT_U64),
	FIELD(logical_cpus, F_U64),
};
#undef FIELD

static bool field_equal(const struct identity_field *f, const struct kh_identity *a,
			const struct kh_identity *b)
{
	const void *pa = (const char *)a + f->offset, *pb = (const char *)b + f->offset;

	switch (f->type) {
	case F_STRING:
	case F_OPT_STRING: {
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

/* The value as the seed's text report shows it, so users recognise it. */
static char *field_text(const struct identity_field *f, const struct kh_identity *id)
{
	const void *p = (const char *)id + f->offset;
	const char *name;
	char *out = NULL;

	switch (f->type) {
	case F_STRING:
	case F_OPT_STRING:
		name = *(char *const *)p;
		return strdup(name ? name : "unselected");
	case F_CACHE:
		name = kh_cache_state__name(*(const enum kh_cache_state *)p);
		return strdup(name ? name : "?");
	case F_DAEMON:
		name = kh_daemon_state__name(*(const enum kh_daemon_state *)p);
		return strdup(name ? name : "?");
	case F_U64:
		if (asprintf(&out, "%" PRIu64, *(const uint64_t *)p) < 0)
			return NULL;
		return out;
	case F_OPT_U64: {
		const struct kh_opt_u64 *o = p;

		if (!o->present)
			return strdup("auto");
		if (asprintf(&out, "%" PRIu64, o->value) < 0)
			return NULL;
		return out;
	}
	}
	return NULL;
}

struct builder {
	struct kh_diff *d;
	size_t cap;
	const char *base_name, *new_name;
};

/* Takes ownership of the three strings, even on failure. */
static int builder__warn(struct builder *b, enum kh_diff_warning_kind kind, const char *field,
			 char *base_value, char *new_value, char *message)
{
	struct kh_diff *d = b->d;
	struct kh_diff_warning *w;

	if (!message)
		goto nomem;
	if (d->warning_count == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 8;
		struct kh_diff_warning *grown = realloc(d->warnings, cap * sizeof(*grown));

		if (!grown)
			goto nomem;
		d->warnings = grown;
		b->cap = cap;
	}
	w = &d->warnings[d->warning_count++];
	w->kind = kind;
	w->field = field;
	w->base_value = base_value;
	w->new_value = new_value;
	w->message = message;
	if (kind == KH_DIFF_WARN_IDENTITY || kind == KH_DIFF_WARN_INPUT)
		d->mismatch_count++;
	return 0;
nomem:
	free(base_value);
	free(new_value);
	free(message);
	return -ENOMEM;
}

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

static int builder__mismatch(struct builder *b, enum kh_diff_warning_kind kind, const char *field,
			     char *base_value, char *new_value)
{
	char *message = NULL;

	if (base_value && new_value)
		message = format("records differ in '%s': '%s' in %s, '%s' in %s", field,
				 base_value, b->base_name, new_value, b->new_name);
	return builder__warn(b, kind, field, base_value, new_value, message);
}

static int builder__u64_mismatch(struct builder *b, const char *field, uint64_t base,
				 uint64_t new)
{
	if (base == new)
		return 0;
	return builder__mismatch(b, KH_DIFF_WARN_INPUT, field, format("%" PRIu64, base),
				 format("%" PRIu64, new));
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

/* Warnings about one record on its own: what makes its times incomplete. */
static int builder__record_quality(struct builder *b, const struct kh_profile *p,
				   const char *name)
{
	const struct kh_profile_ext *ext = &p->ext;
	bool dropped = false;
	char *drops;
	int err = 0;

	for (uint32_t i = 0; i < KH_DROP_COUNT; i++)
		dropped |= ext->drops[i] != 0;
	if (dropped) {
		drops = drops_text(ext);
		err = builder__warn(b, KH_DIFF_WARN_DROPS, NULL, NULL, NULL,
				    drops ? format("record '%s' lost spans or events: %s "
						   "(its stage times undercount)", name, drops)
					  : NULL);
		free(drops);
	}
	if (!err && ext->started_mid_session)
		err = builder__warn(b, KH_DIFF_WARN_STARTED_MID, NULL, NULL, NULL,
				    format("record '%s' started mid-session: khprof attached "
					   "after the session began (earlier work is missing)",
					   name));
	if (!err && ext->ended_mid_session)
		err = builder__warn(b, KH_DIFF_WARN_ENDED_MID, NULL, NULL, NULL,
				    format("record '%s' ended mid-session: the session had not "
					   "finished when tracing stopped (later work is missing)",
					   name));
	return err;
}

static int builder__comparability(struct builder *b, const struct kh_profile *base,
				  const struct kh_profile *new)
{
	const char *base_mode = base->ext.mode, *new_mode = new->ext.mode;
	int err = 0;

	for (size_t i = 0; !err && i < sizeof(identity_fields) / sizeof(identity_fields[0]); i++) {
		const struct identity_field *f = &identity_fields[i];

		if (field_equal(f, &base->identity, &new->identity))
			continue;
		err = builder__mismatch(b, KH_DIFF_WARN_IDENTITY, f->name,
					field_text(f, &base->identity),
					field_text(f, &new->identity));
	}
	if (!err)
		err = builder__u64_mismatch(b, "input_bytes", base->input_bytes, new->input_bytes);
	if (!err)
		err = builder__u64_mismatch(b, "input_units", base->input_units, new->input_units);
	/*
	 * Each mode adds its own cost per span to the traced program, so the
	 * same code measures differently; a record without a mode was not
	 * traced by khprof at all (the seed's in-process recording).
	 */
	if (!err && (!base_mode != !new_mode || (base_mode && strcmp(base_mode, new_mode)))) {
		char *bv = strdup(base_mode ? base_mode : "none");
		char *nv = strdup(new_mode ? new_mode : "none");

		err = builder__warn(b, KH_DIFF_WARN_MODE, "mode", bv, nv,
				    bv && nv ? format("tracing modes differ: '%s' in %s, '%s' in %s "
						      "(each mode adds a different cost per span)",
						      bv, b->base_name, nv, b->new_name)
					     : NULL);
	}
	if (!err)
		err = builder__record_quality(b, base, b->base_name);
	if (!err)
		err = builder__record_quality(b, new, b->new_name);
	return err;
}

/* --- the comparison ----------------------------------------------------- */

/*
 * Marks one timed item.  The test is done on the exact integer difference
 * so that a change of exactly the threshold is not a regression whatever
 * rounding a percentage would bring.
 */
static void judge(struct kh_diff_item *it, uint64_t base, uint64_t new,
		  const struct kh_diff_options *opts)
{
	it->below_floor = base < opts->min_ns && new < opts->min_ns;
	it->mark = KH_DIFF_UNCHANGED;
	if (it->below_floor)
		return;
	/* From a base of 0, any growth is beyond every threshold. */
	if (new > base && (double)(new - base) * 100.0 > opts->threshold_pct * (double)base)
		it->mark = KH_DIFF_REGRESSED;
	else if (new < base && (double)(base - new) * 100.0 > opts->threshold_pct * (double)base)
		it->mark = KH_DIFF_IMPROVED;
}

static void set_values(struct kh_diff_item *it, double base, double new)
{
	it->base = base;
	it->new = new;
	it->has_delta = base > 0;
	it->delta_pct = it->has_delta ? (new - base) * 100.0 / base : 0.0;
}

static struct kh_diff_item *add_item(struct kh_diff *d, enum kh_diff_kind kind, uint32_t id,
				     const char *name)
{
	struct kh_diff_item *it = &d->items[d->item_count++];

	memset(it, 0, sizeof(*it));
	it->kind = kind;
	it->id = id;
	it->name = name;
	return it;
}

static void add_timed(struct kh_diff *d, enum kh_diff_kind kind, uint32_t id, const char *name,
		      bool base_present, uint64_t base, bool new_present, uint64_t new)
{
	struct kh_diff_item *it = add_item(d, kind, id, name);

	it->base_present = base_present;
	it->new_present = new_present;
	set_values(it, (double)base, (double)new);
	judge(it, base, new, &d->opts);
	if (it->mark == KH_DIFF_REGRESSED)
		d->regression_count++;
}

/* Input bytes per wall second; absent when the wall time is 0. */
static double throughput(const struct kh_profile *p)
{
	return p->wall_time_ns ? (double)p->input_bytes * 1e9 / (double)p->wall_time_ns : 0.0;
}

struct totals {
	bool present;
	uint64_t elapsed_ns, calls;
};

static void stage_totals(const struct kh_profile *p, struct totals t[KH_STAGE_COUNT])
{
	memset(t, 0, KH_STAGE_COUNT * sizeof(*t));
	for (size_t i = 0; i < p->stage_count; i++) {
		const struct kh_stage_measurement *s = &p->stages[i];

		if (s->stage >= KH_STAGE_COUNT)
			continue;
		t[s->stage].present = true;
		t[s->stage].elapsed_ns += s->elapsed_ns;
		t[s->stage].calls += s->calls;
	}
}

static void state_totals(const struct kh_profile *p, struct totals t[KH_STATE_COUNT])
{
	memset(t, 0, KH_STATE_COUNT * sizeof(*t));
	for (size_t i = 0; i < p->state_count; i++) {
		const struct kh_state_measurement *s = &p->states[i];

		if (s->state >= KH_STATE_COUNT)
			continue;
		t[s->state].present = true;
		t[s->state].elapsed_ns += s->elapsed_ns;
	}
}

static void compare_items(struct kh_diff *d, const struct kh_profile *base,
			  const struct kh_profile *new)
{
	struct totals bs[KH_STAGE_COUNT], ns[KH_STAGE_COUNT];
	struct totals bm[KH_STATE_COUNT], nm[KH_STATE_COUNT];
	struct kh_diff_item *it;

	add_timed(d, KH_DIFF_WALL, 0, "wall", true, base->wall_time_ns, true, new->wall_time_ns);

	/* Throughput follows wall time when the input matches, so it is shown, not judged. */
	it = add_item(d, KH_DIFF_THROUGHPUT, 0, "throughput");
	it->base_present = base->wall_time_ns != 0;
	it->new_present = new->wall_time_ns != 0;
	set_values(it, throughput(base), throughput(new));

	state_totals(base, bm);
	state_totals(new, nm);
	for (uint32_t s = 0; s < KH_STATE_COUNT; s++)
		if (bm[s].present || nm[s].present)
			add_timed(d, KH_DIFF_STATE, s, kh_run_state__name(s), bm[s].present,
				  bm[s].elapsed_ns, nm[s].present, nm[s].elapsed_ns);

	stage_totals(base, bs);
	stage_totals(new, ns);
	for (uint32_t s = 0; s < KH_STAGE_COUNT; s++) {
		if (!bs[s].present && !ns[s].present)
			continue;
		add_timed(d, KH_DIFF_STAGE, s, kh_stage__name(s), bs[s].present, bs[s].elapsed_ns,
			  ns[s].present, ns[s].elapsed_ns);
		it = &d->items[d->item_count - 1];
		it->base_calls = bs[s].calls;
		it->new_calls = ns[s].calls;
		/* A stage seen on one side only is a change of work too. */
		it->calls_changed = bs[s].calls != ns[s].calls || bs[s].present != ns[s].present;
		if (it->calls_changed)
			d->calls_changed_count++;
	}
}

int diff__compare(const struct kh_profile *base, const struct kh_profile *new,
		  const struct kh_diff_options *opts, struct kh_diff *out)
{
	struct builder b = { .d = out };
	int err;

	memset(out, 0, sizeof(*out));
	if (!isfinite(opts->threshold_pct) || opts->threshold_pct < 0)
		return -EINVAL;
	out->opts = *opts;
	out->opts.base_name = NULL;
	out->opts.new_name = NULL;
	b.base_name = opts->base_name ? opts->base_name : "base";
	b.new_name = opts->new_name ? opts->new_name : "new";

	err = builder__comparability(&b, base, new);
	if (err) {
		diff__free(out);
		return err;
	}
	compare_items(out, base, new);
	if (opts->strict && out->mismatch_count)
		out->verdict = KH_DIFF_VERDICT_NOT_COMPARABLE;
	else if (out->regression_count)
		out->verdict = KH_DIFF_VERDICT_REGRESSED;
	else
		out->verdict = KH_DIFF_VERDICT_OK;
	return 0;
}

void diff__free(struct kh_diff *d)
{
	for (size_t i = 0; i < d->warning_count; i++) {
		free(d->warnings[i].base_value);
		free(d->warnings[i].new_value);
		free(d->warnings[i].message);
	}
	free(d->warnings);
	memset(d, 0, sizeof(*d));
}

/* --- text --------------------------------------------------------------- */

struct text {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void text__printf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text__printf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt,
			      ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if (t->buf && (size_t)n < t->cap - t->len) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap ? t->cap : 1024;

		while (cap < t->len + (size_t)n + 1)
			cap *= 2;
		char *grown = realloc(t->buf, cap);

		if (!grown) {
			t->failed = true;
			return;
		}
		t->buf = grown;
		t->cap = cap;
	}
}

/* Ends a line without the padding that blank trailing columns leave. */
static void text__end_line(struct text *t)
{
	if (t->failed)
		return;
	while (t->len && t->buf[t->len - 1] == ' ')
		t->len--;
	text__printf(t, "\n");
}

static void format_value(const struct kh_diff_item *it, bool present, double value, char *buf,
			 size_t len)
{
	if (!present)
		snprintf(buf, len, "-");
	else if (it->kind == KH_DIFF_THROUGHPUT)
		snprintf(buf, len, "%.3f MiB/s", value / (1024.0 * 1024.0));
	else
		snprintf(buf, len, "%.3f ms", value / 1e6);
}

static void format_delta(const struct kh_diff_item *it, char *buf, size_t len)
{
	if (!it->base_present && it->new_present)
		snprintf(buf, len, "new");
	else if (it->has_delta)
		snprintf(buf, len, "%+.1f%%", it->delta_pct);
	else if (it->new > it->base)
		snprintf(buf, len, "+inf%%");
	else
		snprintf(buf, len, "%+.1f%%", 0.0);
}

static const char *mark_label(enum kh_diff_mark mark)
{
	return mark == KH_DIFF_REGRESSED ? "REGRESSED" : mark == KH_DIFF_IMPROVED ? "improved" : "";
}

static void format_per_call(bool present, uint64_t elapsed, uint64_t calls, char *buf, size_t len)
{
	if (!present)
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, "%.3f", calls ? (double)elapsed / (double)calls / 1e3 : 0.0);
}

static void render_item(struct text *t, const struct kh_diff_item *it)
{
	char label[64], base[32], new[32], delta[32];

	if (it->kind == KH_DIFF_STATE)
		snprintf(label, sizeof(label), "macro %s", it->name);
	else if (it->kind == KH_DIFF_STAGE)
		snprintf(label, sizeof(label), "stage %s", it->name);
	else
		snprintf(label, sizeof(label), "%s", it->name);
	format_value(it, it->base_present, it->base, base, sizeof(base));
	format_value(it, it->new_present, it->new, new, sizeof(new));
	format_delta(it, delta, sizeof(delta));
	text__printf(t, "%-28s %15s %15s %8s  %-9s", label, base, new, delta,
		     mark_label(it->mark));
	if (it->kind == KH_DIFF_STAGE) {
		char bpc[32], npc[32];

		format_per_call(it->base_present, (uint64_t)it->base, it->base_calls, bpc,
				sizeof(bpc));
		format_per_call(it->new_present, (uint64_t)it->new, it->new_calls, npc,
				sizeof(npc));
		if (it->calls_changed)
			text__printf(t, "  calls=%" PRIu64 "->%" PRIu64, it->base_calls,
				     it->new_calls);
		else
			text__printf(t, "  calls=%" PRIu64, it->base_calls);
		text__printf(t, " per_call_us=%s->%s", bpc, npc);
	}
	text__end_line(t);
}

char *diff__render_text(const struct kh_diff *d)
{
	struct text t = { 0 };
	const struct kh_diff_item *wall = NULL;

	text__printf(&t, "%-28s %15s %15s %8s", "item", "base", "new", "delta");
	text__end_line(&t);
	for (size_t i = 0; i < d->item_count; i++) {
		render_item(&t, &d->items[i]);
		if (d->items[i].kind == KH_DIFF_WALL)
			wall = &d->items[i];
	}
	text__printf(&t, "diff: %zu regression%s over %g%%", d->regression_count,
		     d->regression_count == 1 ? "" : "s", d->opts.threshold_pct);
	if (wall && wall->has_delta)
		text__printf(&t, " (wall %+.1f%%)", wall->delta_pct);
	else
		text__printf(&t, " (wall n/a)");
	text__end_line(&t);
	if (t.failed) {
		free(t.buf);
		errno = ENOMEM;
		return NULL;
	}
	return t.buf;
}

/* --- JSON --------------------------------------------------------------- */

static bool add_string_or_null(cJSON *obj, const char *key, const char *value)
{
	return value ? cJSON_AddStringToObject(obj, key, value) != NULL
		     : cJSON_AddNullToObject(obj, key) != NULL;
}

static bool add_number_or_null(cJSON *obj, const char *key, bool present, double value)
{
	return present ? cJSON_AddNumberToObject(obj, key, value) != NULL
		       : cJSON_AddNullToObject(obj, key) != NULL;
}

static cJSON *warning_json(const struct kh_diff_warning *w)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddStringToObject(o, "kind", warning_kind_name(w->kind)) ||
	    !add_string_or_null(o, "field", w->field) ||
	    !add_string_or_null(o, "base", w->base_value) ||
	    !add_string_or_null(o, "new", w->new_value) ||
	    !cJSON_AddStringToObject(o, "message", w->message)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static const char *item_kind_name(enum kh_diff_kind kind)
{
	switch (kind) {
	case KH_DIFF_WALL:
		return "wall";
	case KH_DIFF_THROUGHPUT:
		return "throughput";
	case KH_DIFF_STATE:
		return "state";
	case KH_DIFF_STAGE:
		return "stage";
	}
	return "unknown";
}

static cJSON *item_json(const struct kh_diff_item *it)
{
	bool judged = it->kind != KH_DIFF_THROUGHPUT;
	cJSON *o = cJSON_CreateObject();
	bool ok;

	ok = o && cJSON_AddStringToObject(o, "kind", item_kind_name(it->kind)) &&
	     cJSON_AddStringToObject(o, "name", it->name) &&
	     cJSON_AddStringToObject(o, "unit", judged ? "ns" : "bytes/s") &&
	     add_number_or_null(o, "base", it->base_present, it->base) &&
	     add_number_or_null(o, "new", it->new_present, it->new) &&
	     add_number_or_null(o, "delta_pct", it->has_delta, it->delta_pct) &&
	     add_string_or_null(o, "mark", judged ? diff_mark__name(it->mark) : NULL) &&
	     cJSON_AddBoolToObject(o, "below_floor", it->below_floor);
	if (ok && it->kind == KH_DIFF_STAGE)
		ok = add_number_or_null(o, "base_calls", it->base_present,
					(double)it->base_calls) &&
		     add_number_or_null(o, "new_calls", it->new_present, (double)it->new_calls) &&
		     cJSON_AddBoolToObject(o, "calls_changed", it->calls_changed);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

char *diff__to_json(const struct kh_diff *d, const char *base_name, const char *new_name)
{
	const struct kh_diff_item *wall = d->item_count ? &d->items[0] : NULL;
	cJSON *root = cJSON_CreateObject(), *warnings, *items;
	char *printed = NULL, *out = NULL;
	bool ok;

	ok = root && cJSON_AddStringToObject(root, "schema", "khprof-diff-v1") &&
	     add_string_or_null(root, "base", base_name) &&
	     add_string_or_null(root, "new", new_name) &&
	     cJSON_AddNumberToObject(root, "threshold_pct", d->opts.threshold_pct) &&
	     cJSON_AddNumberToObject(root, "min_ms", (double)d->opts.min_ns / 1e6) &&
	     cJSON_AddBoolToObject(root, "strict", d->opts.strict) &&
	     cJSON_AddStringToObject(root, "verdict", diff_verdict__name(d->verdict)) &&
	     cJSON_AddBoolToObject(root, "comparable", d->mismatch_count == 0) &&
	     cJSON_AddNumberToObject(root, "regressions", (double)d->regression_count) &&
	     cJSON_AddNumberToObject(root, "mismatches", (double)d->mismatch_count) &&
	     cJSON_AddNumberToObject(root, "calls_changed", (double)d->calls_changed_count) &&
	     add_number_or_null(root, "wall_delta_pct", wall && wall->has_delta,
				wall ? wall->delta_pct : 0.0);
	warnings = ok ? cJSON_AddArrayToObject(root, "warnings") : NULL;
	for (size_t i = 0; warnings && i < d->warning_count; i++) {
		cJSON *w = warning_json(&d->warnings[i]);

		if (!w || !cJSON_AddItemToArray(warnings, w)) {
			cJSON_Delete(w);
			warnings = NULL;
		}
	}
	items = warnings ? cJSON_AddArrayToObject(root, "items") : NULL;
	for (size_t i = 0; items && i < d->item_count; i++) {
		cJSON *it = item_json(&d->items[i]);

		if (!it || !cJSON_AddItemToArray(items, it)) {
			cJSON_Delete(it);
			items = NULL;
		}
	}
	if (items)
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
