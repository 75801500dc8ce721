// SPDX-License-Identifier: MIT
/*
 * OpenMetrics and Prometheus text exposition of khprof's counters.  One
 * table of families drives both formats, so the two cannot drift apart; a
 * new family (the latency histograms, say) is one more emitter below with
 * its own fixed label set.  Numbers are printed exactly: seconds from
 * integer nanoseconds as "S.NNNNNNNNN", never through a double.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openmetrics.h"
#include "outbuf.h"
#include "utf8.h"

static const char *const attribution_names[OM_ATTR_COUNT] = {
	[OM_ATTR_ROOT] = "root",
	[OM_ATTR_DECODED] = "decoded",
};

/* --- counters ------------------------------------------------------------ */

static void max_u64(bool *have, uint64_t *into, struct kh_opt_u64 v)
{
	if (!v.present)
		return;
	if (!*have || v.value > *into)
		*into = v.value;
	*have = true;
}

void om_counters__add_profile(struct om_counters *c, const struct kh_profile *p)
{
	const struct kh_resource_snapshot *start = &p->resources.start;
	const struct kh_resource_snapshot *finish = &p->resources.finish;

	for (size_t i = 0; i < p->stage_count; i++) {
		const struct kh_stage_measurement *m = &p->stages[i];
		uint64_t decoded = m->attributed_ns < m->elapsed_ns ? m->attributed_ns
								      : m->elapsed_ns;
		const struct kh_stage_dist *d;

		if (m->stage >= KH_STAGE_COUNT)
			continue;
		c->elapsed_ns[m->stage][OM_ATTR_ROOT] += m->elapsed_ns - decoded;
		c->elapsed_ns[m->stage][OM_ATTR_DECODED] += decoded;
		c->calls[m->stage] += m->calls;
		/*
		 * Only a stage the record has a histogram for joins the histogram
		 * family, its time included, so _sum and _count describe the
		 * same spans (records written before khprof.latency have none).
		 */
		d = &p->ext.latency.stages[m->stage];
		if (p->ext.latency.present && d->present && d->counts) {
			kh_span_fold__add(&c->spans[m->stage], d->counts);
			c->span_sum_ns[m->stage] += m->elapsed_ns;
		}
	}
	c->input_bytes += p->input_bytes;
	c->input_units += p->input_units;
	c->sessions_started++;
	if (p->status < KH_STATE_COUNT)
		c->sessions_ended[p->status]++;
	if (start->cpu_time_ms.present && finish->cpu_time_ms.present &&
	    finish->cpu_time_ms.value >= start->cpu_time_ms.value)
		c->session_cpu_ms += finish->cpu_time_ms.value - start->cpu_time_ms.value;
	max_u64(&c->have_peak_rss, &c->peak_rss_bytes, p->resources.max_observed_resident_bytes);
	c->probe_hits += p->ext.probe_hits;
	for (int d = 0; d < KH_DROP_COUNT; d++)
		c->drops[d] += p->ext.drops[d];
	c->identity_unreadable += p->ext.identity_unreadable;
}

void om_counters__add_slot(struct om_counters *c, const struct kh_slot_stats *s,
			   const struct kh_span_fold spans[KH_STAGE_COUNT])
{
	for (int st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_stats *m = &s->stages[st];
		uint64_t decoded = m->attributed_ns < m->elapsed_ns ? m->attributed_ns
								      : m->elapsed_ns;

		c->elapsed_ns[st][OM_ATTR_ROOT] += m->elapsed_ns - decoded;
		c->elapsed_ns[st][OM_ATTR_DECODED] += decoded;
		c->calls[st] += m->calls;
		/* A live slot always has its histograms. */
		kh_span_fold__merge(&c->spans[st], &spans[st]);
		c->span_sum_ns[st] += m->elapsed_ns;
	}
	c->input_bytes += s->input_bytes;
	c->input_units += s->input_units;
	c->probe_hits += s->probe_hits;
	for (int d = 0; d < KH_DROP_COUNT; d++)
		c->drops[d] += s->drops[d];
}

