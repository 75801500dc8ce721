// SPDX-License-Identifier: MIT
/*
 * Integration tests for what the BPF side reads from the traced process
 * itself: identity strings on pages it never touched, resource samples at
 * the transition and the peaks between transitions.  The workload
 * (tests/workloads/samples.c, built only against include/keyhog_profile.h)
 * prints its own measurements; every check compares like with like, never
 * against a time limit.  Root only; never skipped when CI=true.
 */
#include <limits.h>
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
#include "khtest.h"
#include "record.h"

#define SAMPLES "build/workloads/samples"

static char *khprof;
static char *tmpdir;
static const char *const modes[] = { "span", "pair", "batch" };

/* khprof record --mode MODE -o tmpdir/SCENARIO-MODE.json -- samples SCENARIO */
static struct run_result record_samples(const char *scenario, const char *mode,
					struct kh_profile *p)
{
	char out[PATH_MAX];
	char *argv[] = { khprof, "record", "--mode", (char *)mode, "-o", out, "--",
			 SAMPLES, (char *)scenario, NULL };
	struct run_result r;

	assert_true((size_t)snprintf(out, sizeof(out), "%s/%s-%s.json", tmpdir, scenario, mode) <
		    sizeof(out));
	r = run_cmd(NULL, -1, argv);
	if (r.exit_code != 0)
		fail_msg("khprof record -- samples %s exited %d: %s", scenario, r.exit_code,
			 r.err);
	load_record(out, p);
	return r;
}

/* The value the workload printed as "NAME VALUE". */
static uint64_t printed(const char *out, const char *name)
{
	char needle[64];
	const char *at;

	snprintf(needle, sizeof(needle), "%s ", name);
	at = strstr(out, needle);
	if (!at)
		fail_msg("the workload did not print '%s': %s", name, out);
	return strtoull(at + strlen(needle), NULL, 10);
}

/* Every sample has all four seed fields and the CPU time in ns. */
static void assert_samples_complete(const struct kh_profile *p)
{
	assert_int_equal(p->ext.sample_count, p->resource_sample_count);
	for (size_t i = 0; i < p->resource_sample_count; i++) {
		const struct kh_resource_snapshot *s = &p->resource_samples[i].snapshot;

		assert_true(s->cpu_time_ms.present);
		assert_true(s->resident_bytes.present && s->resident_bytes.value > 0);
		assert_true(s->virtual_bytes.present && s->virtual_bytes.value > 0);
		assert_true(s->thread_count.present && s->thread_count.value > 0);
		assert_true(p->ext.samples[i].cpu_time_ns.present);
		/* The seed's field is the same clock, truncated to the millisecond. */
		assert_int_equal(s->cpu_time_ms.value, p->ext.samples[i].cpu_time_ns.value / 1000000);
	}
}

/*
 * Identity literals on a .rodata page the program never mapped (the
 * workload checks its page table first, and unmaps it right after the
 * probes), on a new stack page and on the heap are read exactly; memory
 * nobody can read is named and counted.
 */
static void assert_identity_from_untouched_pages(void)
{
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct kh_profile p;
		struct run_result r = record_samples("identity", modes[m], &p);

		assert_int_equal(printed(r.out, "rodata_present_before"), 0);
		assert_string_equal(p.identity.binary_version, "9.8.7");
		assert_string_equal(p.identity.detector_digest, "rodata-digest");
		assert_string_equal(p.identity.config_digest, "stack-42");
		assert_string_equal(p.identity.source_kind, "heap-7");
		assert_string_equal(p.identity.workload_class, "unknown");
		assert_int_equal(p.ext.identity_unreadable, 2);
		assert_non_null(strstr(r.err, "cannot read identity 'workload_class': its value "
					      "at 0x10 is unreadable (Bad address)"));
		assert_non_null(strstr(r.err, "cannot read an identity key at 0x10: Bad address"));
		assert_null(strstr(r.err, "ignoring identity ''"));
		assert_samples_complete(&p);
		profile__free(&p);
		run_result_free(&r);
	}
}

static void test_identity_from_untouched_pages(void **state)
{
	(void)state;
	assert_identity_from_untouched_pages();
}

