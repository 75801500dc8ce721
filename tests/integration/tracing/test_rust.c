// SPDX-License-Identifier: MIT
/*
 * Integration tests of the Rust probe crate (rust/keyhog-probes): trace
 * its workload (tests/workloads-rs, written against the seed's API) with
 * build/khprof in every mode, by record and by attach, and check the
 * records against what the workload knows; check that the crate's sites
 * are the C header's, and that the build with Debian's rustc 1.63 traces
 * the same, that spans still buffered when the program dies are counted,
 * and that an attach mid-session starts in the program's state (probe ABI 3).  They need root (BPF); they skip with a message elsewhere, and
 * never skip when CI=true.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "khchild.h"
#include "record.h"

#define WORKLOAD_RS "build/workloads/workload-rs"
#define WORKLOAD_C "build/workloads/workload"
/* Built by `make` with /usr/bin/rustc when the machine has it. */
#define WORKLOAD_RS_DEBIAN "build/rust-debian/workload-rs"
#define DEBIAN_RUSTC "/usr/bin/rustc"

static char *khprof;
static char *tmpdir;

static const char *const modes[] = { "batch", "span", "pair" };
#define N_MODES (sizeof(modes) / sizeof(modes[0]))

/* khprof record --mode MODE -o OUT -- argv...; fails unless it exits 0. */
static struct run_result record(const char *mode, const char *out, char *const workload[])
{
	return record_workload(khprof, mode, out, workload);
}

/* What the nested scenario does, whoever traced it (record or attach). */
static void assert_nested(const struct kh_profile *p, uint64_t n, uint64_t logical_cpus)
{
	static const uint32_t expected_states[] = { KH_STATE_CREATED, KH_STATE_ACQUIRING,
						    KH_STATE_SCANNING, KH_STATE_REPORTING,
						    KH_STATE_COMPLETED };

	assert_string_equal(p->schema, "keyhog-profile-v1");
	assert_int_equal(p->status, KH_STATE_COMPLETED);
	assert_int_equal(calls_of(p, KH_STAGE_SOURCE_WALK), 1);
	assert_int_equal(calls_of(p, KH_STAGE_HOT_PATTERNS), n);
	assert_int_equal(calls_of(p, KH_STAGE_ENTROPY), 2 * n);
	assert_int_equal(calls_of(p, KH_STAGE_DECODE), n);
	assert_int_equal(calls_of(p, KH_STAGE_REPORTING), 1);
	assert_int_equal(p->stage_count, 5);
	/* Nesting: each guard counts its own full time, so outer covers inner. */
	assert_true(elapsed_of(p, KH_STAGE_HOT_PATTERNS) > elapsed_of(p, KH_STAGE_ENTROPY));
	/* Attribution: only decode ran under Attribution::Decoded. */
	assert_int_equal(profile__find_stage(p, KH_STAGE_DECODE)->attributed_ns,
			 profile__find_stage(p, KH_STAGE_DECODE)->elapsed_ns);
	assert_int_equal(profile__find_stage(p, KH_STAGE_ENTROPY)->attributed_ns, 0);
	assert_int_equal(profile__find_stage(p, KH_STAGE_HOT_PATTERNS)->attributed_ns, 0);
	assert_int_equal(p->input_bytes, n * 4096);
	assert_int_equal(p->input_units, n);

	assert_int_equal(p->transition_count, 5);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(p->transitions[i].state, expected_states[i]);
	assert_int_equal(p->state_count, 4);

	assert_string_equal(p->identity.binary_version, "workload-rs 1.0");
	assert_string_equal(p->identity.detector_digest, "det-test");
	assert_string_equal(p->identity.config_digest, "cfg-test");
	assert_string_equal(p->identity.source_kind, "synthetic");
	assert_string_equal(p->identity.workload_class, "integration");
	assert_string_equal(p->identity.backend_requested, "auto");
	assert_string_equal(p->identity.backend_selected, "cpu");
	assert_int_equal(p->identity.cache_state, KH_CACHE_COLD);
	assert_int_equal(p->identity.daemon_state, KH_DAEMON_OFF);
	/* 2 at the start, 4 through identity_mut before a transition: the latest wins. */
	assert_int_equal(p->identity.scanner_threads, 4);
	assert_true(p->identity.reader_threads.present);
	assert_int_equal(p->identity.reader_threads.value, 1);
	assert_int_equal(p->identity.logical_cpus, logical_cpus);
	assert_true(p->ext.present);
	assert_int_equal(p->ext.drops[KH_DROP_UNMATCHED_EXIT], 0);
}