void om_counters__add(struct om_counters *dst, const struct om_counters *src)
{
	for (int st = 0; st < KH_STAGE_COUNT; st++) {
		for (int a = 0; a < OM_ATTR_COUNT; a++)
			dst->elapsed_ns[st][a] += src->elapsed_ns[st][a];
		dst->calls[st] += src->calls[st];
		kh_span_fold__merge(&dst->spans[st], &src->spans[st]);
		dst->span_sum_ns[st] += src->span_sum_ns[st];
	}
	dst->input_bytes += src->input_bytes;
	dst->input_units += src->input_units;
	dst->sessions_started += src->sessions_started;
	for (int s = 0; s < KH_STATE_COUNT; s++)
		dst->sessions_ended[s] += src->sessions_ended[s];
	dst->session_cpu_ms += src->session_cpu_ms;
	if (src->have_peak_rss)
		max_u64(&dst->have_peak_rss, &dst->peak_rss_bytes,
			(struct kh_opt_u64){ true, src->peak_rss_bytes });
	dst->probe_hits += src->probe_hits;
	for (int d = 0; d < KH_DROP_COUNT; d++)
		dst->drops[d] += src->drops[d];
	dst->identity_unreadable += src->identity_unreadable;
}

/* --- label values ------------------------------------------------------- */

/*
 * Whether the character of step bytes at s is kept: not invalid UTF-8,
 * and not a control a terminal or a reader would act on (an identity
 * value is the program's; tab stays, newline is escaped).  Others become
 * U+FFFD.
 */
static bool kept_as_is(const unsigned char *s, size_t step, bool valid)
{
	return valid && (*s == '\t' || *s == '\n' || !utf8__controls_display(s, step));
}

/* Bytes of s once invalid sequences and controls become U+FFFD. */
static size_t cleaned_width(const unsigned char *s, size_t n)
{
	size_t width = 0;

	for (size_t i = 0; i < n;) {
		bool valid;
		size_t step = utf8__scan(s + i, n - i, &valid);

		width += kept_as_is(s + i, step, valid) ? step : 3;
		i += step;
	}
	return width;
}

size_t om__escape_label_value(const char *value, char *out)
{
	static const char ellipsis[] = "\xe2\x80\xa6", replacement[] = "\xef\xbf\xbd";
	const unsigned char *s = (const unsigned char *)(value ? value : "");
	size_t n = strlen((const char *)s), kept = 0, len = 0;
	bool cut = cleaned_width(s, n) > OM_LABEL_VALUE_MAX;
	size_t limit = cut ? OM_LABEL_VALUE_MAX - 3 : OM_LABEL_VALUE_MAX;

	for (size_t i = 0; i < n;) {
		bool valid;
		size_t step = utf8__scan(s + i, n - i, &valid);
		bool kept_char = kept_as_is(s + i, step, valid);
		size_t width = kept_char ? step : 3;

		if (kept + width > limit)
			break;
		if (!kept_char) {
			memcpy(out + len, replacement, 3);
			len += 3;
		} else if (s[i] == '\\' || s[i] == '"' || s[i] == '\n') {
			out[len++] = '\\';
			out[len++] = s[i] == '\n' ? 'n' : (char)s[i];
		} else {
			memcpy(out + len, s + i, step);
			len += step;
		}
		kept += width;
		i += step;
	}
	if (cut) {
		memcpy(out + len, ellipsis, 3);
		len += 3;
	}
	out[len] = '\0';
	return len;
}

static void put_label(struct outbuf *b, const char *name, const char *value, bool first)
{
	char escaped[OM_LABEL_VALUE_ESCAPED_MAX];

	om__escape_label_value(value, escaped);
	outbuf__printf(b, "%s%s=\"%s\"", first ? "" : ",", name, escaped);
}

