// SPDX-License-Identifier: MIT
/*
 * record.c - assembly of a RunProfile the way the seed's Session builds one.
 *
 * The derivations (state_measurements, resource_usage, cpu_percent,
 * cpu_milli_percent, max_option) follow the seed's arithmetic operation for
 * operation, including its u128 intermediate, so that numbers computed from
 * outside the process equal the ones the seed would have written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "record.h"
#include "series.h"
#include "utf8.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))


int kh_parse_u64(const char *text, uint64_t *out)
{
	uint64_t value = 0;

	if (!text || !*text)
		return -EINVAL;
	for (const char *c = text; *c; c++) {
		unsigned digit = (unsigned)(*c - '0');

		if (digit > 9)
			return -EINVAL;
		if (value > (UINT64_MAX - digit) / 10)
			return -EINVAL;
		value = value * 10 + digit;
	}
	*out = value;
	return 0;
}

static int string__replace(char **slot, const char *value)
{
	char *copy = utf8__dup_lossy(value);

	if (!copy)
		return -ENOMEM;
	free(*slot);
	*slot = copy;
	return 0;
}

static uint64_t logical_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	/* The seed falls back to 1 when parallelism is unknown. */
	return n > 0 ? (uint64_t)n : 1;
}

/* The RunIdentity strings that are never None: "unknown" until set. */
static const struct {
	const char *key;
	size_t offset;
} identity_strings[] = {
	{ "run_id", offsetof(struct kh_identity, run_id) },
	{ "binary_version", offsetof(struct kh_identity, binary_version) },
	{ "detector_digest", offsetof(struct kh_identity, detector_digest) },
	{ "config_digest", offsetof(struct kh_identity, config_digest) },
	{ "source_kind", offsetof(struct kh_identity, source_kind) },
	{ "workload_class", offsetof(struct kh_identity, workload_class) },
	{ "backend_requested", offsetof(struct kh_identity, backend_requested) },
};

static char **identity__string_at(struct kh_identity *id, size_t i)
{
	return (char **)((char *)id + identity_strings[i].offset);
}

static char **identity__string_slot(struct kh_identity *id, const char *key)
{
	for (size_t i = 0; i < ARRAY_SIZE(identity_strings); i++) {
		if (strcmp(identity_strings[i].key, key) == 0)
			return identity__string_at(id, i);
	}
	return NULL;
}

int profile__init(struct kh_profile *p)
{
	memset(p, 0, sizeof(*p));
	p->identity.cache_state = KH_CACHE_UNKNOWN;
	p->identity.daemon_state = KH_DAEMON_OFF;
	p->identity.logical_cpus = logical_cpus();
	p->status = KH_STATE_CREATED;
	p->schema = strdup(KH_PROFILE_SCHEMA);
	if (!p->schema)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(identity_strings); i++) {
		if (string__replace(identity__string_at(&p->identity, i), "unknown"))
			return -ENOMEM;
	}
	return 0;
}

static void identity__free(struct kh_identity *id)
{
	for (size_t i = 0; i < ARRAY_SIZE(identity_strings); i++)
		free(*identity__string_at(id, i));
	free(id->backend_selected);
}

void kh_refused_site__free(struct kh_refused_site *site)
{
	free(site->file);
	free(site->provider);
	free(site->name);
	free(site->refusal);
	free(site->reason);
}

void profile__free(struct kh_profile *p)
{
	if (!p)
		return;
	free(p->schema);
	identity__free(&p->identity);
	free(p->transitions);
	free(p->states);
	free(p->resource_samples);
	free(p->ext.mode);
	free(p->ext.span_clock);
	free(p->ext.span_clock_reason);
	series__free(&p->ext.series);
	free(p->ext.samples);
	free(p->ext.process_end);
	free(p->ext.attach_state);
	free(p->ext.cgroup);
	free(p->ext.container_id);
	free(p->ext.kernel_release);
	for (size_t i = 0; i < p->ext.kernel_degraded_count; i++)
		free(p->ext.kernel_degraded[i]);
	free(p->ext.kernel_degraded);
	kh_latency__free(&p->ext.latency);
	kh_stacks__free(&p->ext.stacks);
	for (size_t i = 0; i < p->ext.refused_site_count; i++)
		kh_refused_site__free(&p->ext.refused_sites[i]);
	free(p->ext.refused_sites);
	memset(p, 0, sizeof(*p));
}

