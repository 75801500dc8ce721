/* SPDX-License-Identifier: MIT */
/*
 * json_number.h - numbers as serde_json writes and reads them, shared by
 * the record writer (json_write.c) and reader (json_read.c).  Private to
 * the JSON modules; json.h has the public entry points.
 */
#ifndef KHPROF_JSON_NUMBER_H
#define KHPROF_JSON_NUMBER_H

#include <stddef.h>
#include <stdint.h>

#include "outbuf.h"

enum number_kind { NUMBER_U64, NUMBER_I64, NUMBER_F64 };

struct number {
	enum number_kind kind;
	uint64_t u;
	int64_t i;
	double f;
};

/*
 * Reads one JSON number token as serde_json 1.0 does (without
 * float_roundtrip): u64 when it is a non-negative integer that fits, i64
 * for a negative one, else f64 with serde_json's own rounding.  0, -EINVAL
 * for a malformed token, -ERANGE when serde_json says "number out of range".
 */
int number__parse(const char *s, size_t len, struct number *out);

/* Appends serde_json's spelling of v (see json__format_f64). */
void json__put_f64(struct outbuf *b, double v);

#endif /* KHPROF_JSON_NUMBER_H */
