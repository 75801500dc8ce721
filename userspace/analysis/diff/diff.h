/* SPDX-License-Identifier: MIT */
/*
 * diff.h - comparing two sets of RunProfile records for CI regression gating.
 *
 * Pure functions over arrays of struct kh_profile: no files, no output
 * streams, so that CI's verdict can be tested without running anything.
 * The command (cmd_diff.c) reads records and the config file and prints
 * what these functions produce.  The rules are documented in docs/CI.md.
 */
#ifndef KHPROF_DIFF_H
#define KHPROF_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

#define KH_DIFF_DEFAULT_STAGE_PCT 5.0
#define KH_DIFF_DEFAULT_WALL_PCT 3.0
#define KH_DIFF_DEFAULT_THROUGHPUT_PCT 3.0
#define KH_DIFF_DEFAULT_PEAK_RSS_PCT 5.0
#define KH_DIFF_DEFAULT_MIN_CHANGE_NS 100000ull /* 0.1 ms */
#define KH_DIFF_DEFAULT_CONFIDENCE 95.0
#define KH_DIFF_MIN_CONFIDENCE 50.0
#define KH_DIFF_MAX_CONFIDENCE 99.9
/*
 * Items from khprof.latency and the macro states (docs/CI.md): a stage's
 * median and tail span, its time blocked, its decoded-attributed time,
 * each state's wall and CPU time.  None of them gates but the state's
 * wall: a stage gates on one figure, its time on CPU (else its elapsed).
 */
#define KH_DIFF_DEFAULT_P50_PCT 10.0
#define KH_DIFF_DEFAULT_P99_PCT 50.0 /* a tail moves by multiples */
#define KH_DIFF_DEFAULT_BLOCKED_PCT 20.0
#define KH_DIFF_DEFAULT_DECODED_PCT 10.0
#define KH_DIFF_DEFAULT_STATE_WALL_PCT 5.0
#define KH_DIFF_DEFAULT_STATE_CPU_PCT 10.0
/* Peak RSS moves by pages and allocator arenas: smaller changes are noise. */
#define KH_DIFF_RSS_MIN_CHANGE_BYTES (1ull << 20)

/*
 * Wall, throughput, peak RSS; elapsed, calls, per-call, on-CPU, on-CPU per
 * call, own, blocked, runnable, p50, p99 and decoded per stage; wall and
 * CPU per macro state.
 */
#define KH_DIFF_MAX_ITEMS (3 + 11 * KH_STAGE_COUNT + 2 * KH_STATE_COUNT)

/* Identity fields that bind a comparison, as --allow-mismatch names them. */
enum kh_diff_field {
	KH_DIFF_F_BINARY_VERSION = 0,
	KH_DIFF_F_DETECTOR_DIGEST,
	KH_DIFF_F_CONFIG_DIGEST,
	KH_DIFF_F_SOURCE_KIND,
	KH_DIFF_F_WORKLOAD_CLASS,
	KH_DIFF_F_BACKEND_REQUESTED,
	KH_DIFF_F_BACKEND_SELECTED,
	KH_DIFF_F_CACHE_STATE,
	KH_DIFF_F_DAEMON_STATE,
	KH_DIFF_F_SCANNER_THREADS,
	KH_DIFF_F_READER_THREADS,
	KH_DIFF_F_LOGICAL_CPUS,
	KH_DIFF_F_MODE, /* khprof extension: the tracing mode */
	KH_DIFF_F_COUNT
};

/* A threshold setting; set says a flag or the config file gave it. */
struct kh_diff_threshold {
	bool set;
	bool off;   /* the item is shown but never gates */
	double pct; /* a change beyond this many percent counts */
};

struct kh_diff_options {
	struct kh_diff_threshold stages; /* every stage without its own */
	struct kh_diff_threshold wall, throughput, peak_rss;
	struct kh_diff_threshold stage[KH_STAGE_COUNT];
	/* The latency and state items, each metric one threshold for all. */
	struct kh_diff_threshold p50, p99, blocked, decoded, state_wall, state_cpu;
	bool min_change_set;
	uint64_t min_change_ns; /* time changes below this are never judged */
	bool confidence_set;
	double confidence;      /* percent, for the Mann-Whitney interval */
	uint32_t allow;         /* 1 << enum kh_diff_field: differences that are intended */
	bool all;               /* text and markdown list every item, not only the changed */
};

