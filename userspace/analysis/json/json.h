/* SPDX-License-Identifier: MIT */
/*
 * json.h - RunProfile <-> "keyhog-profile-v1" JSON.
 *
 * The writer reproduces serde_json's pretty printer byte for byte (the
 * seed's to_json_pretty) and appends khprof's extension object; the reader
 * accepts what the seed's serde derive accepts, with the same number
 * semantics, and names the first problem it finds.
 */
#ifndef KHPROF_JSON_H
#define KHPROF_JSON_H

#include <stddef.h>

#include "record.h"

/*
 * The seed's to_json_pretty() of p followed by one newline, as
 * `seed-render --json` prints it; when p->ext.present a trailing "khprof"
 * object is added after "resources".  Returns malloc'd text, or NULL with
 * errno ENOMEM, or EINVAL when p holds an out-of-range enum value.
 */
char *profile__to_json(const struct kh_profile *p);

/*
 * Parses one record into *out (initialised here; free with profile__free).
 * Returns 0, -EINVAL with a message in err naming the problem, or -ENOMEM.
 * On failure *out is left zeroed and needs no freeing.
 */
int profile__from_json(const char *text, struct kh_profile *out, char *err, size_t errlen);
/*
 * The same for a text of len bytes that may hold a NUL before its end (a
 * file's content): anything from the first NUL on is refused as trailing
 * characters, as the seed's reader refuses it.
 */
int profile__from_json_len(const char *text, size_t len, struct kh_profile *out, char *err,
			   size_t errlen);

/*
 * Reads the record at path and parses it into *out, as above.  Returns 0,
 * the file's own -errno, -EINVAL for a malformed record, or -ENOMEM; err
 * then says why ("No such file or directory", the parse problem, "out of
 * memory") for a "cannot read record" message.
 */
int profile__read_file(const char *path, struct kh_profile *out, char *err, size_t errlen);

/*
 * serde_json's spelling of an f64 (ryu shortest round-trip digits, ".0"
 * on integral values, exponent form outside ryu's decimal range, "null"
 * for NaN and infinities).  buf needs 32 bytes.  Returns the length.
 */
size_t json__format_f64(double value, char *buf, size_t len);

/*
 * serde_json's reading of a JSON number token as f64, including its
 * rounding (two-step, not always correctly rounded).  0, -EINVAL for a
 * malformed number, -ERANGE when serde_json reports "number out of range".
 */
int json__parse_f64(const char *token, size_t len, double *out);

#endif /* KHPROF_JSON_H */