/*
 * The same with the classic object of kernels without bpf_loop (5.10),
 * whose probe cannot fault a page in: khprof reads the strings from the
 * process, stopped at the probe until it has (KH_EVENT_IDENTITY_STOPPED).
 * Read after the probe, the far block would already be unmapped: before
 * the stop, 1 record in 6 of 5.10's lost its version to the process's exit.
 */
static void test_identity_from_untouched_pages_classic(void **state)
{
	(void)state;
	setenv("KHPROF_DISABLE_FEATURES", "bpf_loop", 1);
	assert_identity_from_untouched_pages();
	unsetenv("KHPROF_DISABLE_FEATURES");
}

/*
 * CPU time at a transition is at least what the program measured of itself
 * (CLOCK_PROCESS_CPUTIME_ID) just before the probe, and at most that plus
 * the wall time around the probe: the running thread cannot have used more.
 * (Not "at most the reading after": khprof adds the running thread's time
 * since the runqueue's clock last moved without taking off steal time,
 * which a vCPU preempted during the probe would have; docs/SCHEMA.md.)  The
 * slack of 1/1000 of the window covers the scheduler's clock and
 * CLOCK_MONOTONIC running at rates that NTP may set up to 500 ppm apart.
 */
static void assert_cpu_at_probe(const char *out, const char *name, uint64_t recorded)
{
	char key[32];
	uint64_t before, window;

	snprintf(key, sizeof(key), "%s_before", name);
	before = printed(out, key);
	snprintf(key, sizeof(key), "%s_window", name);
	window = printed(out, key);
	assert_in_range(recorded, before, before + window + window / 1000);
}

static void test_cpu_time_at_the_transition(void **state)
{
	(void)state;
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct kh_profile p;
		struct run_result r = record_samples("cpu", modes[m], &p);
		uint64_t scanning, completed;

		assert_samples_complete(&p);
		assert_int_equal(p.transition_count, 4);
		assert_int_equal(p.resource_samples[2].state, KH_STATE_SCANNING);
		assert_int_equal(p.resource_samples[3].state, KH_STATE_COMPLETED);
		scanning = p.ext.samples[2].cpu_time_ns.value;
		completed = p.ext.samples[3].cpu_time_ns.value;
		assert_cpu_at_probe(r.out, "scanning", scanning);
		assert_cpu_at_probe(r.out, "completed", completed);
		/* acquiring burned 30 ms of CPU by the program's own clock */
		assert_int_equal(p.states[1].state, KH_STATE_ACQUIRING);
		assert_true(p.states[1].cpu_time_ms.present);
		assert_true(p.states[1].cpu_time_ms.value >= 29);
		assert_true(p.states[1].aggregate_cpu_milli_percent.value > 0);
		profile__free(&p);
		run_result_free(&r);
	}
}

/*
 * Two workers alive together and 64 MiB touched, then freed, between two
 * transitions: samples at the transitions show neither, the peaks do.
 */
static void test_peaks_between_transitions(void **state)
{
	(void)state;
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct kh_profile p;
		struct run_result r = record_samples("peaks", modes[m], &p);
		uint64_t held = printed(r.out, "rss_while_held");

		assert_samples_complete(&p);
		assert_int_equal(p.resource_samples[2].state, KH_STATE_REPORTING);
		assert_int_equal(p.resource_samples[1].snapshot.thread_count.value, 1);
		assert_int_equal(p.resource_samples[2].snapshot.thread_count.value, 1);
		assert_int_equal(p.ext.samples[2].peak_threads.value,
				 printed(r.out, "threads_together"));
		assert_true(p.resource_samples[2].snapshot.resident_bytes.value < held);
		/* The peak saw every RSS change, so it is at least what the program read. */
		assert_true(p.ext.samples[2].peak_resident_bytes.value >= held);
		assert_int_equal(p.resources.max_observed_threads.value, 3);
		assert_true(p.resources.max_observed_resident_bytes.value >= held);
		profile__free(&p);
		run_result_free(&r);
	}
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_samples",
		.need = "BPF integration tests need root (CAP_BPF, CAP_PERFMON)",
		.tmp_prefix = "khprof-samples",
		.tmpdir = &tmpdir,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identity_from_untouched_pages),
		cmocka_unit_test(test_identity_from_untouched_pages_classic),
		cmocka_unit_test(test_cpu_time_at_the_transition),
		cmocka_unit_test(test_peaks_between_transitions),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
