// SPDX-License-Identifier: MIT
/*
 * Integration tests for --sample: stacks sampled on the CPU clock, tagged
 * with the stage their thread had open.  The workload
 * (tests/workloads/stackwork.c, built only against include/keyhog_profile.h,
 * with frame pointers) spends phase1-triggers in work_alpha and work_beta
 * 3:1, decode in work_gamma alone and the time between spans in
 * work_delta.  The checks are counts and proportions of samples, never
 * times: at 999 Hz each run takes a few hundred samples per stage, and
 * the tolerances below are over 4 standard deviations of a binomial
 * share at that count.  Root only; never skipped when CI=true.
 */
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "json.h"
#include "khchild.h"
#include "khtest.h"
#include "record.h"

#define STACKWORK "build/workloads/stackwork"
/* The same program built without frame pointers, as Debian builds its packages. */
#define STACKWORK_NOFP "build/workloads/stackwork-nofp"
/* tests/workloads-rs: its `stacks` scenario is stackwork's shape in Rust. */
#define WORKLOAD_RS "build/workloads/workload-rs"
/* The same built with Rust's v0 symbol mangling (scripts/build-rust.sh). */
#define WORKLOAD_RS_V0 "build/workloads/workload-rs-v0"
/* tests/workloads/stackwork_cxx.cc, built with g++. */
#define STACKWORK_CXX "build/workloads/stackwork-cxx"
/* ~1.3 s of CPU here: enough samples at 999 Hz, and no time limit depends on it. */
#define ROUNDS "400"

static char *khprof;
static char *tmpdir;
static const char *const modes[] = { "span", "pair", "batch" };

/* khprof record --sample=999 --mode MODE -o tmpdir/NAME-MODE.json -- PROGRAM ROUNDS [how] */
static void record_program(const char *program, const char *mode, const char *how, char *out,
			   size_t len, struct kh_profile *p)
{
	char *argv[] = { khprof, "record", "-q", "--sample=999", "--mode", (char *)mode, "-o", out,
			 "--", (char *)program, ROUNDS, (char *)how, NULL };
	struct run_result r;

	assert_true((size_t)snprintf(out, len, "%s/%s-%s.json", tmpdir, how ? how : "plain", mode) <
		    len);
	r = run_cmd(NULL, -1, argv);
	if (r.exit_code != 0)
		fail_msg("khprof record --sample -- stackwork (%s) exited %d: %s", mode,
			 r.exit_code, r.err);
	run_result_free(&r);
	load_record(out, p);
	assert_true(p->ext.stacks.present);
}

static void record_stacks(const char *mode, const char *how, char *out, size_t len,
			  struct kh_profile *p)
{
	record_program(STACKWORK, mode, how, out, len, p);
}

/*
 * How the stacks of the workload's functions were unwound: each innermost
 * work_* function is a leaf, its caller put back from its CFI; with frame
 * pointers the walk reaches the thread's entry (complete), without them it
 * cannot, and every such stack is counted as incomplete.
 */
static void assert_unwinding(const struct kh_profile *p, bool frame_pointers)
{
	const struct kh_stacks *s = &p->ext.stacks;
	uint64_t work = 0;

	for (size_t i = 0; i < s->stack_count; i++) {
		const struct kh_stack *st = &s->stacks[i];
		const char *inner = s->names[st->frames[st->frame_count - 1]];

		if (strncmp(inner, "work_", 5) || !strcmp(inner, "work_delta"))
			continue; /* work_delta is a tail call: no caller to put back */
		assert_int_equal(st->unwind, KH_UNWIND_FP_CFI);
		assert_int_equal(st->incomplete, !frame_pointers);
		work += st->count;
	}
	assert_true(work > 0);
	assert_true(s->leaf_restored >= work);
	if (frame_pointers)
		assert_true(s->incomplete < s->samples / 10);
	else
		assert_true(s->incomplete >= work);
}

struct folded_counts {
	uint64_t alpha, beta, gamma, delta, phase1, decode, none;
	uint64_t lines;
};

/* Whether frame is one of the line's frames (between ';' or at its end). */
static bool has_frame(const char *line, size_t len, const char *frame)
{
	size_t n = strlen(frame);

	for (const char *at = line; (at = memmem(at, len - (size_t)(at - line), frame, n));
	     at += n)
		if (at[-1] == ';' && (at[n] == ';' || at[n] == ' '))
			return true;
	return false;
}

/* Whether the folded line's innermost frame (just before space) is frame. */
static bool innermost_is(const char *line, const char *space, const char *frame)
{
	size_t n = strlen(frame);

	return (size_t)(space - line) > n && space[-(ptrdiff_t)n - 1] == ';' &&
	       !memcmp(space - n, frame, n);
}

/*
 * Reads `khprof report --format folded`: every line a stage root, frames,
 * a count; each workload function under its own stage only.
 */
