/* SPDX-License-Identifier: MIT */
/*
 * record.h - the C model of the seed's RunProfile ("keyhog-profile-v1").
 *
 * Every struct mirrors one seed type field for field, in the seed's order,
 * so that a record assembled from outside the process is the same record
 * the in-process seed library would have written.  docs/SCHEMA.md describes
 * the fields; the khprof extension (struct kh_profile_ext) is ours and is
 * serialised after the seed's fields, where seed readers ignore it.
 *
 * Ownership: every char * in a profile is malloc'd and owned by the profile;
 * profile__free() releases them.  Required strings are never NULL once
 * profile__init() or profile__from_json() succeeded.
 */
#ifndef KHPROF_RECORD_H
#define KHPROF_RECORD_H

#include "stacks.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keyhog_profile.h"
#include "khprof_enums.h"
#include "hist.h"

#define KH_PROFILE_SCHEMA "keyhog-profile-v1"

/* Option<u64> / Option<usize>: absent serialises as JSON null. */
struct kh_opt_u64 {
	bool present;
	uint64_t value;
};

/* Both present and in order: a difference of the two is defined. */
static inline bool kh_opt_u64__ordered(struct kh_opt_u64 start, struct kh_opt_u64 finish)
{
	return start.present && finish.present && finish.value >= start.value;
}

/* Option<f64>. */
struct kh_opt_f64 {
	bool present;
	double value;
};

enum kh_cache_state {
	KH_CACHE_UNKNOWN = 0,
	KH_CACHE_DISABLED,
	KH_CACHE_COLD,
	KH_CACHE_WARM,
	KH_CACHE_COUNT
};

enum kh_daemon_state {
	KH_DAEMON_OFF = 0,
	KH_DAEMON_CLIENT,
	KH_DAEMON_WORKER,
	KH_DAEMON_MASS,
	KH_DAEMON_COUNT
};

/* ResourceSnapshot */
struct kh_resource_snapshot {
	struct kh_opt_u64 cpu_time_ms;
	struct kh_opt_u64 resident_bytes;
	struct kh_opt_u64 virtual_bytes;
	struct kh_opt_u64 thread_count;
};

/* StageMeasurement; stage is an enum kh_stage. */
struct kh_stage_measurement {
	uint32_t stage;
	uint64_t elapsed_ns;
	uint64_t calls;
	uint64_t attributed_ns;
};

/* StateTransition; state is an enum kh_run_state. */
struct kh_transition {
	uint32_t state;
	uint64_t elapsed_ns;
};

/* ResourceSample */
struct kh_resource_sample {
	uint32_t state;
	uint64_t elapsed_ns;
	struct kh_resource_snapshot snapshot;
};

/* StateMeasurement */
struct kh_state_measurement {
	uint32_t state;
	uint64_t elapsed_ns;
	struct kh_opt_u64 cpu_time_ms;
	struct kh_opt_u64 aggregate_cpu_milli_percent;
	struct kh_opt_u64 resident_start_bytes;
	struct kh_opt_u64 resident_end_bytes;
	struct kh_opt_u64 threads_start;
	struct kh_opt_u64 threads_end;
};

/* ResourceUsage */
struct kh_resource_usage {
	struct kh_resource_snapshot start;
	struct kh_resource_snapshot finish;
	struct kh_opt_u64 max_observed_resident_bytes;
	struct kh_opt_u64 max_observed_threads;
	struct kh_opt_f64 aggregate_cpu_percent;
};

/* RunIdentity; usize fields are 64-bit like the seed on 64-bit targets. */
struct kh_identity {
	char *run_id;
	char *binary_version;
	char *detector_digest;
	char *config_digest;
	char *source_kind;
	char *workload_class;
	char *backend_requested;
	char *backend_selected; /* NULL is None */
	enum kh_cache_state cache_state;
	enum kh_daemon_state daemon_state;
	uint64_t scanner_threads;
	struct kh_opt_u64 reader_threads;
	uint64_t logical_cpus;
};

/*
 * One interval of a time series (khprof record/attach --interval): what the
 * tracer saw accounted between two of its samples.  A span is accounted
 * when it ends (batch mode: when its batch is handed over), so a span that
 * crosses a boundary counts whole in the interval where it ends.
 */