int om_info_set__add(struct om_info_set *set, const struct kh_profile *p)
{
	const struct kh_identity *id = &p->identity;
	const char *cache = kh_cache_state__name(id->cache_state);
	const char *daemon = kh_daemon_state__name(id->daemon_state);
	struct outbuf b;
	char *labels;

	outbuf__init(&b);
	/*
	 * run_id is left out: one series per run would grow without bound; so
	 * is the mode, which a live session only gets when it ends.
	 */
	put_label(&b, "binary_version", id->binary_version, true);
	put_label(&b, "detector_digest", id->detector_digest, false);
	put_label(&b, "config_digest", id->config_digest, false);
	put_label(&b, "source_kind", id->source_kind, false);
	put_label(&b, "workload_class", id->workload_class, false);
	put_label(&b, "backend_requested", id->backend_requested, false);
	put_label(&b, "backend_selected", id->backend_selected ? id->backend_selected : "", false);
	put_label(&b, "cache_state", cache ? cache : "unknown", false);
	put_label(&b, "daemon_state", daemon ? daemon : "off", false);
	labels = outbuf__finish(&b);
	if (!labels)
		return -ENOMEM;
	for (size_t i = 0; i < set->count; i++) {
		if (strcmp(set->labels[i], labels) == 0) {
			free(labels);
			return 0;
		}
	}
	if (set->count == OM_INFO_MAX) {
		set->folded++;
		free(labels);
		return 0;
	}
	set->labels[set->count++] = labels;
	return 0;
}

void om_info_set__free(struct om_info_set *set)
{
	for (size_t i = 0; i < set->count; i++)
		free(set->labels[i]);
	memset(set, 0, sizeof(*set));
}

/* --- families ------------------------------------------------------------ */

enum om_type { OM_COUNTER, OM_GAUGE, OM_INFO, OM_HISTOGRAM };

struct family {
	const char *name; /* OpenMetrics family name, unit suffix included */
	enum om_type type;
	const char *unit; /* NULL: none */
	const char *help; /* no backslash, quote or newline: both formats take it as is */
};

/*
 * Metadata lines.  OpenMetrics names a counter's family without _total and
 * its samples with it; the older format names both with _total, and knows
 * no info type (a gauge of 1 by convention) and no # UNIT.
 */
static void family_begin(struct outbuf *b, enum om_format format, const struct family *f)
{
	static const char *const om_types[] = { "counter", "gauge", "info", "histogram" };
	static const char *const text_types[] = { "counter", "gauge", "gauge", "histogram" };
	static const char *const text_suffix[] = { "_total", "", "_info", "" };

	if (format == OM_FORMAT_OPENMETRICS) {
		outbuf__printf(b, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name,
			       om_types[f->type]);
		if (f->unit)
			outbuf__printf(b, "# UNIT %s %s\n", f->name, f->unit);
		return;
	}
	outbuf__printf(b, "# HELP %s%s %s\n# TYPE %s%s %s\n", f->name, text_suffix[f->type],
		       f->help, f->name, text_suffix[f->type], text_types[f->type]);
}

/* name{labels} value; labels NULL or "" for none. */
static void sample(struct outbuf *b, const struct family *f, const char *labels,
		   const char *value)
{
	static const char *const suffix[] = { "_total", "", "_info", "" };

	outbuf__printf(b, "%s%s%s%s%s %s\n", f->name, suffix[f->type],
		       labels && *labels ? "{" : "", labels ? labels : "",
		       labels && *labels ? "}" : "", value);
}

static void sample_u64(struct outbuf *b, const struct family *f, const char *labels,
		       uint64_t value)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRIu64, value);
	sample(b, f, labels, text);
}

/* Exact seconds from an integer count of sub-second units. */
static void sample_scaled(struct outbuf *b, const struct family *f, const char *labels,
			  uint64_t value, uint64_t per_second, int digits)
{
	char text[48];

	snprintf(text, sizeof(text), "%" PRIu64 ".%0*" PRIu64, value / per_second, digits,
		 value % per_second);
	sample(b, f, labels, text);
}

