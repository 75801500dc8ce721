/* SPDX-License-Identifier: MIT */
/* duration.h - durations as the command line writes them. */
#ifndef KHPROF_DURATION_H
#define KHPROF_DURATION_H

#include <stdint.h>

/*
 * A duration, the one syntax of --duration and --interval: "100ms", "1s",
 * "2.5s", "500us", "1m", "1h", or a bare number of seconds ("5", "0.5").
 * 0, or -EINVAL for a malformed text or one outside [min, max].
 */
int kh_parse_duration_ns(const char *text, uint64_t min, uint64_t max, uint64_t *out);

#endif /* KHPROF_DURATION_H */
