// SPDX-License-Identifier: MIT
/*
 * json_read.c - keyhog-profile-v1 JSON to RunProfile, by one hand-written
 * reader.
 *
 * Not cJSON, because the record must read exactly as the seed's serde
 * derive reads it, and cJSON cannot say what serde says:
 *  - u64 exactness: cJSON keeps a number only as a double, which loses
 *    integers above 2^53, and every counter of the record is a u64;
 *  - serde's number rules: "5.0" and "1e3" are not u64 for serde, "-0" is
 *    a float, and its f64 rounding is its own (json_number.c), so each
 *    number is read again from its source text;
 *  - strings: cJSON reads a bad \u escape as U+0000 and takes raw control
 *    characters, invalid UTF-8 and a byte order mark, which serde rejects;
 *  - key order and duplicates: members stay in document order, and a
 *    repeated member is an error ("duplicate field"), as in serde's derive.
 * Reading beside cJSON took a second lexer tied to cJSON's tree by document
 * order through its deprecated valueint; one reader ties nothing.
 *
 * The tree comes from json_doc.c; this file reads the record's fields
 * from it, naming the first problem with its path.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json.h"
#include "json_doc.h"
#include "json_number.h"

/* ------------------------------------------------------------------ */
/* Fields of the record                                                */
/* ------------------------------------------------------------------ */

static const char *json_type_name(const struct jnode *node)
{
	if (node->type == J_NULL)
		return "null";
	if (node->type == J_FALSE || node->type == J_TRUE)
		return "a boolean";
	if (node->type == J_NUMBER)
		return "a number";
	if (node->type == J_STRING)
		return "a string";
	if (node->type == J_ARRAY)
		return "an array";
	return "an object";
}

/* Appends ".name" or "[index]" to the error path; returns the old length. */
__attribute__((format(printf, 2, 3)))
static size_t path__push(struct parse *ps, const char *fmt, ...)
{
	size_t len = strlen(ps->path);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ps->path + len, sizeof(ps->path) - len, fmt, ap);
	va_end(ap);
	return len;
}

static void path__pop(struct parse *ps, size_t len)
{
	ps->path[len] = '\0';
}

static size_t path__push_field(struct parse *ps, const char *name)
{
	return path__push(ps, ps->path[0] ? ".%s" : "%s", name);
}

static int parse__fail_field(struct parse *ps, const char *name, const char *problem,
			     const struct jnode *found)
{
	size_t len = path__push_field(ps, name);

	if (found)
		parse__fail(ps, "'%s': %s, found %s", ps->path, problem, json_type_name(found));
	else
		parse__fail(ps, "'%s': %s", ps->path, problem);
	path__pop(ps, len);
	return -EINVAL;
}

/* The member called name, NULL when absent; a repeated member is an error. */
static int parse__member(struct parse *ps, const struct jnode *obj, const char *name, bool required,
			 const struct jnode **out)
{
	const struct jnode *child;
	size_t len;

	*out = NULL;
	for (child = obj->child; child; child = child->next) {
		if (strcmp(child->key, name))
			continue;
		if (*out) {
			len = path__push_field(ps, name);
			parse__fail(ps, "duplicate field '%s'", ps->path);
			path__pop(ps, len);
			return -EINVAL;
		}
		*out = child;
	}
	if (!*out && required) {
		len = path__push_field(ps, name);
		parse__fail(ps, "missing field '%s'", ps->path);
		path__pop(ps, len);
		return -EINVAL;
	}
	return 0;
}

static int parse__number(struct parse *ps, const struct jnode *node, const char *name,
			 struct number *out)
{
	int err = number__parse(ps->text + node->start, node->len, out);

	if (err == -ERANGE)
		return parse__fail_field(ps, name, "number out of range", NULL);
	return err ? parse__fail_field(ps, name, "invalid number", NULL) : 0;
}

static int parse__value_u64(struct parse *ps, const struct jnode *node, const char *name,
			    uint64_t *out)
{
	static const char expected[] = "expected an unsigned 64-bit integer";
	struct number n;

	if (node->type != J_NUMBER)
		return parse__fail_field(ps, name, expected, node);
	if (parse__number(ps, node, name, &n))
		return -EINVAL;
	if (n.kind != NUMBER_U64) {
		size_t len = path__push_field(ps, name);

		parse__fail(ps, "'%s': %s, found %.*s", ps->path, expected, (int)node->len,
			    ps->text + node->start);
		path__pop(ps, len);
		return -EINVAL;
	}
	*out = n.u;
	return 0;
}