static void read_folded_of(const char *record, const char *prefix, struct folded_counts *c)
{
	char alpha[32], beta[32], gamma[32], delta[32];
	char *argv[] = { khprof, "report", "--format", "folded", (char *)record, NULL };
	struct run_result r = run_cmd(NULL, -1, argv);
	const char *line = r.out;

	snprintf(alpha, sizeof(alpha), "%swork_alpha", prefix);
	snprintf(beta, sizeof(beta), "%swork_beta", prefix);
	snprintf(gamma, sizeof(gamma), "%swork_gamma", prefix);
	snprintf(delta, sizeof(delta), "%swork_delta", prefix);
	memset(c, 0, sizeof(*c));
	assert_int_equal(r.exit_code, 0);
	while (*line) {
		const char *nl = strchr(line, '\n'), *space;
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		unsigned long long count;
		uint64_t *stage;

		space = memrchr(line, ' ', len);
		assert_non_null(space);
		assert_int_equal(sscanf(space + 1, "%llu", &count), 1);
		if (!strncmp(line, "phase1-triggers;", 16))
			stage = &c->phase1;
		else if (!strncmp(line, "decode;", 7))
			stage = &c->decode;
		else if (!strncmp(line, "(no stage);", 11))
			stage = &c->none;
		else
			fail_msg("folded line with an unexpected root: %.*s", (int)len, line);
		*stage += count;
		/* A function of one stage never shows under another. */
		if (has_frame(line, len, alpha) || has_frame(line, len, beta))
			assert_ptr_equal(stage, &c->phase1);
		if (has_frame(line, len, gamma))
			assert_ptr_equal(stage, &c->decode);
		if (has_frame(line, len, delta))
			assert_ptr_equal(stage, &c->none);
		/* The innermost frame is the one the sample spent its time in. */
		if (innermost_is(line, space, alpha)) {
			/*
			 * work_alpha is a leaf: its caller, which the frame-pointer
			 * walk skips, is put back from its CFI (stackwork's caller
			 * is one_round; the Rust workload's is its main).
			 */
			if (!*prefix && !memmem(line, len, ";one_round;work_alpha ", 22))
				fail_msg("work_alpha without its caller: %.*s", (int)len, line);
			c->alpha += count;
		}
		if (innermost_is(line, space, beta))
			c->beta += count;
		if (innermost_is(line, space, gamma))
			c->gamma += count;
		if (innermost_is(line, space, delta))
			c->delta += count;
		c->lines++;
		line += len + (nl != NULL);
	}
	run_result_free(&r);
}

static void read_folded(const char *record, struct folded_counts *c)
{
	read_folded_of(record, "", c);
}

static void assert_share(const char *what, uint64_t part, uint64_t whole, double want, double tol)
{
	double share = whole ? (double)part / (double)whole : 0;

	if (!whole || share < want - tol || share > want + tol)
		fail_msg("%s: %" PRIu64 " of %" PRIu64 " samples (%.3f), wanted %.2f +- %.2f", what,
			 part, whole, share, want, tol);
}

/* The proportions the workload spends its CPU in, as the samples show them. */
static void assert_workload_shape(const struct folded_counts *c)
{
	/* Enough samples that the shares below mean something. */
	assert_true(c->phase1 >= 150 && c->decode >= 75);
	/* 3 units in work_alpha for 1 in work_beta: 0.75 of the stage's own time. */
	assert_share("work_alpha in phase1-triggers", c->alpha, c->alpha + c->beta, 0.75, 0.10);
	/* Nearly all of each stage is its functions: the rest is the probes' own code. */
	assert_share("phase1-triggers in its functions", c->alpha + c->beta, c->phase1, 1.0, 0.05);
	assert_share("decode in work_gamma", c->gamma, c->decode, 1.0, 0.05);
	/* 2 units of decode for 4 of phase1-triggers. */
	assert_share("decode against phase1-triggers", c->decode, c->phase1 + c->decode, 1.0 / 3,
		     0.10);
	assert_true(c->delta > 0 && c->delta <= c->none);
}

/* What the record says of its samples adds up, and the seed still reads it. */
static void assert_record_consistent(const char *record, const struct kh_profile *p,
				     const struct folded_counts *c)
{
	const struct kh_stacks *s = &p->ext.stacks;
	uint64_t tagged = 0;

	for (uint32_t t = 0; t < KH_SAMPLE_TAG_COUNT; t++)
		tagged += s->tags[t];
	assert_int_equal(tagged, s->samples);
	assert_int_equal(s->rate_hz, 999);
	assert_string_equal(s->unwinding, "frame-pointer");
	assert_int_equal(s->tags[KH_SAMPLE_TAG_UNREADABLE] + s->tags[KH_SAMPLE_TAG_TOO_DEEP], 0);
	assert_int_equal(c->phase1 + c->decode + c->none, s->samples);
	assert_int_equal(s->tags[KH_SAMPLE_TAG_STAGE], c->phase1 + c->decode);
	for (size_t i = 0; i < s->stack_count; i++) {
		/* Decode runs decoded; phase1-triggers at the root. */
		if (s->stacks[i].stage == KH_STAGE_DECODE)
			assert_int_equal(s->stacks[i].attribution, KH_ATTRIBUTION_DECODED);
		if (s->stacks[i].stage == KH_STAGE_PHASE1_TRIGGERS)
			assert_int_equal(s->stacks[i].attribution, KH_ATTRIBUTION_ROOT);
	}
	assert_seed_conformance_of(khprof, record);
}

