// SPDX-License-Identifier: MIT
/*
 * Sessions are assembled from ring-buffer events in order, one function
 * per event type (the tracer's handle_event picks it); per-stage sums and
 * distributions come from the slot the tracer reads and passes in when a
 * session finishes.
 */
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "log.h"
#include "procfs.h"
#include "series.h"
#include "session.h"
#include "utf8.h"

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

void sessions__set_clock(struct session_table *tbl, const char *clock, const char *reason)
{
	tbl->cfg.span_clock = clock;
	tbl->cfg.span_clock_reason = reason;
}

void sessions__free(struct session_table *tbl)
{
	for (uint32_t slot = 0; slot < KH_MAX_SLOTS; slot++)
		if (tbl->slots[slot].open)
			profile__free(&tbl->slots[slot].profile);
}

void sessions__take_first_sample(struct session_table *tbl)
{
	if (tbl->have_first_sample)
		return;
	memset(&tbl->first_sample, 0, sizeof(tbl->first_sample));
	procfs__sample_ns(tbl->cfg.pid, &tbl->first_sample, &tbl->first_cpu_ns);
	tbl->have_first_sample = true;
}

uint64_t sessions__unbias(uint64_t elapsed_ns, uint64_t calls, uint64_t bias_ns)
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
 * Start, transition and finish probes carry the process as the probe
 * handler read it (bpf/khprof.bpf.c, sample_task): CPU time in ns, memory
 * and threads, and the peaks since the previous sample.  Only the samples
 * khprof takes itself, for sessions it opens or closes, read /proc (CPU
 * in 10 ms ticks); their extension entry is null.  docs/SCHEMA.md, "How
 * close to the transition".
 */
static void sample(const struct session_table *tbl, struct open_session *s,
		   const struct kh_event *e, struct kh_resource_snapshot *snap,
		   struct kh_sample_ext *x)
{
	uint64_t page = tbl->cfg.page_size;

	memset(snap, 0, sizeof(*snap));
	memset(x, 0, sizeof(*x));
	if (!e || !e->threads) {
		/*
		 * After an execve, /proc describes the new program: the old
		 * one's last sample is left unknown (null) rather than taken
		 * from it.
		 */
		if (!(tbl->end == SESSION_END_EXEC && !e))
			procfs__sample_ns(tbl->cfg.pid, snap, &x->cpu_time_ns);
		/* A closing sample: the kernel's peaks since its last one, if known. */
		if (!e && tbl->end_peak_threads.present)
			x->peak_threads = tbl->end_peak_threads;
		if (!e && tbl->end_peak_pages.present)
			x->peak_resident_bytes = (struct kh_opt_u64){
				true, tbl->end_peak_pages.value * tbl->cfg.page_size };
		return;
	}
	if (e->sampled_ns > e->ts_ns && e->sampled_ns - e->ts_ns > s->profile.ext.sample_latency_ns_max)
		s->profile.ext.sample_latency_ns_max = e->sampled_ns - e->ts_ns;
	snap->cpu_time_ms = (struct kh_opt_u64){ true, e->cpu_ns / 1000000 };
	snap->resident_bytes = (struct kh_opt_u64){ true, e->resident_pages * page };
	snap->virtual_bytes = (struct kh_opt_u64){ true, e->virtual_pages * page };
	/*
	 * A process that has memory has resident pages: an end sample without
	 * them is one whose memory the kernel no longer had (an execve with no
	 * hook before it, a kernel without fentry for the virtual size).
	 */
	if (e->type == KH_EVENT_PROCESS_EXIT || e->type == KH_EVENT_EXEC) {
		snap->resident_bytes.present = e->resident_pages != 0;
		snap->virtual_bytes.present = e->virtual_pages != 0;
	}
	snap->thread_count = (struct kh_opt_u64){ true, e->threads };
	x->cpu_time_ns = (struct kh_opt_u64){ true, e->cpu_ns };
	x->peak_resident_bytes = (struct kh_opt_u64){ true, e->peak_resident_pages * page };
	x->peak_threads = (struct kh_opt_u64){ true, e->peak_threads };
}