static int parse__u64(struct parse *ps, const struct jnode *obj, const char *name, uint64_t *out)
{
	const struct jnode *node;

	if (parse__member(ps, obj, name, true, &node))
		return -EINVAL;
	return parse__value_u64(ps, node, name, out);
}

/* Option<u64>: serde reads an absent member as None, like null. */
static int parse__opt_u64(struct parse *ps, const struct jnode *obj, const char *name,
			  struct kh_opt_u64 *out)
{
	const struct jnode *node;

	*out = (struct kh_opt_u64){ false, 0 };
	if (parse__member(ps, obj, name, false, &node))
		return -EINVAL;
	if (!node || node->type == J_NULL)
		return 0;
	out->present = true;
	return parse__value_u64(ps, node, name, &out->value);
}

static int parse__opt_f64(struct parse *ps, const struct jnode *obj, const char *name,
			  struct kh_opt_f64 *out)
{
	const struct jnode *node;
	struct number n;

	*out = (struct kh_opt_f64){ false, 0.0 };
	if (parse__member(ps, obj, name, false, &node))
		return -EINVAL;
	if (!node || node->type == J_NULL)
		return 0;
	if (node->type != J_NUMBER)
		return parse__fail_field(ps, name, "expected a number", node);
	if (parse__number(ps, node, name, &n))
		return -EINVAL;
	out->present = true;
	out->value = n.kind == NUMBER_U64 ? (double)n.u : n.kind == NUMBER_I64 ? (double)n.i : n.f;
	return 0;
}

/*
 * A string with a lone surrogate escape: serde fails where it reads one,
 * and skips one in a member it ignores, so the tree keeps it (as U+FFFD)
 * and the reader refuses it here, where the seed would read it.
 */
static int parse__checked_string(struct parse *ps, const struct jnode *node)
{
	return node->bad_at == JNODE_NONE ? 0 : parse__fail_at(ps, node->bad_at, "invalid JSON");
}

/*
 * A string member's copy.  checked: refused with a lone surrogate escape,
 * as serde refuses it in the seed's own members; the khprof object's are
 * not checked, since the seed skips that object whole (a lone surrogate
 * there reads as U+FFFD).
 */
static int parse__copy_string(struct parse *ps, const struct jnode *node, const char *name,
			      bool checked, char **out)
{
	if (node->type != J_STRING)
		return parse__fail_field(ps, name, "expected a string", node);
	if (checked && parse__checked_string(ps, node))
		return -EINVAL;
	*out = strdup(node->string);
	return *out ? 0 : parse__nomem(ps);
}

static int parse__string_value(struct parse *ps, const struct jnode *node, const char *name,
			       char **out)
{
	return parse__copy_string(ps, node, name, true, out);
}

static int parse__string(struct parse *ps, const struct jnode *obj, const char *name, char **out)
{
	const struct jnode *node;

	if (parse__member(ps, obj, name, true, &node))
		return -EINVAL;
	return parse__string_value(ps, node, name, out);
}

static int parse__opt_string_of(struct parse *ps, const struct jnode *obj, const char *name,
				bool checked, char **out)
{
	const struct jnode *node;

	*out = NULL;
	if (parse__member(ps, obj, name, false, &node))
		return -EINVAL;
	if (!node || node->type == J_NULL)
		return 0;
	return parse__copy_string(ps, node, name, checked, out);
}

static int parse__opt_string(struct parse *ps, const struct jnode *obj, const char *name,
			     char **out)
{
	return parse__opt_string_of(ps, obj, name, true, out);
}

/* The khprof object's strings (parse__copy_string says why they are not checked). */
static int parse__ext_opt_string(struct parse *ps, const struct jnode *obj, const char *name,
				 char **out)
{
	return parse__opt_string_of(ps, obj, name, false, out);
}

static int parse__enum(struct parse *ps, const struct jnode *obj, const char *name,
		       int (*parse)(const char *, uint32_t *), uint32_t *out)
{
	const struct jnode *node;
	size_t len;

	if (parse__member(ps, obj, name, true, &node))
		return -EINVAL;
	if (node->type != J_STRING)
		return parse__fail_field(ps, name, "expected a string", node);
	if (parse__checked_string(ps, node))
		return -EINVAL;
	if (!parse(node->string, out))
		return 0;
	len = path__push_field(ps, name);
	parse__fail(ps, "'%s': unknown value '%s'", ps->path, node->string);
	path__pop(ps, len);
	return -EINVAL;
}