/*
 * A group's samples carry its container label first (--serve of a watch:
 * docs/FLEET.md), then the family's own; prefix "" for none.
 */
static void join_labels(char *out, size_t len, const char *prefix, const char *own)
{
	snprintf(out, len, "%s%s%s", prefix, prefix[0] && own[0] ? "," : "", own);
}

/* A family of one sample per group, no labels of its own. */
static void family_u64(struct outbuf *b, enum om_format format, const struct family *f,
		       const struct om_group *g, size_t n, const char *const *prefix,
		       uint64_t (*value)(const struct om_group *g))
{
	family_begin(b, format, f);
	for (size_t i = 0; i < n; i++)
		sample_u64(b, f, prefix[i], value(&g[i]));
}

/* The same in seconds from milliseconds. */
static void family_ms(struct outbuf *b, enum om_format format, const struct family *f,
		      const struct om_group *g, size_t n, const char *const *prefix,
		      uint64_t (*ms)(const struct om_group *g))
{
	family_begin(b, format, f);
	for (size_t i = 0; i < n; i++)
		sample_scaled(b, f, prefix[i], ms(&g[i]), 1000, 3);
}

/* A family of a sample per name of a wire enum and group, the name as its label. */
static void family_by_name(struct outbuf *b, enum om_format format, const struct family *f,
			   const char *label, const char *(*name)(uint32_t),
			   const struct om_group *g, size_t n, const char *const *prefix,
			   const uint64_t *(*values)(const struct om_group *g), int count)
{
	char own[64], labels[OM_LABEL_VALUE_ESCAPED_MAX + 96];

	family_begin(b, format, f);
	for (size_t j = 0; j < n; j++) {
		for (int i = 0; i < count; i++) {
			snprintf(own, sizeof(own), "%s=\"%s\"", label, name((uint32_t)i));
			join_labels(labels, sizeof(labels), prefix[j], own);
			sample_u64(b, f, labels, values(&g[j])[i]);
		}
	}
}

static const struct family elapsed_family = {
	"khprof_stage_elapsed_seconds", OM_COUNTER, "seconds",
	"Summed span time per scanner stage, nested spans each counted fully, by attribution "
	"(root input or decoded input)"
};
static const struct family calls_family = {
	"khprof_stage_calls", OM_COUNTER, NULL, "Completed spans per scanner stage"
};
static const struct family span_family = {
	"khprof_stage_span_seconds", OM_HISTOGRAM, "seconds",
	"Span lengths per scanner stage as measured (bounds: 4^k - 1 ns, exact bucket edges; "
	"docs/FLEET.md); _sum is the stage's elapsed time"
};
static const struct family bytes_family = {
	"khprof_input_bytes", OM_COUNTER, "bytes", "Source bytes the scanner processed"
};
static const struct family units_family = {
	"khprof_input_units", OM_COUNTER, NULL,
	"Files, objects or chunks the scanner processed"
};
static const struct family started_family = {
	"khprof_sessions_started", OM_COUNTER, NULL, "Scanner sessions khprof saw start"
};
static const struct family ended_family = {
	"khprof_sessions_ended", OM_COUNTER, NULL,
	"Scanner sessions that ended, by the final status their program gave (any run state)"
};
static const struct family cpu_family = {
	"khprof_session_cpu_seconds", OM_COUNTER, "seconds",
	"CPU time of the traced process inside finished sessions"
};
static const struct family rss_family = {
	"khprof_session_peak_resident_bytes", OM_GAUGE, "bytes",
	"Highest resident set size observed in any finished session"
};
static const struct family hits_family = {
	"khprof_probe_hits", OM_COUNTER, NULL, "Probe firings handled in the kernel"
};
static const struct family drops_family = {
	"khprof_drops", OM_COUNTER, NULL,
	"Spans or events khprof could not count, by reason (docs/SCHEMA.md)"
};
static const struct family unreadable_family = {
	"khprof_identity_unreadable", OM_COUNTER, NULL,
	"Identity probes whose key or value khprof could not read (docs/SCHEMA.md)"
};
static const struct family info_family = {
	"khprof_run", OM_INFO, NULL, "Identity of the traced scanner runs (RunIdentity)"
};
static const struct family folded_family = {
	"khprof_run_identities_folded", OM_COUNTER, NULL,
	"Sessions whose identity is not among the khprof_run_info series (at most 8 "
	"distinct identities are)"
};
static const struct family open_family = {
	"khprof_sessions_open", OM_GAUGE, NULL, "Sessions running now, by current macro state"
};
static const struct family process_cpu_family = {
	"khprof_process_cpu_seconds", OM_COUNTER, "seconds",
	"CPU time of the traced processes since they started (those gone at their last "
	"reading)"
};
static const struct family process_rss_family = {
	"khprof_process_resident_bytes", OM_GAUGE, "bytes",
	"Resident set size of the traced processes now"
};
static const struct family ringbuf_used_family = {
	"khprof_ringbuf_used_bytes", OM_GAUGE, "bytes",
	"Event ring buffer bytes written by the kernel and not yet read by khprof"
};
static const struct family ringbuf_size_family = {
	"khprof_ringbuf_size_bytes", OM_GAUGE, "bytes", "Event ring buffer capacity"
};
static const struct family rejected_family = {
	"khprof_http_requests_rejected", OM_COUNTER, NULL,
	"Connections to the metrics server that got no metrics, by reason (docs/FLEET.md)"
};