static uint64_t printed_logical_cpus(const char *out)
{
	const char *line = strstr(out, "logical_cpus=");
	unsigned long long cpus = 0;

	assert_non_null(line);
	assert_int_equal(sscanf(line, "logical_cpus=%llu", &cpus), 1);
	return cpus;
}

static void check_nested(const char *workload, const char *mode)
{
	char out[PATH_MAX];
	char *argv[] = { (char *)workload, "nested", "50", NULL };
	struct kh_profile p;
	struct run_result r;

	path_in(out, sizeof(out), tmpdir, "nested-%s-%s.json", mode,
		 strcmp(workload, WORKLOAD_RS) ? "debian" : "current");
	r = record(mode, out, argv);
	/* The crate's in-process RunProfile counted the same 1 + 50 + 100 + 50 + 1 spans. */
	assert_non_null(strstr(r.out, "nested n=50 in_process_calls=202 traced=true"));
	/* Session::start while one is active gives Err(SessionActive). */
	assert_non_null(strstr(r.out, "second_start=refused\n"));
	assert_non_null(strstr(r.err, "KeyHog profile "));
	load_record(out, &p);
	assert_nested(&p, 50, printed_logical_cpus(r.out));
	profile__free(&p);
	assert_seed_conformance_of(khprof, out);
	run_result_free(&r);
}

/*
 * The program ends inside its session with spans still in a thread's
 * buffer (batch mode: 150 = 2 x 64 + 22): abort() runs no exit handler,
 * and exit() flushes only the calling thread.  Every completed span and
 * all input is in the record, which says how the program ended.
 */
static void check_ends_in_session(const char *how, const char *mode, int exit_code,
				  const char *process_end, uint64_t code)
{
	char out[PATH_MAX], printed[64];
	char *argv[] = { khprof, "record", "--mode", (char *)mode, "-o", out, "--", WORKLOAD_RS,
			 (char *)how, "150", NULL };
	struct kh_profile p;
	struct run_result r;

	path_in(out, sizeof(out), tmpdir, "%s-%s.json", how, mode);
	r = run_here(argv);
	if (r.exit_code != exit_code)
		fail_msg("record --mode %s of '%s' exited %d, not %d: %s", mode, how, r.exit_code,
			 exit_code, r.err);
	snprintf(printed, sizeof(printed), "%s n=150\n", how);
	assert_non_null(strstr(r.out, printed));
	load_record(out, &p);
	assert_int_equal(calls_of(&p, KH_STAGE_DECODE), 150);
	assert_int_equal(p.input_bytes, 1500);
	for (uint32_t d = 0; d < KH_DROP_COUNT; d++)
		assert_int_equal(p.ext.drops[d], 0);
	assert_int_equal(p.status, KH_STATE_FAILED);
	assert_true(p.ext.ended_mid_session);
	assert_non_null(p.ext.process_end);
	assert_string_equal(p.ext.process_end, process_end);
	if (strcmp(process_end, "exit") == 0)
		assert_int_equal(p.ext.exit_code.value, code);
	else
		assert_int_equal(p.ext.exit_signal.value, code);
	profile__free(&p);
	assert_seed_conformance_of(khprof, out);
	run_result_free(&r);
}

static void test_ends_in_session_all_modes(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_MODES; i++) {
		check_ends_in_session("abort", modes[i], 128 + SIGABRT, "signal", SIGABRT);
		check_ends_in_session("exit", modes[i], 3, "exit", 3);
	}
}

static void test_nested_all_modes(void **state)
{
	char *untraced_argv[] = { WORKLOAD_RS, "nested", "5", NULL };
	struct run_result untraced;

	(void)state;
	for (size_t i = 0; i < N_MODES; i++)
		check_nested(WORKLOAD_RS, modes[i]);
	/*
	 * After the finish, enabled() is true only while a tracer is attached;
	 * the in-process profile counted the same untraced.
	 */
	untraced = run_here(untraced_argv);
	assert_int_equal(untraced.exit_code, 0);
	assert_non_null(strstr(untraced.out, "nested n=5 in_process_calls=22 traced=false\n"));
	run_result_free(&untraced);
}

