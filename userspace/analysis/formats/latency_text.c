// SPDX-License-Identifier: MIT
/*
 * latency_text.c - the per-stage latency and on-CPU/off-CPU tables that
 * `khprof report` prints after the seed's text (which stays byte for byte
 * the seed's; `--format seed` prints it alone).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latency_text.h"
#include "outbuf.h"
#include "text.h"

void latency__format_ns(char *buf, size_t size, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, size, "%" PRIu64 "ns", ns);
	else if (ns < 1000000)
		snprintf(buf, size, "%.2fus", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, size, "%.3fms", (double)ns / 1e6);
	else if (ns < 100000000000ull)
		snprintf(buf, size, "%.3fs", (double)ns / 1e9);
	else
		snprintf(buf, size, "%.0fs", (double)ns / 1e9);
}

static void put_ns(struct outbuf *b, int width, uint64_t ns)
{
	char text[32];

	latency__format_ns(text, sizeof(text), ns);
	outbuf__printf(b, " %*s", width, text);
}

static void render__percentiles(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_latency *l = &p->ext.latency;

	outbuf__printf(b, "%-26s %9s %9s %9s %9s %9s %9s %9s\n", "latency", "spans", "min", "p50",
		       "p90", "p99", "p99.9", "max");
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_dist *d = &l->stages[st];

		if (!d->present)
			continue;
		outbuf__printf(b, "  %-24s %9" PRIu64, kh_stage__name(st), d->spans);
		put_ns(b, 9, d->min_ns);
		for (int q = 0; q < KH_DIST_PERCENTILES; q++)
			put_ns(b, 9, kh_dist__percentile(d, kh_dist_permille[q], p->ext.span_bias_ns));
		put_ns(b, 9, d->max_ns);
		outbuf__putc(b, '\n');
	}
}

static void put_share(struct outbuf *b, uint64_t part, uint64_t whole)
{
	if (whole)
		outbuf__printf(b, " %6.1f%%", 100.0 * (double)part / (double)whole);
	else
		outbuf__printf(b, " %7s", "-");
}

/* Elapsed = on-CPU + off-CPU; off-CPU = runnable (waiting for a CPU) + blocked. */
static void render__cpu_split(struct outbuf *b, const struct kh_profile *p)
{
	const struct kh_latency *l = &p->ext.latency;
	bool truncated = false;

	outbuf__printf(b, "%-26s %9s %9s %9s %9s %9s %8s\n", "cpu", "elapsed", "on-cpu", "off-cpu",
		       "runnable", "blocked", "off%");
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_dist *d = &l->stages[st];
		const struct kh_stage_measurement *m = profile__find_stage(p, st);
		uint64_t elapsed = m ? m->elapsed_ns : 0, off = d->off_cpu_ns, runnable;

		if (!d->present)
			continue;
		/*
		 * Elapsed is bias-corrected and off-CPU is not, as in the HTML:
		 * suppression's 180 ns read 431 ns off CPU, "239.4%".
		 */
		off = off < elapsed ? off : elapsed;
		runnable = d->runnable_ns < off ? d->runnable_ns : off;
		outbuf__printf(b, "  %-24s", kh_stage__name(st));
		put_ns(b, 9, elapsed);
		put_ns(b, 9, elapsed - off);
		put_ns(b, 9, off);
		put_ns(b, 9, runnable);
		put_ns(b, 9, off - runnable);
		put_share(b, off, elapsed);
		outbuf__printf(b, "%s\n", d->offcpu_truncated ? " *" : "");
		truncated |= d->offcpu_truncated != 0;
	}
	if (truncated)
		outbuf__puts(b, "  * some spans switched out more often than the log holds, or were read "
				"from a buffer after\n    their thread ended or khprof detached: off-cpu "
				"is a lower bound\n");
	if (l->missed_switches)
		outbuf__printf(b, "  %" PRIu64 " context switch%s seen without its other half: off-cpu "
			       "may miss as many intervals\n", l->missed_switches,
			       l->missed_switches == 1 ? "" : "es");
}

/*
 * The states' CPU as khprof measured it: the seed's lines above take whole
 * milliseconds, so a 47 us state that crossed a millisecond boundary of
 * the process's CPU time reads cpu=2141.4%.  Only records whose samples
 * carry the kernel's ns get this table; a share is capped at 100 % per
 * logical CPU ("cap" marks it) for the lag of threads on other CPUs.
 */
static void render__states_cpu(struct outbuf *b, const struct kh_profile *p)
{
	bool any = false;

	for (size_t k = 0; k < p->state_count; k++) {
		const struct kh_state_measurement *m = &p->states[k];
		struct kh_cpu_share c = profile__window_cpu(p, profile__state_window(p, k));

		if (!c.present || !c.from_ns)
			continue;
		if (!any)
			outbuf__printf(b, "%-26s %9s %9s %8s\n", "state cpu", "wall", "cpu-time",
				       "cpu%");
		any = true;
		outbuf__printf(b, "  %-24s", kh_run_state__name(m->state));
		put_ns(b, 9, m->elapsed_ns);
		put_ns(b, 9, c.cpu_ns);
		outbuf__printf(b, " %7.1f%%%s\n", c.percent, c.capped ? " cap" : "");
	}
}

char *latency__render_text(const struct kh_profile *p)
{
	const struct kh_latency *l = &p->ext.latency;
	struct outbuf b;
	char *text;

	outbuf__init(&b);
	render__states_cpu(&b, p);
	if (l->present) {
		render__percentiles(&b, p);
		if (l->off_cpu)
			render__cpu_split(&b, p);
		else
			outbuf__puts(&b, "cpu: no off-CPU split in this record (context switches were "
					 "not watched)\n");
	}
	text = outbuf__finish(&b);
	if (!text)
		errno = ENOMEM;
	return text;
}

char *profile__render_report(const struct kh_profile *p)
{
	char *seed = profile__render_text(p), *tables = seed ? latency__render_text(p) : NULL;
	char *both = NULL, *stacks = NULL;
	struct outbuf out;

	/* --sample's top functions per stage come last, after the existing tables. */
	outbuf__init(&out);
	kh_stacks__top_table(&p->ext.stacks, &out);
	stacks = outbuf__finish(&out);
	if (seed && tables && stacks && asprintf(&both, "%s%s%s", seed, tables, stacks) < 0)
		both = NULL;
	free(seed);
	free(tables);
	free(stacks);
	if (!both)
		errno = ENOMEM;
	return both;
}