/* Each group's values, for the emitters above. */
static const uint64_t *calls_of(const struct om_group *g) { return g->c->calls; }
static const uint64_t *ended_of(const struct om_group *g) { return g->c->sessions_ended; }
static const uint64_t *drops_of(const struct om_group *g) { return g->c->drops; }
static const uint64_t *open_of(const struct om_group *g) { return g->live->open_by_state; }
static uint64_t bytes_of(const struct om_group *g) { return g->c->input_bytes; }
static uint64_t units_of(const struct om_group *g) { return g->c->input_units; }
static uint64_t started_of(const struct om_group *g) { return g->c->sessions_started; }
static uint64_t cpu_of(const struct om_group *g) { return g->c->session_cpu_ms; }
static uint64_t hits_of(const struct om_group *g) { return g->c->probe_hits; }
static uint64_t unreadable_of(const struct om_group *g) { return g->c->identity_unreadable; }
static uint64_t process_cpu_of(const struct om_group *g) { return g->live->process_cpu_ms; }

static void render_stages(struct outbuf *b, enum om_format format, const struct om_group *g,
			  size_t n, const char *const *prefix)
{
	char own[96], labels[OM_LABEL_VALUE_ESCAPED_MAX + 128];

	family_begin(b, format, &elapsed_family);
	for (size_t j = 0; j < n; j++) {
		for (int st = 0; st < KH_STAGE_COUNT; st++) {
			for (int a = 0; a < OM_ATTR_COUNT; a++) {
				snprintf(own, sizeof(own), "stage=\"%s\",attribution=\"%s\"",
					 kh_stage__name(st), attribution_names[a]);
				join_labels(labels, sizeof(labels), prefix[j], own);
				sample_scaled(b, &elapsed_family, labels, g[j].c->elapsed_ns[st][a],
					      1000000000ull, 9);
			}
		}
	}
	family_by_name(b, format, &calls_family, "stage", kh_stage__name, g, n, prefix, calls_of,
		       KH_STAGE_COUNT);
}

/*
 * bound_ns as the shortest decimal that reads back as the same double, in
 * the form Go's strconv.FormatFloat(v, 'g', -1, 64) gives (1.023e-06,
 * 0.000262143): the le spelling Prometheus itself writes, so an le label
 * is the same string whichever side formats it.
 */