/*
 * Whether `khprof report RECORD` says on stderr that the stacks lack frame
 * pointers, with how to build them (the note record prints too).
 */
static bool says_no_frame_pointers(const char *record)
{
	char *argv[] = { khprof, "report", "--format", "seed", (char *)record, NULL };
	struct run_result r = run_here(argv);
	bool says = strstr(r.err, "has no frame pointers") != NULL;

	assert_int_equal(r.exit_code, 0);
	if (says) {
		assert_int_equal(count_lines(strstr(r.err, "sampled stacks stop short")), 1);
		assert_non_null(strstr(r.err, "-fno-omit-frame-pointer (C, C++) or -C "
					      "force-frame-pointers=yes (Rust)"));
	}
	run_result_free(&r);
	return says;
}

static void test_stages_in_every_mode(void **state)
{
	(void)state;
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		char out[PATH_MAX];
		struct folded_counts c;
		struct kh_profile p;

		record_stacks(modes[m], NULL, out, sizeof(out), &p);
		read_folded(out, &c);
		assert_workload_shape(&c);
		assert_record_consistent(out, &p, &c);
		assert_unwinding(&p, true);
		assert_false(says_no_frame_pointers(out));
		profile__free(&p);
	}
}

/*
 * Without frame pointers the stages and their functions come out the
 * same (the tag and the innermost frame do not need the walk, the caller
 * comes from CFI), the stacks that stop short are counted, and khprof
 * says why and how to build the program for whole stacks.
 */
static void test_without_frame_pointers(void **state)
{
	char out[PATH_MAX];
	struct folded_counts c;
	struct kh_profile p;

	(void)state;
	record_program(STACKWORK_NOFP, "batch", "nofp", out, sizeof(out), &p);
	read_folded(out, &c);
	assert_workload_shape(&c);
	assert_record_consistent(out, &p, &c);
	assert_unwinding(&p, false);
	assert_true(says_no_frame_pointers(out));
	profile__free(&p);
}

/*
 * The timeline puts every stage sample on the thread that did the work,
 * not the main thread (its id is the process's), and in time order.
 */
static void assert_stages_on_late_thread(const struct kh_profile *p)
{
	const struct kh_stacks *s = &p->ext.stacks;
	uint64_t staged = 0, last = 0;
	uint32_t worker = 0;

	assert_int_equal(s->timeline_every, 1);
	assert_int_equal(s->timeline_count, s->samples - s->tags[KH_SAMPLE_TAG_UNREADABLE] -
						    s->tags[KH_SAMPLE_TAG_TOO_DEEP]);
	for (size_t i = 0; i < s->timeline_count; i++) {
		const struct kh_stack_sample *smp = &s->timeline[i];

		assert_true(smp->at_ns >= last);
		last = smp->at_ns;
		if (s->stacks[smp->stack].stage == KH_NO_STAGE)
			continue;
		assert_int_not_equal(smp->tid, p->ext.traced_pid);
		if (!worker)
			worker = smp->tid;
		assert_int_equal(smp->tid, worker);
		staged++;
	}
	assert_int_equal(staged, s->tags[KH_SAMPLE_TAG_STAGE]);
}

/*
 * All the work is done by a thread started after the session began (and
 * after the sampler opened its events): every stage sample is its own.
 */
static void test_threads_started_later(void **state)
{
	(void)state;
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		char out[PATH_MAX];
		struct folded_counts c;
		struct kh_profile p;

		record_stacks(modes[m], "late-thread", out, sizeof(out), &p);
		read_folded(out, &c);
		assert_workload_shape(&c);
		assert_record_consistent(out, &p, &c);
		assert_stages_on_late_thread(&p);
		profile__free(&p);
	}
}

/*
 * attach -p to a process inside its session, which then starts the thread
 * that does the work: the thread is sampled (inherited from the threads
 * sampled at the attach), tagged as in record.
 */
static void test_attach_samples_later_threads(void **state)
{
	char out[PATH_MAX], pid_text[16];
	char *wargv[] = { STACKWORK, ROUNDS, "wait", NULL };
	char *kargv[] = { khprof, "attach", "-q", "--sample=999", "-p", pid_text, "-o", out, NULL };
	struct folded_counts c;
	struct kh_profile p;
	struct child w, k;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "attach.json");
	w = child_spawn(wargv, false);
	child_wait_for_line(&w, "ready");
	snprintf(pid_text, sizeof(pid_text), "%d", (int)w.pid);
	k = child_spawn(kargv, true);
	child_wait_for_line(&k, "khprof: note: attached to PID");
	child_send(&w, "go\n");
	assert_int_equal(wait_exit(w.pid), 0);
	/* khprof stops by itself when the process is gone. */
	assert_int_equal(wait_exit(k.pid), 0);
	child_close(&w);
	child_close(&k);
	load_record(out, &p);
	assert_true(p.ext.stacks.present && p.ext.started_mid_session);
	read_folded(out, &c);
	assert_workload_shape(&c);
	assert_record_consistent(out, &p, &c);
	profile__free(&p);
}