/* Defaults, with nothing marked set. */
void diff_options__init(struct kh_diff_options *opts);

/*
 * Applies one setting by its config-file key: "threshold",
 * "threshold.NAME" (NAME a stage as the seed spells it, or wall,
 * throughput, peak_rss, p50, p99, blocked, decoded, state_wall,
 * state_cpu), "min_change_ms", "confidence" or
 * "allow_mismatch" (a comma list of field names, added to those already
 * allowed).  Percentages may end in '%'; a threshold may be "off".
 * 0, or -EINVAL with the reason in err (without the key or value when
 * the caller is expected to name them: see cmd_diff.c).
 */
int diff_options__set(struct kh_diff_options *opts, const char *key, const char *value,
		      char *err, size_t errlen);

/*
 * Parses a config file's text: one "key value" per line, '#' to the end of
 * a line is a comment, blank lines are ignored.  0, or -EINVAL with
 * *line_no set to the bad line (from 1) and the reason in err.
 */
int diff_config__parse(const char *text, struct kh_diff_options *opts, size_t *line_no,
		       char *err, size_t errlen);

/*
 * Settings marked set in over replace those of opts; allowed mismatches
 * add up.  How command-line flags win over the config file.
 */
void diff_options__merge(struct kh_diff_options *opts, const struct kh_diff_options *over);

/* The field's name as --allow-mismatch spells it. */
const char *diff_field__name(enum kh_diff_field field);

/* One side of the comparison: records in file order, each with a name. */
struct kh_diff_side {
	const char *path;               /* as given on the command line */
	const struct kh_profile *records;
	const char *const *names;       /* how messages name each record */
	size_t count;
};

enum kh_diff_metric {
	KH_DIFF_M_WALL = 0, /* ns */
	KH_DIFF_M_THROUGHPUT, /* input bytes per wall second; down is worse */
	KH_DIFF_M_PEAK_RSS, /* bytes */
	KH_DIFF_M_ELAPSED,  /* ns, per stage: summed span time, waits included */
	KH_DIFF_M_CALLS,    /* per stage; informative, never gates */
	KH_DIFF_M_PER_CALL, /* ns, per stage; judged but never gates */
	KH_DIFF_M_ON_CPU,   /* ns, per stage: elapsed less off-CPU time (khprof.latency) */
	KH_DIFF_M_ON_CPU_PER_CALL, /* ns, per stage; judged but never gates */
	KH_DIFF_M_OWN,      /* ns, per stage: on CPU or blocked, elapsed less waiting for a CPU */
	KH_DIFF_M_BLOCKED,  /* ns, per stage: off CPU, not runnable: sleeps, locks, I/O */
	KH_DIFF_M_RUNNABLE, /* ns, per stage: waiting for a CPU, the machine's; never judged */
	KH_DIFF_M_P50,      /* ns, per stage: median span */
	KH_DIFF_M_P99,      /* ns, per stage: 99th percentile span */
	KH_DIFF_M_DECODED,  /* ns, per stage: attributed_ns, time on decoded content */
	KH_DIFF_M_STATE_WALL, /* ns, per macro state (stage holds the state) */
	KH_DIFF_M_STATE_CPU,  /* ns, per macro state: process CPU time */
};

enum kh_diff_mark {
	KH_DIFF_OK = 0,
	KH_DIFF_REGRESSED,
	KH_DIFF_IMPROVED,
	KH_DIFF_NOISY,   /* the shift is beyond the threshold, the interval is not sure */
	KH_DIFF_SAME,    /* calls only */
	KH_DIFF_CHANGED, /* calls only */
	KH_DIFF_OFF,     /* threshold off */
	KH_DIFF_UNJUDGED, /* too few runs left for an interval (why: kh_diff_unjudged) */
	KH_DIFF_MACHINE, /* runnable only: moved beyond the threshold, the machine's doing */
};