struct kh_interval {
	uint64_t start_ns;    /* from the session's start */
	uint64_t duration_ns;
	uint32_t state;       /* the macro state at the interval's end */
	uint64_t input_bytes;
	uint64_t input_units;
	struct kh_opt_u64 cpu_time_ms;    /* process CPU time used in the interval, whole ms */
	struct kh_opt_u64 cpu_time_ns;    /* the same in ns (absent in older records) */
	struct kh_opt_u64 resident_bytes; /* RSS at the interval's end */
	uint64_t elapsed_ns[KH_STAGE_COUNT]; /* bias removed, as the stage totals */
	uint64_t calls[KH_STAGE_COUNT];
};

/*
 * At most KH_SERIES_MAX entries are kept: when full, neighbours are merged
 * in pairs and every later entry gathers twice as many intervals, so the
 * series keeps one resolution throughout; merged counts the intervals
 * merged away.  512 x ~450 bytes is 230 KiB per session at most.
 */
#define KH_SERIES_MAX 512

struct kh_series {
	uint64_t interval_ns;  /* asked for; 0: the record has no series */
	uint64_t merged;       /* intervals merged into a neighbour to stay bounded */
	struct kh_interval *intervals;
	size_t count;
	size_t cap;
	/* While appending: sampled intervals per entry, and in the last entry. */
	uint64_t group;
	uint64_t last_fill;
};

/*
 * What khprof knows of one resource sample beyond the seed's snapshot, at
 * the same index as the profile's resource_samples (docs/SCHEMA.md).  The
 * peaks cover the time since the previous sample, this one included; null
 * where khprof sampled /proc itself (its own opening and closing samples).
 */
struct kh_sample_ext {
	struct kh_opt_u64 cpu_time_ns;
	struct kh_opt_u64 peak_resident_bytes;
	struct kh_opt_u64 peak_threads;
};

/*
 * A probe site of a traced file that khprof refused (usdt/usdt_notes.h):
 * never attached, named in the record with why.  Strings as the file has
 * them (JSON escapes them; text output escapes them too).
 */
struct kh_refused_site {
	char *file;
	char *provider;
	char *name;
	uint64_t address;
	char *refusal; /* the reason's name: "semaphore_misaligned" */
	char *reason;  /* in words: "its semaphore 0x4011 is not aligned to 2 bytes" */
};

/*
 * khprof's own fields, written as a trailing "khprof" object.  They say how
 * far the record can be trusted: spans lost, sessions observed only in part,
 * and what the tracing itself cost the traced program.
 */
struct kh_profile_ext {
	bool present;
	char *mode;               /* "span", "pair" or "batch"; NULL is null */
	/*
	 * The clock that timed the spans: "tsc" (the program's TSC readings,
	 * batch mode) or "monotonic" (CLOCK_MONOTONIC), and why; NULL in
	 * records of a khprof that did not say (then not written).
	 */
	char *span_clock;
	char *span_clock_reason;
	bool started_mid_session; /* attached after session_start */
	bool ended_mid_session;   /* detached or target died before finish */
	uint64_t drops[KH_DROP_COUNT];
	uint64_t probe_hits;
	uint64_t probe_cost_ns;   /* calibrated cost one span adds to the traced program */
	uint64_t tracer_cost_ns;  /* spans * probe_cost_ns, an estimate */
	uint64_t span_bias_ns;    /* calibrated apparent length of an empty span, subtracted */
	uint64_t traced_pid;
	/*
	 * The process among namespaces (docs/SCHEMA.md): its pid in its own
	 * PID namespace (the run_id's), its cgroup path, cgroup v2 id and the
	 * container id the path names; cgroup NULL: not known (not written).
	 */
	uint64_t namespace_pid;
	char *cgroup;
	struct kh_opt_u64 cgroup_id;
	char *container_id;           /* NULL: no container id in the cgroup path */
	uint64_t session_sequence;
	uint64_t sample_latency_ns_max;
	struct kh_series series;  /* --interval; written only when interval_ns != 0 */
	uint64_t identity_unreadable; /* identity probes whose key or value could not be read */
	struct kh_sample_ext *samples;
	size_t sample_count;
	size_t sample_cap;
	/* How the traced process ended inside this record: "exit", "signal", "exec"; NULL: it did not. */
	char *process_end;
	struct kh_opt_u64 exit_code;   /* with "exit" */
	struct kh_opt_u64 exit_signal; /* with "signal" */
	uint64_t refused_session_starts; /* KH_SESSION_START while this session was open */
	/* spans begun before the session started, ended in it: not its, as the seed has it */
	uint64_t begun_before_session;
	/* A record begun mid-session: when the probes went live, and the state then. */
	struct kh_opt_u64 observed_from_unix_ns;
	char *attach_state;              /* a state name; NULL: not known */
	struct kh_latency latency; /* per-stage distributions, off-CPU split (hist.h) */
	/*
	 * The kernel that was traced on, and each feature it lacked with what
	 * that cost this record ("name: cost"); written when kernel_release
	 * is set (docs/SCHEMA.md, docs/KERNELS.md).
	 */
	char *kernel_release;
	char **kernel_degraded;
	size_t kernel_degraded_count;
	struct kh_stacks stacks;   /* --sample: stacks tagged with their stage (stacks.h) */
	struct kh_refused_site *refused_sites; /* sites of the traced files never attached */
	size_t refused_site_count;
};

