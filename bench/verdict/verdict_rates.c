// SPDX-License-Identifier: MIT
/*
 * verdict_rates: how good `khprof diff`'s verdicts are on real recorded
 * runs of workloads of known stage costs, beside the plain gate a user
 * would script instead, from the same trials (docs/CI.md, "How good the
 * verdicts are").  Built by the Makefile, run by bench/verdict/run.sh.
 *
 *   verdict_rates DIR [TRIALS [SIDE]]
 *
 * DIR is what bench/verdict/record.sh writes: DIR/WORKLOAD/CONFIG/
 * run-NNN.json, round NNN of each configuration, the rounds alternated.
 * A trial draws SIDE (default 10) distinct rounds at random (a fixed
 * xorshift seed: the figures reproduce) and compares configuration "a" of
 * those rounds, the base, with another configuration of the same rounds,
 * the candidate: each candidate run was recorded seconds from its base
 * run, as a CI job that alternates two builds records them.  Trials share
 * runs (TRIALS draws of SIDE rounds out of the pool's), so a rate is that
 * of this pool of runs, not of TRIALS independent jobs; run.sh says so.
 *
 * khprof: diff__compare with the default options, as `khprof diff`
 * judges; exit 1 is a regression verdict, exit 4 cannot-judge.  The
 * baseline: a two-sided Mann-Whitney U test per item on elapsed times (the
 * wall time and every stage's but the queue waits), exact p-values, the
 * Holm correction over the items at alpha 0.05, and a regression where it
 * rejects and the candidate's median is the larger: Google Benchmark's
 * compare.py U test, with the correction a careful user adds.
 *
 * Rows, for each workload without and with CPU hogs during the candidate's
 * runs ("-busy" configurations): identical builds (a against a2 or
 * a-busy): the trials that fail; decode +10 % and +20 % on CPU (up10,
 * up20): the trials that flag decode, and those that flag another stage
 * (collateral); phase1-triggers twice as fast (fast): the trials that flag
 * anything.  Prints a Markdown table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diff.h"
#include "diff_internal.h"
#include "../draws.h"
#include "json.h"
#include "record_dir.h"
#include "record.h"
#include "stats.h"

#define MAX_SIDE 32
#define ALPHA 0.05

struct pool {
	struct kh_profile *runs; /* in round order */
	size_t count;
};

static size_t side = 10;

/* The pool DIR/WORKLOAD/CONFIG, in round order; 0 or -1 (named on stderr). */
static int load_pool(const char *dir, const char *workload, const char *config, struct pool *p)
{
	size_t unreadable = 0;
	char path[4096];
	int err;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, workload, config);
	err = record_dir__read_runs(path, &p->runs, &p->count, &unreadable);
	if (err || unreadable) {
		fprintf(stderr, "verdict_rates: cannot read the runs in '%s': %s\n", path,
			err ? strerror(-err) : "unreadable records");
		return -1;
	}
	return 0;
}

static void free_pool(struct pool *p)
{
	for (size_t i = 0; i < p->count; i++)
		profile__free(&p->runs[i]);
	free(p->runs);
	p->runs = NULL;
	p->count = 0;
}

/* SIDE distinct rounds of ROUNDS at random. */
static void draw(size_t *idx, size_t rounds)
{
	for (size_t i = 0; i < side;) {
		size_t r = next_random() % rounds;
		bool seen = false;

		for (size_t j = 0; j < i; j++)
			seen |= idx[j] == r;
		if (!seen)
			idx[i++] = r;
	}
}

/* What one trial flagged. */
struct flags {
	bool failed;    /* exit 1: a regression */
	bool cannot;    /* khprof: exit 4, cannot judge */
	bool target;    /* a gating figure of the changed stage regressed */
	bool collateral; /* a gating figure of another stage regressed */
};

