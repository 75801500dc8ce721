// SPDX-License-Identifier: MIT
/*
 * Kernels (docs/KERNELS.md): every BPF program fits the 512 bytes of stack
 * that a kernel without private stacks allows its deepest chain of calls,
 * with the features of this kernel and with every fallback; `khprof
 * features` names each feature; and with the fallbacks forced
 * (KHPROF_DISABLE_FEATURES, as on Linux 6.1), a record is exact, keeps its
 * identity and names what its kernel lacked.  The fallbacks' every mode
 * and fault are covered again by tests/run-all.sh, which runs test_trace,
 * test_faults and test_follow a second time with them forced.  Needs root.
 */
#include <limits.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "khchild.h"
#include "khprof.skel.h"
#include "kfeatures.h"
#include "khtest.h"
#include "record.h"
#include "tracer_impl.h"

#define WORKLOAD "build/workloads/workload"
/*
 * Every feature a newer kernel adds that khprof can do without: what Linux
 * 6.1 lacks, and fentry (tests/run-all.sh names the same).
 */
#define FALLBACK_BITS                                                                        \
	((1u << KH_FEAT_UPROBE_MULTI) | (1u << KH_FEAT_PREEMPT_KFUNCS) |                       \
	 (1u << KH_FEAT_RDONLY_CAST) | (1u << KH_FEAT_COPY_FROM_USER_STR) |                    \
	 (1u << KH_FEAT_SEND_SIGNAL_TASK) | (1u << KH_FEAT_PREPARE_EXEC) |                     \
	 (1u << KH_FEAT_UPROBE_FUNC_IP) | (1u << KH_FEAT_EXIT_BEFORE_MM) | (1u << KH_FEAT_FENTRY) | \
	 (1u << KH_FEAT_TASK_STORAGE) | (1u << KH_FEAT_BPF_COOKIE))

static char *khprof;
static char *tmpdir;

#define LOG_BYTES (1u << 20)
#define MAX_SUBPROGS 64

/* The verifier rounds each frame up to 32 bytes when it adds a chain. */
static unsigned int frame_of(unsigned int depth)
{
	return ((depth ? depth : 1) + 31) / 32 * 32;
}

/* The subprogram whose instructions include insn: the last start at or before it. */
static int subprog_at(const size_t *starts, int n, size_t insn)
{
	int at = 0;

	for (int i = 0; i < n; i++)
		if (starts[i] <= insn)
			at = i;
	return at;
}

static void add_start(size_t *starts, int *n, size_t insn)
{
	for (int i = 0; i < *n; i++)
		if (starts[i] == insn)
			return;
	assert_true(*n < MAX_SUBPROGS);
	starts[(*n)++] = insn;
	for (int i = *n - 1; i > 0 && starts[i] < starts[i - 1]; i--) {
		size_t s = starts[i];

		starts[i] = starts[i - 1];
		starts[i - 1] = s;
	}
}

/*
 * The deepest chain of frames from subprogram at, callbacks included (the
 * kernel counts a bpf_loop callback as a call of the function that passes
 * it), each frame as the verifier rounds it.
 */
static unsigned int deepest(const struct bpf_insn *insns, size_t count, const size_t *starts,
			    int n, const unsigned int *depth, int at, int level)
{
	size_t end = at + 1 < n ? starts[at + 1] : count;
	unsigned int below = 0;

	assert_true(level < 16);
	for (size_t i = starts[at]; i < end; i++) {
		const struct bpf_insn *in = &insns[i];
		size_t target;
		unsigned int d;

		if (in->code == (BPF_JMP | BPF_CALL) && in->src_reg == BPF_PSEUDO_CALL)
			target = i + 1 + in->imm;
		else if (in->code == (BPF_LD | BPF_IMM | BPF_DW) && in->src_reg == BPF_PSEUDO_FUNC)
			target = i + 1 + in->imm;
		else
			continue;
		d = deepest(insns, count, starts, n, depth, subprog_at(starts, n, target),
			    level + 1);
		below = d > below ? d : below;
	}
	return frame_of(depth[at]) + below;
}

/* "stack depth 96+16+48": each subprogram's frame, in the order of their starts. */
static int parse_depths(const char *log, unsigned int *depth, int max)
{
	const char *p = strstr(log, "stack depth ");
	int n = 0;

	assert_non_null(p);
	p += strlen("stack depth ");
	while (n < max) {
		char *end;

		depth[n++] = (unsigned int)strtoul(p, &end, 10);
		if (*end != '+')
			break;
		p = end + 1;
	}
	return n;
}

/* "uprobe.s", "uprobe.s/PATH:FUNC": libbpf loads it sleepable. */
static bool sleepable(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);
	size_t n = strlen(sec);

	return (n >= 2 && strcmp(sec + n - 2, ".s") == 0) || strstr(sec, ".s/");
}

