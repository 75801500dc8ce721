// SPDX-License-Identifier: MIT
/*
 * names.c - the wire names of the record's enums (stages, states, cache
 * and daemon states, drops, trace modes), as the seed spells them, each
 * table checked against its enum.  Below record.c and everything that
 * prints or parses a name, so that the model's files call one way.
 */
#include <errno.h>
#include <string.h>

#include "record.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const stage_names[] = {
	"source-acquire", "source-walk", "source-read", "preprocess",
	"phase1-triggers", "backend-dispatch", "hot-patterns",
	"confirmed-patterns", "phase2-prefilter", "phase2-keyword-ac",
	"phase2-shared-ac", "phase2-anchored-verify", "phase2-whole-chunk",
	"generic-detection", "entropy", "machine-learning", "decode",
	"suppression", "live-verification", "reporting", "source-queue-wait",
	"incremental-lookup", "backend-select", "result-merge",
	"scanner-queue-wait",
};
_Static_assert(ARRAY_SIZE(stage_names) == KH_STAGE_COUNT, "one name per kh_stage");

static const char *const run_state_names[] = {
	"created", "acquiring", "scanning", "resolving",
	"verifying", "reporting", "completed", "failed",
};
_Static_assert(ARRAY_SIZE(run_state_names) == KH_STATE_COUNT, "one name per kh_run_state");

static const char *const cache_state_names[] = { "unknown", "disabled", "cold", "warm" };
_Static_assert(ARRAY_SIZE(cache_state_names) == KH_CACHE_COUNT, "one name per kh_cache_state");

static const char *const daemon_state_names[] = { "off", "client", "worker", "mass" };
_Static_assert(ARRAY_SIZE(daemon_state_names) == KH_DAEMON_COUNT, "one name per kh_daemon_state");

static const char *const drop_names[] = {
	"stack_overflow", "unmatched_exit", "ringbuf_full",
	"session_slots", "bad_stage", "late_batch",
	"exit_unread", "exit_unknown", "unseen",
};
_Static_assert(ARRAY_SIZE(drop_names) == KH_DROP_COUNT, "one name per kh_drop");

static const char *const trace_mode_names[] = { "span", "pair", "batch" };
_Static_assert(ARRAY_SIZE(trace_mode_names) == KH_MODE_COUNT, "one name per kh_trace_mode");

static const char *table__name(const char *const *table, size_t count, uint32_t value)
{
	return value < count ? table[value] : NULL;
}

static int table__parse(const char *const *table, size_t count, const char *name,
			uint32_t *out)
{
	if (!name)
		return -EINVAL;
	for (size_t i = 0; i < count; i++) {
		if (strcmp(table[i], name) == 0) {
			*out = (uint32_t)i;
			return 0;
		}
	}
	return -EINVAL;
}

#define NAME_TABLE(prefix, table)                                              \
	const char *prefix##__name(uint32_t value)                             \
	{                                                                      \
		return table__name(table, ARRAY_SIZE(table), value);           \
	}                                                                      \
	int prefix##__parse(const char *name, uint32_t *out)                   \
	{                                                                      \
		return table__parse(table, ARRAY_SIZE(table), name, out);      \
	}

NAME_TABLE(kh_stage, stage_names)
NAME_TABLE(kh_run_state, run_state_names)
NAME_TABLE(kh_cache_state, cache_state_names)
NAME_TABLE(kh_daemon_state, daemon_state_names)
NAME_TABLE(kh_drop, drop_names)
NAME_TABLE(kh_trace_mode, trace_mode_names)