/* The program exits from inside a span half-way: the samples until then are in the record. */
static void test_exit_mid_run(void **state)
{
	char out[PATH_MAX];
	struct folded_counts c;
	struct kh_profile p;

	(void)state;
	record_stacks("span", "exit", out, sizeof(out), &p);
	assert_true(p.ext.ended_mid_session);
	read_folded(out, &c);
	assert_true(c.phase1 >= 75 && c.decode >= 35);
	assert_share("work_alpha in phase1-triggers", c.alpha, c.alpha + c.beta, 0.75, 0.15);
	assert_share("decode in work_gamma", c.gamma, c.decode, 1.0, 0.05);
	assert_record_consistent(out, &p, &c);
	profile__free(&p);
}

/* How many times needle occurs in text. */
static size_t occurrences(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *at = text; (at = strstr(at, needle)); at += strlen(needle))
		n++;
	return n;
}

/*
 * --format pprof, read by Debian's protoc: --decode_raw knows nothing of
 * the format (field numbers only), --decode reads it with
 * proto/profile.proto's declaration.  One sample per stack, two labels
 * each, the workload's functions in the string table.
 */
static void test_pprof_read_by_protoc(void **state)
{
	char out[PATH_MAX], pb[PATH_MAX], cmd[3 * PATH_MAX];
	char *raw_argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct kh_profile p;
	struct run_result r;

	(void)state;
	record_stacks("batch", "pprof", out, sizeof(out), &p);
	path_in(pb, sizeof(pb), tmpdir, "profile.pb.gz");
	snprintf(cmd, sizeof(cmd), "%s report --format pprof %s > %s", khprof, out, pb);
	r = run_cmd(NULL, -1, raw_argv);
	assert_int_equal(r.exit_code, 0);
	run_result_free(&r);
	snprintf(cmd, sizeof(cmd), "gzip -dc %s | protoc --decode_raw", pb);
	r = run_cmd(NULL, -1, raw_argv);
	if (r.exit_code != 0)
		fail_msg("protoc --decode_raw rejects the profile: %s", r.err);
	/* Field 6 is the string table, field 2 the samples. */
	assert_non_null(strstr(r.out, "6: \"stage\""));
	assert_non_null(strstr(r.out, "6: \"attribution\""));
	assert_non_null(strstr(r.out, "6: \"phase1-triggers\""));
	assert_non_null(strstr(r.out, "6: \"work_alpha\""));
	run_result_free(&r);
	snprintf(cmd, sizeof(cmd),
		 "gzip -dc %s | protoc --proto_path=proto --decode=perftools.profiles.Profile "
		 "proto/profile.proto", pb);
	r = run_cmd(NULL, -1, raw_argv);
	if (r.exit_code != 0)
		fail_msg("protoc --decode rejects the profile: %s", r.err);
	assert_int_equal(occurrences(r.out, "\nsample {"), p.ext.stacks.stack_count);
	assert_int_equal(occurrences(r.out, "  label {"), 2 * p.ext.stacks.stack_count);
	assert_non_null(strstr(r.out, "period: 1001001\n"));
	assert_non_null(strstr(r.out, "string_table: \"decoded\""));
	run_result_free(&r);
	profile__free(&p);
}

/*
 * The Rust crate keeps its guards on the span stack the sampler reads
 * (probe ABI 5): in batch mode, where no span enters the kernel, the
 * samples of tests/workloads-rs's `stacks` fall under their stages as
 * stackwork's do, and no old-ABI warning is given.
 */
static void test_rust_guards_tag_samples(void **state)
{
	char out[PATH_MAX];
	char *argv[] = { khprof, "record", "--sample=999", "--mode", "batch", "-o", out, "--",
			 WORKLOAD_RS, "stacks", ROUNDS, NULL };
	struct folded_counts c;
	struct run_result r;
	struct kh_profile p;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "rust-batch.json");
	r = run_cmd(NULL, -1, argv);
	if (r.exit_code != 0)
		fail_msg("khprof record --sample -- workload-rs stacks exited %d: %s", r.exit_code,
			 r.err);
	assert_null(strstr(r.err, "has probe ABI"));
	run_result_free(&r);
	load_record(out, &p);
	assert_true(p.ext.stacks.present);
	read_folded_of(out, "rs_", &c);
	assert_workload_shape(&c);
	assert_record_consistent(out, &p, &c);
	profile__free(&p);
}

