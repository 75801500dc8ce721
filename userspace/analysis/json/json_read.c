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
 * The tree comes from json_doc.c; this file reads the seed's fields
 * from it, naming the first problem with its path, with the field readers
 * of json_fields.c; json_read_ext.c reads the khprof extension.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "json_fields.h"

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
	    parse__resources(ps, root, &p->resources) || parse__ext(ps, root, p))
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