/*
 * Batched spans carry TSC ticks with bit 63 set (or, with the TSC not
 * trusted, CLOCK_MONOTONIC: simulated by KHPROF_TEST_TSC), span and pair
 * mode CLOCK_MONOTONIC: either way each span khprof measured lies between
 * the program's own clock reads inside the span and outside its probes
 * (assert_between_own_clocks, as test_trace checks the C workload).
 */
static void test_times_match_workload_clock(void **state)
{
	char *argv[] = { WORKLOAD_RS, "timed", "100", "200", NULL };

	(void)state;
	for (int forced = 0; forced < 2; forced++) {
		if (forced)
			setenv("KHPROF_TEST_TSC", "untrusted", 1);
		for (size_t i = 0; i < N_MODES; i++) {
			char out[PATH_MAX], what[48];
			struct kh_profile p;
			struct run_result r;

			path_in(out, sizeof(out), tmpdir, "timed-%s-%d.json", modes[i], forced);
			r = record(modes[i], out, argv);
			load_record(out, &p);
			snprintf(what, sizeof(what), "%s mode, %s clock", modes[i], p.ext.span_clock);
			assert_between_own_clocks(what, &p, r.out, 200);
			if (forced)
				assert_string_equal(p.ext.span_clock, "monotonic");
			profile__free(&p);
			run_result_free(&r);
		}
		unsetenv("KHPROF_TEST_TSC");
	}
}

/*
 * Spans outside any session, on the main thread: in batch mode they reach
 * khprof only through the flush at process exit.
 */
static void test_program_without_sessions_all_modes(void **state)
{
	char *argv[] = { WORKLOAD_RS, "nosession", "100", NULL };

	(void)state;
	for (size_t i = 0; i < N_MODES; i++) {
		char out[PATH_MAX];
		struct kh_profile p;
		struct run_result r;

		path_in(out, sizeof(out), tmpdir, "nosession-%s.json", modes[i]);
		r = record(modes[i], out, argv);
		load_record(out, &p);
		assert_int_equal(calls_of(&p, KH_STAGE_SUPPRESSION), 100);
		assert_int_equal(p.status, KH_STATE_COMPLETED);
		profile__free(&p);
		assert_seed_conformance_of(khprof, out);
		run_result_free(&r);
	}
}

/* Spawned threads flush their buffers at exit (the crate's TLS destructor). */
static void test_two_threads_all_modes(void **state)
{
	char *argv[] = { WORKLOAD_RS, "threads", "2000", NULL };

	(void)state;
	for (size_t i = 0; i < N_MODES; i++) {
		char out[PATH_MAX];
		struct kh_profile p;
		struct run_result r;

		path_in(out, sizeof(out), tmpdir, "threads-%s.json", modes[i]);
		r = record(modes[i], out, argv);
		load_record(out, &p);
		assert_int_equal(calls_of(&p, KH_STAGE_HOT_PATTERNS), 2000);
		assert_int_equal(calls_of(&p, KH_STAGE_GENERIC_DETECTION), 2000);
		assert_int_equal(p.input_bytes, 2 * 2000 * 10);
		assert_int_equal(p.input_units, 2);
		assert_int_equal(p.status, KH_STATE_COMPLETED);
		profile__free(&p);
		assert_seed_conformance_of(khprof, out);
		run_result_free(&r);
	}
}

/*
 * Four sessions, one record each; the odd ones are dropped unfinished and
 * end as failed, as in the seed.  run_id = {pid}-{unix ns}-{sequence}.
 */