static void format_le(uint64_t bound_ns, char *out, size_t len)
{
	double v = (double)bound_ns / 1e9;

	for (int digits = 1; digits <= 17; digits++) {
		snprintf(out, len, "%.*g", digits, v);
		if (strtod(out, NULL) == v)
			return;
	}
}

/*
 * The histogram family, one metric per stage (and group) that had spans:
 * cumulative _bucket counts on the fixed bounds and +Inf, _count (== the
 * +Inf bucket), _sum.  Stages without spans are left out: a scanner using
 * 14 stages exposes 14 x 19 series, not 25 x 19.
 */
static void render_spans(struct outbuf *b, enum om_format format, const struct om_group *g,
			 size_t n, const char *const *prefix)
{
	const struct family *f = &span_family;
	char le[KH_SPAN_BOUNDS][32], stage[OM_LABEL_VALUE_ESCAPED_MAX + 64];

	family_begin(b, format, f);
	for (unsigned int j = 0; j < KH_SPAN_BOUNDS; j++)
		format_le(kh_span_bound_ns(j), le[j], sizeof(le[j]));
	for (size_t k = 0; k < n; k++) {
		const struct om_counters *c = g[k].c;

		for (int st = 0; st < KH_STAGE_COUNT; st++) {
			const struct kh_span_fold *fold = &c->spans[st];
			uint64_t total = kh_span_fold__total(fold), cumulative = 0;

			if (total == 0)
				continue;
			snprintf(stage, sizeof(stage), "%s%sstage=\"%s\"", prefix[k],
				 prefix[k][0] ? "," : "", kh_stage__name(st));
			for (unsigned int j = 0; j < KH_SPAN_BOUNDS; j++) {
				cumulative += fold->counts[j];
				outbuf__printf(b, "%s_bucket{%s,le=\"%s\"} %" PRIu64 "\n", f->name,
					       stage, le[j], cumulative);
			}
			outbuf__printf(b, "%s_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", f->name, stage,
				       total);
			outbuf__printf(b, "%s_count{%s} %" PRIu64 "\n", f->name, stage, total);
			outbuf__printf(b, "%s_sum{%s} %" PRIu64 ".%09" PRIu64 "\n", f->name, stage,
				       c->span_sum_ns[st] / (uint64_t)1000000000,
				       c->span_sum_ns[st] % (uint64_t)1000000000);
		}
	}
}

static void render_sessions(struct outbuf *b, enum om_format format, const struct om_group *g,
			    size_t n, const char *const *prefix)
{
	bool peak = false;

	family_u64(b, format, &bytes_family, g, n, prefix, bytes_of);
	family_u64(b, format, &units_family, g, n, prefix, units_of);
	family_u64(b, format, &started_family, g, n, prefix, started_of);
	family_by_name(b, format, &ended_family, "status", kh_run_state__name, g, n, prefix,
		       ended_of, KH_STATE_COUNT);
	family_ms(b, format, &cpu_family, g, n, prefix, cpu_of);
	for (size_t i = 0; i < n; i++)
		peak = peak || g[i].c->have_peak_rss;
	if (!peak)
		return;
	family_begin(b, format, &rss_family);
	for (size_t i = 0; i < n; i++)
		if (g[i].c->have_peak_rss)
			sample_u64(b, &rss_family, prefix[i], g[i].c->peak_rss_bytes);
}

static void render_health(struct outbuf *b, enum om_format format, const struct om_group *g,
			  size_t n, const char *const *prefix)
{
	family_u64(b, format, &hits_family, g, n, prefix, hits_of);
	family_by_name(b, format, &drops_family, "reason", kh_drop__name, g, n, prefix, drops_of,
		       KH_DROP_COUNT);
	family_u64(b, format, &unreadable_family, g, n, prefix, unreadable_of);
}

