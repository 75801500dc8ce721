/* SPDX-License-Identifier: MIT */
/*
 * Shannon entropy, shared by the scanner (the generic rule's threshold,
 * GENERIC_MIN_ENTROPY_BITS in detection.h) and the corpus generator (which
 * plants values on either side of it), so the two can never disagree about
 * what counts as a secret.
 */
#ifndef KH_EXAMPLES_ENTROPY_H
#define KH_EXAMPLES_ENTROPY_H

#include <stddef.h>

/* Entropy of length bytes in bits per byte; 0 for an empty value. */
double shannon_entropy_bits(const void *bytes, size_t length);

#endif