static void test_several_sessions_all_modes(void **state)
{
	char *argv[] = { WORKLOAD_RS, "sessions", "4", NULL };

	(void)state;
	for (size_t m = 0; m < N_MODES; m++) {
		char out[PATH_MAX], path[PATH_MAX], pid_prefix[32] = "";
		struct run_result r;

		path_in(out, sizeof(out), tmpdir, "sessions-%s.json", modes[m]);
		r = record(modes[m], out, argv);
		for (int s = 0; s < 4; s++) {
			char version[32], suffix[16];
			struct kh_profile p;
			const char *run_id;

			if (s == 0)
				snprintf(path, sizeof(path), "%s", out);
			else
				path_in(path, sizeof(path), tmpdir, "sessions-%s.%d.json", modes[m], s + 1);
			load_record(path, &p);
			snprintf(version, sizeof(version), "session-%d", s);
			assert_string_equal(p.identity.binary_version, version);
			assert_int_equal(calls_of(&p, KH_STAGE_PREPROCESS), s + 1);
			assert_int_equal(p.status, s % 2 ? KH_STATE_FAILED : KH_STATE_COMPLETED);
			assert_false(p.ext.ended_mid_session);
			run_id = p.identity.run_id;
			snprintf(suffix, sizeof(suffix), "-%d", s);
			assert_string_equal(run_id + strlen(run_id) - strlen(suffix), suffix);
			if (s == 0)
				snprintf(pid_prefix, sizeof(pid_prefix), "%.*s-",
					 (int)strcspn(run_id, "-"), run_id);
			else
				assert_int_equal(strncmp(run_id, pid_prefix, strlen(pid_prefix)), 0);
			profile__free(&p);
			assert_seed_conformance_of(khprof, path);
		}
		path_in(path, sizeof(path), tmpdir, "sessions-%s.5.json", modes[m]);
		assert_int_equal(access(path, F_OK), -1);
		run_result_free(&r);
	}
}

/*
 * Stage and RunState are the seed's, in the wire order of KH_STAGE_* and
 * KH_STATE_*: stage i gets i+1 spans, and khprof names it as the crate does.
 */
static void test_wire_order_of_stages_and_states(void **state)
{
	char *argv[] = { WORKLOAD_RS, "stages", NULL };
	struct run_result r;
	struct kh_profile p;
	char out[PATH_MAX];
	const char *line;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "stages.json");
	r = record("batch", out, argv);
	load_record(out, &p);
	assert_int_equal(p.stage_count, KH_STAGE_COUNT);
	line = r.out;
	for (uint32_t i = 0; i < KH_STAGE_COUNT; i++) {
		char expected[64];

		assert_int_equal(calls_of(&p, i), i + 1);
		snprintf(expected, sizeof(expected), "%u %s\n", i, kh_stage__name(i));
		assert_non_null(line);
		assert_memory_equal(line, expected, strlen(expected));
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	assert_int_equal(p.transition_count, KH_STATE_COUNT - 1);
	for (uint32_t i = 0; i < KH_STATE_COUNT - 1; i++)
		assert_int_equal(p.transitions[i].state, i);
	profile__free(&p);
	assert_seed_conformance_of(khprof, out);
	run_result_free(&r);
}

/*
 * The Rust twin of test_trace's red-zone test: a leaf function keeping
 * locals below %rsp, with input sites (5-byte nops the kernel turns into
 * calls) between their stores and loads, returns the same traced.
 */