int profile__add_refused_site(struct kh_profile *p, const struct kh_refused_site *site)
{
	struct kh_refused_site copy = { .address = site->address }, *grown;

	if (string__replace(&copy.file, site->file ? site->file : "") ||
	    string__replace(&copy.provider, site->provider ? site->provider : "") ||
	    string__replace(&copy.name, site->name ? site->name : "") ||
	    string__replace(&copy.refusal, site->refusal ? site->refusal : "") ||
	    string__replace(&copy.reason, site->reason ? site->reason : "") ||
	    !(grown = realloc(p->ext.refused_sites,
			      (p->ext.refused_site_count + 1) * sizeof(*grown)))) {
		kh_refused_site__free(&copy);
		return -ENOMEM;
	}
	p->ext.refused_sites = grown;
	grown[p->ext.refused_site_count++] = copy;
	return 0;
}

static int identity__set_reader_threads(struct kh_identity *id, const char *value)
{
	uint64_t n;

	if (!strcmp(value, "auto") || !strcmp(value, "none") || !strcmp(value, "null")) {
		id->reader_threads.present = false;
		id->reader_threads.value = 0;
		return 0;
	}
	if (kh_parse_u64(value, &n))
		return -EINVAL;
	id->reader_threads.present = true;
	id->reader_threads.value = n;
	return 0;
}

static int identity__set_backend_selected(struct kh_identity *id, const char *value)
{
	if (!*value || !strcmp(value, "null")) {
		free(id->backend_selected);
		id->backend_selected = NULL;
		return 0;
	}
	return string__replace(&id->backend_selected, value);
}

static int identity__set_enum(uint32_t *slot, const char *value,
			      int (*parse)(const char *, uint32_t *))
{
	uint32_t parsed;

	if (parse(value, &parsed))
		return -EINVAL;
	*slot = parsed;
	return 0;
}

int identity__set(struct kh_identity *id, const char *key, const char *value)
{
	char **slot;
	uint32_t state;
	int err;

	if (!id || !key || !value)
		return -EINVAL;
	slot = identity__string_slot(id, key);
	if (slot)
		return string__replace(slot, value);
	if (!strcmp(key, "backend_selected"))
		return identity__set_backend_selected(id, value);
	if (!strcmp(key, "reader_threads"))
		return identity__set_reader_threads(id, value);
	if (!strcmp(key, "scanner_threads"))
		return kh_parse_u64(value, &id->scanner_threads);
	if (!strcmp(key, "logical_cpus"))
		return kh_parse_u64(value, &id->logical_cpus);
	if (!strcmp(key, "cache_state")) {
		err = identity__set_enum(&state, value, kh_cache_state__parse);
		if (!err)
			id->cache_state = (enum kh_cache_state)state;
		return err;
	}
	if (!strcmp(key, "daemon_state")) {
		err = identity__set_enum(&state, value, kh_daemon_state__parse);
		if (!err)
			id->daemon_state = (enum kh_daemon_state)state;
		return err;
	}
	return -EINVAL;
}

int identity__set_run_id(struct kh_identity *id, uint64_t pid, uint64_t unix_ns,
			 const char *sequence)
{
	char text[2 * 21 + 32];

	snprintf(text, sizeof(text), "%llu-%llu-%s", (unsigned long long)pid,
		 (unsigned long long)unix_ns, sequence);
	return string__replace(&id->run_id, text);
}