/* Why an item was not judged. */
enum kh_diff_unjudged {
	KH_DIFF_JUDGED = 0,
	KH_DIFF_FEW_RUNS, /* too few records have a value for an interval */
	KH_DIFF_STARVED,  /* too few were left once the runs starved of CPU were left out */
};

/*
 * What the judged values are, when not every record's value as recorded
 * (docs/CI.md, "What each item is judged on").
 */
enum kh_diff_left_out {
	KH_DIFF_ALL_RUNS = 0,
	KH_DIFF_LEFT_STARVED,    /* runs starved of CPU (for a stage: in that stage) */
	KH_DIFF_LEFT_INCOMPLETE, /* runs whose off-CPU split of the stage is incomplete */
};

struct kh_diff_item {
	enum kh_diff_metric metric;
	uint32_t stage;    /* enum kh_stage for stage metrics */
	const char *name;  /* "wall", "throughput", "peak_rss", or the stage's name */
	size_t base_n, cand_n; /* records that have the value */
	double recorded_base, recorded_cand; /* medians of every record's value */
	/*
	 * Of the judged values (those of base_used and cand_used runs, as
	 * recorded unless adjusted): the medians, and the Hodges-Lehmann shift,
	 * the median of every candidate - base difference.  The change is the
	 * shift, and the interval that of the same estimator, so the change
	 * always lies inside its interval.
	 */
	double base_median, cand_median;
	double shift;
	bool has_change;   /* false when the base median is 0 */
	double change_pct; /* the shift in percent of the base median */
	bool has_interval; /* Mann-Whitney: enough values on both sides */
	double interval_low, interval_high; /* of the shift, candidate - base, in the item's unit */
	double interval_low_pct, interval_high_pct; /* of the base median; only with has_change */
	bool has_threshold; /* false for calls */
	bool threshold_off;
	double threshold_pct;
	bool gating;       /* a regression here fails the comparison */
	bool below_floor;  /* the shift is smaller than the minimum change */
	bool floor_only;   /* ok only because of the floor: beyond the threshold otherwise */
	int beyond;        /* the shift beyond the threshold: 1 the bad way, -1 the good, 0 not */
	size_t base_used, cand_used; /* runs judged */
	enum kh_diff_left_out left_out; /* why runs were left out, when some were */
	bool wait_adjusted; /* each value divided by its run's wait factor (wall times) */
	enum kh_diff_unjudged unjudged;
	double calls_base, calls_cand; /* per-call and span items: median calls, for the floor */
	double noise;      /* pooled MAD of the judged values, item's unit */
	double noise_pct;  /* the noise bound: 2 MADs (3 for wall times) in % of the base median */
	/*
	 * p50, p99, per_call: the tracing mode's per-span error, the largest
	 * calibrated bias per span of the records (docs/REPORTS.md, "How
	 * exact"), and whether the shift is no larger than it.
	 */
	double span_error_ns;
	bool within_span_error;
	enum kh_diff_mark verdict;
};

struct kh_diff_mismatch {
	enum kh_diff_field field;
	bool allowed;      /* by --allow-mismatch: reported, not fatal */
	int within;        /* 0 across the sides, 1 within base, 2 within candidate */
	char *base_value, *cand_value; /* within a side: the first record, then the other */
	char *base_file, *cand_file;
	char *message;     /* "records differ in 'F': 'a' in 'x', 'b' in 'y'" */
};

enum kh_diff_warning_kind {
	KH_DIFF_WARN_INPUT = 0,   /* input_bytes or input_units differ */
	KH_DIFF_WARN_DROPS,       /* a record lost spans or events */
	KH_DIFF_WARN_STARTED_MID, /* a record misses the start of its session */
	KH_DIFF_WARN_ENDED_MID,   /* a record misses the end of its session */
	KH_DIFF_WARN_STARVED,     /* runs starved of CPU, left out of the wall items */
	KH_DIFF_WARN_INCOMPLETE,  /* stages whose off-CPU split some runs lack */
};

struct kh_diff_warning {
	enum kh_diff_warning_kind kind;
	char *message; /* git-style text without the "khprof: warning: " prefix */
};

