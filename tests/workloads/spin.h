/* SPDX-License-Identifier: MIT */
/*
 * spin.h - the busy loop of the stack sampler's workloads (stackwork.c,
 * stackwork_cxx.cc): n rounds with constant k, which the compiler can
 * neither remove (the volatile sink) nor share between two functions
 * (each its own k; noipa on the functions that use it).
 */
#ifndef KH_WORKLOAD_SPIN_H
#define KH_WORKLOAD_SPIN_H

#include <stdint.h>

static volatile uint64_t sink;

#define SPIN(n, k)                                                             \
	do {                                                                   \
		uint64_t x = sink;                                             \
		for (uint64_t i = 0; i < (n); i++)                             \
			x = x * (k) + i;                                       \
		sink = x;                                                      \
	} while (0)

#endif /* KH_WORKLOAD_SPIN_H */