static struct flags khprof_trial(const struct kh_profile *b, const struct kh_profile *c,
				 int stage)
{
	static const char *const names[MAX_SIDE] = { "r" };
	struct kh_diff_side bs = { "base", b, names, side }, cs = { "cand", c, names, side };
	struct kh_diff_options opts;
	struct flags f = { 0 };
	struct kh_diff d;

	diff_options__init(&opts);
	if (diff__compare(&bs, &cs, &opts, &d)) {
		fprintf(stderr, "verdict_rates: diff__compare failed\n");
		exit(1);
	}
	f.failed = d.verdict == KH_DIFF_VERDICT_REGRESSED;
	f.cannot = d.verdict == KH_DIFF_VERDICT_CANNOT_JUDGE;
	for (size_t i = 0; i < d.item_count; i++) {
		const struct kh_diff_item *it = &d.items[i];

		if (!it->gating || it->verdict != KH_DIFF_REGRESSED)
			continue;
		if (it->metric < KH_DIFF_M_ELAPSED || it->metric > KH_DIFF_M_DECODED) {
			if (getenv("VERDICT_RATES_VERBOSE") && stage < 0)
				fprintf(stderr, "regressed: %s %+.1f%% [%+.1f%%, %+.1f%%]\n", it->name,
					it->change_pct, it->interval_low_pct, it->interval_high_pct);
			continue;
		}
		if ((int)it->stage == stage)
			f.target = true;
		else
			f.collateral = true;
		/* VERDICT_RATES_VERBOSE=1: what failed, for a look at the cause. */
		if (getenv("VERDICT_RATES_VERBOSE") && (int)it->stage != stage) {
			char label[64];

			diff_item__label(it, label, sizeof(label));
			fprintf(stderr, "regressed: %s %+.1f%% [%+.1f%%, %+.1f%%] noise %.1f%%\n",
				label, it->change_pct, it->interval_low_pct, it->interval_high_pct,
				it->noise_pct);
		}
	}
	diff__free(&d);
	return f;
}

/*
 * The exact two-sided Mann-Whitney p-value of samples a (m) and b (n):
 * twice the smaller tail of U, the pairs in which b's value is the larger
 * (ties count half), capped at 1.
 */
static double mann_whitney_p(const double *a, size_t m, const double *b, size_t n)
{
	double u = 0, lower, upper;

	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++)
			u += b[j] > a[i] ? 1 : b[j] == a[i] ? 0.5 : 0;
	if (stats__mann_whitney_cdf(m, n, (size_t)floor(u), &lower))
		return 1;
	if (ceil(u) < 1)
		upper = 1;
	else if (stats__mann_whitney_cdf(m, n, (size_t)ceil(u) - 1, &upper))
		return 1;
	else
		upper = 1 - upper;
	return fmin(1, 2 * fmin(lower, upper));
}

/* One item of the baseline: wall (stage < 0) or a stage's elapsed time. */
static double item_value(const struct kh_profile *p, int stage)
{
	const struct kh_stage_measurement *s;

	if (stage < 0)
		return (double)p->wall_time_ns;
	s = profile__find_stage(p, (uint32_t)stage);
	return s ? (double)s->elapsed_ns : 0;
}

static bool baseline_item(const struct kh_profile *b, const struct kh_profile *c, int stage)
{
	if (stage < 0)
		return true;
	if (stage == KH_STAGE_SOURCE_QUEUE_WAIT || stage == KH_STAGE_SCANNER_QUEUE_WAIT)
		return false;
	for (size_t i = 0; i < side; i++)
		if (profile__find_stage(&b[i], (uint32_t)stage) ||
		    profile__find_stage(&c[i], (uint32_t)stage))
			return true;
	return false;
}

