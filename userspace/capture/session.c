// SPDX-License-Identifier: MIT
/*
 * Sessions are assembled from ring-buffer events in order; per-stage sums
 * come from the slot totals the tracer passes in when a session finishes.
 */
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "procfs.h"
#include "session.h"

uint64_t tracer__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sessions__init(struct session_table *tbl, const struct session_config *cfg)
{
	memset(tbl, 0, sizeof(*tbl));
	tbl->cfg = *cfg;
}

void sessions__free(struct session_table *tbl)
{
	for (uint32_t slot = 0; slot < KH_MAX_SLOTS; slot++)
		if (tbl->slots[slot].open)
			profile__free(&tbl->slots[slot].profile);
	kh_latency__free(&tbl->latency);
}

void sessions__take_first_sample(struct session_table *tbl)
{
	if (tbl->have_first_sample)
		return;
	memset(&tbl->first_sample, 0, sizeof(tbl->first_sample));
	procfs__sample(tbl->cfg.pid, &tbl->first_sample);
	tbl->have_first_sample = true;
}

/* Removes the probe's own calibrated share from a stage's sum. */
static uint64_t unbias(uint64_t elapsed_ns, uint64_t calls, uint64_t bias_ns)
{
	uint64_t bias = calls * bias_ns;

	return elapsed_ns > bias ? elapsed_ns - bias : 0;
}

static bool slot_has_activity(const struct kh_slot_stats *s)
{
	if (s->input_bytes || s->input_units || s->probe_hits)
		return true;
	for (int d = 0; d < KH_DROP_COUNT; d++)
		if (s->drops[d])
			return true;
	return false;
}

/*
 * Samples are read from /proc when khprof handles the event, like the
 * seed reads them, typically 50-150 us after the transition (the record's
 * sample_latency_ns_max says how late at worst).  The probe handler also
 * read memory and threads at the transition itself; those fill in what
 * /proc no longer has once the process has exited (its finish sample).
 * They are the kernel's folded counters, which can trail /proc's exact sum
 * by the per-CPU batches (a few hundred KiB).
 */
static void sample(struct session_table *tbl, struct open_session *s, const struct kh_event *e,
		   struct kh_resource_snapshot *snap)
{
	uint64_t latency;

	memset(snap, 0, sizeof(*snap));
	procfs__sample(tbl->cfg.pid, snap);
	if (!e || !e->threads)
		return;
	latency = tracer__now_ns() - e->ts_ns;
	if (latency > s->profile.ext.sample_latency_ns_max)
		s->profile.ext.sample_latency_ns_max = latency;
	if (!snap->resident_bytes.present && e->resident_pages)
		snap->resident_bytes =
			(struct kh_opt_u64){ true, e->resident_pages * tbl->cfg.page_size };
	if (!snap->virtual_bytes.present && e->virtual_pages)
		snap->virtual_bytes =
			(struct kh_opt_u64){ true, e->virtual_pages * tbl->cfg.page_size };
	if (!snap->thread_count.present)
		snap->thread_count = (struct kh_opt_u64){ true, e->threads };
}

static void apply_overrides(const struct session_table *tbl, struct kh_identity *id)
{
	for (size_t i = 0; i < tbl->cfg.override_count; i++)
		identity__set(id, tbl->cfg.overrides[i].key, tbl->cfg.overrides[i].value);
}

/* As the seed's available_parallelism(): the CPUs the traced process may use. */
static uint64_t logical_cpus_of(pid_t pid, uint64_t fallback)
{
	cpu_set_t set;

	if (sched_getaffinity(pid, sizeof(set), &set) != 0)
		return fallback;
	return CPU_COUNT(&set) > 0 ? (uint64_t)CPU_COUNT(&set) : fallback;
}

