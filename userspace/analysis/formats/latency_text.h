/* SPDX-License-Identifier: MIT */
/*
 * latency_text.h - the report's tables after the seed's text: per-stage
 * latency percentiles and the on-CPU/off-CPU split (khprof.latency).
 */
#ifndef KHPROF_LATENCY_TEXT_H
#define KHPROF_LATENCY_TEXT_H

#include "record.h"

/*
 * The tables, at most 100 columns wide; "" for a record without
 * distributions.  malloc'd; NULL with errno ENOMEM.
 */
char *latency__render_text(const struct kh_profile *p);

/* A duration in 8 columns or fewer: "950ns", "10.24us", "1.234ms", "12.50s". */
void latency__format_ns(char *buf, size_t size, uint64_t ns);

/* profile__render_text() followed by latency__render_text().  NULL: ENOMEM. */
char *profile__render_report(const struct kh_profile *p);

#endif