int profile__add_transition(struct kh_profile *p, uint32_t state, uint64_t elapsed_ns,
			    const struct kh_resource_snapshot *snapshot)
{
	static const struct kh_resource_snapshot nothing;
	struct kh_resource_sample *sample;

	if (state >= KH_STATE_COUNT)
		return -EINVAL;
	if (array__reserve((void **)&p->transitions, &p->transition_cap,
			   p->transition_count + 1, sizeof(*p->transitions)) ||
	    array__reserve((void **)&p->resource_samples, &p->resource_sample_cap,
			   p->resource_sample_count + 1, sizeof(*p->resource_samples)))
		return -ENOMEM;
	p->transitions[p->transition_count++] = (struct kh_transition){ state, elapsed_ns };
	sample = &p->resource_samples[p->resource_sample_count++];
	sample->state = state;
	sample->elapsed_ns = elapsed_ns;
	sample->snapshot = snapshot ? *snapshot : nothing;
	return 0;
}

/* Index of stage in p->stages, or where it belongs in wire order. */
static size_t stage__slot(const struct kh_profile *p, uint32_t stage)
{
	size_t i = 0;

	while (i < p->stage_count && p->stages[i].stage < stage)
		i++;
	return i;
}

/* A scan: records read back need not keep the wire order profile__set_stage keeps. */
const struct kh_stage_measurement *profile__find_stage(const struct kh_profile *p,
							uint32_t stage)
{
	for (size_t i = 0; i < p->stage_count; i++)
		if (p->stages[i].stage == stage)
			return &p->stages[i];
	return NULL;
}

const struct kh_state_measurement *profile__bottleneck_state(const struct kh_profile *p)
{
	const struct kh_state_measurement *best = NULL;

	for (size_t i = 0; i < p->state_count; i++)
		if (!best || p->states[i].elapsed_ns >= best->elapsed_ns)
			best = &p->states[i];
	return best;
}

const struct kh_stage_measurement *profile__bottleneck_stage(const struct kh_profile *p)
{
	const struct kh_stage_measurement *best = NULL;

	for (size_t i = 0; i < p->stage_count; i++) {
		if (p->stages[i].stage == KH_STAGE_BACKEND_DISPATCH)
			continue;
		if (!best || p->stages[i].elapsed_ns >= best->elapsed_ns)
			best = &p->stages[i];
	}
	return best;
}

int profile__set_stage(struct kh_profile *p, uint32_t stage, uint64_t elapsed_ns,
		       uint64_t calls, uint64_t attributed_ns)
{
	bool zero = elapsed_ns == 0 && calls == 0 && attributed_ns == 0;
	struct kh_stage_measurement *slot;
	bool exists;
	size_t i;

	if (stage >= KH_STAGE_COUNT)
		return -EINVAL;
	i = stage__slot(p, stage);
	slot = &p->stages[i];
	exists = i < p->stage_count && slot->stage == stage;
	if (zero) {
		if (exists) {
			memmove(slot, slot + 1, (p->stage_count - i - 1) * sizeof(*slot));
			p->stage_count--;
		}
		return 0;
	}
	if (!exists) {
		/* Stages are unique, so a full array already holds this one. */
		if (p->stage_count >= KH_STAGE_COUNT)
			return -EINVAL;
		memmove(slot + 1, slot, (p->stage_count - i) * sizeof(*slot));
		p->stage_count++;
	}
	*slot = (struct kh_stage_measurement){ stage, elapsed_ns, calls, attributed_ns };
	return 0;
}

static struct kh_opt_u64 opt_u64(uint64_t value)
{
	return (struct kh_opt_u64){ true, value };
}

static struct kh_opt_u64 max_option(struct kh_opt_u64 left, struct kh_opt_u64 right)
{
	if (left.present && right.present)
		return opt_u64(left.value > right.value ? left.value : right.value);
	return left.present ? left : right;
}

struct kh_opt_f64 kh_cpu_percent(struct kh_opt_u64 start_ms, struct kh_opt_u64 finish_ms,
				 uint64_t elapsed_ns)
{
	struct kh_opt_f64 none = { false, 0.0 };
	double wall_ms;

	if (!kh_opt_u64__ordered(start_ms, finish_ms))
		return none;
	wall_ms = (double)elapsed_ns / 1000000.0;
	if (!(wall_ms > 0.0))
		return none;
	return (struct kh_opt_f64){ true,
				    (double)(finish_ms.value - start_ms.value) * 100.0 / wall_ms };
}