/* khprof report RECORD --format FORMAT's output, which must exit 0. */
static char *report_as(const char *record, const char *format)
{
	char *argv[] = { khprof, "report", (char *)record, "--format", (char *)format, NULL };
	struct run_result r = run_cmd(NULL, -1, argv);
	char *out = r.out;

	if (r.exit_code != 0)
		fail_msg("khprof report %s --format %s exited %d: %s", record, format, r.exit_code,
			 r.err);
	r.out = NULL;
	run_result_free(&r);
	return out;
}

/* No output names a function by its symbol: no Rust or C++ mangling, no hash, no LLVM suffix. */
static void assert_no_symbol(const char *what, const char *text)
{
	static const char *const marks[] = { ";_Z", ";_R", ">_Z", ">_R", "\"_Z", "\"_R",
					     " _Z", " _R", "17h", ".llvm." };

	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (strstr(text, marks[i]))
			fail_msg("%s names a symbol: ...%.80s", what, strstr(text, marks[i]));
}

/* name with HTML's &lt; &gt; &amp;, as the page writes it. */
static void html_escaped(const char *name, char *buf, size_t len)
{
	size_t n = 0;

	for (const char *p = name; *p && n + 6 < len; p++)
		n += (size_t)snprintf(buf + n, len - n, "%s",
				      *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : *p == '&' ? "&amp;"
				      : (char[]){ *p, 0 });
	assert_true(n + 6 < len);
}

/*
 * In `protoc --decode=perftools.profiles.Profile`'s text of a profile:
 * a Function whose name is the string name and whose system_name starts
 * with sys_prefix (the symbol, as profile.proto defines them).
 */
static bool pprof_has_function(const char *text, const char *name, const char *sys_prefix)
{
	const char *strings[4096], *at;
	size_t n = 0;

	/* The string table, in order: names here need none of protoc's escapes. */
	static const char string_at[] = "\nstring_table: \"", name_at[] = "\n  name: ",
			  sys_at[] = "\n  system_name: ";

	for (at = text; (at = strstr(at, string_at)) && n < 4096; at++)
		strings[n++] = at + strlen(string_at);
	for (at = text; (at = strstr(at, "\nfunction {\n")); at++) {
		const char *end = strstr(at + 1, "\n}"), *f;
		long name_id = 0, sys_id = 0;

		if ((f = strstr(at, name_at)) && f < end)
			name_id = strtol(f + strlen(name_at), NULL, 10);
		if ((f = strstr(at, sys_at)) && f < end)
			sys_id = strtol(f + strlen(sys_at), NULL, 10);
		if (name_id <= 0 || sys_id <= 0 || (size_t)name_id >= n || (size_t)sys_id >= n)
			continue;
		if (!strncmp(strings[name_id], name, strlen(name)) &&
		    strings[name_id][strlen(name)] == '"' &&
		    !strncmp(strings[sys_id], sys_prefix, strlen(sys_prefix)))
			return true;
	}
	return false;
}

/* What a stage's samples must be named in: the innermost function, in full and in the tables. */
struct named_stage {
	const char *stage;
	const char *full;    /* folded, pprof, HTML titles, Perfetto */
	const char *shown;   /* the report's table, the flame graph's labels */
	const char *caller;  /* the frame before it, or NULL */
	const char *symbol;  /* how its symbol begins (pprof's system_name) */
	double share;        /* of the stage's samples, at least */
};

/*
 * Every output of a --sample record names the stages' functions demangled:
 * the folded stacks (whole names, each stage's samples in its function),
 * the report's table (short names), the HTML flame graphs (whole titles,
 * short labels), Perfetto's instants and pprof's functions (name
 * demangled, system_name the symbol); none names a function by its symbol.
 */