static int parse__container(struct parse *ps, const struct jnode *obj, const char *name,
			    bool required, bool array, const struct jnode **out)
{
	if (parse__member(ps, obj, name, required, out))
		return -EINVAL;
	if (!*out || (array ? (*out)->type == J_ARRAY : (*out)->type == J_OBJECT))
		return 0;
	return parse__fail_field(ps, name, array ? "expected an array" : "expected an object",
				 *out);
}

/* Element i of an array of structs, with its path pushed. */
static int parse__element(struct parse *ps, const struct jnode *node, size_t i, size_t *saved)
{
	*saved = path__push(ps, "[%zu]", i);
	if (node->type == J_OBJECT)
		return 0;
	parse__fail(ps, "'%s': expected an object, found %s", ps->path, json_type_name(node));
	path__pop(ps, *saved);
	return -EINVAL;
}

/* Allocates room for the elements of array (at least one slot). */
static int parse__alloc(struct parse *ps, const struct jnode *array, size_t elem, void **items,
			size_t *cap)
{
	size_t n = array->count;

	*items = calloc(n ? n : 1, elem);
	if (!*items)
		return parse__nomem(ps);
	*cap = n ? n : 1;
	return 0;
}

static int parse__snapshot(struct parse *ps, const struct jnode *obj, const char *name,
			   struct kh_resource_snapshot *out)
{
	const struct jnode *node;
	size_t saved;
	int err;