struct kh_opt_u64 kh_cpu_milli_percent(struct kh_opt_u64 start_ms, struct kh_opt_u64 finish_ms,
				       uint64_t elapsed_ns)
{
	struct kh_opt_u64 none = { false, 0 };
	unsigned __int128 milli;

	if (elapsed_ns == 0 || !kh_opt_u64__ordered(start_ms, finish_ms))
		return none;
	milli = (unsigned __int128)(finish_ms.value - start_ms.value) * 100000000000u / elapsed_ns;
	return opt_u64(milli > UINT64_MAX ? UINT64_MAX : (uint64_t)milli);
}

static struct kh_state_measurement state__measure(const struct kh_transition *t,
						  const struct kh_resource_sample *s)
{
	const struct kh_resource_snapshot *start = &s[0].snapshot, *finish = &s[1].snapshot;
	struct kh_state_measurement m = {
		.state = t[0].state,
		.elapsed_ns = t[1].elapsed_ns - t[0].elapsed_ns,
		.resident_start_bytes = start->resident_bytes,
		.resident_end_bytes = finish->resident_bytes,
		.threads_start = start->thread_count,
		.threads_end = finish->thread_count,
	};

	if (kh_opt_u64__ordered(start->cpu_time_ms, finish->cpu_time_ms))
		m.cpu_time_ms = opt_u64(finish->cpu_time_ms.value - start->cpu_time_ms.value);
	m.aggregate_cpu_milli_percent =
		kh_cpu_milli_percent(start->cpu_time_ms, finish->cpu_time_ms, m.elapsed_ns);
	return m;
}

/* state_measurements: windows(2) of transitions zipped with samples. */
static int profile__derive_states(struct kh_profile *p)
{
	size_t n = p->transition_count < p->resource_sample_count ? p->transition_count
								   : p->resource_sample_count;

	p->state_count = 0;
	if (n < 2)
		return 0;
	if (array__reserve((void **)&p->states, &p->state_cap, n - 1, sizeof(*p->states)))
		return -ENOMEM;
	for (size_t i = 0; i + 1 < n; i++) {
		const struct kh_transition *t = &p->transitions[i];

		/* checked_sub: a window running backwards yields no state. */
		if (t[1].elapsed_ns < t[0].elapsed_ns)
			continue;
		p->states[p->state_count++] = state__measure(t, &p->resource_samples[i]);
	}
	return 0;
}

/* resource_usage with the seed's start and finish snapshots. */
static void profile__derive_resources(struct kh_profile *p)
{
	struct kh_resource_usage *r = &p->resources;
	size_t n = p->resource_sample_count;

	memset(r, 0, sizeof(*r));
	if (n > 0) {
		r->start = p->resource_samples[0].snapshot;
		r->finish = p->resource_samples[n - 1].snapshot;
	}
	r->aggregate_cpu_percent =
		kh_cpu_percent(r->start.cpu_time_ms, r->finish.cpu_time_ms, p->wall_time_ns);
	r->max_observed_resident_bytes = max_option(r->start.resident_bytes,
						    r->finish.resident_bytes);
	r->max_observed_threads = max_option(r->start.thread_count, r->finish.thread_count);
	for (size_t i = 0; i < n; i++) {
		const struct kh_resource_snapshot *s = &p->resource_samples[i].snapshot;

		r->max_observed_resident_bytes =
			max_option(r->max_observed_resident_bytes, s->resident_bytes);
		r->max_observed_threads = max_option(r->max_observed_threads, s->thread_count);
	}
}

int profile__finish(struct kh_profile *p, uint32_t status, uint64_t wall_time_ns)
{
	if (status >= KH_STATE_COUNT)
		return -EINVAL;
	p->status = status;
	p->wall_time_ns = wall_time_ns;
	if (profile__derive_states(p))
		return -ENOMEM;
	profile__derive_resources(p);
	return 0;
}