static void assert_named(const char *record, const struct named_stage *want, size_t count)
{
	char *folded = report_as(record, "folded"), *text = report_as(record, "text");
	char *html = report_as(record, "html"), *perfetto = report_as(record, "perfetto");
	char pb[PATH_MAX], cmd[3 * PATH_MAX], escaped[1024];
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	struct run_result r;

	assert_no_symbol("folded", folded);
	assert_no_symbol("text", text);
	assert_no_symbol("html", html);
	assert_no_symbol("perfetto", perfetto);
	snprintf(pb, sizeof(pb), "%s.pb.gz", record);
	snprintf(cmd, sizeof(cmd), "%s report --format pprof %s > %s && gzip -dc %s | "
		 "protoc --proto_path=proto --decode=perftools.profiles.Profile proto/profile.proto",
		 khprof, record, pb, pb);
	r = run_cmd(NULL, -1, sh);
	if (r.exit_code != 0)
		fail_msg("pprof of %s not read by protoc: %s", record, r.err);
	for (size_t w = 0; w < count; w++) {
		const struct named_stage *n = &want[w];
		uint64_t stage = 0, named = 0;
		char row[128], label[1100];
		const char *at;

		for (const char *line = folded; *line;) {
			const char *nl = strchr(line, '\n'), *space;
			size_t len = nl ? (size_t)(nl - line) : strlen(line);
			unsigned long long c;

			space = memrchr(line, ' ', len);
			assert_non_null(space);
			assert_int_equal(sscanf(space + 1, "%llu", &c), 1);
			if (!strncmp(line, n->stage, strlen(n->stage)) && line[strlen(n->stage)] == ';') {
				stage += c;
				if (innermost_is(line, space, n->full)) {
					named += c;
					if (n->caller && !innermost_is(line, space - strlen(n->full) - 1,
								       n->caller))
						fail_msg("%s without its caller %s: %.*s", n->full,
							 n->caller, (int)len, line);
				}
			}
			line += len + (nl != NULL);
		}
		assert_true(stage >= 50);
		assert_share(n->full, named, stage, 1.0, 1.0 - n->share);
		/* The report's last table: "  STAGE  SAMPLES  SHARE  FUNCTION P%, ..." */
		snprintf(row, sizeof(row), "\n  %-24s ", n->stage);
		at = strstr(text, "\nstack samples: ");
		at = at ? strstr(at, row) : NULL;
		if (!at || !strstr(at, n->shown) || strstr(at, n->shown) > strchr(at + 1, '\n'))
			fail_msg("the report's %s row does not name %s:\n%s", n->stage, n->shown,
				 at ? at : text);
		html_escaped(n->full, escaped, sizeof(escaped));
		snprintf(label, sizeof(label), "<title>%s: ", escaped);
		if (!strstr(html, label))
			fail_msg("no flame box titled %s", label);
		html_escaped(n->shown, escaped, sizeof(escaped));
		snprintf(label, sizeof(label), ">%s</text>", escaped);
		if (!strstr(html, label))
			fail_msg("no flame box labelled %s", label);
		snprintf(label, sizeof(label), "{\"name\":\"%s\",", n->full);
		if (!strstr(perfetto, label))
			fail_msg("no Perfetto instant named %s", n->full);
		if (!pprof_has_function(r.out, n->full, n->symbol))
			fail_msg("no pprof function %s with a system_name %s...", n->full, n->symbol);
	}
	run_result_free(&r);
	free(folded);
	free(text);
	free(html);
	free(perfetto);
}

#define RS_HASHMAP "std::collections::hash::map::HashMap<alloc::string::String, alloc::vec::Vec<u8>>"
#define ELLIPSIS "\xE2\x80\xA6"

/* khprof record --sample=999 -o tmpdir/NAME.json -- ARGV... */
static void record_sampled(const char *name, char *const *program, char *out, size_t len)
{
	char *argv[16] = { khprof, "record", "-q", "--sample=999", "-o", out, "--" };
	struct run_result r;
	size_t n = 7;

	for (; *program && n < 15; program++)
		argv[n++] = *program;
	path_in(out, len, tmpdir, "%s.json", name);
	r = run_cmd(NULL, -1, argv);
	if (r.exit_code != 0)
		fail_msg("khprof record --sample -- %s exited %d: %s", argv[7], r.exit_code, r.err);
	run_result_free(&r);
}

/*
 * A Rust program's samples are named by Rust's paths in every output, from
 * the legacy symbols rustc gives a crate's own code and from the v0 ones
 * (workload-rs-v0; recent toolchains build their std so): tests/workloads-rs's
 * `names` spends hot-patterns in a trait method of a generic type and
 * decode in a generic method.  diff of the two builds names their
 * functions alike, so a function is one row whichever built it.
 */
static void test_rust_names_demangled(void **state)
{
	static const struct named_stage legacy[] = {
		{ "hot-patterns", "<workload_rs::Needle<T> as workload_rs::Scan>::scan",
		  "<Needle<" ELLIPSIS "> as Scan>::scan", "workload_rs::names", "_ZN", 0.9 },
		{ "decode", "workload_rs::Haystack::sift", "workload_rs::Haystack::sift",
		  "workload_rs::names", "_ZN", 0.9 },
	};
	static const struct named_stage v0[] = {
		{ "hot-patterns", "<workload_rs::Needle<" RS_HASHMAP "> as workload_rs::Scan>::scan",
		  "<Needle<" ELLIPSIS "> as Scan>::scan", "workload_rs::names", "_R", 0.9 },
		{ "decode", "<workload_rs::Haystack>::sift::<workload_rs::Needle<" RS_HASHMAP ">>",
		  "workload_rs::Haystack::sift", "workload_rs::names", "_R", 0.9 },
	};
	char *legacy_run[] = { WORKLOAD_RS, "names", ROUNDS, NULL };
	char *v0_run[] = { WORKLOAD_RS_V0, "names", ROUNDS, NULL };
	char base[PATH_MAX], cand[PATH_MAX];
	char *diff[] = { khprof, "diff", base, cand, NULL };
	struct run_result r;
	const char *rows;

	(void)state;
	record_sampled("names-legacy", legacy_run, base, sizeof(base));
	assert_named(base, legacy, 2);
	record_sampled("names-v0", v0_run, cand, sizeof(cand));
	assert_named(cand, v0, 2);
	r = run_cmd(NULL, -1, diff);
	rows = strstr(r.out, "top functions per stage");
	if (!rows)
		fail_msg("khprof diff exited %d without its stack rows: %s%s", r.exit_code, r.out, r.err);
	assert_no_symbol("diff", rows);
	for (size_t i = 0; i < 2; i++) {
		const char *row = strstr(rows, v0[i].shown);

		if (!row || strstr(row + 1, v0[i].shown))
			fail_msg("diff does not name %s in one row:\n%s", v0[i].shown, rows);
	}
	run_result_free(&r);
}