	if (parse__container(ps, obj, name, true, false, &node))
		return -EINVAL;
	saved = path__push_field(ps, name);
	err = parse__opt_u64(ps, node, "cpu_time_ms", &out->cpu_time_ms) ||
	      parse__opt_u64(ps, node, "resident_bytes", &out->resident_bytes) ||
	      parse__opt_u64(ps, node, "virtual_bytes", &out->virtual_bytes) ||
	      parse__opt_u64(ps, node, "thread_count", &out->thread_count);
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

static int parse__identity(struct parse *ps, const struct jnode *root, struct kh_identity *id)
{
	const struct jnode *node;
	uint32_t cache, daemon;
	size_t saved;
	int err;

	if (parse__container(ps, root, "identity", true, false, &node))
		return -EINVAL;
	saved = path__push_field(ps, "identity");
	err = parse__string(ps, node, "run_id", &id->run_id) ||
	      parse__string(ps, node, "binary_version", &id->binary_version) ||
	      parse__string(ps, node, "detector_digest", &id->detector_digest) ||
	      parse__string(ps, node, "config_digest", &id->config_digest) ||
	      parse__string(ps, node, "source_kind", &id->source_kind) ||
	      parse__string(ps, node, "workload_class", &id->workload_class) ||
	      parse__string(ps, node, "backend_requested", &id->backend_requested) ||
	      parse__opt_string(ps, node, "backend_selected", &id->backend_selected) ||
	      parse__enum(ps, node, "cache_state", kh_cache_state__parse, &cache) ||
	      parse__enum(ps, node, "daemon_state", kh_daemon_state__parse, &daemon) ||
	      parse__u64(ps, node, "scanner_threads", &id->scanner_threads) ||
	      parse__opt_u64(ps, node, "reader_threads", &id->reader_threads) ||
	      parse__u64(ps, node, "logical_cpus", &id->logical_cpus);
	path__pop(ps, saved);
	if (err)
		return -EINVAL;
	id->cache_state = (enum kh_cache_state)cache;
	id->daemon_state = (enum kh_daemon_state)daemon;
	return 0;
}

static int parse__stages(struct parse *ps, const struct jnode *root, struct kh_profile *p)
{
	const struct jnode *array, *node;
	size_t outer, saved, i = 0;

	if (parse__container(ps, root, "stages", true, true, &array))
		return -EINVAL;
	if (array->count > KH_STAGE_COUNT)
		return parse__fail(ps, "'stages': more than %d entries", KH_STAGE_COUNT);
	outer = path__push_field(ps, "stages");
	for (node = array->child; node; node = node->next) {
		struct kh_stage_measurement *s = &p->stages[i];

		if (parse__element(ps, node, i++, &saved))
			break;
		if (parse__enum(ps, node, "stage", kh_stage__parse, &s->stage) ||
		    parse__u64(ps, node, "elapsed_ns", &s->elapsed_ns) ||
		    parse__u64(ps, node, "calls", &s->calls) ||
		    parse__u64(ps, node, "attributed_ns", &s->attributed_ns))
			break;
		path__pop(ps, saved);
		p->stage_count++;
	}
	path__pop(ps, outer);
	return ps->failed ? -EINVAL : 0;
}

static int parse__transitions(struct parse *ps, const struct jnode *root, struct kh_profile *p)
{
	const struct jnode *array, *node;
	size_t outer, saved, i = 0;

	if (parse__container(ps, root, "transitions", true, true, &array) ||
	    parse__alloc(ps, array, sizeof(*p->transitions), (void **)&p->transitions,
			 &p->transition_cap))
		return -EINVAL;
	outer = path__push_field(ps, "transitions");
	for (node = array->child; node; node = node->next) {
		struct kh_transition *t = &p->transitions[i];

		if (parse__element(ps, node, i++, &saved))
			break;
		if (parse__enum(ps, node, "state", kh_run_state__parse, &t->state) ||
		    parse__u64(ps, node, "elapsed_ns", &t->elapsed_ns))
			break;
		path__pop(ps, saved);
		p->transition_count++;
	}
	path__pop(ps, outer);
	return ps->failed ? -EINVAL : 0;
}

static int parse__state(struct parse *ps, const struct jnode *node, struct kh_state_measurement *s)
{
	return parse__enum(ps, node, "state", kh_run_state__parse, &s->state) ||
	       parse__u64(ps, node, "elapsed_ns", &s->elapsed_ns) ||
	       parse__opt_u64(ps, node, "cpu_time_ms", &s->cpu_time_ms) ||
	       parse__opt_u64(ps, node, "aggregate_cpu_milli_percent",
			      &s->aggregate_cpu_milli_percent) ||
	       parse__opt_u64(ps, node, "resident_start_bytes", &s->resident_start_bytes) ||
	       parse__opt_u64(ps, node, "resident_end_bytes", &s->resident_end_bytes) ||
	       parse__opt_u64(ps, node, "threads_start", &s->threads_start) ||
	       parse__opt_u64(ps, node, "threads_end", &s->threads_end);
}

/* #[serde(default)]: an absent "states" is an empty list. */
static int parse__states(struct parse *ps, const struct jnode *root, struct kh_profile *p)
{
	const struct jnode *array, *node;
	size_t outer, saved, i = 0;

	if (parse__container(ps, root, "states", false, true, &array))
		return -EINVAL;
	if (!array)
		return 0;
	if (parse__alloc(ps, array, sizeof(*p->states), (void **)&p->states, &p->state_cap))
		return -EINVAL;
	outer = path__push_field(ps, "states");
	for (node = array->child; node; node = node->next) {
		if (parse__element(ps, node, i, &saved) || parse__state(ps, node, &p->states[i]))
			break;
		i++;
		path__pop(ps, saved);
		p->state_count++;
	}
	path__pop(ps, outer);
	return ps->failed ? -EINVAL : 0;
}

static int parse__samples(struct parse *ps, const struct jnode *root, struct kh_profile *p)
{
	const struct jnode *array, *node;
	size_t outer, saved, i = 0;

	if (parse__container(ps, root, "resource_samples", true, true, &array) ||
	    parse__alloc(ps, array, sizeof(*p->resource_samples), (void **)&p->resource_samples,
			 &p->resource_sample_cap))
		return -EINVAL;
	outer = path__push_field(ps, "resource_samples");
	for (node = array->child; node; node = node->next) {
		struct kh_resource_sample *s = &p->resource_samples[i];

		if (parse__element(ps, node, i++, &saved))
			break;
		if (parse__enum(ps, node, "state", kh_run_state__parse, &s->state) ||
		    parse__u64(ps, node, "elapsed_ns", &s->elapsed_ns) ||
		    parse__snapshot(ps, node, "snapshot", &s->snapshot))
			break;
		path__pop(ps, saved);
		p->resource_sample_count++;
	}
	path__pop(ps, outer);
	return ps->failed ? -EINVAL : 0;
}

static int parse__resources(struct parse *ps, const struct jnode *root, struct kh_resource_usage *r)
{
	const struct jnode *node;
	size_t saved;
	int err;

	if (parse__container(ps, root, "resources", true, false, &node))
		return -EINVAL;
	saved = path__push_field(ps, "resources");
	err = parse__snapshot(ps, node, "start", &r->start) ||
	      parse__snapshot(ps, node, "finish", &r->finish) ||
	      parse__opt_u64(ps, node, "max_observed_resident_bytes",
			     &r->max_observed_resident_bytes) ||
	      parse__opt_u64(ps, node, "max_observed_threads", &r->max_observed_threads) ||
	      parse__opt_f64(ps, node, "aggregate_cpu_percent", &r->aggregate_cpu_percent);
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

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

static int parse__ext(struct parse *ps, const struct jnode *root, struct kh_profile_ext *ext)
{
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
	      parse__ext_u64(ps, node, "session_sequence", &ext->session_sequence) ||
	      parse__ext_u64(ps, node, "sample_latency_ns_max", &ext->sample_latency_ns_max) ||
	      parse__series(ps, node, &ext->series) ||
	      parse__ext_u64(ps, node, "identity_unreadable", &ext->identity_unreadable) ||
	      parse__ext_samples(ps, node, ext) ||
	      parse__ext_opt_string(ps, node, "process_end", &ext->process_end) ||
	      parse__opt_u64(ps, node, "exit_code", &ext->exit_code) ||
	      parse__opt_u64(ps, node, "exit_signal", &ext->exit_signal) ||
	      parse__ext_u64(ps, node, "refused_session_starts", &ext->refused_session_starts) ||
	      parse__opt_u64(ps, node, "observed_from_unix_ns", &ext->observed_from_unix_ns) ||
	      parse__ext_opt_string(ps, node, "attach_state", &ext->attach_state) ||
	      parse__latency(ps, node, &ext->latency) || parse__kernel(ps, node, ext) ||
	      parse__stacks(ps, node, &ext->stacks);
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

static int parse__profile(struct parse *ps, const struct jnode *root, struct kh_profile *p)
{
	if (root->type != J_OBJECT)
		return parse__fail(ps, "expected a JSON object, found %s", json_type_name(root));
	if (parse__string(ps, root, "schema", &p->schema))
		return -EINVAL;
	/*
	 * Refused, not read: a new schema name is the seed's way of saying the
	 * fields changed meaning, so reading one as v1 could print, export or
	 * diff wrong figures without a word.
	 */
	if (strcmp(p->schema, KH_PROFILE_SCHEMA) != 0)
		return parse__fail(ps, "schema '%s' is not one this khprof reads (it reads "
				   KH_PROFILE_SCHEMA "; a newer khprof may)", p->schema);
	if (parse__identity(ps, root, &p->identity) ||
	    parse__enum(ps, root, "status", kh_run_state__parse, &p->status) ||
	    parse__u64(ps, root, "wall_time_ns", &p->wall_time_ns) ||
	    parse__u64(ps, root, "input_bytes", &p->input_bytes) ||
	    parse__u64(ps, root, "input_units", &p->input_units) ||
	    parse__stages(ps, root, p) || parse__transitions(ps, root, p) ||
	    parse__states(ps, root, p) || parse__samples(ps, root, p) ||
	    parse__resources(ps, root, &p->resources) || parse__ext(ps, root, &p->ext))
		return -EINVAL;
	return 0;
}

int profile__from_json(const char *text, struct kh_profile *out, char *err, size_t errlen)
{
	return profile__from_json_len(text, text ? strlen(text) : 0, out, err, errlen);
}

int profile__from_json_len(const char *text, size_t len, struct kh_profile *out, char *err,
			   size_t errlen)
{
	struct parse ps = { .text = text, .length = len, .err = err, .errlen = errlen };
	struct doc d = { .ps = &ps };
	const struct jnode *root;
	struct kh_profile p;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	if (errlen)
		err[0] = '\0';
	if (!text)
		return parse__fail(&ps, "no input");
	root = doc__parse(&d);
	if (root)
		parse__profile(&ps, root, &p);
	doc__free(&d);
	if (ps.failed)
		rc = ps.nomem ? -ENOMEM : -EINVAL;
	if (rc) {
		profile__free(&p);
		return rc;
	}
	*out = p;
	return 0;
}

int profile__read_file(const char *path, struct kh_profile *out, char *err, size_t errlen)
{
	char *text;
	size_t len;
	int rc = file__read_all_max(path, &text, &len, FILE_RECORD_MAX);

	memset(out, 0, sizeof(*out));
	if (rc == -EFBIG) {
		snprintf(err, errlen, "larger than khprof's record limit of %zu GiB",
			 FILE_RECORD_MAX >> 30);
		return rc;
	}
	if (rc) {
		snprintf(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	rc = profile__from_json_len(text, len, out, err, errlen);
	free(text);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return rc;
}
