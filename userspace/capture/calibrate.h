/* SPDX-License-Identifier: MIT */
/*
 * khprof carries keyhog probe sites of its own: at start-up it traces itself
 * for a few hundred empty spans to learn what a span costs and how long an
 * empty span appears in the current mode.
 */
#ifndef KHPROF_CALIBRATE_H
#define KHPROF_CALIBRATE_H

#include <stdint.h>

/* The stage khprof's own spans use; its sums are read and discarded. */
#define CALIBRATION_STAGE KH_STAGE_MACHINE_LEARNING

/* Runs n empty spans and returns the wall time they took in ns. */
uint64_t calibrate__spans(int n);
/* Hands buffered spans to the tracer (batch mode). */
void calibrate__flush(void);

#endif
