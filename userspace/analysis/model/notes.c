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
 * The stages with spans whose off-CPU time is a lower bound, most first:
 * "decode 12, entropy 3" (at most three, then "and N more stages").
 */
static void truncated_stages(const struct kh_latency *l, char *out, size_t len)
{
	bool named[KH_STAGE_COUNT] = { false };
	size_t n = 0, shown = 0, left = 0;

	out[0] = '\0';
	for (;;) {
		int best = -1;

		for (int s = 0; s < KH_STAGE_COUNT; s++)
			if (!named[s] && l->stages[s].offcpu_truncated &&
			    (best < 0 || l->stages[s].offcpu_truncated >
						 l->stages[best].offcpu_truncated))
				best = s;
		if (best < 0)
			break;
		named[best] = true;
		if (shown == 3) {
			left++;
			continue;
		}
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s%s %" PRIu64,
				      shown ? ", " : "", kh_stage__name((uint32_t)best),
				      l->stages[best].offcpu_truncated);
		shown++;
	}
	if (left)
		snprintf(out + n, n < len ? len - n : 0, " and %zu more stage%s", left,
			 left == 1 ? "" : "s");
}

/*
 * What the off-CPU split could not see (docs/SCHEMA.md, khprof.latency),
 * said as what a reader can still trust: only the on- and off-CPU split
 * of the stages named is in doubt, never their elapsed times or calls.
 */
static void print_latency_notes(const struct kh_latency *l)
{
	uint64_t truncated = 0;
	char stages[256];

	for (int s = 0; s < KH_STAGE_COUNT; s++)
		truncated += l->stages[s].offcpu_truncated;
	if (l->missed_switches)
		log__warn("%" PRIu64 " context switch%s of the traced threads not seen: off-CPU "
			  "times may miss as many intervals", l->missed_switches,
			  l->missed_switches == 1 ? "" : "es");
	if (!truncated)
		return;
	truncated_stages(l, stages, sizeof(stages));
	log__warn("%" PRIu64 " span%s (%s) ha%s an off-CPU time that is only a lower bound: "
		  "those stages' off-CPU times may read low and their on-CPU times high; their "
		  "elapsed times, calls and latencies are exact (such a span switched out more "
		  "than the %d times khprof logs per thread, or was read from a thread's buffer "
		  "after the thread ended or khprof detached)", truncated,
		  truncated == 1 ? "" : "s", stages, truncated == 1 ? "s" : "ve", KH_OFFCPU_LOG);
}

/*
 * --sample's stacks walk frame pointers: a program or library built
 * without them (gcc's -O2 default, Debian's libraries, Rust's release
 * builds) gives stacks that stop short of their thread's entry, their
 * outer frames [unknown] or missing.  When that is most samples (more than
 * half, leaving out those cut at the frame limit), said once per command
 * with the fix, since the stacks alone do not say why.
 */
static void print_stack_notes(const struct kh_stacks *s)
{
	static bool said;
	uint64_t short_of_entry = s->incomplete > s->truncated ? s->incomplete - s->truncated : 0;

	if (said || !s->present || short_of_entry * 2 <= s->samples)
		return;
	said = true;
	log__warn("%" PRIu64 " of %" PRIu64 " sampled stacks stop short of their thread's entry, "
		  "their outer frames [unknown] or missing: the program or a library it runs "
		  "has no frame pointers (the stage and the innermost two frames are still "
		  "right); build with -fno-omit-frame-pointer (C, C++) or -C "
		  "force-frame-pointers=yes (Rust) for whole stacks (docs/SAMPLING.md)",
		  short_of_entry, s->samples);
}

/*
 * Sites never attached: counted here, named in the record (khprof.
 * refused_sites) and on stderr when they were refused.  A site the
 * linker discarded could never fire: a note; any other is a warning.
 * Said once per command: the records of one run name the same files
 * (--follow-forks writes one per process), and record and attach named
 * each site once already (capture/attach.c).
 */
static void print_refused_sites(const struct kh_profile *p, bool quiet)
{
	size_t discarded = 0, n = p->ext.refused_site_count;
	static bool said;

	if (said || !n)
		return;
	for (size_t i = 0; i < n; i++)
		discarded += p->ext.refused_sites[i].refusal &&
			     strcmp(p->ext.refused_sites[i].refusal, "outside_code") == 0;
	said = discarded < n || !quiet;
	if (discarded == n && !quiet)
		log__note("%zu probe site%s outside executable code (sites the linker discarded) "
			  "never attached: khprof.refused_sites names them", n, n == 1 ? "" : "s");
	else if (discarded < n)
		log__warn("%zu probe site%s of the traced files refused and never attached: "
			  "khprof.refused_sites names them and why", n, n == 1 ? "" : "s");
}

/* A session seen only in part: notes, as the record's timing says it too. */
static void print_session_notes(const struct kh_profile *p)
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
}

void profile__print_notes(const struct kh_profile *p, bool quiet)
{
	if (!quiet)
		print_session_notes(p);
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
	print_refused_sites(p, quiet);
	print_stack_notes(&p->ext.stacks);
}
