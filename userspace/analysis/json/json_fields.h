/* SPDX-License-Identifier: MIT */
/*
 * json_fields.h - reading a record's fields from the tree of json_doc.c:
 * shared by json_read.c (the seed's RunProfile) and json_read_ext.c (the
 * khprof extension).  Each returns 0, or fails the parse with the field's
 * path and returns -EINVAL (-ENOMEM out of memory).
 */
#ifndef KHPROF_JSON_FIELDS_H
#define KHPROF_JSON_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "json_doc.h"

const char *json_type_name(const struct jnode *node);

/* Appends ".name" or "[index]" to the error path; returns the old length. */
__attribute__((format(printf, 2, 3)))
size_t path__push(struct parse *ps, const char *fmt, ...);

void path__pop(struct parse *ps, size_t len);

size_t path__push_field(struct parse *ps, const char *name);

int parse__fail_field(struct parse *ps, const char *name, const char *problem,
		      const struct jnode *found);

/* The member called name, NULL when absent; a repeated member is an error. */
int parse__member(struct parse *ps, const struct jnode *obj, const char *name, bool required,
		  const struct jnode **out);

int parse__value_u64(struct parse *ps, const struct jnode *node, const char *name,
		     uint64_t *out);

int parse__u64(struct parse *ps, const struct jnode *obj, const char *name, uint64_t *out);

/* Option<u64>: serde reads an absent member as None, like null. */
int parse__opt_u64(struct parse *ps, const struct jnode *obj, const char *name,
		   struct kh_opt_u64 *out);

int parse__opt_f64(struct parse *ps, const struct jnode *obj, const char *name,
		   struct kh_opt_f64 *out);

/*
 * A string member's copy.  checked: refused with a lone surrogate escape,
 * as serde refuses it in the seed's own members; the khprof object's are
 * not checked, since the seed skips that object whole (a lone surrogate
 * there reads as U+FFFD).
 */
int parse__copy_string(struct parse *ps, const struct jnode *node, const char *name,
		       bool checked, char **out);

int parse__string(struct parse *ps, const struct jnode *obj, const char *name, char **out);

int parse__opt_string(struct parse *ps, const struct jnode *obj, const char *name,
		      char **out);

/* The khprof object's strings (parse__copy_string says why they are not checked). */
int parse__ext_opt_string(struct parse *ps, const struct jnode *obj, const char *name,
			  char **out);

int parse__enum(struct parse *ps, const struct jnode *obj, const char *name,
		int (*parse)(const char *, uint32_t *), uint32_t *out);

int parse__container(struct parse *ps, const struct jnode *obj, const char *name,
		     bool required, bool array, const struct jnode **out);

/* Element i of an array of structs, with its path pushed. */
int parse__element(struct parse *ps, const struct jnode *node, size_t i, size_t *saved);

/* Allocates room for the elements of array (at least one slot). */
int parse__alloc(struct parse *ps, const struct jnode *array, size_t elem, void **items,
		 size_t *cap);

int parse__snapshot(struct parse *ps, const struct jnode *obj, const char *name,
		    struct kh_resource_snapshot *out);

/* The khprof extension object of the record (json_read_ext.c). */
int parse__ext(struct parse *ps, const struct jnode *root, struct kh_profile *p);

#endif