/* RunProfile */
struct kh_profile {
	char *schema;
	struct kh_identity identity;
	uint32_t status; /* enum kh_run_state */
	uint64_t wall_time_ns;
	uint64_t input_bytes;
	uint64_t input_units;
	struct kh_stage_measurement stages[KH_STAGE_COUNT];
	size_t stage_count;
	struct kh_transition *transitions;
	size_t transition_count;
	size_t transition_cap;
	struct kh_state_measurement *states;
	size_t state_count;
	size_t state_cap;
	struct kh_resource_sample *resource_samples;
	size_t resource_sample_count;
	size_t resource_sample_cap;
	struct kh_resource_usage resources;
	struct kh_profile_ext ext;
};

/* Names exactly as the seed spells them; NULL when out of range. */
const char *kh_stage__name(uint32_t stage);
const char *kh_run_state__name(uint32_t state);
const char *kh_cache_state__name(uint32_t state);
const char *kh_daemon_state__name(uint32_t state);
const char *kh_drop__name(uint32_t drop);
const char *kh_trace_mode__name(uint32_t mode);

/* Name to value; 0 on success, -EINVAL for an unknown name. */
int kh_stage__parse(const char *name, uint32_t *out);
int kh_run_state__parse(const char *name, uint32_t *out);
int kh_cache_state__parse(const char *name, uint32_t *out);
int kh_daemon_state__parse(const char *name, uint32_t *out);
int kh_drop__parse(const char *name, uint32_t *out);
int kh_trace_mode__parse(const char *name, uint32_t *out);

/*
 * Strict unsigned decimal: digits only, no sign or blanks, must fit.
 * 0 or -EINVAL (also for overflow).
 */
int kh_parse_u64(const char *text, uint64_t *out);

/*
 * Appends a copy of site to p's refused sites (the strings copied, made
 * valid UTF-8).  0 or -ENOMEM.
 */
int profile__add_refused_site(struct kh_profile *p, const struct kh_refused_site *site);
/* Frees site's strings. */
void kh_refused_site__free(struct kh_refused_site *site);

/*
 * Seed defaults (RunIdentity::new with "unknown" for every string).
 * Returns 0 or -ENOMEM; on failure the profile is still safe to free.
 */
int profile__init(struct kh_profile *p);
void profile__free(struct kh_profile *p);

/*
 * Sets one RunIdentity field by its seed name from probe text.  Numbers are
 * strict decimals; reader_threads also takes "auto", "none" or "null", and
 * backend_selected "" or "null", for None.  0, -EINVAL or -ENOMEM.
 */
int identity__set(struct kh_identity *id, const char *key, const char *value);

/*
 * run_id in the seed's "{pid}-{unix_ns}-{sequence}" form; sequence is the
 * session's number in decimal, or "partial" for a session khprof joined
 * after it began (its number was never seen).  0 or -ENOMEM.
 */
int identity__set_run_id(struct kh_identity *id, uint64_t pid, uint64_t unix_ns,
			 const char *sequence);

