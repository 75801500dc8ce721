/* SPDX-License-Identifier: MIT */
/*
 * pprof_read.h - a gzip'd pprof profile (`khprof report --format pprof`)
 * read back with zlib and protoc-c's unpacker, for the unit tests of its
 * names.
 */
#ifndef KHPROF_TEST_PPROF_READ_H
#define KHPROF_TEST_PPROF_READ_H

#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "profile.pb-c.h"

/* The profile in zipped (n bytes), or the test fails; free with ..._free_unpacked. */
static inline Perftools__Profiles__Profile *pprof_read(const unsigned char *zipped, size_t n)
{
	size_t cap = 1 << 20;
	unsigned char *out = malloc(cap);
	Perftools__Profiles__Profile *prof;
	z_stream z;

	memset(&z, 0, sizeof(z));
	assert_non_null(out);
	assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
	z.next_in = (unsigned char *)zipped;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
	prof = perftools__profiles__profile__unpack(NULL, z.total_out, out);
	inflateEnd(&z);
	free(out);
	assert_non_null(prof);
	return prof;
}

#endif /* KHPROF_TEST_PPROF_READ_H */
