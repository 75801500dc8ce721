/* SPDX-License-Identifier: MIT */
/*
 * diff.h - comparing two RunProfile records for performance regressions.
 *
 * Pure functions over two struct kh_profile: no files, no output streams,
 * so that CI's verdict can be tested without running anything.  The command
 * (cmd_diff.c) reads the records and prints what these functions produce.
 */
#ifndef KHPROF_DIFF_H
#define KHPROF_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

#define KH_DIFF_DEFAULT_THRESHOLD_PCT 10.0
#define KH_DIFF_DEFAULT_MIN_NS 1000000ull

/* Wall time, throughput, one per macro state, one per stage. */
#define KH_DIFF_MAX_ITEMS (2 + KH_STATE_COUNT + KH_STAGE_COUNT)

struct kh_diff_options {
	double threshold_pct; /* an increase beyond this many percent regresses */
	uint64_t min_ns;      /* entries with both sides below this are noise */
	bool strict;          /* identity or input mismatches make the verdict "not comparable" */
	const char *base_name; /* how messages name each record; "base"/"new" when NULL */
	const char *new_name;
};

/* Defaults the command starts from: 10 %, 1 ms, not strict. */
void diff_options__init(struct kh_diff_options *opts);

enum kh_diff_kind {
	KH_DIFF_WALL = 0,
	KH_DIFF_THROUGHPUT,
	KH_DIFF_STATE,
	KH_DIFF_STAGE,
};

enum kh_diff_mark {
	KH_DIFF_UNCHANGED = 0, /* within the threshold, or below the noise floor */
	KH_DIFF_REGRESSED,
	KH_DIFF_IMPROVED,
};

/*
 * One compared line.  Times are nanoseconds; throughput is bytes per
 * second.  A side that lacks the stage or state has present false and
 * value 0.
 */
struct kh_diff_item {
	enum kh_diff_kind kind;
	uint32_t id;      /* enum kh_stage or enum kh_run_state */
	const char *name; /* "wall", "throughput", or the seed's stage/state name */
	bool base_present, new_present;
	double base, new;
	bool has_delta;   /* false when base is 0, where a percentage means nothing */
	double delta_pct;
	bool below_floor; /* both sides under min_ns: never marked */
	enum kh_diff_mark mark;
	/* Stages only. */
	uint64_t base_calls, new_calls;
	bool calls_changed;
};

enum kh_diff_warning_kind {
	KH_DIFF_WARN_IDENTITY = 0, /* a RunIdentity field that changes cost differs */
	KH_DIFF_WARN_INPUT,        /* input_bytes or input_units differ */
	KH_DIFF_WARN_MODE,         /* khprof tracing modes differ */
	KH_DIFF_WARN_DROPS,        /* a record lost spans or events */
	KH_DIFF_WARN_STARTED_MID,  /* a record misses the start of its session */
	KH_DIFF_WARN_ENDED_MID,    /* a record misses the end of its session */
};

struct kh_diff_warning {
	enum kh_diff_warning_kind kind;
	const char *field;   /* the identity or input field, or NULL */
	char *base_value;    /* the two sides as text for mismatches, else NULL */
	char *new_value;
	char *message;       /* git-style text without the "khprof: warning: " prefix */
};

enum kh_diff_verdict {
	KH_DIFF_VERDICT_OK = 0,
	KH_DIFF_VERDICT_REGRESSED,
	KH_DIFF_VERDICT_NOT_COMPARABLE, /* strict and at least one mismatch */
};

struct kh_diff {
	struct kh_diff_options opts; /* names not kept: only valid during compare */
	struct kh_diff_item items[KH_DIFF_MAX_ITEMS];
	size_t item_count;
	struct kh_diff_warning *warnings;
	size_t warning_count;
	size_t mismatch_count;      /* identity and input warnings */
	size_t regression_count;
	size_t calls_changed_count; /* stages whose call counts differ */
	enum kh_diff_verdict verdict;
};

/*
 * Compares base with new.  Items come in report order: wall, throughput,
 * macro states in RunState order, then stages in the seed's wire order;
 * a stage or state is listed when either record has it, and repeated
 * entries of one state (a run that went back to scanning) are summed.
 * Returns 0, -EINVAL for a negative or non-finite threshold, or -ENOMEM;
 * on failure *out needs no freeing.
 */
int diff__compare(const struct kh_profile *base, const struct kh_profile *new,
		  const struct kh_diff_options *opts, struct kh_diff *out);
void diff__free(struct kh_diff *d);

/* "ok", "regressed", "not-comparable"; "unchanged"/"regressed"/"improved". */
const char *diff_verdict__name(enum kh_diff_verdict verdict);
const char *diff_mark__name(enum kh_diff_mark mark);

/*
 * The table (header, one line per item) and the summary line
 * "diff: N regressions over T% (wall +x.y%)".  malloc'd, or NULL (ENOMEM).
 */
char *diff__render_text(const struct kh_diff *d);

/*
 * The result as one JSON object for CI systems: options, verdict, counts,
 * warnings and items.  base_name/new_name are recorded as given (may be
 * NULL).  malloc'd text ending in a newline, or NULL (ENOMEM).
 */
char *diff__to_json(const struct kh_diff *d, const char *base_name, const char *new_name);

#endif /* KHPROF_DIFF_H */