/*
 * Loads the object as khprof would on this kernel in batch mode following
 * forks (the most programs), with every fallback or none, and checks each
 * loaded program's deepest chain.
 */
static void check_stacks(uint32_t fallbacks)
{
	struct khprof_bpf *skel;
	struct bpf_program *prog;
	struct kh_features f;
	char *logs[64];
	int nprogs = 0, err;

	features__probe(&f, false, 0);
	f.have &= ~fallbacks;
	/* Without bpf_loop: the classic object (bpf/classic.bpf.h). */
	skel = tracer__open_object(NULL, &f);
	assert_non_null(skel);
	tracer__configure_features(skel, &f, true, true);
	bpf_object__for_each_program(prog, skel->obj) {
		assert_true(nprogs < 64);
		logs[nprogs] = calloc(1, LOG_BYTES);
		assert_non_null(logs[nprogs]);
		bpf_program__set_log_buf(prog, logs[nprogs], LOG_BYTES);
		bpf_program__set_log_level(prog, 4); /* statistics: the frames */
		nprogs++;
	}
	err = khprof_bpf__load(skel);
	if (err) {
		/* The verifier's last words on each program that has a log. */
		for (int i = 0; i < nprogs; i++) {
			const char *tail = logs[i] + strlen(logs[i]);

			for (int lines = 0; tail > logs[i] && lines < 4; tail--)
				lines += tail[-1] == '\n';
			if (*tail)
				print_message("%s", tail);
		}
		fail_msg("the BPF object does not load (%s, fallbacks 0x%x): the verifier's "
			 "last lines above", strerror(-err), fallbacks);
	}
	nprogs = 0;
	bpf_object__for_each_program(prog, skel->obj) {
		const struct bpf_insn *insns = bpf_program__insns(prog);
		size_t count = bpf_program__insn_cnt(prog), starts[MAX_SUBPROGS] = { 0 };
		unsigned int depth[MAX_SUBPROGS], total;
		int n = 1, frames;

		if (!bpf_program__autoload(prog)) {
			free(logs[nprogs++]);
			continue;
		}
		for (size_t i = 0; i < count; i++)
			if ((insns[i].code == (BPF_JMP | BPF_CALL) &&
			     insns[i].src_reg == BPF_PSEUDO_CALL) ||
			    (insns[i].code == (BPF_LD | BPF_IMM | BPF_DW) &&
			     insns[i].src_reg == BPF_PSEUDO_FUNC))
				add_start(starts, &n, i + 1 + insns[i].imm);
		frames = parse_depths(logs[nprogs], depth, MAX_SUBPROGS);
		if (frames < n) {
			/*
			 * The verifier dropped subprograms that the flags left
			 * dead (Linux 6.1 does): its frames no longer say which
			 * is which.  Such kernels have no private stacks, so the
			 * load itself held the program to 512 bytes.
			 */
			free(logs[nprogs++]);
			continue;
		}
		if (frames != n)
			fail_msg("'%s': %d frames in the verifier's statistics, %d subprograms",
				 bpf_program__name(prog), frames, n);
		total = deepest(insns, count, starts, n, depth, 0, 0);
		if (total > 512)
			fail_msg("'%s' needs %u bytes of stack in its deepest chain of calls "
				 "(fallbacks 0x%x): kernels without private stacks allow 512",
				 bpf_program__name(prog), total, fallbacks);
		/*
		 * A uprobe program that turns preemption off keeps its own
		 * frame under 64 bytes: from there the JIT puts a frame on the
		 * stack per CPU that every task running the program shares
		 * (Linux 6.13), and this one is live before the program has
		 * turned preemption off (bpf/khprof.bpf.c, before kh_usdt).
		 */
		if (skel->rodata->probes_preempt_off &&
		    bpf_program__type(prog) == BPF_PROG_TYPE_KPROBE && !sleepable(prog) &&
		    depth[0] >= 64)
			fail_msg("'%s' has a frame of %u bytes of its own (fallbacks 0x%x): from 64 "
				 "bytes it is on the stack per CPU that a preempted run shares; "
				 "move its body into a subprogram called with preemption off",
				 bpf_program__name(prog), depth[0], fallbacks);
		free(logs[nprogs++]);
	}
	khprof_bpf__destroy(skel);
}

static void test_programs_fit_512_bytes_of_stack(void **state)
{
	(void)state;
	check_stacks(0);
	check_stacks(FALLBACK_BITS);
	check_stacks(FALLBACK_BITS | (1u << KH_FEAT_BPF_LOOP));
}

