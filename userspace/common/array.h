/* SPDX-License-Identifier: MIT */
/* array.h - growing a malloc'd array by doubling, checked for overflow. */
#ifndef KHPROF_ARRAY_H
#define KHPROF_ARRAY_H

#include <stddef.h>

/*
 * Grows *items (*cap elements of size elem) to hold at least need, at
 * least doubling, from 8.  0, or -ENOMEM with *items and *cap unchanged.
 */
int array__reserve(void **items, size_t *cap, size_t need, size_t elem);

#endif
