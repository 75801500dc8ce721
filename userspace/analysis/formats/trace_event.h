/* SPDX-License-Identifier: MIT */
/*
 * trace_event.h - a record as Chrome trace-event JSON, the format
 * ui.perfetto.dev and chrome://tracing open (docs/REPORTS.md).
 *
 * One process (pid = the traced process): on its own track (tid = pid)
 * the session and its macro states as complete slices (ph "X"), CPU per
 * state, RSS and threads as counters (ph "C", units in their names),
 * per-stage time per interval and input throughput as counters when the
 * record has an interval series; a track per thread of the record (main,
 * readers, scanners, as many as it saw) with each interval's stage time
 * laid out on them; identity as metadata (ph "M" names, and "otherData").
 * Timestamps and durations are in microseconds from the session's start,
 * with nanosecond digits kept as decimals.
 */
#ifndef KHPROF_TRACE_EVENT_H
#define KHPROF_TRACE_EVENT_H

#include "record.h"

/* malloc'd JSON ending in a newline, or NULL (ENOMEM). */
char *profile__to_trace_events(const struct kh_profile *p);

#endif /* KHPROF_TRACE_EVENT_H */