static void test_features_command_names_every_feature(void **state)
{
	char *argv[] = { khprof, "features", NULL };
	char *extra[] = { khprof, "features", "now", NULL };
	struct run_result r;

	(void)state;
	r = run_here(argv);
	assert_int_equal(r.exit_code, 0);
	assert_true(strncmp(r.out, "kernel ", 7) == 0);
	for (int i = 0; i < KH_FEAT_COUNT; i++) {
		char row[64];

		snprintf(row, sizeof(row), "\n%s ", features__name((enum kh_kernel_feature)i));
		if (!strstr(r.out, row))
			fail_msg("no row for '%s' in:\n%s", row + 1, r.out);
	}
	run_result_free(&r);
	assert_run_exits(extra, 2, "khprof: unexpected argument 'now' (see 'khprof features --help')\n");
}

/*
 * Without bpf_loop khprof loads the classic object, which does without some
 * features a kernel may still have: those say "unused", not "no", in the
 * table, and the rest of the table is unchanged.
 */
static void test_features_unused_by_the_classic_object(void **state)
{
	char *argv[] = { khprof, "features", NULL };
	struct kh_features f;
	struct run_result r;

	(void)state;
	features__probe(&f, false, 0);
	setenv("KHPROF_DISABLE_FEATURES", "bpf_loop", 1);
	r = run_here(argv);
	unsetenv("KHPROF_DISABLE_FEATURES");
	assert_int_equal(r.exit_code, 0);
	for (int i = 0; i < KH_FEAT_COUNT; i++) {
		const char *name = features__name((enum kh_kernel_feature)i);
		bool has = features__has(&f, (enum kh_kernel_feature)i);
		uint32_t bit = 1u << i;
		/* A kernel without bpf_loop already said unused without the variable. */
		const char *want = i == KH_FEAT_BPF_LOOP && has ? "disabled"
				   : (has && (KH_FEAT_CLASSIC_UNUSED & bit)) || (f.unused & bit)
					   ? "unused"
				   : has ? "yes"
				   : i == KH_FEAT_UPROBE_MULTI && geteuid() ? "unknown"
									     : "no";
		char row[64], found[16];
		const char *at;

		snprintf(row, sizeof(row), "\n%s ", name);
		at = strstr(r.out, row);
		if (!at || sscanf(at + strlen(row), "%15s", found) != 1)
			fail_msg("no row for '%s' in:\n%s", name, r.out);
		if (strcmp(found, want) != 0)
			fail_msg("'%s' found '%s', expected '%s':\n%s", name, found, want, r.out);
	}
	run_result_free(&r);
}

/*
 * A program the kernel did not run (another run of it held the CPU:
 * recursion_misses; simulated through KHPROF_TEST_PROGRAM_MISSES) is named
 * in the record's kernel.degraded with its count, and once on stderr; the
 * record is otherwise whole.
 */
static void test_skipped_programs_named(void **state)
{
	char out[PATH_MAX];
	char *argv[] = { khprof, "record", "-q", "-o", out, "--", WORKLOAD, "nested", "3", NULL };
	struct run_result r;
	struct kh_profile p;
	const char *line = NULL, *warn;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "misses.json");
	setenv("KHPROF_TEST_PROGRAM_MISSES", "2", 1);
	r = run_here(argv);
	unsetenv("KHPROF_TEST_PROGRAM_MISSES");
	if (r.exit_code != 0)
		fail_msg("exit %d: %s", r.exit_code, r.err);
	load_record(out, &p);
	assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 3);
	for (size_t k = 0; k < p.ext.kernel_degraded_count; k++)
		if (!strncmp(p.ext.kernel_degraded[k], "programs skipped by the kernel", 30))
			line = p.ext.kernel_degraded[k];
	if (!line || !strstr(line, "kh_rss_stat "))
		fail_msg("the record does not name the skipped program: %s", line ? line : "(none)");
	warn = strstr(r.err, "the kernel skipped khprof's programs");
	assert_non_null(warn);
	assert_null(strstr(warn + 1, "the kernel skipped khprof's programs"));
	profile__free(&p);
	assert_seed_conformance_of(khprof, out);
	run_result_free(&r);
}