int profile__set_mode(struct kh_profile *p, uint32_t mode)
{
	const char *name = kh_trace_mode__name(mode);
	char *copy;

	if (!name)
		return -EINVAL;
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	free(p->ext.mode);
	p->ext.mode = copy;
	p->ext.present = true;
	return 0;
}

int profile__set_span_clock(struct kh_profile *p, const char *clock, const char *reason)
{
	char *c = strdup(clock), *r = strdup(reason);

	if (!c || !r) {
		free(c);
		free(r);
		return -ENOMEM;
	}
	free(p->ext.span_clock);
	free(p->ext.span_clock_reason);
	p->ext.span_clock = c;
	p->ext.span_clock_reason = r;
	p->ext.present = true;
	return 0;
}

int profile__add_sample_ext(struct kh_profile *p, const struct kh_sample_ext *sample)
{
	if (array__reserve((void **)&p->ext.samples, &p->ext.sample_cap, p->ext.sample_count + 1,
			   sizeof(*p->ext.samples)))
		return -ENOMEM;
	p->ext.samples[p->ext.sample_count++] = *sample;
	return 0;
}

void profile__fold_peaks(struct kh_profile *p)
{
	struct kh_resource_usage *r = &p->resources;

	/* The first sample's peaks cover the time before the session began. */
	for (size_t i = 1; i < p->ext.sample_count; i++) {
		const struct kh_sample_ext *s = &p->ext.samples[i];

		r->max_observed_resident_bytes =
			max_option(r->max_observed_resident_bytes, s->peak_resident_bytes);
		r->max_observed_threads = max_option(r->max_observed_threads, s->peak_threads);
	}
	/* The series' samples are the record's too: RSS at each interval's end. */
	for (size_t i = 0; i < p->ext.series.count; i++)
		r->max_observed_resident_bytes = max_option(r->max_observed_resident_bytes,
							    p->ext.series.intervals[i].resident_bytes);
}

/* Window i's samples' ns, or absent when the extension does not line up. */
static struct kh_opt_u64 sample_ns(const struct kh_profile *p, size_t i)
{
	if (p->ext.sample_count != p->resource_sample_count || i >= p->ext.sample_count)
		return (struct kh_opt_u64){ false, 0 };
	return p->ext.samples[i].cpu_time_ns;
}

struct kh_cpu_share profile__window_cpu(const struct kh_profile *p, size_t i)
{
	struct kh_cpu_share none = { 0 };

	if (i >= p->transition_count || i + 1 >= p->transition_count ||
	    i + 1 >= p->resource_sample_count ||
	    p->transitions[i + 1].elapsed_ns < p->transitions[i].elapsed_ns)
		return none;
	return kh_cpu_share(sample_ns(p, i), sample_ns(p, i + 1),
			    p->resource_samples[i].snapshot.cpu_time_ms,
			    p->resource_samples[i + 1].snapshot.cpu_time_ms,
			    p->transitions[i + 1].elapsed_ns - p->transitions[i].elapsed_ns,
			    p->identity.logical_cpus);
}

size_t profile__state_window(const struct kh_profile *p, size_t k)
{
	size_t n = p->transition_count < p->resource_sample_count ? p->transition_count
								   : p->resource_sample_count;

	for (size_t i = 0; i + 1 < n; i++)
		if (p->transitions[i + 1].elapsed_ns >= p->transitions[i].elapsed_ns && k-- == 0)
			return i;
	return SIZE_MAX;
}

struct kh_cpu_share profile__run_cpu(const struct kh_profile *p)
{
	size_t last = p->resource_sample_count ? p->resource_sample_count - 1 : 0;

	if (!p->resource_sample_count)
		return (struct kh_cpu_share){ 0 };
	return kh_cpu_share(sample_ns(p, 0), sample_ns(p, last), p->resources.start.cpu_time_ms,
			    p->resources.finish.cpu_time_ms, p->wall_time_ns,
			    p->identity.logical_cpus);
}
