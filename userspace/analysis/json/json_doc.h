/* SPDX-License-Identifier: MIT */
/*
 * json_doc.h - the JSON tree the record reader walks, and its error
 * state.  Private to json_doc.c and json_read.c; json.h is the API.
 */
#ifndef KHPROF_JSON_DOC_H
#define KHPROF_JSON_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The first problem found, with the path of the member being read. */
struct parse {
	const char *text;
	size_t length;   /* of text, which may hold a NUL before its end; 0: strlen */
	char *err;
	size_t errlen;
	char path[192];
	bool failed;
	bool nomem;
};

/* Records the first failure's message; returns -EINVAL. */
__attribute__((format(printf, 2, 3)))
int parse__fail(struct parse *ps, const char *fmt, ...);
/* "out of memory"; returns -ENOMEM. */
int parse__nomem(struct parse *ps);
/* "WHAT at line L column C" for a byte offset of the text, as serde_json says it. */
int parse__fail_at(struct parse *ps, size_t offset, const char *what);

enum jtype { J_NULL, J_FALSE, J_TRUE, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT };

#define JNODE_NONE UINT32_MAX

/*
 * A value.  While the tree grows the nodes move (one growing array), so
 * links are indices; once it is complete the pointers are filled in, and
 * the record reader follows those.
 */
/*
 * Offsets and indices are 32 bits (records are below 4 GiB,
 * FILE_RECORD_MAX): 72 bytes a node instead of 104, on a 66 MB record
 * 3.9 million nodes.
 */
struct jnode {
	enum jtype type;
	uint32_t start, len;     /* J_NUMBER: the token in the text */
	uint32_t count;          /* J_ARRAY, J_OBJECT: elements or members */
	uint32_t key_at, str_at; /* in doc.chars: member name, J_STRING value */
	uint32_t child_at, next_at;
	uint32_t bad_at;         /* J_STRING: a lone surrogate escape here; JNODE_NONE: none */
	const char *key, *string;
	const struct jnode *child, *next;
};

struct doc {
	struct parse *ps;
	const char *text;
	size_t length;   /* of the text with its NUL, as cJSON counts it */
	size_t offset;
	size_t depth;
	struct jnode *nodes;
	size_t node_count, node_cap;
	size_t values;   /* an upper bound on the nodes, from the lexical pass */
	char *chars;     /* decoded strings, each ending in NUL */
	size_t chars_len, chars_cap;
};

/*
 * Parses d->ps->text (d zeroed but for .ps) into a tree; its root, or NULL
 * with the error in d->ps.  The tree lives until doc__free(d).
 */
const struct jnode *doc__parse(struct doc *d);
void doc__free(struct doc *d);

#endif /* KHPROF_JSON_DOC_H */
