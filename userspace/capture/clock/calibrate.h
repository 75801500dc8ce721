/* SPDX-License-Identifier: MIT */
/*
 * khprof carries keyhog probe sites of its own: at start-up it traces itself
 * for a few hundred empty spans to learn what a span costs and how long an
 * empty span appears in the current mode.  Its spans go to a slot of their
 * own (KH_CALIBRATION_SLOT), never to a stage or slot of the traced program.
 */
#ifndef KHPROF_CALIBRATE_H
#define KHPROF_CALIBRATE_H

#include <stdint.h>

/* Runs n empty spans and returns the wall time they took in ns. */
uint64_t calibrate__spans(int n);
/* Hands buffered spans to the tracer (batch mode). */
void calibrate__flush(void);

#endif
