/* SPDX-License-Identifier: MIT */
/*
 * What kh-scan reports and kh-corpus plants must line up exactly: the
 * truth file names the same rules, sorts by the same names, plants generic
 * values on the right side of the same thresholds and fingerprints secrets
 * with the same hash.  All of that is defined here, once, for both.
 */
#ifndef KH_EXAMPLES_DETECTION_H
#define KH_EXAMPLES_DETECTION_H

#include <stddef.h>
#include <stdint.h>

enum rule_id {
	RULE_AWS_ACCESS_KEY_ID,
	RULE_GITHUB_PAT,
	RULE_GITHUB_FINE_GRAINED_PAT,
	RULE_SLACK_TOKEN,
	RULE_STRIPE_LIVE_SECRET,
	RULE_PRIVATE_KEY,
	RULE_GENERIC_SECRET,
	RULE_COUNT
};

/* The name printed in findings and truth lines; both sort by it. */
const char *rule_name(enum rule_id rule);

/*
 * generic-secret: values shorter or more predictable than this are noise.
 * GENERIC_MIN_LENGTH is spliced into the rule's pattern as text, so it has
 * to stay a plain decimal literal.
 */
#define GENERIC_MIN_LENGTH 16
#define GENERIC_MIN_ENTROPY_BITS 3.5

/* FNV-1a 64: the fingerprint that deduplicates one secret on one line. */
#define FNV1A_OFFSET_BASIS 0xcbf29ce484222325ull

static inline uint64_t fnv1a_update(uint64_t hash, const void *data, size_t length)
{
	const unsigned char *bytes = data;

	for (size_t i = 0; i < length; i++) {
		hash ^= bytes[i];
		hash *= 0x100000001b3ull;
	}
	return hash;
}

#endif
