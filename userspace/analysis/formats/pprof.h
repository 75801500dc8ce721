/* SPDX-License-Identifier: MIT */
/*
 * pprof.h - a record's stack samples as a pprof profile (`khprof report
 * --format pprof`): gzip'd profile.proto (proto/profile.proto), the
 * format `go tool pprof`, Pyroscope and Parca read.
 */
#ifndef KHPROF_PPROF_H
#define KHPROF_PPROF_H

#include <stddef.h>

#include "record.h"

/*
 * The gzip'd profile of p's stacks, *len bytes, malloc'd; NULL with errno
 * (EINVAL: the record has no stacks; ENOMEM).  Each sample carries the
 * labels "stage" (a stage name or "(no stage)") and "attribution" ("root"
 * or "decoded"); values are samples and CPU nanoseconds at the record's
 * rate.
 */
unsigned char *profile__to_pprof(const struct kh_profile *p, size_t *len);

#endif /* KHPROF_PPROF_H */