static void session_begin(struct session_table *tbl, struct open_session *s, uint64_t start_ns,
			  const char *sequence, bool mid_session, const struct kh_event *e)
{
	struct kh_resource_snapshot snap;

	memset(s, 0, sizeof(*s));
	s->open = true;
	s->started_mid_session = mid_session;
	s->start_ns = start_ns;
	s->last_state = KH_STATE_CREATED;
	profile__init(&s->profile);
	identity__set_run_id(&s->profile.identity, (uint64_t)tbl->cfg.pid,
			     (uint64_t)((int64_t)start_ns + tbl->cfg.realtime_offset_ns), sequence);
	s->profile.identity.logical_cpus =
		logical_cpus_of(tbl->cfg.pid, s->profile.identity.logical_cpus);
	/* A session khprof opens itself starts when tracing did. */
	if (!e && tbl->have_first_sample)
		snap = tbl->first_sample;
	else
		sample(tbl, s, e, &snap);
	profile__add_transition(&s->profile, KH_STATE_CREATED, 0, &snap);
}

static uint64_t since(const struct open_session *s, uint64_t ts)
{
	return ts > s->start_ns ? ts - s->start_ns : 0;
}

static void session_transition(struct session_table *tbl, struct open_session *s,
			       uint32_t state, uint64_t ts, const struct kh_event *e)
{
	struct kh_resource_snapshot snap;

	if (state >= KH_STATE_COUNT) {
		log__warn("ignoring transition to unknown state %u", state);
		return;
	}
	sample(tbl, s, e, &snap);
	profile__add_transition(&s->profile, state, since(s, ts), &snap);
	s->last_state = state;
}

static void session_emit(struct session_table *tbl, struct open_session *s,
			 const struct kh_slot_stats *sum, uint32_t status, uint64_t end_ns,
			 bool ended_mid_session)
{
	const struct session_config *cfg = &tbl->cfg;
	struct kh_profile *p = &s->profile;
	uint64_t spans = 0;

	for (int st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_stats *stage = &sum->stages[st];

		spans += stage->calls;
		profile__set_stage(p, st, unbias(stage->elapsed_ns, stage->calls, cfg->span_bias_ns),
				   stage->calls,
				   unbias(stage->attributed_ns, stage->attributed_calls,
					  cfg->span_bias_ns));
	}
	p->input_bytes = sum->input_bytes;
	p->input_units = sum->input_units;
	apply_overrides(tbl, &p->identity);
	profile__finish(p, status, since(s, end_ns));

	profile__set_mode(p, cfg->mode);
	p->ext.started_mid_session = s->started_mid_session;
	p->ext.ended_mid_session = ended_mid_session;
	memcpy(p->ext.drops, sum->drops, sizeof(p->ext.drops));
	p->ext.probe_hits = sum->probe_hits;
	p->ext.probe_cost_ns = cfg->span_cost_ns;
	p->ext.tracer_cost_ns = spans * cfg->span_cost_ns;
	p->ext.span_bias_ns = cfg->span_bias_ns;
	p->ext.traced_pid = cfg->pid;
	p->ext.latency = tbl->latency;
	p->ext.latency.off_cpu = cfg->off_cpu && p->ext.latency.present;
	memset(&tbl->latency, 0, sizeof(tbl->latency));

	tbl->records_emitted++;
	if (cfg->on_profile)
		cfg->on_profile(p, cfg->ctx);
	profile__free(p);
	s->open = false;
}

/* An event for a slot with no session seen: khprof attached mid-session. */
static struct open_session *session_for(struct session_table *tbl, uint32_t slot)
{
	struct open_session *s = &tbl->slots[slot < KH_MAX_SLOTS ? slot : 0];

	if (!s->open)
		session_begin(tbl, s, tbl->cfg.trace_start_ns, "partial", true, NULL);
	return s;
}

static void warn_unknown_key_once(struct session_table *tbl, const char *key)
{
	char needle[KH_IDENTITY_KEY_MAX + 2];

	snprintf(needle, sizeof(needle), "|%s|", key);
	if (strstr(tbl->warned_keys, needle))
		return;
	if (strlen(tbl->warned_keys) + strlen(needle) < sizeof(tbl->warned_keys))
		strcat(tbl->warned_keys, needle);
	log__warn("ignoring identity '%s': not a RunIdentity field or bad value", key);
}