/*
 * A C++ program's samples (tests/workloads/stackwork_cxx.cc, g++): a class
 * template's const member, an operator, a functor's operator() in an
 * anonymous namespace and a function template, demangled whole with their
 * parameters, and short in the tables.
 */
static void test_cxx_names_demangled(void **state)
{
	static const struct named_stage cxx[] = {
		{ "decode", "(anonymous namespace)::Decoder::operator()(unsigned long) const",
		  "(anonymous namespace)::Decoder::operator()(" ELLIPSIS ") const", NULL, "_ZNK", 0.9 },
		{ "(no stage)", "void kh::idle<3>(unsigned long)",
		  "void kh::idle<" ELLIPSIS ">(" ELLIPSIS ")", NULL, "_ZN", 0.5 },
	};
	static const char probe[] =
		"kh::detail::Table<std::__cxx11::basic_string<char, std::char_traits<char>, "
		"std::allocator<char> >, std::vector<int, std::allocator<int> > >::probe(unsigned long) const";
	static const char shift[] = "kh::operator<<(kh::Sink&, unsigned long)";
	char *run[] = { STACKWORK_CXX, ROUNDS, NULL };
	char out[PATH_MAX];
	char *folded, *text;
	uint64_t phase1 = 0, in_probe = 0, in_shift = 0;

	(void)state;
	record_sampled("names-cxx", run, out, sizeof(out));
	assert_named(out, cxx, 2);
	/* phase1-triggers: 3 units in the template's member for 1 in the operator. */
	folded = report_as(out, "folded");
	for (const char *line = folded; *line;) {
		const char *nl = strchr(line, '\n'), *space;
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		unsigned long long c;

		space = memrchr(line, ' ', len);
		assert_int_equal(sscanf(space + 1, "%llu", &c), 1);
		if (!strncmp(line, "phase1-triggers;", 16)) {
			phase1 += c;
			in_probe += innermost_is(line, space, probe) ? c : 0;
			in_shift += innermost_is(line, space, shift) ? c : 0;
		}
		line += len + (nl != NULL);
	}
	assert_true(phase1 >= 150);
	assert_share("the member in phase1-triggers", in_probe, in_probe + in_shift, 0.75, 0.10);
	assert_share("phase1-triggers in its functions", in_probe + in_shift, phase1, 1.0, 0.05);
	free(folded);
	text = report_as(out, "text");
	if (!strstr(text, "kh::detail::Table<" ELLIPSIS ">::probe(" ELLIPSIS ") const") ||
	    !strstr(text, "kh::operator<<(" ELLIPSIS ")"))
		fail_msg("the report's table does not name phase1-triggers' functions:\n%s", text);
	free(text);
}

/* A program of an older probe ABI (sdt.c fires ABI 3 by hand) is sampled, with a warning. */
static void test_old_abi_is_named(void **state)
{
	char out[PATH_MAX];
	char *argv[] = { khprof, "record", "-q", "--sample", "-o", out, "--",
			 "build/workloads/sdt", "spans", "5", "5", NULL };

	(void)state;
	path_in(out, sizeof(out), tmpdir, "abi3.json");
	assert_run_exits(argv, 0, "has probe ABI 3: --sample sees only its KH_SPAN_ENTER spans");
}

/* The records a run wrote as DIR/NAME.PID.json, loaded; how many (at most max). */
static size_t load_process_records(const char *name, struct kh_profile *p, size_t max)
{
	char pattern[PATH_MAX];
	glob_t found;
	size_t n;

	path_in(pattern, sizeof(pattern), tmpdir, "%s.*.json", name);
	assert_int_equal(glob(pattern, 0, NULL, &found), 0);
	n = found.gl_pathc < max ? found.gl_pathc : max;
	for (size_t i = 0; i < n; i++) {
		load_record(found.gl_pathv[i], &p[i]);
		assert_true(p[i].ext.stacks.present);
		assert_string_equal(p[i].ext.stacks.unwinding, "frame-pointer");
	}
	n = found.gl_pathc;
	globfree(&found);
	return n;
}

/*
 * Two processes run the workload at the same time, one in its main thread
 * and one in a thread it starts: each record has its own process's samples
 * only (no thread of one in the other's timeline) and the workload's
 * shape, as a single process's record has.
 */
