// SPDX-License-Identifier: MIT
/*
 * khprof diff on a busy runner, recorded for real: the same build of
 * stagework recorded in alternated runs, the candidate's each while hog
 * spins a thread on every CPU (started before the run, which begins once
 * the hogs say they spin; stopped and waited for after it).  The
 * candidate's threads waited for a CPU, as their records say, and khprof
 * diff never fails the build for it: exit 0 or 4, never 1.  Needs root;
 * never skips when CI=true.
 */
#include <errno.h>
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
#include <cjson/cJSON.h>

#include "khchild.h"
#include "khtest.h"
#include "record.h"
#include "record_dir.h"

#define RUNS_A_SIDE 8

static char *khprof, *stagework, *hog;
static char *tmpdir;

/* One run of stagework appended to dir; with busy, while the hogs spin. */
static void record_one(const char *dir, bool busy)
{
	char *argv[] = { khprof, "record", "-q", "--repeat", "1", "--append", "-o", (char *)dir,
			 "--", stagework, "single", "120", NULL };
	char *hog_argv[] = { hog, NULL };
	struct run_result r;
	struct child h = { .pid = -1 };

	if (busy) {
		h = child_spawn(hog_argv, false);
		child_read_line(&h, "ready", NULL, 0);
	}
	r = run_here(argv);
	if (r.exit_code)
		fail_msg("khprof record of stagework exited %d: %s", r.exit_code, r.err);
	run_result_free(&r);
	if (busy) {
		/* Its stdin ends: the hogs stop, and it exits 0. */
		close(h.to);
		assert_int_equal(wait_exit(h.pid), 0);
		fclose(h.from);
	}
}

/* Every stage's time waiting for a CPU, summed over the record's stages. */
static uint64_t runnable_of(const struct kh_profile *p)
{
	uint64_t ns = 0;

	assert_true(p->ext.latency.present && p->ext.latency.off_cpu);
	for (uint32_t s = 0; s < KH_STAGE_COUNT; s++)
		if (p->ext.latency.stages[s].present)
			ns += p->ext.latency.stages[s].runnable_ns;
	return ns;
}

static void test_busy_candidate_same_build_never_fails(void **state)
{
	char base[PATH_MAX], cand[PATH_MAX], **paths = NULL;
	char *text[] = { khprof, "diff", base, cand, NULL };
	char *json[] = { khprof, "diff", "--format", "json", base, cand, NULL };
	struct run_result r;
	cJSON *root, *it;
	size_t count = 0;

	(void)state;
	path_in(base, sizeof(base), tmpdir, "base");
	path_in(cand, sizeof(cand), tmpdir, "cand");
	/* Alternated, as docs/CI.md recommends: base, then candidate, each round. */
	for (int i = 0; i < RUNS_A_SIDE; i++) {
		record_one(base, false);
		record_one(cand, true);
	}
	/* The hogs took CPU from every candidate run. */
	assert_int_equal(record_dir__list(cand, &paths, &count), 0);
	assert_int_equal(count, RUNS_A_SIDE);
	for (size_t i = 0; i < count; i++) {
		struct kh_profile p;

		load_record(paths[i], &p);
		if (!runnable_of(&p))
			fail_msg("'%s' never waited for a CPU while the hogs spun", paths[i]);
		profile__free(&p);
		free(paths[i]);
	}
	free(paths);

	r = run_here(text);
	if (r.exit_code != 0 && r.exit_code != 4)
		fail_msg("khprof diff exited %d on the same build:\n%s%s", r.exit_code, r.out,
			 r.err);
	/* When it cannot judge, one line on stderr says why. */
	if (r.exit_code == 4)
		assert_non_null(strstr(r.err, "khprof: warning: cannot judge: "));
	run_result_free(&r);

	r = run_here(json);
	assert_true(r.exit_code == 0 || r.exit_code == 4);
	root = cJSON_Parse(r.out);
	assert_non_null(root);
	assert_int_equal(cJSON_GetObjectItem(root, "regressions")->valueint, 0);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "items"))
		if (cJSON_IsTrue(cJSON_GetObjectItem(it, "gating")) &&
		    !strcmp(cJSON_GetObjectItem(it, "verdict")->valuestring, "regressed"))
			fail_msg("'%s' regressed", cJSON_GetObjectItem(it, "name")->valuestring);
	cJSON_Delete(root);
	run_result_free(&r);
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_verdict",
		.need = "BPF integration tests need root",
		.tmp_prefix = "khprof-verdict",
		.tmpdir = &tmpdir,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_candidate_same_build_never_fails),
	};
	char *k = tool_path("KH_KHPROF", "build/khprof");
	char *s = tool_path("KH_STAGEWORK", "build/workloads/stagework");
	char *h = tool_path("KH_HOG", "build/workloads/hog");

	khprof = realpath(k, NULL);
	stagework = realpath(s, NULL);
	hog = realpath(h, NULL);
	if (!khprof || !stagework || !hog) {
		fprintf(stderr, "test_verdict: cannot find %s, %s or %s: %s\n", k, s, h,
			strerror(errno));
		return 1;
	}
	free(k);
	free(s);
	free(h);
	return run_root_tests(&rt, tests);
}