bool sessions__event_ends_session(const struct kh_event *e)
{
	return e->type == KH_EVENT_SESSION_FINISH;
}

uint32_t sessions__slot_of(const struct kh_event *e)
{
	return e->slot < KH_MAX_SLOTS ? e->slot : KH_OUTSIDE_SLOT;
}

void sessions__event(struct session_table *tbl, const struct kh_event *e,
		     const struct kh_slot_stats *totals)
{
	uint32_t slot = sessions__slot_of(e);
	struct open_session *s;
	char sequence[24];
	uint32_t status;

	switch (e->type) {
	case KH_EVENT_SESSION_START:
		tbl->saw_session = true;
		if (slot == KH_OUTSIDE_SLOT) {
			log__warn("session %" PRIu64 " not recorded: all %d session slots "
				  "were unread", (uint64_t)e->arg0, KH_MAX_SLOTS - 1);
			break;
		}
		snprintf(sequence, sizeof(sequence), "%" PRIu64, (uint64_t)e->arg0);
		session_begin(tbl, &tbl->slots[slot], e->ts_ns, sequence, false, e);
		tbl->slots[slot].profile.ext.session_sequence = e->arg0;
		break;
	case KH_EVENT_IDENTITY:
		s = session_for(tbl, slot);
		if (identity__set(&s->profile.identity, e->key, e->value) != 0)
			warn_unknown_key_once(tbl, e->key);
		break;
	case KH_EVENT_TRANSITION:
		s = session_for(tbl, slot);
		session_transition(tbl, s, (uint32_t)e->arg0, e->ts_ns, e);
		break;
	case KH_EVENT_SESSION_FINISH:
		tbl->saw_session = true;
		s = session_for(tbl, slot);
		status = e->arg0 < KH_STATE_COUNT ? (uint32_t)e->arg0 : KH_STATE_FAILED;
		if (e->arg0 >= KH_STATE_COUNT)
			log__warn("session finished with unknown status %" PRIu64 "; recorded as "
				  "failed", (uint64_t)e->arg0);
		session_transition(tbl, s, status, e->ts_ns, e);
		session_emit(tbl, s, totals, status, e->ts_ns, false);
		break;
	default:
		log__debug("ignoring event type %u", e->type);
	}
}

bool sessions__is_open(const struct session_table *tbl, uint32_t slot)
{
	return slot < KH_MAX_SLOTS && tbl->slots[slot].open;
}

void sessions__end(struct session_table *tbl, uint32_t slot, int exit_status, uint64_t now,
		   const struct kh_slot_stats *totals)
{
	struct open_session *s = &tbl->slots[slot];
	/* A process that exits inside a session did not complete it. */
	uint32_t status = exit_status >= 0 ? KH_STATE_FAILED : s->last_state;

	session_transition(tbl, s, status, now, NULL);
	session_emit(tbl, s, totals, status, now, true);
}

bool sessions__none_seen(const struct session_table *tbl)
{
	return !tbl->saw_session && tbl->records_emitted == 0;
}

void sessions__end_whole_trace(struct session_table *tbl, int exit_status, uint64_t now,
			       const struct kh_slot_stats *outside)
{
	struct open_session *s = &tbl->slots[KH_OUTSIDE_SLOT];
	bool exited = exit_status >= 0;
	uint32_t status = exit_status == 0 ? KH_STATE_COMPLETED
			  : exited ? KH_STATE_FAILED : KH_STATE_SCANNING;

	if (!slot_has_activity(outside))
		return;
	session_begin(tbl, s, tbl->cfg.trace_start_ns, "0", !exited, NULL);
	session_transition(tbl, s, status, now, NULL);
	session_emit(tbl, s, outside, status, now, !exited);
}