/*
 * Session::transition: appends the transition and its resource sample.
 * snapshot NULL means nothing could be sampled.  0, -EINVAL or -ENOMEM.
 */
int profile__add_transition(struct kh_profile *p, uint32_t state, uint64_t elapsed_ns,
			    const struct kh_resource_snapshot *snapshot);

/*
 * Stores one stage total, keeping stages in wire order and leaving out
 * all-zero stages like the seed's take_measurements_from.  0 or -EINVAL.
 */
int profile__set_stage(struct kh_profile *p, uint32_t stage, uint64_t elapsed_ns,
		       uint64_t calls, uint64_t attributed_ns);

/* The stage's measurement in p, or NULL when the record has none. */
const struct kh_stage_measurement *profile__find_stage(const struct kh_profile *p,
							uint32_t stage);

/*
 * The seed's bottleneck: the state with the longest elapsed time and the
 * stage with the longest elapsed time but dispatch, which wraps the matcher
 * stages and so would always win.  Iterator::max_by_key keeps the last of
 * equal maxima, so these do too.  NULL when the record has none.
 */
const struct kh_state_measurement *profile__bottleneck_state(const struct kh_profile *p);
const struct kh_stage_measurement *profile__bottleneck_stage(const struct kh_profile *p);

/*
 * Session::finish after its final transition: sets status and wall time,
 * then derives states and resources from the transitions and samples.
 * 0, -EINVAL or -ENOMEM.
 */
int profile__finish(struct kh_profile *p, uint32_t status, uint64_t wall_time_ns);

/*
 * Appends the extension's view of the sample profile__add_transition just
 * added (call it once after each).  0 or -ENOMEM.
 */
int profile__add_sample_ext(struct kh_profile *p, const struct kh_sample_ext *sample);

/*
 * After profile__finish: raises max_observed_resident_bytes and
 * max_observed_threads to the peaks khprof saw between samples, so they
 * are the true maxima of the session (docs/SCHEMA.md).  Never lowers them.
 * The first sample's peaks, from before the session, are left out.
 */
void profile__fold_peaks(struct kh_profile *p);

/* Extension mode from an enum kh_trace_mode; marks the extension present. */
int profile__set_mode(struct kh_profile *p, uint32_t mode);
/* Extension span_clock and its reason (copied); 0 or -ENOMEM. */
int profile__set_span_clock(struct kh_profile *p, const char *clock, const char *reason);

/* The seed's derivations, exposed for tests. */
struct kh_opt_f64 kh_cpu_percent(struct kh_opt_u64 start_ms, struct kh_opt_u64 finish_ms,
				 uint64_t elapsed_ns);
struct kh_opt_u64 kh_cpu_milli_percent(struct kh_opt_u64 start_ms, struct kh_opt_u64 finish_ms,
				       uint64_t elapsed_ns);

/*
 * A CPU share as khprof states it in its own tables, HTML, series and
 * trace (never in the seed's text): CPU time from the samples' ns when
 * both ends have them, else the seed's whole ms; percent of one CPU,
 * capped at 100 % x logical_cpus (capped then says so).
 */
struct kh_cpu_share {
	bool present;
	bool from_ns;   /* false: whole milliseconds, coarse for short windows */
	bool capped;    /* the raw figure exceeded 100 % x logical CPUs */
	uint64_t cpu_ns;
	double percent;
};

struct kh_cpu_share kh_cpu_share(struct kh_opt_u64 start_ns, struct kh_opt_u64 finish_ns,
				 struct kh_opt_u64 start_ms, struct kh_opt_u64 finish_ms,
				 uint64_t elapsed_ns, uint64_t logical_cpus);
/* Window i (transitions[i] to [i + 1]) of the seed's windows(2). */
struct kh_cpu_share profile__window_cpu(const struct kh_profile *p, size_t i);
/* The window of states[k] (windows running backwards yield no state); SIZE_MAX if none. */
size_t profile__state_window(const struct kh_profile *p, size_t k);
/* The whole run: first sample to last, over wall_time_ns. */
struct kh_cpu_share profile__run_cpu(const struct kh_profile *p);

#endif /* KHPROF_RECORD_H */