/* Session::transition with khprof's view of the sample beside the seed's. */
static void add_transition(const struct session_table *tbl, struct open_session *s,
			   uint32_t state, uint64_t elapsed_ns, const struct kh_event *e,
			   const struct kh_resource_snapshot *given)
{
	struct kh_resource_snapshot snap;
	struct kh_sample_ext x;

	sample(tbl, s, e, &snap, &x);
	if (given) {
		snap = *given;
		x.cpu_time_ns = tbl->first_cpu_ns;
	}
	if (profile__add_transition(&s->profile, state, elapsed_ns, &snap) == 0)
		profile__add_sample_ext(&s->profile, &x);
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

/* The kernel's release and degradations, copied into the record (or none). */
static void profile_kernel(struct kh_profile *p, const struct session_config *cfg)
{
	struct kh_profile_ext *ext = &p->ext;

	if (!cfg->kernel_release)
		return;
	ext->kernel_release = strdup(cfg->kernel_release);
	if (cfg->kernel_degraded_count)
		ext->kernel_degraded = calloc(cfg->kernel_degraded_count, sizeof(char *));
	for (size_t i = 0; ext->kernel_degraded && i < cfg->kernel_degraded_count; i++) {
		ext->kernel_degraded[i] = strdup(cfg->kernel_degraded[i]);
		if (!ext->kernel_degraded[i])
			break;
		ext->kernel_degraded_count = i + 1;
	}
}

/* The process among namespaces, when khprof could read its cgroup (ns.h). */
static void note_namespaces(const struct session_config *cfg, struct kh_profile *p)
{
	if (!cfg->cgroup)
		return;
	p->ext.namespace_pid = (uint64_t)(cfg->ns_pid ? cfg->ns_pid : cfg->pid);
	p->ext.cgroup = strdup(cfg->cgroup);
	p->ext.cgroup_id = (struct kh_opt_u64){ cfg->cgroup_id != 0, cfg->cgroup_id };
	p->ext.container_id = cfg->container_id ? strdup(cfg->container_id) : NULL;
}

static void session_begin(struct session_table *tbl, struct open_session *s, uint64_t start_ns,
			  const char *sequence, bool mid_session, const struct kh_event *e)
{
	memset(s, 0, sizeof(*s));
	s->open = true;
	s->started_mid_session = mid_session;
	s->start_ns = start_ns;
	s->last_state = KH_STATE_CREATED;
	profile__init(&s->profile);
	identity__set_run_id(&s->profile.identity,
			     (uint64_t)(tbl->cfg.ns_pid ? tbl->cfg.ns_pid : tbl->cfg.pid),
			     (uint64_t)((int64_t)start_ns + tbl->cfg.realtime_offset_ns), sequence);
	s->profile.identity.logical_cpus =
		logical_cpus_of(tbl->cfg.pid, s->profile.identity.logical_cpus);
	/* A session khprof opens itself starts when tracing did. */
	add_transition(tbl, s, KH_STATE_CREATED, 0, e,
		       !e && tbl->have_first_sample ? &tbl->first_sample : NULL);
	if (tbl->cfg.interval_ns && s->profile.resource_sample_count) {
		s->profile.ext.series.interval_ns = tbl->cfg.interval_ns;
		s->last_sample_ns = start_ns;
		s->next_sample_ns = start_ns + tbl->cfg.interval_ns;
		s->last_cpu_ns = s->profile.ext.sample_count ? s->profile.ext.samples[0].cpu_time_ns
							     : (struct kh_opt_u64){ false, 0 };
	}
}

static uint64_t since(const struct open_session *s, uint64_t ts)
{
	return ts > s->start_ns ? ts - s->start_ns : 0;
}

static void session_transition(struct session_table *tbl, struct open_session *s,
			       uint32_t state, uint64_t ts, const struct kh_event *e)
{
	if (state >= KH_STATE_COUNT) {
		log__warn("ignoring transition to unknown state %u", state);
		return;
	}
	add_transition(tbl, s, state, since(s, ts), e, NULL);
	s->last_state = state;
}

/*
 * The interval from the last sample to now: the differences of the slot's
 * running totals (they only grow until the session ends, so these
 * telescope: the intervals sum to the totals).  Each stage's elapsed time
 * loses the calibrated bias of its calls, as the totals do.
 */
static struct kh_interval interval_to(const struct session_table *tbl, struct open_session *s,
				      uint64_t now, const struct kh_slot_stats *running,
				      uint32_t state, const struct kh_resource_snapshot *snap,
				      struct kh_opt_u64 cpu_ns)
{
	struct kh_interval iv = { .state = state };

	iv.start_ns = since(s, s->last_sample_ns);
	iv.duration_ns = now > s->last_sample_ns ? now - s->last_sample_ns : 0;
	for (int st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_stats *r = &running->stages[st], *o = &s->seen.stages[st];
		uint64_t calls = r->calls - o->calls;

		iv.calls[st] = calls;
		iv.elapsed_ns[st] = sessions__unbias(r->elapsed_ns - o->elapsed_ns, calls,
						     tbl->cfg.span_bias_ns);
	}
	iv.input_bytes = running->input_bytes - s->seen.input_bytes;
	iv.input_units = running->input_units - s->seen.input_units;
	/*
	 * CPU in ns from the process's clock: stat's 10 ms ticks made a 50 ms
	 * interval read 0, 10, 30 or 50 ms.  The ms column is the difference
	 * of whole milliseconds, as the seed would take it.
	 */
	if (cpu_ns.present && s->last_cpu_ns.present) {
		uint64_t a = s->last_cpu_ns.value, z = cpu_ns.value > a ? cpu_ns.value : a;

		iv.cpu_time_ns = (struct kh_opt_u64){ true, z - a };
		iv.cpu_time_ms = (struct kh_opt_u64){ true, z / 1000000 - a / 1000000 };
	}
	iv.resident_bytes = snap->resident_bytes;
	s->seen = *running;
	s->last_sample_ns = now;
	if (cpu_ns.present)
		s->last_cpu_ns = cpu_ns;
	return iv;
}

uint64_t sessions__next_sample_ns(const struct session_table *tbl)
{
	uint64_t next = 0;

	if (!tbl->cfg.interval_ns)
		return 0;
	for (uint32_t slot = 0; slot < KH_MAX_SLOTS; slot++) {
		const struct open_session *s = &tbl->slots[slot];

		if (s->open && (!next || s->next_sample_ns < next))
			next = s->next_sample_ns;
	}
	return next;
}

bool sessions__sample_due(const struct session_table *tbl, uint32_t slot, uint64_t now)
{
	return tbl->cfg.interval_ns && sessions__is_open(tbl, slot) &&
	       now >= tbl->slots[slot].next_sample_ns;
}

void sessions__sample(struct session_table *tbl, uint32_t slot, uint64_t now,
		      const struct kh_slot_stats *running)
{
	struct open_session *s = &tbl->slots[slot];
	uint64_t k = tbl->cfg.interval_ns;
	struct kh_resource_snapshot snap;
	struct kh_opt_u64 cpu_ns;
	struct kh_interval iv;

	/* The next boundary of the session's own clock after now (a late wake skips none). */
	s->next_sample_ns = s->start_ns + k * ((now > s->start_ns ? now - s->start_ns : 0) / k + 1);
	/* Unreadable slot (said once by slots.c): the next sample covers this one's time. */
	if (!running)
		return;
	memset(&snap, 0, sizeof(snap));
	procfs__sample_ns(tbl->cfg.pid, &snap, &cpu_ns);
	iv = interval_to(tbl, s, now, running, s->last_state, &snap, cpu_ns);
	if (series__append(&s->profile.ext.series, &iv))
		log__warn("time series: out of memory, interval at %" PRIu64 " ms not kept",
			  iv.start_ns / 1000000);
	else if (tbl->cfg.on_interval)
		tbl->cfg.on_interval(&s->profile, &iv, tbl->cfg.ctx);
}

/* Where a session khprof did not see begin starts: when observation did. */
static uint64_t observation_start(const struct session_table *tbl)
{
	return tbl->cfg.observed_from_ns ? tbl->cfg.observed_from_ns : tbl->cfg.trace_start_ns;
}

static void mark_partial(struct session_table *tbl, struct open_session *s)
{
	s->profile.ext.observed_from_unix_ns = (struct kh_opt_u64){
		true, (uint64_t)((int64_t)observation_start(tbl) + tbl->cfg.realtime_offset_ns)
	};
}

/* The extension says how the process ended, for a record it ended. */
static void note_end(const struct session_table *tbl, struct kh_profile *p)
{
	static const char *const names[] = {
		[SESSION_END_EXIT] = "exit", [SESSION_END_SIGNAL] = "signal",
		[SESSION_END_EXEC] = "exec",
	};

	if (tbl->end == SESSION_END_NONE)
		return;
	free(p->ext.process_end);
	p->ext.process_end = strdup(names[tbl->end]);
	if (tbl->end == SESSION_END_EXIT)
		p->ext.exit_code = (struct kh_opt_u64){ true, (uint64_t)tbl->end_code };
	if (tbl->end == SESSION_END_SIGNAL)
		p->ext.exit_signal = (struct kh_opt_u64){ true, (uint64_t)tbl->end_code };
}

/*
 * A sample taken after the session ended in the kernel but before its end
 * event was read (the sampler's clock is read in user space, the end's in
 * the probe: CI saw 2.9 us of overshoot) would carry the series past the
 * record's wall time.  Its intervals end at the session's end instead; the
 * totals they hold were complete by then.
 */
static void series_trim(struct open_session *s, uint64_t end_ns)
{
	struct kh_series *series = &s->profile.ext.series;
	uint64_t end = since(s, end_ns);

	if (s->last_sample_ns <= end_ns)
		return;
	for (size_t i = series->count; i-- > 0;) {
		struct kh_interval *iv = &series->intervals[i];

		if (iv->start_ns < end) {
			iv->duration_ns = end - iv->start_ns;
			break;
		}
		iv->start_ns = end;
		iv->duration_ns = 0;
	}
	s->last_sample_ns = end_ns > s->start_ns ? end_ns : s->start_ns;
}

static void session_emit(struct session_table *tbl, struct open_session *s,
			 const struct kh_slot_stats *sum, struct kh_latency *latency,
			 uint32_t status, uint64_t end_ns, bool ended_mid_session)
{
	const struct session_config *cfg = &tbl->cfg;
	struct kh_profile *p = &s->profile;
	uint64_t spans = 0;

	for (int st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_stats *stage = &sum->stages[st];

		spans += stage->calls;
		profile__set_stage(p, st,
				   sessions__unbias(stage->elapsed_ns, stage->calls, cfg->span_bias_ns),
				   stage->calls,
				   sessions__unbias(stage->attributed_ns, stage->attributed_calls,
					  cfg->span_bias_ns));
	}
	p->input_bytes = sum->input_bytes;
	p->input_units = sum->input_units;
	/* The last interval closes the series at the session's end, exactly on its totals. */
	if (cfg->interval_ns && p->resource_sample_count) {
		series_trim(s, end_ns);
		size_t last = p->resource_sample_count - 1;
		struct kh_interval iv = interval_to(
			tbl, s, end_ns, sum, status, &p->resource_samples[last].snapshot,
			last < p->ext.sample_count ? p->ext.samples[last].cpu_time_ns
						   : (struct kh_opt_u64){ false, 0 });

		if (series__append(&p->ext.series, &iv))
			log__warn("time series: out of memory, last interval not kept");
	}
	apply_overrides(tbl, &p->identity);
	profile__finish(p, status, since(s, end_ns));
	profile__fold_peaks(p);

	profile__set_mode(p, cfg->mode);
	if (cfg->span_clock)
		profile__set_span_clock(p, cfg->span_clock, cfg->span_clock_reason);
	p->ext.started_mid_session = s->started_mid_session;
	p->ext.ended_mid_session = ended_mid_session;
	memcpy(p->ext.drops, sum->drops, sizeof(p->ext.drops));
	p->ext.probe_hits = sum->probe_hits;
	p->ext.begun_before_session = sum->begun_before_session;
	p->ext.probe_cost_ns = cfg->span_cost_ns;
	p->ext.tracer_cost_ns = spans * cfg->span_cost_ns;
	p->ext.span_bias_ns = cfg->span_bias_ns;
	p->ext.traced_pid = cfg->pid;
	p->ext.stops_let_go = tbl->stops_let_go;
	tbl->stops_let_go = 0;
	note_namespaces(cfg, p);
	if (ended_mid_session || s == &tbl->slots[KH_OUTSIDE_SLOT])
		note_end(tbl, p); /* the whole trace ends with the process, too */
	if (latency) {
		p->ext.latency = *latency;
		memset(latency, 0, sizeof(*latency));
	}
	p->ext.latency.off_cpu = cfg->off_cpu && p->ext.latency.present;

	if (cfg->fill_stacks)
		cfg->fill_stacks(p, s->start_ns, end_ns, cfg->stacks_ctx);
	tbl->records_emitted++;
	/* At the end: what the kernel cost the record includes what it showed while tracing. */
	profile_kernel(p, cfg);
	for (size_t i = 0; i < cfg->refused_site_count; i++)
		if (profile__add_refused_site(p, &cfg->refused_sites[i]))
			break; /* out of memory: the sites were named on stderr */
	if (cfg->on_profile)
		cfg->on_profile(p, cfg->ctx);
	profile__free(p);
	s->open = false;
}

/* An event for a slot with no session seen: khprof attached mid-session. */
static struct open_session *session_for(struct session_table *tbl, uint32_t slot)
{
	struct open_session *s = &tbl->slots[slot < KH_MAX_SLOTS ? slot : 0];

	if (!s->open) {
		session_begin(tbl, s, observation_start(tbl), "partial", true, NULL);
		mark_partial(tbl, s);
	}
	return s;
}

static void warn_unknown_key_once(struct session_table *tbl, const char *key)
{
	char needle[KH_IDENTITY_KEY_MAX + 2], shown[4 * KH_IDENTITY_KEY_MAX + 4];

	snprintf(needle, sizeof(needle), "|%s|", key);
	if (strstr(tbl->warned_keys, needle))
		return;
	if (strlen(tbl->warned_keys) + strlen(needle) < sizeof(tbl->warned_keys))
		strcat(tbl->warned_keys, needle);
	/* The program's string: escaped, so that it cannot write khprof's output. */
	log__warn("ignoring identity '%s': not a RunIdentity field or bad value",
		  utf8__escape(key, shown, sizeof(shown)));
}

/*
 * A string nobody could read: memory the program cannot read either, or
 * (read by khprof where it may not stop the process) a process that had
 * exited or freed it by then.  err is the last read's: said once per
 * probe, and counted.
 */
static void identity_unreadable(struct open_session *s, const struct kh_event *e,
				const char *key, int err)
{
	char shown[4 * sizeof(e->key) + 4];

	s->profile.ext.identity_unreadable++;
	if (!key)
		log__warn("cannot read an identity key at 0x%" PRIx64 ": %s; its value is "
			  "ignored", (uint64_t)e->arg0, strerror(-err));
	else
		log__warn("cannot read identity '%s': its value at 0x%" PRIx64 " is unreadable "
			  "(%s); the field keeps its previous value",
			  utf8__escape(key, shown, sizeof(shown)), (uint64_t)e->arg1,
			  strerror(-err));
}

/* One string of an identity probe: the probe's error, or khprof's own read's where it reads. */
static int identity_string(const struct session_table *tbl, int probe_err, uint64_t addr,
			   char *buf, size_t len)
{
	if (!probe_err || !tbl->cfg.identity_reread)
		return probe_err;
	return procfs__read_string(tbl->cfg.pid, addr, buf, len);
}

/*
 * An identity probe's strings.  Where the probe cannot fault a string's
 * page in (the classic object, before Linux 5.17: no sleepable uprobes),
 * khprof reads what failed from the process itself.  Under record the
 * process waits stopped at the probe meanwhile (KH_EVENT_IDENTITY_STOPPED),
 * so the string is still there; an attached process runs on, and a read
 * that finds it exited or the string freed is named and counted.
 */
static void identity_event(struct session_table *tbl, struct open_session *s,
			   const struct kh_event *e)
{
	char key[sizeof(e->key)], value[sizeof(e->value)];
	struct kh_event reread;
	int err;

	if (e->key_err || e->value_err) {
		memcpy(key, e->key, sizeof(key));
		memcpy(value, e->value, sizeof(value));
		err = identity_string(tbl, e->key_err, e->arg0, key, sizeof(key));
		if (err) {
			identity_unreadable(s, e, NULL, err);
			return;
		}
		err = identity_string(tbl, e->value_err, e->arg1, value, sizeof(value));
		if (err) {
			identity_unreadable(s, e, key, err);
			return;
		}
		reread = *e;
		memcpy(reread.key, key, sizeof(key));
		memcpy(reread.value, value, sizeof(value));
		e = &reread;
	}
	if (identity__set(&s->profile.identity, e->key, e->value) != 0)
		warn_unknown_key_once(tbl, e->key);
}

uint32_t sessions__slot_of(const struct kh_event *e)
{
	return e->slot < KH_MAX_SLOTS ? e->slot : KH_OUTSIDE_SLOT;
}

void sessions__start(struct session_table *tbl, const struct kh_event *e)
{
	uint32_t slot = sessions__slot_of(e);
	char sequence[24];

	tbl->saw_session = true;
	if (slot == KH_OUTSIDE_SLOT) {
		log__warn("session %" PRIu64 " not recorded: all %d session slots "
			  "were unread", (uint64_t)e->arg0, KH_MAX_SLOTS - 1);
		return;
	}
	snprintf(sequence, sizeof(sequence), "%" PRIu64, (uint64_t)e->arg0);
	session_begin(tbl, &tbl->slots[slot], e->ts_ns, sequence, false, e);
	tbl->slots[slot].profile.ext.session_sequence = e->arg0;
}

void sessions__identity(struct session_table *tbl, const struct kh_event *e)
{
	identity_event(tbl, session_for(tbl, sessions__slot_of(e)), e);
}

void sessions__transition(struct session_table *tbl, const struct kh_event *e)
{
	session_transition(tbl, session_for(tbl, sessions__slot_of(e)), (uint32_t)e->arg0,
			   e->ts_ns, e);
}

void sessions__refused(struct session_table *tbl, const struct kh_event *e)
{
	struct open_session *s = session_for(tbl, sessions__slot_of(e));

	s->profile.ext.refused_session_starts++;
	log__warn("session %" PRIu64 " refused: KH_SESSION_START while a session was "
		  "open (the seed's SessionActive); its spans stay in the open session",
		  (uint64_t)e->arg0);
}

void sessions__finish(struct session_table *tbl, const struct kh_event *e,
		      const struct kh_slot_stats *totals, struct kh_latency *latency)
{
	struct open_session *s;
	uint32_t status;

	tbl->saw_session = true;
	s = session_for(tbl, sessions__slot_of(e));
	status = e->arg0 < KH_STATE_COUNT ? (uint32_t)e->arg0 : KH_STATE_FAILED;
	if (e->arg0 >= KH_STATE_COUNT)
		log__warn("session finished with unknown status %" PRIu64 "; recorded as "
			  "failed", (uint64_t)e->arg0);
	session_transition(tbl, s, status, e->ts_ns, e);
	session_emit(tbl, s, totals, latency, status, e->ts_ns, false);
}

bool sessions__is_open(const struct session_table *tbl, uint32_t slot)
{
	return slot < KH_MAX_SLOTS && tbl->slots[slot].open;
}

void sessions__set_end_peaks(struct session_table *tbl, uint64_t threads, uint64_t pages)
{
	tbl->end_peak_threads = (struct kh_opt_u64){ threads != 0, threads };
	tbl->end_peak_pages = (struct kh_opt_u64){ pages != 0, pages };
}

void sessions__note_end_sample(struct session_table *tbl, const struct kh_event *e)
{
	if (e->threads)
		tbl->end_sample = *e;
}

/*
 * The kernel's sample of the process at its end, if it took one: the
 * record then ends when the process did, not when khprof heard of it,
 * and the state it died in has its CPU time and memory like any other.
 */
static const struct kh_event *end_sample(const struct session_table *tbl, uint64_t *now)
{
	const struct kh_event *e = &tbl->end_sample;

	if (!e->threads)
		return NULL;
	if (e->ts_ns < *now)
		*now = e->ts_ns;
	return e;
}

void sessions__end(struct session_table *tbl, uint32_t slot, int exit_status, uint64_t now,
		   const struct kh_slot_stats *totals, struct kh_latency *latency)
{
	struct open_session *s = &tbl->slots[slot];
	/* A process that exits inside a session did not complete it. */
	uint32_t status = exit_status >= 0 ? KH_STATE_FAILED : s->last_state;
	const struct kh_event *e = end_sample(tbl, &now);

	session_transition(tbl, s, status, now, e);
	session_emit(tbl, s, totals, latency, status, now, true);
}

void sessions__process_ended(struct session_table *tbl, int wait_status)
{
	if (tbl->end != SESSION_END_NONE)
		return;
	if (WIFSIGNALED(wait_status)) {
		tbl->end = SESSION_END_SIGNAL;
		tbl->end_code = WTERMSIG(wait_status);
	} else {
		tbl->end = SESSION_END_EXIT;
		tbl->end_code = WEXITSTATUS(wait_status);
	}
}

void sessions__process_execed(struct session_table *tbl)
{
	tbl->end = SESSION_END_EXEC;
	tbl->end_code = 0;
}

void sessions__open_partial(struct session_table *tbl, uint32_t slot, uint32_t state)
{
	struct open_session *s = &tbl->slots[slot];
	const char *name = kh_run_state__name(state);

	session_begin(tbl, s, observation_start(tbl), "partial", true, NULL);
	mark_partial(tbl, s);
	s->profile.ext.attach_state = name ? strdup(name) : NULL;
	if (state != KH_STATE_CREATED && state < KH_STATE_COUNT)
		session_transition(tbl, s, state, observation_start(tbl), NULL);
}

void sessions__set_identity(struct session_table *tbl, uint32_t slot, const char *key,
			    const char *value)
{
	if (identity__set(&tbl->slots[slot].profile.identity, key, value) != 0)
		warn_unknown_key_once(tbl, key);
}

bool sessions__none_seen(const struct session_table *tbl)
{
	return !tbl->saw_session && tbl->records_emitted == 0;
}

void sessions__end_whole_trace(struct session_table *tbl, int exit_status, uint64_t now,
			       const struct kh_slot_stats *outside, struct kh_latency *latency)
{
	struct open_session *s = &tbl->slots[KH_OUTSIDE_SLOT];
	bool exited = exit_status >= 0;
	uint32_t status = exit_status == 0 ? KH_STATE_COMPLETED
			  : exited ? KH_STATE_FAILED : KH_STATE_SCANNING;
	const struct kh_event *e;

	if (!slot_has_activity(outside)) {
		if (latency)
			kh_latency__free(latency);
		return;
	}
	e = end_sample(tbl, &now);
	session_begin(tbl, s, observation_start(tbl), "0", !exited, NULL);
	session_transition(tbl, s, status, now, e);
	session_emit(tbl, s, outside, latency, status, now, !exited);
}

void sessions__note_let_go(struct session_table *tbl)
{
	tbl->stops_let_go++;
}