static void test_red_zone_leaf_unchanged(void **state)
{
	char *argv[] = { WORKLOAD_RS, "redzone", "100000", NULL };
	struct run_result r, untraced;
	struct kh_profile p;
	char out[PATH_MAX];

	(void)state;
	path_in(out, sizeof(out), tmpdir, "redzone.json");
	untraced = run_here(argv);
	assert_int_equal(untraced.exit_code, 0);
	assert_string_equal(untraced.out, "wrong=0 of 100000\n");
	r = record("batch", out, argv);
	assert_string_equal(r.out, untraced.out);
	load_record(out, &p);
	/* The probe sites inside the leaf really fired while traced. */
	assert_int_equal(p.input_bytes, 100000);
	assert_int_equal(p.input_units, 100000);
	profile__free(&p);
	run_result_free(&r);
	run_result_free(&untraced);
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The probes `khprof probes` lists, one "name semaphore-kind arg-count"
 * line per distinct kind of site, sorted; *sema_span and *sema_batch get
 * the semaphore addresses (the same for every site of a module).
 */
/* probe_kinds: the last binary's clock_monotonic semaphore (probe ABI 4). */
static unsigned long long last_sema_monotonic;

static char *probe_kinds(const char *binary, unsigned long long *sema_span,
			 unsigned long long *sema_batch)
{
	char *argv[] = { khprof, "probes", (char *)binary, NULL };
	char *kinds[64], *joined, *line, *save = NULL;
	struct run_result r = run_here(argv);
	size_t n = 0, len = 1;

	assert_int_equal(r.exit_code, 0);
	*sema_span = *sema_batch = 0;
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char provider[32], name[32], sema[32], args[128], kind[128];
		unsigned long long address;
		int nargs = 0, off = 0;
		bool seen = false;

		if (sscanf(line, "%31s %31s 0x%llx %31s %n", provider, name, &address, sema, &off) <
		    4)
			continue;
		assert_string_equal(provider, "keyhog");
		/* Sites of code the linker discarded point into the ELF header. */
		assert_true(address >= 0x1000);
		snprintf(args, sizeof(args), "%s", line + off);
		for (char *a = strstr(args, "8@"); a; a = strstr(a + 2, "8@"))
			nargs++;
		if (!strcmp(name, "batch"))
			*sema_batch = strtoull(sema, NULL, 16);
		else if (!strcmp(name, "clock_monotonic"))
			last_sema_monotonic = strtoull(sema, NULL, 16);
		else if (strcmp(sema, "-"))
			*sema_span = strtoull(sema, NULL, 16);
		snprintf(kind, sizeof(kind), "%s %s %d", name, strcmp(sema, "-") ? "sema" : "-",
			 nargs);
		for (size_t i = 0; i < n; i++)
			seen = seen || !strcmp(kinds[i], kind);
		if (!seen) {
			assert_true(n < sizeof(kinds) / sizeof(kinds[0]));
			kinds[n] = strdup(kind);
			len += strlen(kind) + 1;
			n++;
		}
	}
	qsort(kinds, n, sizeof(kinds[0]), compare_strings);
	joined = calloc(1, len);
	assert_non_null(joined);
	for (size_t i = 0; i < n; i++) {
		strcat(strcat(joined, kinds[i]), "\n");
		free(kinds[i]);
	}
	run_result_free(&r);
	return joined;
}

static void test_probes_match_c_header(void **state)
{
	unsigned long long c_span, c_batch, rs_span, rs_batch;
	char *c = probe_kinds(WORKLOAD_C, &c_span, &c_batch);
	unsigned long long c_monotonic = last_sema_monotonic;
	char *rs = probe_kinds(WORKLOAD_RS, &rs_span, &rs_batch);

	(void)state;
	assert_string_equal(rs, c);
	/*
	 * Twelve kinds: four span/batch sites and clock_monotonic with a
	 * semaphore, seven without.
	 */
	assert_int_equal(count_lines(rs), 12);
	/* One word per module: span half at +0, batch half at +2, monotonic at +4. */
	assert_true(rs_span != 0);
	assert_int_equal(rs_batch, rs_span + 2);
	assert_int_equal(last_sema_monotonic, rs_span + 4);
	assert_int_equal(c_monotonic, c_span + 4);
	assert_int_equal(c_batch, c_span + 2);
	free(c);
	free(rs);
}

/* The crate built by Debian 12's own rustc 1.63 emits and traces the same. */
static void test_debian_rustc_build(void **state)
{
	unsigned long long c_span, c_batch, rs_span, rs_batch;
	char *c, *rs;

	(void)state;
	if (access(DEBIAN_RUSTC, X_OK) != 0) {
		printf("test_rust: note: no %s on this machine, the 1.63 build is not checked\n",
		       DEBIAN_RUSTC);
		return;
	}
	if (access(WORKLOAD_RS_DEBIAN, X_OK) != 0)
		fail_msg("%s is missing although %s exists (make builds it)", WORKLOAD_RS_DEBIAN,
			 DEBIAN_RUSTC);
	c = probe_kinds(WORKLOAD_C, &c_span, &c_batch);
	rs = probe_kinds(WORKLOAD_RS_DEBIAN, &rs_span, &rs_batch);
	assert_string_equal(rs, c);
	assert_int_equal(rs_batch, rs_span + 2);
	free(c);
	free(rs);
	for (size_t i = 0; i < N_MODES; i++)
		check_nested(WORKLOAD_RS_DEBIAN, modes[i]);
}

