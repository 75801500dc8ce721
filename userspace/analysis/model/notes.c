// SPDX-License-Identifier: MIT
/* notes.c - notes and drop warnings beside the seed's text report. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "notes.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Read as "N <description>": the count comes first. */
static const char *const drop_descriptions[] = {
	[KH_DROP_STACK_OVERFLOW] = "spans nested deeper than the kernel stack bound were not timed",
	[KH_DROP_UNMATCHED_EXIT] = "span exits had no matching enter (tracing began mid-span)",
	[KH_DROP_RINGBUF_FULL] = "events were lost because the ring buffer was full",
	[KH_DROP_SESSION_SLOTS] = "sessions were not recorded: every session slot was unread",
	[KH_DROP_BAD_STAGE] = "spans named a stage number outside the seed's 25 stages",
	[KH_DROP_LATE_BATCH] = "batched spans ended before their session and were not counted",
	[KH_DROP_EXIT_UNREAD] = "buffered spans of ending threads could not be read or handed "
				"over (or the program uses probe ABI 2: rebuild it with today's "
				"keyhog_profile.h)",
	[KH_DROP_EXIT_UNKNOWN] = "threads ended with buffers khprof could not find; their last "
				 "spans, if any, are missing (probe ABI 2, or the kernel ran no "
				 "khprof program at their end: docs/PROBES.md)",
	[KH_DROP_UNSEEN] = "spans the threads' own numbering says they completed never reached "
			   "khprof: the stage counts miss them (docs/PROBES.md, \"Every span "
			   "accounted for\")",
};
_Static_assert(ARRAY_SIZE(drop_descriptions) == KH_DROP_COUNT, "one description per kh_drop");

const char *kh_drop__description(uint32_t drop)
{
	return drop < KH_DROP_COUNT ? drop_descriptions[drop] : NULL;
}

/*
 * What the off-CPU split could not see (docs/SCHEMA.md, khprof.latency),
 * said so that a reader knows which rows of the table are bounds: per
 * stage, the spans whose off-CPU time is only partly known.
 */
static void print_latency_notes(const struct kh_latency *l)
{
	char stages[1024] = "";
	size_t used = 0;
	uint64_t truncated = 0;

	for (uint32_t s = 0; s < KH_STAGE_COUNT; s++) {
		const struct kh_stage_dist *d = &l->stages[s];
		int n;

		if (!d->offcpu_truncated)
			continue;
		truncated += d->offcpu_truncated;
		n = snprintf(stages + used, sizeof(stages) - used, "%s%s %" PRIu64 " of %" PRIu64,
			     used ? ", " : "", kh_stage__name(s), d->offcpu_truncated, d->spans);
		if (n > 0 && (size_t)n < sizeof(stages) - used)
			used += (size_t)n;
	}
	if (l->missed_switches)
		log__warn("%" PRIu64 " context switch%s of the traced threads not seen: off-CPU "
			  "times may miss as many intervals", l->missed_switches,
			  l->missed_switches == 1 ? "" : "es");
	if (truncated)
		log__warn("the off-CPU time of %" PRIu64 " span%s is only partly known (%s): "
			  "each left its CPU more often than the %d switches khprof logs per "
			  "thread, or was read from a thread's buffer after the thread ended or "
			  "khprof detached; for %s off-cpu and blocked are lower bounds, on-cpu "
			  "an upper bound", truncated, truncated == 1 ? "" : "s", stages,
			  KH_OFFCPU_LOG, used && strchr(stages, ',') ? "these stages" : "this stage");
}

void profile__print_notes(const struct kh_profile *p)
{
	if (p->ext.started_mid_session)
		log__note("profile started mid-session: khprof attached after the session "
			  "began, so earlier work is not in it");
	if (p->ext.ended_mid_session && p->ext.process_end &&
	    strcmp(p->ext.process_end, "signal") == 0)
		log__note("profile ended mid-session: the program was killed by signal %" PRIu64,
			  p->ext.exit_signal.value);
	else if (p->ext.ended_mid_session && p->ext.process_end &&
		 strcmp(p->ext.process_end, "exec") == 0)
		log__note("profile ended mid-session: the program ran execve");
	else if (p->ext.ended_mid_session && p->ext.process_end)
		log__note("profile ended mid-session: the program exited with code %" PRIu64
			  " inside the session", p->ext.exit_code.value);
	else if (p->ext.ended_mid_session)
		log__note("profile ended mid-session: the session had not finished when "
			  "tracing stopped");
	if (p->ext.refused_session_starts)
		log__warn("%" PRIu64 " KH_SESSION_START calls while this session was open were "
			  "refused, as the seed refuses them (SessionActive)",
			  p->ext.refused_session_starts);
	for (uint32_t d = 0; d < KH_DROP_COUNT; d++)
		if (p->ext.drops[d])
			log__warn("%" PRIu64 " %s", p->ext.drops[d], kh_drop__description(d));
	if (p->ext.identity_unreadable)
		log__warn("%" PRIu64 " identity probes passed memory that could not be read; "
			  "their fields keep their earlier values", p->ext.identity_unreadable);
	print_latency_notes(&p->ext.latency);
}
