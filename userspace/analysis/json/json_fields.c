// SPDX-License-Identifier: MIT
/*
 * json_fields.c - the field readers json_read.c and json_read_ext.c share:
 * members by name, numbers as serde reads them, strings, enums, arrays of
 * structs, each failure named with its path (json_read.c says why the
 * reader is hand-written).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_fields.h"
#include "json_number.h"

const char *json_type_name(const struct jnode *node)
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
size_t path__push(struct parse *ps, const char *fmt, ...)
{
	size_t len = strlen(ps->path);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ps->path + len, sizeof(ps->path) - len, fmt, ap);
	va_end(ap);
	return len;
}

void path__pop(struct parse *ps, size_t len)
{
	ps->path[len] = '\0';
}

size_t path__push_field(struct parse *ps, const char *name)
{
	return path__push(ps, ps->path[0] ? ".%s" : "%s", name);
}

int parse__fail_field(struct parse *ps, const char *name, const char *problem,
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
int parse__member(struct parse *ps, const struct jnode *obj, const char *name, bool required,
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

int parse__value_u64(struct parse *ps, const struct jnode *node, const char *name,
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

int parse__u64(struct parse *ps, const struct jnode *obj, const char *name, uint64_t *out)
{
	const struct jnode *node;

	if (parse__member(ps, obj, name, true, &node))
		return -EINVAL;
	return parse__value_u64(ps, node, name, out);
}

/* Option<u64>: serde reads an absent member as None, like null. */
int parse__opt_u64(struct parse *ps, const struct jnode *obj, const char *name,
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

int parse__opt_f64(struct parse *ps, const struct jnode *obj, const char *name,
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
int parse__copy_string(struct parse *ps, const struct jnode *node, const char *name,
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

int parse__string(struct parse *ps, const struct jnode *obj, const char *name, char **out)
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

int parse__opt_string(struct parse *ps, const struct jnode *obj, const char *name,
		      char **out)
{
	return parse__opt_string_of(ps, obj, name, true, out);
}

/* The khprof object's strings (parse__copy_string says why they are not checked). */
int parse__ext_opt_string(struct parse *ps, const struct jnode *obj, const char *name,
			  char **out)
{
	return parse__opt_string_of(ps, obj, name, false, out);
}

int parse__enum(struct parse *ps, const struct jnode *obj, const char *name,
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

int parse__container(struct parse *ps, const struct jnode *obj, const char *name,
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
int parse__element(struct parse *ps, const struct jnode *node, size_t i, size_t *saved)
{
	*saved = path__push(ps, "[%zu]", i);
	if (node->type == J_OBJECT)
		return 0;
	parse__fail(ps, "'%s': expected an object, found %s", ps->path, json_type_name(node));
	path__pop(ps, *saved);
	return -EINVAL;
}

/* Allocates room for the elements of array (at least one slot). */
int parse__alloc(struct parse *ps, const struct jnode *array, size_t elem, void **items,
		 size_t *cap)
{
	size_t n = array->count;

	*items = calloc(n ? n : 1, elem);
	if (!*items)
		return parse__nomem(ps);
	*cap = n ? n : 1;
	return 0;
}

int parse__snapshot(struct parse *ps, const struct jnode *obj, const char *name,
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
