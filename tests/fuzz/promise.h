/* SPDX-License-Identifier: MIT */
/*
 * promise.h - what the fuzz targets check besides crashes: a broken
 * promise of the parser under test aborts, so libFuzzer keeps the input
 * as it keeps a crash.
 */
#ifndef KHPROF_FUZZ_PROMISE_H
#define KHPROF_FUZZ_PROMISE_H

#include <stdio.h>
#include <stdlib.h>

#define PROMISE(cond)                                                              \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s: broken promise: %s\n", __FILE__, #cond); \
			abort();                                                   \
		}                                                                  \
	} while (0)

#endif /* KHPROF_FUZZ_PROMISE_H */