static struct flags baseline_trial(const struct kh_profile *b, const struct kh_profile *c,
				   int stage)
{
	double p[KH_STAGE_COUNT + 1], vb[MAX_SIDE], vc[MAX_SIDE];
	int item[KH_STAGE_COUNT + 1], order[KH_STAGE_COUNT + 1];
	bool slower[KH_STAGE_COUNT + 1];
	struct flags f = { 0 };
	size_t m = 0;

	for (int s = -1; s < KH_STAGE_COUNT; s++) {
		if (!baseline_item(b, c, s))
			continue;
		for (size_t i = 0; i < side; i++) {
			vb[i] = item_value(&b[i], s);
			vc[i] = item_value(&c[i], s);
		}
		item[m] = s;
		p[m] = mann_whitney_p(vb, side, vc, side);
		slower[m] = stats__median(vc, side) > stats__median(vb, side);
		order[m] = (int)m;
		m++;
	}
	/* Holm: the k-th smallest p-value against alpha / (m - k), until one is not below. */
	for (size_t i = 1; i < m; i++)
		for (size_t j = i; j > 0 && p[order[j]] < p[order[j - 1]]; j--) {
			int t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (size_t k = 0; k < m; k++) {
		int i = order[k];

		if (p[i] > ALPHA / (double)(m - k))
			break;
		if (!slower[i])
			continue;
		f.failed = true;
		if (item[i] == stage)
			f.target = true;
		else if (item[i] >= 0)
			f.collateral = true;
	}
	return f;
}

struct tally {
	size_t failed, cannot, target, collateral;
};

static void tally(struct tally *t, struct flags f)
{
	t->failed += f.failed;
	t->cannot += f.cannot;
	t->target += f.target;
	t->collateral += f.collateral;
}

static double pct(size_t k, size_t n)
{
	return n ? 100.0 * (double)k / (double)n : 0;
}

/* Runs TRIALS trials of base against cand, both methods, on the same draws. */
static void trials(const struct pool *base, const struct pool *cand, int stage, size_t count,
		   struct tally *kh, struct tally *plain)
{
	struct kh_profile b[MAX_SIDE], c[MAX_SIDE];
	size_t rounds = base->count < cand->count ? base->count : cand->count, idx[MAX_SIDE];

	memset(kh, 0, sizeof(*kh));
	memset(plain, 0, sizeof(*plain));
	for (size_t t = 0; t < count; t++) {
		draw(idx, rounds);
		for (size_t i = 0; i < side; i++) {
			b[i] = base->runs[idx[i]];
			c[i] = cand->runs[idx[i]];
		}
		tally(kh, khprof_trial(b, c, stage));
		tally(plain, baseline_trial(b, c, stage));
	}
}

static void row(const char *workload, const char *condition, const char *what, size_t n,
		double kh, const char *kh_extra, double plain, const char *goal, bool met,
		bool better)
{
	printf("| %s | %s | %s | %zu | %.1f %%%s | %.1f %% | %s | %s | %s |\n", workload, condition,
	       what, n, kh, kh_extra, plain, goal, met ? "yes" : "**no**",
	       better ? "yes" : "**no**");
}

static void workload_rows(const char *dir, const char *workload, size_t count, bool ab)
{
	static struct pool a, other;
	static const char *const conditions[] = { "quiet", "busy" };
	struct tally kh, plain;
	char extra[4096];

	snprintf(extra, sizeof(extra), "%s/%s", dir, workload);
	if (access(extra, F_OK)) {
		fprintf(stderr, "verdict_rates: no '%s': its rows are left out\n", extra);
		return;
	}
	if (load_pool(dir, workload, "a", &a))
		exit(2);
	for (int busy = 0; busy < 2; busy++) {
		const char *cond = conditions[busy];
		char name[32];

		snprintf(name, sizeof(name), "%s", busy ? "a-busy" : "a2");
		if (load_pool(dir, workload, name, &other))
			exit(2);
		trials(&a, &other, -2, count, &kh, &plain);
		snprintf(extra, sizeof(extra), " (exit 4: %.1f %%)", pct(kh.cannot, count));
		row(workload, cond, "identical builds: exit 1", count, pct(kh.failed, count), extra,
		    pct(plain.failed, count), "≤1 %", pct(kh.failed, count) <= 1,
		    kh.failed <= plain.failed);
		free_pool(&other);
		if (!ab)
			continue;
		for (int up = 10; up <= 20; up += 10) {
			char what[96];

			snprintf(name, sizeof(name), "up%d%s", up, busy ? "-busy" : "");
			if (load_pool(dir, workload, name, &other))
				exit(2);
			trials(&a, &other, KH_STAGE_DECODE, count, &kh, &plain);
			snprintf(what, sizeof(what), "decode +%d %% on CPU: decode flagged", up);
			row(workload, cond, what, count, pct(kh.target, count), "",
			    pct(plain.target, count), up == 20 ? "≥95 %" : "≥80 %",
			    pct(kh.target, count) >= (up == 20 ? 95 : 80), kh.target >= plain.target);
			snprintf(what, sizeof(what), "decode +%d %% on CPU: another stage flagged", up);
			row(workload, cond, what, count, pct(kh.collateral, count), "",
			    pct(plain.collateral, count), "0", kh.collateral == 0,
			    kh.collateral <= plain.collateral);
			free_pool(&other);
		}
		snprintf(name, sizeof(name), "fast%s", busy ? "-busy" : "");
		if (load_pool(dir, workload, name, &other))
			exit(2);
		trials(&a, &other, KH_STAGE_PHASE1_TRIGGERS, count, &kh, &plain);
		row(workload, cond, "phase1-triggers 2× faster: exit 1", count,
		    pct(kh.failed, count), "", pct(plain.failed, count), "0", kh.failed == 0,
		    kh.failed <= plain.failed);
		free_pool(&other);
	}
	fprintf(stderr, "verdict_rates: %s: %zu rounds\n", workload, a.count);
	free_pool(&a);
}

int main(int argc, char **argv)
{
	size_t count = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;

	if (argc > 3)
		side = strtoul(argv[3], NULL, 10);
	if (argc < 2 || !count || side < 2 || side > MAX_SIDE) {
		fprintf(stderr, "usage: verdict_rates DIR [TRIALS [SIDE]]\n");
		return 2;
	}
	printf("| workload | candidate's runs | row | trials | khprof diff | MWU + Holm on elapsed "
	       "| goal | khprof meets it | khprof at least as good |\n");
	printf("|---|---|---|--:|--:|--:|---|---|---|\n");
	workload_rows(argv[1], "single", count, true);
	workload_rows(argv[1], "threads", count, true);
	workload_rows(argv[1], "kh-scan", count, false);
	return 0;
}
