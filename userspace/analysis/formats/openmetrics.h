/* SPDX-License-Identifier: MIT */
/*
 * openmetrics.h - khprof's metric families in the OpenMetrics 1.0 text
 * format and in Prometheus's older text format 0.0.4, from finished records
 * (`khprof export`) or from a live trace (`--serve`).  docs/FLEET.md lists
 * the families; no libbpf, no root.
 *
 * Cardinality is fixed by the wire enums: stage (25) x attribution (2),
 * session status and macro state (8 each), drop reason (8), rejected
 * request reason (HTTPD_REJECT_COUNT), histogram
 * series (19 per stage with spans: 16 bounds, +Inf, _count, _sum); identities are
 * capped at OM_INFO_MAX series, the sessions of any other counted in one
 * counter.  No label
 * carries a process id or run id, so a long-running daemon's series do not
 * grow with its sessions.
 */
#ifndef KHPROF_OPENMETRICS_H
#define KHPROF_OPENMETRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "httpd.h"         /* the reasons a request to --serve is rejected */
#include "khprof_shared.h" /* struct kh_slot_stats: --serve reads the slots */
#include "record.h"

/* Bytes of a label value before escaping; longer values are cut (with "…"). */
#define OM_LABEL_VALUE_MAX 128
/* Distinct identities shown as khprof_run_info series; more are folded. */
#define OM_INFO_MAX 8

enum om_format {
	/* application/openmetrics-text; version=1.0.0: counters' family names
	 * without _total, # UNIT, info type, # EOF. */
	OM_FORMAT_OPENMETRICS = 0,
	/* text/plain; version=0.0.4, what promtool check metrics and the node
	 * exporter's textfile collector read: _total on counter families, the
	 * identity as a gauge. */
	OM_FORMAT_PROMETHEUS = 1,
};

enum om_attribution { OM_ATTR_ROOT = 0, OM_ATTR_DECODED = 1, OM_ATTR_COUNT };

/* Everything that only grows: summed over sessions, finished and open. */
struct om_counters {
	uint64_t elapsed_ns[KH_STAGE_COUNT][OM_ATTR_COUNT];
	uint64_t calls[KH_STAGE_COUNT];
	uint64_t input_bytes;
	uint64_t input_units;
	uint64_t sessions_started;
	uint64_t sessions_ended[KH_STATE_COUNT]; /* by final status */
	uint64_t session_cpu_ms;                 /* process CPU inside finished sessions */
	bool have_peak_rss;
	uint64_t peak_rss_bytes;                 /* a gauge: the highest seen */
	uint64_t probe_hits;
	uint64_t drops[KH_DROP_COUNT];
	uint64_t identity_unreadable; /* identity probes whose strings could not be read */
	/*
	 * khprof_stage_span_seconds: the spans of every histogram added, on
	 * the fixed bounds (hist.h), and the same spans' elapsed time (bias
	 * removed, both attributions) as its _sum.
	 */
	struct kh_span_fold spans[KH_STAGE_COUNT];
	uint64_t span_sum_ns[KH_STAGE_COUNT];
};

/* Distinct identities, each an escaped, bounded label set (owned). */
struct om_info_set {
	char *labels[OM_INFO_MAX];
	size_t count;
	uint64_t folded; /* sessions whose identity came after OM_INFO_MAX others */
};

/* What only a live trace knows: current state and khprof's own health. */
struct om_live {
	uint64_t open_by_state[KH_STATE_COUNT]; /* open sessions by macro state */
	bool have_process;
	uint64_t process_cpu_ms;      /* traced processes' CPU since they started */
	bool have_process_rss;
	uint64_t process_rss_bytes;
	uint64_t ringbuf_used_bytes;
	uint64_t ringbuf_size_bytes;
	/* Connections to --serve that got no metrics, by reason (httpd.h). */
	uint64_t http_rejected[HTTPD_REJECT_COUNT];
};

/* A finished record: its stages, input, status, CPU, RSS and health. */
void om_counters__add_profile(struct om_counters *c, const struct kh_profile *p);
/*
 * A live session slot, summed over CPUs, with the span bias already taken
 * off elapsed and attributed time, and its histograms folded (spans).
 */
void om_counters__add_slot(struct om_counters *c, const struct kh_slot_stats *s,
			   const struct kh_span_fold spans[KH_STAGE_COUNT]);
void om_counters__add(struct om_counters *dst, const struct om_counters *src);

/*
 * Adds p's identity unless an equal one is there; once OM_INFO_MAX are,
 * counts p as folded instead.  0 or -ENOMEM.
 */
int om_info_set__add(struct om_info_set *set, const struct kh_profile *p);
void om_info_set__free(struct om_info_set *set);

/*
 * The exposition: every family, every fixed label value (zeros included,
 * so a series never appears late and loses its first increase to rate()),
 * live families only when live is not NULL.  Malloc'd, or NULL on ENOMEM.
 */
char *om__render(const struct om_counters *c, const struct om_info_set *info,
		 const struct om_live *live, enum om_format format);

/*
 * One container's share of a live watch (`attach --all` or `--exe` with
 * --serve): its processes' counters and live state, under the label
 * container="VALUE" on every family but the identities and khprof's own
 * health (docs/FLEET.md).  container NULL: no such label.
 */
struct om_group {
	const char *container;
	const struct om_counters *c;
	const struct om_live *live; /* open sessions, process CPU and RSS */
};

/*
 * om__render for groups: each group's samples with its label first, the
 * identities and health (live's ring buffer and HTTP counts) once.
 * health NULL: no live families.
 */
char *om__render_groups(const struct om_group *groups, size_t count,
			const struct om_info_set *info, const struct om_live *health,
			enum om_format format);

/*
 * value as an OpenMetrics label value: at most OM_LABEL_VALUE_MAX bytes of
 * it, cut at a character boundary and ended with "…" when longer, invalid
 * UTF-8 replaced by U+FFFD, then \ " and newline escaped.  out needs
 * OM_LABEL_VALUE_ESCAPED_MAX bytes; returns the length written.
 */
#define OM_LABEL_VALUE_ESCAPED_MAX (2 * OM_LABEL_VALUE_MAX + 1)
size_t om__escape_label_value(const char *value, char *out);

/* "name" as the HTTP Content-Type of format. */
const char *om__content_type(enum om_format format);
/* The format an HTTP Accept header asks for (OpenMetrics if it names it). */
enum om_format om__format_for_accept(const char *accept);

#endif /* KHPROF_OPENMETRICS_H */