static void assert_two_processes_sampled(const char *name)
{
	struct kh_profile p[2];
	char path[PATH_MAX];

	assert_int_equal(load_process_records(name, p, 2), 2);
	for (size_t i = 0; i < 2; i++) {
		const struct kh_stacks *s = &p[i].ext.stacks, *other = &p[1 - i].ext.stacks;
		struct folded_counts c;

		assert_int_not_equal(p[i].ext.traced_pid, p[1 - i].ext.traced_pid);
		assert_true(s->timeline_count > 0);
		for (size_t a = 0; a < s->timeline_count; a++)
			for (size_t b = 0; b < other->timeline_count; b++)
				assert_int_not_equal(s->timeline[a].tid, other->timeline[b].tid);
		path_in(path, sizeof(path), tmpdir, "%s.%" PRIu64 ".json", name,
			p[i].ext.traced_pid);
		read_folded(path, &c);
		assert_workload_shape(&c);
		assert_record_consistent(path, &p[i], &c);
	}
	profile__free(&p[0]);
	profile__free(&p[1]);
}

/*
 * record of a wrapper without probes follows the processes it starts (the
 * default, --follow-forks): each is sampled, in a record of its own.
 */
static void test_followed_processes_sampled(void **state)
{
	char out[PATH_MAX], script[PATH_MAX];
	char *argv[] = { khprof, "record", "-q", "--sample=999", "-o", out, "--", "/bin/sh", "-c",
			 script, NULL };
	struct run_result r;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "follow.json");
	snprintf(script, sizeof(script), "%s %s & %s %s late-thread; wait", STACKWORK, ROUNDS,
		 STACKWORK, ROUNDS);
	r = run_cmd(NULL, -1, argv);
	if (r.exit_code != 0)
		fail_msg("khprof record --sample -- sh -c '%s' exited %d: %s", script, r.exit_code,
			 r.err);
	run_result_free(&r);
	assert_two_processes_sampled("follow");
}

/* attach --exe samples every process that runs the executable, each in its record. */
static void test_exe_processes_sampled(void **state)
{
	char out[PATH_MAX], script[PATH_MAX];
	char *kargv[] = { khprof, "attach", "-q", "--sample=999", "--exe", STACKWORK, "-o", out,
			  NULL };
	char *wargv[] = { "/bin/sh", "-c", script, NULL };
	struct child k;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "exe.json");
	snprintf(script, sizeof(script), "%s %s & %s %s late-thread; wait", STACKWORK, ROUNDS,
		 STACKWORK, ROUNDS);
	k = child_spawn(kargv, true);
	child_wait_for_line(&k, "watching");
	/* Each process is stopped at its start until its tracer is attached. */
	assert_run_exits(wargv, 0, NULL);
	assert_int_equal(kill(k.pid, SIGTERM), 0);
	assert_int_equal(child_wait(&k), 0);
	assert_two_processes_sampled("exe");
}

/* Bad rates are refused; a record without samples has no folded stacks. */
static void test_bad_input(void **state)
{
	char *zero[] = { khprof, "record", "--sample=0", "--", STACKWORK, "1", NULL };
	char *word[] = { khprof, "record", "--sample=fast", "--", STACKWORK, "1", NULL };
	char out[PATH_MAX];
	char *plain[] = { khprof, "record", "-q", "-o", out, "--", STACKWORK, "2", NULL };
	char *folded[] = { khprof, "report", "--format", "folded", out, NULL };
	char *pprof[] = { khprof, "report", "--format", "pprof", out, NULL };

	(void)state;
	assert_run_exits(zero, 2, "bad sampling rate '0'");
	assert_run_exits(word, 2, "bad sampling rate 'fast'");
	path_in(out, sizeof(out), tmpdir, "unsampled.json");
	assert_run_exits(plain, 0, NULL);
	assert_run_exits(folded, 2, "the record has no stack samples (record it with --sample)");
	assert_run_exits(pprof, 2, "as a pprof profile: the record has no stack samples");
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_stacks",
		.need = "BPF integration tests need root (CAP_BPF, CAP_PERFMON)",
		.tmp_prefix = "khprof-stacks",
		.tmpdir = &tmpdir,
		.seed_checked = true,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stages_in_every_mode),
		cmocka_unit_test(test_without_frame_pointers),
		cmocka_unit_test(test_threads_started_later),
		cmocka_unit_test(test_attach_samples_later_threads),
		cmocka_unit_test(test_exit_mid_run),
		cmocka_unit_test(test_pprof_read_by_protoc),
		cmocka_unit_test(test_rust_guards_tag_samples),
		cmocka_unit_test(test_rust_names_demangled),
		cmocka_unit_test(test_cxx_names_demangled),
		cmocka_unit_test(test_old_abi_is_named),
		cmocka_unit_test(test_followed_processes_sampled),
		cmocka_unit_test(test_exe_processes_sampled),
		cmocka_unit_test(test_bad_input),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
