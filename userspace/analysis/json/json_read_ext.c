// SPDX-License-Identifier: MIT
/*
 * json_read_ext.c - the record's khprof extension: totals, drops, the
 * --interval series, latency, the kernel's features, sampled stacks.
 * Every member is optional so that the extension can grow and records
 * written before a member existed still read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_fields.h"

/* Extension members are all optional so that the extension can grow. */
static int parse__ext_u64(struct parse *ps, const struct jnode *obj, const char *name, uint64_t *out)
{
	struct kh_opt_u64 value;

	if (parse__opt_u64(ps, obj, name, &value))
		return -EINVAL;
	*out = value.value;
	return 0;
}

static int parse__ext_bool(struct parse *ps, const struct jnode *obj, const char *name, bool *out)
{
	const struct jnode *node;

	if (parse__member(ps, obj, name, false, &node))
		return -EINVAL;
	if (!node || node->type == J_NULL)
		return 0;
	if (!(node->type == J_FALSE || node->type == J_TRUE))
		return parse__fail_field(ps, name, "expected a boolean", node);
	*out = node->type == J_TRUE;
	return 0;
}

static int parse__ext_drops(struct parse *ps, const struct jnode *ext, uint64_t *drops)
{
	const struct jnode *node;
	size_t saved;
	int err = 0;

	if (parse__container(ps, ext, "drops", false, false, &node))
		return -EINVAL;
	if (!node)
		return 0;
	saved = path__push_field(ps, "drops");
	for (uint32_t i = 0; !err && i < KH_DROP_COUNT; i++)
		err = parse__ext_u64(ps, node, kh_drop__name(i), &drops[i]);
	path__pop(ps, saved);
	return err;
}

/*
 * One column of the series: an array of n values, each stored at offset in
 * its interval; optional columns take null and store a struct kh_opt_u64.
 */
static int parse__column(struct parse *ps, const struct jnode *obj, const char *name,
			 struct kh_series *s, size_t offset, bool optional)
{
	const struct jnode *array, *node;
	size_t i = 0, saved;

	if (parse__container(ps, obj, name, true, true, &array))
		return -EINVAL;
	if (array->count != s->count)
		return parse__fail_field(ps, name, "expected one value per interval", NULL);
	saved = path__push_field(ps, name);
	for (node = array->child; node; node = node->next) {
		char *field = (char *)&s->intervals[i] + offset;
		char index[24];

		snprintf(index, sizeof(index), "[%zu]", i++);
		if (optional) {
			struct kh_opt_u64 *v = (struct kh_opt_u64 *)field;

			v->present = node->type != J_NULL;
			if (v->present && parse__value_u64(ps, node, index, &v->value))
				break;
		} else if (parse__value_u64(ps, node, index, (uint64_t *)field)) {
			break;
		}
	}
	path__pop(ps, saved);
	return ps->failed ? -EINVAL : 0;
}

/* An optional column records written before it lack: absent values then. */
static int parse__column_if(struct parse *ps, const struct jnode *obj, const char *name,
			    struct kh_series *s, size_t offset)
{
	const struct jnode *array;

	if (parse__container(ps, obj, name, false, true, &array))
		return -EINVAL;
	return array ? parse__column(ps, obj, name, s, offset, true) : 0;
}

static int parse__series_states(struct parse *ps, const struct jnode *obj, struct kh_series *s)
{
	const struct jnode *array, *node;
	size_t i = 0;

	if (parse__container(ps, obj, "state", true, true, &array))
		return -EINVAL;
	if (array->count != s->count)
		return parse__fail_field(ps, "state", "expected one value per interval", NULL);
	for (node = array->child; node; node = node->next) {
		if (node->type != J_STRING ||
		    kh_run_state__parse(node->string, &s->intervals[i].state))
			return parse__fail_field(ps, "state", "expected a state name per interval",
						 node);
		i++;
	}
	return 0;
}