static void render_info(struct outbuf *b, enum om_format format, const struct om_info_set *info)
{
	if (!info || info->count == 0)
		return;
	family_begin(b, format, &info_family);
	for (size_t i = 0; i < info->count; i++)
		sample(b, &info_family, info->labels[i], "1");
	family_begin(b, format, &folded_family);
	sample_u64(b, &folded_family, NULL, info->folded);
}

/* Live families: per group the sessions and processes, khprof's own health once. */
static void render_live(struct outbuf *b, enum om_format format, const struct om_group *g,
			size_t n, const char *const *prefix, const struct om_live *health)
{
	bool cpu = false, rss = false;

	family_by_name(b, format, &open_family, "state", kh_run_state__name, g, n, prefix,
		       open_of, KH_STATE_COUNT);
	for (size_t i = 0; i < n; i++) {
		cpu = cpu || g[i].live->have_process;
		rss = rss || g[i].live->have_process_rss;
	}
	if (cpu)
		family_ms(b, format, &process_cpu_family, g, n, prefix, process_cpu_of);
	if (rss) {
		family_begin(b, format, &process_rss_family);
		for (size_t i = 0; i < n; i++)
			if (g[i].live->have_process_rss)
				sample_u64(b, &process_rss_family, prefix[i],
					   g[i].live->process_rss_bytes);
	}
	family_begin(b, format, &ringbuf_used_family);
	sample_u64(b, &ringbuf_used_family, NULL, health->ringbuf_used_bytes);
	family_begin(b, format, &ringbuf_size_family);
	sample_u64(b, &ringbuf_size_family, NULL, health->ringbuf_size_bytes);
	family_begin(b, format, &rejected_family);
	for (uint32_t i = 0; i < HTTPD_REJECT_COUNT; i++) {
		char labels[64];

		snprintf(labels, sizeof(labels), "reason=\"%s\"", httpd__reject_name(i));
		sample_u64(b, &rejected_family, labels, health->http_rejected[i]);
	}
}

char *om__render_groups(const struct om_group *groups, size_t count,
			const struct om_info_set *info, const struct om_live *health,
			enum om_format format)
{
	char (*labels)[OM_LABEL_VALUE_ESCAPED_MAX + 16] = calloc(count ? count : 1, sizeof(*labels));
	const char **prefix = calloc(count ? count : 1, sizeof(*prefix));
	struct outbuf b;
	char *text = NULL;

	if (!labels || !prefix)
		goto out;
	for (size_t i = 0; i < count; i++) {
		char escaped[OM_LABEL_VALUE_ESCAPED_MAX];

		if (groups[i].container) {
			om__escape_label_value(groups[i].container, escaped);
			snprintf(labels[i], sizeof(labels[i]), "container=\"%s\"", escaped);
		}
		prefix[i] = labels[i];
	}
	outbuf__init(&b);
	render_stages(&b, format, groups, count, prefix);
	render_spans(&b, format, groups, count, prefix);
	render_sessions(&b, format, groups, count, prefix);
	render_health(&b, format, groups, count, prefix);
	render_info(&b, format, info);
	if (health)
		render_live(&b, format, groups, count, prefix, health);
	if (format == OM_FORMAT_OPENMETRICS)
		outbuf__puts(&b, "# EOF\n");
	text = outbuf__finish(&b);
out:
	free(labels);
	free(prefix);
	return text;
}

char *om__render(const struct om_counters *c, const struct om_info_set *info,
		 const struct om_live *live, enum om_format format)
{
	static const struct om_live none;
	struct om_group g = { NULL, c, live ? live : &none };

	return om__render_groups(&g, 1, info, live, format);
}

const char *om__content_type(enum om_format format)
{
	return format == OM_FORMAT_OPENMETRICS
		       ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
		       : "text/plain; version=0.0.4; charset=utf-8";
}

enum om_format om__format_for_accept(const char *accept)
{
	return accept && strstr(accept, "application/openmetrics-text") ? OM_FORMAT_OPENMETRICS
									 : OM_FORMAT_PROMETHEUS;
}