/*
 * khprof attach in each mode to the serve loop, two sessions, then the
 * workload exits and khprof stops by itself.  Each session event flushes
 * the serving thread's buffer, so batch mode sees every span too.
 */
static void test_attach_all_modes(void **state)
{
	(void)state;
	for (size_t m = 0; m < N_MODES; m++) {
		char out[PATH_MAX], path[PATH_MAX], pid_text[16], line[512];
		char *attach_argv[] = { khprof, "attach", "--mode", (char *)modes[m], "-p",
					pid_text, "-o", out, NULL };
		uint64_t cpus = 0;
		struct child w, k;

		path_in(out, sizeof(out), tmpdir, "attach-%s.json", modes[m]);
		w = serve_loop_start_pid(WORKLOAD_RS, pid_text, sizeof(pid_text));
		k = attach_spawn(attach_argv);
		for (int s = 0; s < 2; s++) {
			child_send(&w, "session\n");
			child_read_line(&w, "logical_cpus=", line, sizeof(line));
			cpus = printed_logical_cpus(line);
			child_wait_for_line(&w, "done");
		}
		serve_loop_stop(&w);
		assert_int_equal(child_wait(&k), 0);

		for (int s = 0; s < 2; s++) {
			struct kh_profile p;

			if (s == 0)
				snprintf(path, sizeof(path), "%s", out);
			else
				path_in(path, sizeof(path), tmpdir, "attach-%s.2.json", modes[m]);
			load_record(path, &p);
			assert_nested(&p, 10, cpus);
			assert_false(p.ext.started_mid_session);
			profile__free(&p);
			assert_seed_conformance_of(khprof, path);
		}
	}
}

/*
 * khprof attaches while the Rust program is inside a session: the record
 * starts in the state the program's kh_current_state says, from the
 * moment the probes went live, holds the spans that came after, and the
 * identity the session set before.
 */
static void test_attach_mid_session(void **state)
{
	char out[PATH_MAX], pid_text[16];
	char *attach_argv[] = { khprof, "attach", "-p", pid_text, "-o", out, NULL };
	struct kh_profile p;
	struct child w, k;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "attach-mid.json");
	w = serve_loop_start_pid(WORKLOAD_RS, pid_text, sizeof(pid_text));
	serve_loop_command(&w, "open\n");
	k = attach_spawn(attach_argv);
	serve_loop_command(&w, "close\n");
	serve_loop_stop(&w);
	assert_int_equal(child_wait(&k), 0);

	load_record(out, &p);
	assert_true(p.ext.started_mid_session);
	assert_non_null(p.ext.attach_state);
	assert_string_equal(p.ext.attach_state, "scanning");
	assert_true(p.ext.observed_from_unix_ns.present);
	assert_int_equal(p.status, KH_STATE_COMPLETED);
	assert_int_equal(calls_of(&p, KH_STAGE_DECODE), 10);
	assert_int_equal(p.input_bytes, 100);
	/* The identity Session::start sent before the attach (kh_identity_table). */
	assert_string_equal(p.identity.binary_version, "workload-rs 1.0");
	assert_string_equal(p.identity.detector_digest, "det-test");
	assert_string_equal(p.identity.backend_selected, "cpu");
	assert_int_equal(p.identity.scanner_threads, 2);
	profile__free(&p);
	assert_seed_conformance_of(khprof, out);
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_rust",
		.need = "BPF integration tests need root (CAP_BPF, CAP_PERFMON)",
		.tmp_prefix = "khprof-rust-test",
		.tmpdir = &tmpdir,
		.seed_checked = true,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probes_match_c_header),
		cmocka_unit_test(test_nested_all_modes),
		cmocka_unit_test(test_two_threads_all_modes),
		cmocka_unit_test(test_several_sessions_all_modes),
		cmocka_unit_test(test_wire_order_of_stages_and_states),
		cmocka_unit_test(test_program_without_sessions_all_modes),
		cmocka_unit_test(test_times_match_workload_clock),
		cmocka_unit_test(test_red_zone_leaf_unchanged),
		cmocka_unit_test(test_attach_all_modes),
		cmocka_unit_test(test_ends_in_session_all_modes),
		cmocka_unit_test(test_attach_mid_session),
		cmocka_unit_test(test_debian_rustc_build),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
