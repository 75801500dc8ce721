/* SPDX-License-Identifier: MIT */
/*
 * counter.h - the CPU's own counter, which batch mode's probe sites read
 * to time spans (include/keyhog_profile.h, kh__tsc): the TSC on x86-64,
 * CNTVCT_EL0 on aarch64, one file per architecture (counter_x86_64.c,
 * counter_arm64.c; a build compiles its own).  khprof reads it as the
 * sites do, to measure its rate (tsc.h) and to place the program's
 * readings on its own clock (drain.c); span_clock.h decides from evidence
 * whether the sites may use it.
 */
#ifndef KHPROF_COUNTER_H
#define KHPROF_COUNTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Its name in messages: "TSC", "CNTVCT_EL0". */
const char *counter__name(void);

/* The record's span_clock when batch mode's spans use it: "tsc", "cntvct" (docs/SCHEMA.md). */
const char *counter__clock(void);

/* A reading as the probe sites take it: not ordered with the code around it. */
uint64_t counter__read(void);

/* A reading taken after every earlier load has completed (lfence, isb). */
uint64_t counter__read_ordered(void);

/* A spin-wait's pause (pause, yield). */
void counter__relax(void);

/*
 * The CPU's own word that the counter runs at a constant rate, the first
 * evidence of span_clock.h: true with *what naming the counter as the
 * record's reason does ("invariant TSC", "CNTVCT_EL0 at 62.50 MHz
 * (CNTFRQ_EL0)"), false with *what saying why not.
 */
bool counter__constant_rate(char *what, size_t len);

#endif
