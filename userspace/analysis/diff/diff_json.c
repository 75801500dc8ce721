// SPDX-License-Identifier: MIT
/*
 * diff_json.c - a comparison as a "khprof-diff-v1" object (docs/CI.md),
 * printed by cJSON: unlike records, its layout is khprof's own.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "diff.h"
#include "diff_internal.h"

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
	ok = t && add_threshold(t, "default_stage", &opts->stages);
	for (size_t i = 0; ok && i < DIFF_NAMED_THRESHOLDS; i++)
		ok = add_threshold(t, diff_threshold__name(i), diff_options__named(opts, i));
	stages = ok ? cJSON_AddObjectToObject(t, "stages") : NULL;
	ok = stages != NULL;
	for (uint32_t s = 0; ok && s < KH_STAGE_COUNT; s++)
		if (opts->stage[s].set || diff_stage__is_queue_wait(s))
			ok = add_threshold(stages, kh_stage__name(s),
					   diff_options__threshold(opts, KH_DIFF_M_ELAPSED, s));
	ok = ok && cJSON_AddNumberToObject(o, "min_change_ns", (double)opts->min_change_ns) &&
	     cJSON_AddNumberToObject(o, "peak_rss_min_change_bytes",
				     (double)KH_DIFF_RSS_MIN_CHANGE_BYTES) &&
	     cJSON_AddNumberToObject(o, "confidence", opts->confidence) &&
	     cJSON_AddStringToObject(o, "method", d->method == KH_DIFF_METHOD_MANN_WHITNEY
							  ? "hodges-lehmann" : "none");
	allow = ok ? cJSON_AddArrayToObject(o, "allow_mismatch") : NULL;
	ok = allow != NULL;
	for (int f = 0; ok && f < KH_DIFF_F_COUNT; f++)
		if (opts->allow & DIFF_BIT(f))
			ok = add_to_array(allow, cJSON_CreateString(diff_field__name((enum kh_diff_field)f)));
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

	if (!o || !cJSON_AddStringToObject(o, "field", diff_field__name(m->field)) ||
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
		[KH_DIFF_WARN_STARVED] = "starved",
		[KH_DIFF_WARN_INCOMPLETE] = "incomplete-split",
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

static const char *const unjudged_names[] = {
	[KH_DIFF_JUDGED] = NULL,
	[KH_DIFF_FEW_RUNS] = "too-few-runs",
	[KH_DIFF_STARVED] = "starved",
};

/* How the judged values differ from the recorded ones, or null (docs/CI.md). */
static bool add_adjusted(cJSON *o, const struct kh_diff_item *it)
{
	static const char *const left_out[] = {
		[KH_DIFF_ALL_RUNS] = NULL,
		[KH_DIFF_LEFT_STARVED] = "starved",
		[KH_DIFF_LEFT_INCOMPLETE] = "incomplete-split",
	};
	bool some_out = it->base_used < it->base_n || it->cand_used < it->cand_n;
	cJSON *a;

	if (!some_out && !it->wait_adjusted)
		return cJSON_AddNullToObject(o, "adjusted") != NULL;
	a = cJSON_AddObjectToObject(o, "adjusted");
	return a && add_string_or_null(a, "left_out", some_out ? left_out[it->left_out] : NULL) &&
	       add_pair_or_null(a, "runs_left_out", true, (double)(it->base_n - it->base_used),
				(double)(it->cand_n - it->cand_used)) &&
	       cJSON_AddBoolToObject(a, "wait_factor", it->wait_adjusted);
}

static cJSON *item_json(const struct kh_diff_item *it)
{
	cJSON *o = cJSON_CreateObject();
	char name[DIFF_LABEL_LEN];
	bool judged = it->base_used && it->cand_used, ok;

	diff_item__label(it, name, sizeof(name));
	ok = o && cJSON_AddStringToObject(o, "name", name) &&
	     add_string_or_null(o, "stage", diff_metric__is_stage(it->metric) ? it->name : NULL) &&
	     add_string_or_null(o, "state", diff_metric__is_state(it->metric) ? it->name : NULL) &&
	     cJSON_AddStringToObject(o, "metric", diff_metric__name(it->metric)) &&
	     cJSON_AddStringToObject(o, "unit", metric_unit(it->metric)) &&
	     cJSON_AddNumberToObject(o, "base_runs", (double)it->base_n) &&
	     cJSON_AddNumberToObject(o, "candidate_runs", (double)it->cand_n) &&
	     add_pair_or_null(o, "recorded_medians", true, it->recorded_base, it->recorded_cand) &&
	     cJSON_AddNumberToObject(o, "base_median", it->base_median) &&
	     cJSON_AddNumberToObject(o, "candidate_median", it->cand_median) &&
	     add_number_or_null(o, "shift", judged, it->shift) &&
	     add_number_or_null(o, "change_pct", it->has_change, it->change_pct);
	ok = ok && add_pair_or_null(o, "interval", it->has_interval, it->interval_low,
				    it->interval_high) &&
	     add_pair_or_null(o, "interval_pct", it->has_interval && it->has_change,
			      it->interval_low_pct, it->interval_high_pct) &&
	     add_number_or_null(o, "threshold_pct", it->has_threshold && !it->threshold_off,
				it->threshold_pct) &&
	     cJSON_AddBoolToObject(o, "gating", it->gating) &&
	     cJSON_AddBoolToObject(o, "below_floor", it->below_floor) &&
	     cJSON_AddBoolToObject(o, "floor_only", it->floor_only) &&
	     cJSON_AddBoolToObject(o, "within_span_error", it->within_span_error) &&
	     add_number_or_null(o, "noise_pct", it->has_interval && it->noise_pct > 0,
				it->noise_pct) &&
	     add_pair_or_null(o, "runs_used", true, (double)it->base_used,
			      (double)it->cand_used) &&
	     add_adjusted(o, it) &&
	     add_string_or_null(o, "unjudged", unjudged_names[it->unjudged]) &&
	     cJSON_AddStringToObject(o, "verdict", diff_mark__name(it->verdict));
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Why the comparison could not judge, or null. */
static bool add_cannot(cJSON *root, const struct kh_diff *d)
{
	char *reason = diff__cannot_reason(d);
	cJSON *c;
	bool ok;

	if (d->verdict != KH_DIFF_VERDICT_CANNOT_JUDGE)
		return cJSON_AddNullToObject(root, "cannot_judge") != NULL;
	c = reason ? cJSON_AddObjectToObject(root, "cannot_judge") : NULL;
	ok = c && cJSON_AddStringToObject(c, "reason", unjudged_names[d->cannot]) &&
	     cJSON_AddStringToObject(c, "message", reason);
	free(reason);
	return ok;
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
	     cJSON_AddNumberToObject(root, "noisy", (double)d->noisy_count) &&
	     cJSON_AddNumberToObject(root, "unjudged", (double)d->unjudged_count) &&
	     add_pair_or_null(root, "starved_runs", true, (double)d->starved[0],
			      (double)d->starved[1]) &&
	     add_cannot(root, d);
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
		out = diff__format("%s\n", printed);
		cJSON_free(printed);
	}
	if (!out)
		errno = ENOMEM;
	return out;
}