enum kh_diff_verdict {
	KH_DIFF_VERDICT_OK = 0,
	KH_DIFF_VERDICT_REGRESSED,
	KH_DIFF_VERDICT_NOT_COMPARABLE,
	/*
	 * No regression, and something that gates could not be judged: too
	 * few runs on a side for an interval, or too few left once the runs
	 * starved of CPU were left out (kh_diff.cannot says which).
	 */
	KH_DIFF_VERDICT_CANNOT_JUDGE,
};

struct kh_diff_side_info {
	char *path;
	char **names;
	size_t count;
};

/* How the verdicts were reached, as the header line says. */
enum kh_diff_method {
	KH_DIFF_METHOD_SINGLE = 0,   /* one record on a side: nothing judged */
	KH_DIFF_METHOD_FEW_RUNS,     /* too few for the confidence: nothing judged */
	KH_DIFF_METHOD_MANN_WHITNEY, /* the interval of the shift decides */
};

struct kh_diff {
	struct kh_diff_options opts;
	struct kh_diff_side_info base, cand;
	enum kh_diff_method method;
	size_t runs_needed;          /* per side, for an interval at opts.confidence */
	struct kh_diff_item items[KH_DIFF_MAX_ITEMS]; /* empty when not comparable */
	size_t item_count;
	struct kh_diff_mismatch *mismatches;
	size_t mismatch_count;
	size_t blocking_count;       /* mismatches not allowed */
	struct kh_diff_warning *warnings;
	size_t warning_count;
	size_t regression_count, improved_count, noisy_count; /* gating items */
	size_t unjudged_count;       /* gating items not judged */
	size_t calls_changed_count;
	enum kh_diff_verdict verdict;
	enum kh_diff_unjudged cannot; /* with KH_DIFF_VERDICT_CANNOT_JUDGE: why */
	size_t starved[2];           /* runs starved of CPU, base and candidate */
};

/*
 * Compares the candidate side with the base side.  Both sides need at
 * least one record.  0, -EINVAL (an empty side, a bad threshold or
 * confidence) or -ENOMEM; on failure *out needs no freeing.
 */
int diff__compare(const struct kh_diff_side *base, const struct kh_diff_side *cand,
		  const struct kh_diff_options *opts, struct kh_diff *out);
void diff__free(struct kh_diff *d);

const char *diff_verdict__name(enum kh_diff_verdict verdict);
const char *diff_mark__name(enum kh_diff_mark mark);
const char *diff_metric__name(enum kh_diff_metric metric);

/* The item's effective threshold; NULL for calls. */
const struct kh_diff_threshold *diff_options__threshold(const struct kh_diff_options *opts,
							enum kh_diff_metric metric,
							uint32_t stage);

/*
 * The header line, an aligned table and the summary line ("diff: 1
 * regression: stage hot-patterns +21.0%"); markdown gives the same as a
 * GitHub table with the summary in bold.  malloc'd, or NULL (ENOMEM).
 */
char *diff__render_text(const struct kh_diff *d);
char *diff__render_markdown(const struct kh_diff *d);

/* An item's verdict in words, as the table says it ("unjudged (starved)"). */
void diff_item__verdict(const struct kh_diff *d, const struct kh_diff_item *it, bool markdown,
			char *buf, size_t len);

/*
 * How the item's judged values differ from every record's value as
 * recorded, in words ("of the runs not starved of CPU, each divided by its
 * wait factor"), or NULL when they do not.
 */
const char *diff_item__adjustment(const struct kh_diff_item *it);

/* The summary line alone, without a newline; malloc'd, or NULL. */
char *diff__summary(const struct kh_diff *d);

/*
 * Why the comparison could not judge, as one line without a newline
 * ("too few runs: 1 base, 1 candidate record; 4 a side needed");
 * malloc'd, or NULL (ENOMEM, or a verdict that is not cannot-judge).
 */
char *diff__cannot_reason(const struct kh_diff *d);

/* The "khprof-diff-v1" object, ending in a newline; malloc'd, or NULL. */
char *diff__to_json(const struct kh_diff *d);

#endif /* KHPROF_DIFF_H */