static int parse__series_stages(struct parse *ps, const struct jnode *obj, struct kh_series *s)
{
	const struct jnode *stages, *stage;
	size_t saved;
	int err = 0;

	if (parse__container(ps, obj, "stages", true, false, &stages))
		return -EINVAL;
	saved = path__push_field(ps, "stages");
	for (stage = stages->child; stage; stage = stage->next) {
		uint32_t st;
		size_t inner;

		if (kh_stage__parse(stage->key, &st)) {
			err = parse__fail_field(ps, stage->key, "unknown stage", NULL);
			break;
		}
		if (stage->type != J_OBJECT) {
			err = parse__fail_field(ps, stage->key, "expected an object", stage);
			break;
		}
		inner = path__push_field(ps, stage->key);
		err = parse__column(ps, stage, "elapsed_ns", s,
				    offsetof(struct kh_interval, elapsed_ns) + st * sizeof(uint64_t),
				    false) ||
		      parse__column(ps, stage, "calls", s,
				    offsetof(struct kh_interval, calls) + st * sizeof(uint64_t), false);
		path__pop(ps, inner);
		if (err)
			break;
	}
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

/* One [index, count] pair of khprof.latency.stages[].buckets. */
static int parse__bucket(struct parse *ps, const struct jnode *pair, size_t i,
			 struct kh_stage_dist *d)
{
	size_t saved = path__push(ps, "[%zu]", i);
	uint64_t index = 0, count = 0;
	int err = -EINVAL;

	if (pair->type != J_ARRAY || pair->count != 2)
		parse__fail(ps, "'%s': expected [index, count], found %s", ps->path,
			    json_type_name(pair));
	else if (!parse__value_u64(ps, pair->child, "0", &index) &&
		 !parse__value_u64(ps, pair->child->next, "1", &count)) {
		if (index >= KH_HIST_BUCKETS)
			parse__fail(ps, "'%s': bucket %" PRIu64 " out of range (0 to %u)", ps->path,
				    index, KH_HIST_BUCKETS - 1);
		else
			err = 0;
	}
	if (!err) {
		d->counts[index] += count;
		d->spans += count;
	}
	path__pop(ps, saved);
	return err;
}

/* Percentiles, spans and on_cpu_ns are derived again from what is read here. */
static int parse__dist(struct parse *ps, const struct jnode *node, struct kh_latency *l)
{
	const struct jnode *buckets, *pair;
	struct kh_opt_u64 off, runnable;
	struct kh_stage_dist *d;
	size_t i = 0, saved;
	uint32_t stage;
	int err;

	if (parse__enum(ps, node, "stage", kh_stage__parse, &stage))
		return -EINVAL;
	d = &l->stages[stage];
	if (d->present)
		return parse__fail_field(ps, "stage", "stage listed twice", NULL);
	if (parse__container(ps, node, "buckets", true, true, &buckets))
		return -EINVAL;
	if (kh_dist__alloc(d))
		return parse__nomem(ps);
	d->present = true;
	err = parse__ext_u64(ps, node, "min_ns", &d->min_ns) ||
	      parse__ext_u64(ps, node, "max_ns", &d->max_ns) ||
	      parse__opt_u64(ps, node, "off_cpu_ns", &off) ||
	      parse__opt_u64(ps, node, "runnable_ns", &runnable) ||
	      parse__ext_u64(ps, node, "offcpu_truncated", &d->offcpu_truncated);
	d->off_cpu_ns = off.value;
	d->runnable_ns = runnable.value;
	saved = path__push_field(ps, "buckets");
	for (pair = buckets->child; !err && pair; pair = pair->next)
		err = parse__bucket(ps, pair, i++, d);
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

/* The --interval series: columns of equal length, start_ns giving it. */
static int parse__series(struct parse *ps, const struct jnode *ext, struct kh_series *s)
{
	const struct jnode *node, *starts;
	size_t saved, n;
	int err;

	if (parse__container(ps, ext, "series", false, false, &node))
		return -EINVAL;
	if (!node)
		return 0;
	saved = path__push_field(ps, "series");
	if (parse__u64(ps, node, "interval_ns", &s->interval_ns) ||
	    parse__ext_u64(ps, node, "merged", &s->merged) ||
	    parse__container(ps, node, "start_ns", true, true, &starts)) {
		path__pop(ps, saved);
		return -EINVAL;
	}
	n = starts->count;
	s->intervals = calloc(n ? n : 1, sizeof(*s->intervals));
	if (!s->intervals) {
		path__pop(ps, saved);
		return parse__nomem(ps);
	}
	s->cap = n ? n : 1;
	s->count = n;
	err = parse__column(ps, node, "start_ns", s, offsetof(struct kh_interval, start_ns), false) ||
	      parse__column(ps, node, "duration_ns", s, offsetof(struct kh_interval, duration_ns),
			    false) ||
	      parse__series_states(ps, node, s) ||
	      parse__column(ps, node, "input_bytes", s, offsetof(struct kh_interval, input_bytes),
			    false) ||
	      parse__column(ps, node, "input_units", s, offsetof(struct kh_interval, input_units),
			    false) ||
	      parse__column(ps, node, "cpu_time_ms", s, offsetof(struct kh_interval, cpu_time_ms),
			    true) ||
	      parse__column_if(ps, node, "cpu_time_ns", s,
			       offsetof(struct kh_interval, cpu_time_ns)) ||
	      parse__column(ps, node, "resident_bytes", s,
			    offsetof(struct kh_interval, resident_bytes), true) ||
	      parse__series_stages(ps, node, s);
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

static int parse__latency(struct parse *ps, const struct jnode *ext, struct kh_latency *l)
{
	const struct jnode *node, *stages, *item;
	size_t i = 0, saved, elem;
	int err;

	if (parse__container(ps, ext, "latency", false, false, &node))
		return -EINVAL;
	if (!node)
		return 0;
	l->present = true;
	saved = path__push_field(ps, "latency");
	err = parse__ext_bool(ps, node, "off_cpu", &l->off_cpu) ||
	      parse__ext_u64(ps, node, "missed_switches", &l->missed_switches) ||
	      parse__container(ps, node, "stages", true, true, &stages);
	if (!err) {
		size_t stages_saved = path__push_field(ps, "stages");

		for (item = stages->child; !err && item; item = item->next) {
			err = parse__element(ps, item, i++, &elem);
			if (!err) {
				err = parse__dist(ps, item, l);
				path__pop(ps, elem);
			}
		}
		path__pop(ps, stages_saved);
	}
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

/* The extension's samples; an older record has none. */
static int parse__ext_samples(struct parse *ps, const struct jnode *ext_node,
			      struct kh_profile_ext *ext)
{
	const struct jnode *array, *node;
	size_t outer, saved, i = 0;

	if (parse__container(ps, ext_node, "samples", false, true, &array))
		return -EINVAL;
	if (!array)
		return 0;
	if (parse__alloc(ps, array, sizeof(*ext->samples), (void **)&ext->samples,
			 &ext->sample_cap))
		return -EINVAL;
	outer = path__push_field(ps, "samples");
	for (node = array->child; node; node = node->next) {
		struct kh_sample_ext *s = &ext->samples[i];

		if (parse__element(ps, node, i++, &saved))
			break;
		if (parse__opt_u64(ps, node, "cpu_time_ns", &s->cpu_time_ns) ||
		    parse__opt_u64(ps, node, "peak_resident_bytes", &s->peak_resident_bytes) ||
		    parse__opt_u64(ps, node, "peak_threads", &s->peak_threads))
			break;
		path__pop(ps, saved);
		ext->sample_count++;
	}
	path__pop(ps, outer);
	return ps->failed ? -EINVAL : 0;
}

/* "kernel": {"release": "...", "degraded": ["...", ...]}, or absent. */
static int parse__kernel(struct parse *ps, const struct jnode *ext_node, struct kh_profile_ext *ext)
{
	const struct jnode *node, *list;
	size_t saved, i = 0;
	int err;

	if (parse__member(ps, ext_node, "kernel", false, &node))
		return -EINVAL;
	if (!node || node->type == J_NULL)
		return 0;
	if (node->type != J_OBJECT)
		return parse__fail_field(ps, "kernel", "expected an object", node);
	saved = path__push_field(ps, "kernel");
	err = parse__ext_opt_string(ps, node, "release", &ext->kernel_release) ||
	      parse__member(ps, node, "degraded", false, &list);
	if (!err && list && list->type != J_ARRAY)
		err = parse__fail_field(ps, "degraded", "expected an array", list);
	if (!err && list && list->count) {
		ext->kernel_degraded = calloc(list->count, sizeof(*ext->kernel_degraded));
		if (!ext->kernel_degraded)
			err = parse__fail(ps, "out of memory");
		for (const struct jnode *c = list->child; !err && c; c = c->next, i++) {
			err = parse__copy_string(ps, c, "degraded", false, &ext->kernel_degraded[i]);
			ext->kernel_degraded_count = i + !err;
		}
	}
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

/* "refused_sites": [{"file", "provider", "name", "address", "refusal", "reason"}], or absent. */
static int parse__refused_sites(struct parse *ps, const struct jnode *ext_node,
				struct kh_profile *p)
{
	const struct jnode *list;
	size_t saved, i = 0;
	int err;

	if (parse__container(ps, ext_node, "refused_sites", false, true, &list))
		return -EINVAL;
	if (!list)
		return 0;
	saved = path__push_field(ps, "refused_sites");
	err = 0;
	for (const struct jnode *c = list->child; !err && c; c = c->next) {
		struct kh_refused_site site = { 0 };
		size_t elem;

		err = parse__element(ps, c, i++, &elem);
		if (err)
			break;
		err = parse__ext_opt_string(ps, c, "file", &site.file) ||
		      parse__ext_opt_string(ps, c, "provider", &site.provider) ||
		      parse__ext_opt_string(ps, c, "name", &site.name) ||
		      parse__ext_u64(ps, c, "address", &site.address) ||
		      parse__ext_opt_string(ps, c, "refusal", &site.refusal) ||
		      parse__ext_opt_string(ps, c, "reason", &site.reason);
		if (!err && profile__add_refused_site(p, &site))
			err = parse__nomem(ps);
		kh_refused_site__free(&site);
		path__pop(ps, elem);
	}
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

/* One sampled stack: its stage, attribution, count and name indices. */
static int parse__stack(struct parse *ps, const struct jnode *node, struct kh_stacks *s)
{
	uint32_t frames[KH_SAMPLE_MAX_FRAMES + 1], n = 0, stage = KH_NO_STAGE, attribution = 0;
	const struct jnode *array, *f;
	char *name = NULL;
	uint64_t count;
	bool complete;
	int err;

	if (parse__opt_string(ps, node, "stage", &name))
		return -EINVAL;
	err = name && kh_stage__parse(name, &stage);
	free(name);
	if (err)
		return parse__fail_field(ps, "stage", "unknown stage", NULL);
	if (parse__opt_string(ps, node, "attribution", &name))
		return -EINVAL;
	if (name && strcmp(name, "root") && strcmp(name, "decoded"))
		err = 1;
	attribution = name && !strcmp(name, "decoded") ? KH_ATTRIBUTION_DECODED : KH_ATTRIBUTION_ROOT;
	free(name);
	if (err)
		return parse__fail_field(ps, "attribution", "expected root or decoded", NULL);
	if (parse__u64(ps, node, "count", &count) ||
	    parse__container(ps, node, "frames", true, true, &array))
		return -EINVAL;
	for (f = array->child; f; f = f->next) {
		uint64_t v;

		if (parse__value_u64(ps, f, "frames", &v))
			return -EINVAL;
		if (v >= s->name_count || n == KH_SAMPLE_MAX_FRAMES + 1)
			return parse__fail_field(ps, "frames", "frame out of range", NULL);
		frames[n++] = (uint32_t)v;
	}
	if (kh_stacks__add(s, stage, attribution, frames, n, count))
		return parse__nomem(ps);
	if (parse__opt_string(ps, node, "unwind", &name))
		return -EINVAL;
	err = name && kh_unwind__parse(name, &s->stacks[s->stack_count - 1].unwind);
	free(name);
	if (err)
		return parse__fail_field(ps, "unwind", "unknown unwinding", NULL);
	complete = true;
	if (parse__ext_bool(ps, node, "complete", &complete))
		return -EINVAL;
	s->stacks[s->stack_count - 1].incomplete = !complete;
	return 0;
}

/* The samples' timeline: [at_ns, tid, stack] triples, stack within the stacks read. */
static int parse__timeline(struct parse *ps, const struct jnode *node, struct kh_stacks *s)
{
	const struct jnode *array, *item;

	if (parse__ext_u64(ps, node, "timeline_every", &s->timeline_every) ||
	    parse__container(ps, node, "timeline", false, true, &array))
		return -EINVAL;
	if (!array || !array->count)
		return 0;
	s->timeline = calloc(array->count, sizeof(*s->timeline));
	if (!s->timeline)
		return parse__nomem(ps);
	for (item = array->child; item; item = item->next) {
		const struct jnode *v = item->type == J_ARRAY && item->count == 3 ? item->child : NULL;
		uint64_t at, tid, stack;

		if (!v)
			return parse__fail_field(ps, "timeline", "expected [at_ns, tid, stack]", item);
		if (parse__value_u64(ps, v, "timeline", &at) ||
		    parse__value_u64(ps, v->next, "timeline", &tid) ||
		    parse__value_u64(ps, v->next->next, "timeline", &stack))
			return -EINVAL;
		if (stack >= s->stack_count || tid > UINT32_MAX)
			return parse__fail_field(ps, "timeline", "stack or thread out of range", NULL);
		s->timeline[s->timeline_count++] =
			(struct kh_stack_sample){ at, (uint32_t)tid, (uint32_t)stack };
	}
	return 0;
}

/* --sample's stacks; records without samples have none. */
static int parse__stacks(struct parse *ps, const struct jnode *ext, struct kh_stacks *s)
{
	const struct jnode *node, *tags, *names, *stacks, *item;
	size_t saved, inner, elem, i = 0;
	int err;

	if (parse__container(ps, ext, "stacks", false, false, &node))
		return -EINVAL;
	if (!node)
		return 0;
	s->present = true;
	saved = path__push_field(ps, "stacks");
	err = parse__ext_u64(ps, node, "rate_hz", &s->rate_hz) ||
	      parse__opt_string(ps, node, "unwinding", &s->unwinding) ||
	      parse__ext_u64(ps, node, "samples", &s->samples) ||
	      parse__container(ps, node, "tags", false, false, &tags) ||
	      parse__ext_u64(ps, node, "in_kernel", &s->in_kernel) ||
	      parse__ext_u64(ps, node, "truncated", &s->truncated) ||
	      parse__ext_u64(ps, node, "unwind_failed", &s->unwind_failed) ||
	      parse__ext_u64(ps, node, "leaf_restored", &s->leaf_restored) ||
	      parse__ext_u64(ps, node, "incomplete", &s->incomplete) ||
	      parse__ext_u64(ps, node, "ring_full", &s->ring_full) ||
	      parse__ext_u64(ps, node, "threads_missed", &s->threads_missed) ||
	      parse__container(ps, node, "names", true, true, &names) ||
	      parse__container(ps, node, "stacks", true, true, &stacks);
	for (uint32_t t = 0; !err && tags && t < KH_SAMPLE_TAG_COUNT; t++)
		err = parse__ext_u64(ps, tags, kh_sample_tag__name(t), &s->tags[t]);
	for (item = err ? NULL : names->child; item; item = item->next) {
		if (item->type != J_STRING) {
			err = parse__fail_field(ps, "names", "expected strings", item);
			break;
		}
		if (kh_stacks__name(s, item->string) == UINT32_MAX) {
			err = parse__nomem(ps);
			break;
		}
	}
	if (!err) {
		inner = path__push_field(ps, "stacks");
		for (item = stacks->child; !err && item; item = item->next) {
			err = parse__element(ps, item, i++, &elem);
			if (!err) {
				err = parse__stack(ps, item, s);
				path__pop(ps, elem);
			}
		}
		path__pop(ps, inner);
	}
	if (!err)
		err = parse__timeline(ps, node, s);
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

int parse__ext(struct parse *ps, const struct jnode *root, struct kh_profile *p)
{
	struct kh_profile_ext *ext = &p->ext;
	const struct jnode *node;
	size_t saved;
	int err;

	if (parse__member(ps, root, "khprof", false, &node))
		return -EINVAL;
	if (!node || node->type == J_NULL)
		return 0;
	if (node->type != J_OBJECT)
		return parse__fail_field(ps, "khprof", "expected an object", node);
	ext->present = true;
	saved = path__push_field(ps, "khprof");
	err = parse__ext_opt_string(ps, node, "mode", &ext->mode) ||
	      parse__ext_opt_string(ps, node, "span_clock", &ext->span_clock) ||
	      parse__ext_opt_string(ps, node, "span_clock_reason", &ext->span_clock_reason) ||
	      parse__ext_bool(ps, node, "started_mid_session", &ext->started_mid_session) ||
	      parse__ext_bool(ps, node, "ended_mid_session", &ext->ended_mid_session) ||
	      parse__ext_drops(ps, node, ext->drops) ||
	      parse__ext_u64(ps, node, "probe_hits", &ext->probe_hits) ||
	      parse__ext_u64(ps, node, "probe_cost_ns", &ext->probe_cost_ns) ||
	      parse__ext_u64(ps, node, "tracer_cost_ns", &ext->tracer_cost_ns) ||
	      parse__ext_u64(ps, node, "span_bias_ns", &ext->span_bias_ns) ||
	      parse__ext_u64(ps, node, "traced_pid", &ext->traced_pid) ||
	      parse__ext_u64(ps, node, "namespace_pid", &ext->namespace_pid) ||
	      parse__ext_opt_string(ps, node, "cgroup", &ext->cgroup) ||
	      parse__opt_u64(ps, node, "cgroup_id", &ext->cgroup_id) ||
	      parse__ext_opt_string(ps, node, "container_id", &ext->container_id) ||
	      parse__ext_u64(ps, node, "session_sequence", &ext->session_sequence) ||
	      parse__ext_u64(ps, node, "sample_latency_ns_max", &ext->sample_latency_ns_max) ||
	      parse__series(ps, node, &ext->series) ||
	      parse__ext_u64(ps, node, "identity_unreadable", &ext->identity_unreadable) ||
	      parse__ext_samples(ps, node, ext) ||
	      parse__ext_opt_string(ps, node, "process_end", &ext->process_end) ||
	      parse__opt_u64(ps, node, "exit_code", &ext->exit_code) ||
	      parse__opt_u64(ps, node, "exit_signal", &ext->exit_signal) ||
	      parse__ext_u64(ps, node, "refused_session_starts", &ext->refused_session_starts) ||
	      parse__ext_u64(ps, node, "begun_before_session", &ext->begun_before_session) ||
	      parse__opt_u64(ps, node, "observed_from_unix_ns", &ext->observed_from_unix_ns) ||
	      parse__ext_opt_string(ps, node, "attach_state", &ext->attach_state) ||
	      parse__latency(ps, node, &ext->latency) || parse__kernel(ps, node, ext) ||
	      parse__stacks(ps, node, &ext->stacks) || parse__refused_sites(ps, node, p);
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}