/* The records of test_fallbacks_record_exactly, with the features of fallbacks off. */
static void record_with_fallbacks(uint32_t fallbacks)
{
	static const char *const modes[] = { "batch", "span", "pair" };
	static const char *const named[] = { "uprobe_multi (", "bpf_rdonly_cast (",
					     "bpf_copy_from_user_str (", "task_storage (",
					     "bpf_cookie (" };

	char names[512] = "";

	for (int i = 0; i < KH_FEAT_COUNT; i++)
		if (fallbacks & (1u << i))
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 *names ? "," : "", features__name((enum kh_kernel_feature)i));
	setenv("KHPROF_DISABLE_FEATURES", names, 1);
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		char out[PATH_MAX];
		char *argv[] = { khprof, "record", "--mode", (char *)modes[m], "-o", out,
				 "--", WORKLOAD, "nested", "30", NULL };
		struct run_result r;
		struct kh_profile p;

		path_in(out, sizeof(out), tmpdir, "fallback-%s.json", modes[m]);
		r = run_here(argv);
		if (r.exit_code != 0)
			fail_msg("%s mode: exit %d: %s", modes[m], r.exit_code, r.err);
		load_record(out, &p);
		assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 30);
		assert_int_equal(calls_of(&p, KH_STAGE_ENTROPY), 60);
		assert_int_equal(calls_of(&p, KH_STAGE_DECODE), 30);
		assert_int_equal(p.input_bytes, 30 * 4096);
		assert_string_equal(p.identity.binary_version, "workload 1.0");
		assert_int_equal(p.identity.scanner_threads, 4);
		for (int d = 0; d < KH_DROP_COUNT; d++)
			assert_int_equal(p.ext.drops[d], 0);
		assert_non_null(p.ext.kernel_release);
		for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
			bool found = false;

			for (size_t k = 0; k < p.ext.kernel_degraded_count; k++)
				found = found || !strncmp(p.ext.kernel_degraded[k], named[i],
							  strlen(named[i]));
			if (!found)
				fail_msg("%s mode: the record does not name '%s'", modes[m], named[i]);
		}
		/* Said once on stderr too: disabled here, or missing from this kernel. */
		assert_non_null(strstr(r.err, "uprobe_multi"));
		profile__free(&p);
		assert_seed_conformance_of(khprof, out);
		run_result_free(&r);
	}
	unsetenv("KHPROF_DISABLE_FEATURES");
}

/*
 * With every fallback forced: exact counts, input and identity in every
 * mode, and the record names each missing feature that cost it something;
 * then the same with the classic object of kernels without bpf_loop.
 */
static void test_fallbacks_record_exactly(void **state)
{
	(void)state;
	record_with_fallbacks(FALLBACK_BITS);
	record_with_fallbacks(FALLBACK_BITS | (1u << KH_FEAT_BPF_LOOP));
}

/*
 * Below khprof's floor (ring buffers, Linux 5.8; simulated by disabling
 * them) khprof features and a record are refused in one line that names
 * the missing feature and the kernel khprof needs, exit 1, nothing
 * written; the kernels the tests run on are all above it.
 */
static void test_kernel_below_floor_refused(void **state)
{
	char out[PATH_MAX], floor[96];
	char *features[] = { khprof, "features", NULL };
	char *argv[] = { khprof, "record", "-o", out, "--", WORKLOAD, "nested", "1", NULL };
	struct kh_features f;
	struct run_result r;
	const char *line;

	(void)state;
	features__probe(&f, false, 0);
	assert_null(features__floor_missing(&f, floor, sizeof(floor)));
	r = run_here(features);
	assert_int_equal(r.exit_code, 0);
	run_result_free(&r);

	setenv("KHPROF_DISABLE_FEATURES", "ringbuf", 1);
	r = run_here(features);
	assert_int_equal(r.exit_code, 1);
	assert_non_null(strstr(r.err, "has no ringbuf (Linux 5.8), disabled by "
				      "KHPROF_DISABLE_FEATURES: khprof needs Linux 5.10 or later"));
	run_result_free(&r);
	path_in(out, sizeof(out), tmpdir, "below-floor.json");
	r = run_here(argv);
	unsetenv("KHPROF_DISABLE_FEATURES");
	assert_int_equal(r.exit_code, 1);
	line = strstr(r.err, "khprof: kernel ");
	assert_non_null(line);
	assert_non_null(strstr(line, "has no ringbuf (Linux 5.8)"));
	assert_non_null(strstr(line, "khprof needs Linux 5.10 or later"));
	/* Nothing else failed: the one error line is the only one. */
	assert_null(strstr(line + 1, "\nkhprof: "));
	assert_int_equal(access(out, F_OK), -1);
	run_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_below_floor_refused),
		cmocka_unit_test(test_programs_fit_512_bytes_of_stack),
		cmocka_unit_test(test_features_command_names_every_feature),
		cmocka_unit_test(test_features_unused_by_the_classic_object),
		cmocka_unit_test(test_fallbacks_record_exactly),
		cmocka_unit_test(test_skipped_programs_named),
	};
	const struct root_tests rt = { "test_kernels", "BPF tests need root", "khprof-kernels",
				       &tmpdir, 0, true };

	khprof = tool_path("KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
