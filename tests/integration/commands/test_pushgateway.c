// SPDX-License-Identifier: MIT
/*
 * `khprof export` pushed to a real Pushgateway, Debian 12's
 * prometheus-pushgateway (1.5), started here on a free loopback port, the
 * way `khprof export --help` shows it: the default export is accepted and
 * its metrics, the khprof_run_info identity gauge included, are read back
 * from the Pushgateway's own API; an OpenMetrics push is refused, and
 * `curl --fail-with-body` makes that refusal fail.  Needs no root.
 */
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <cjson/cJSON.h>

#include "khhttp.h"
#include "khtest.h"

#define PUSHGATEWAY "/usr/bin/prometheus-pushgateway"
#define CURL "/usr/bin/curl"
/* Readiness polls before the Pushgateway counts as broken: 30 s at 20 ms. */
#define READY_POLLS 1500

static char *khprof;
static char *tmpdir;

struct pushgateway {
	pid_t pid;
	int port;
	char log[PATH_MAX];
};

/*
 * GET path as HTTP/1.0, so that the answer is not chunked (the
 * Pushgateway chunks large bodies for HTTP/1.1); the body on 200, else NULL.
 */
static char *get_body(int port, const char *path)
{
	char request[512], *answer, *body = NULL;

	snprintf(request, sizeof(request), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
	answer = http_exchange(port, request, strlen(request));
	if (http_status(answer) == 200 && strstr(answer, "\r\n\r\n"))
		body = strdup(strstr(answer, "\r\n\r\n") + 4);
	free(answer);
	return body;
}

/* Between two readiness polls (a poll's pace, not a synchronisation). */
static void poll_pause(void)
{
	struct timespec pause = { .tv_nsec = 20 * 1000000 };

	nanosleep(&pause, NULL);
}

static void fail_with_log(const struct pushgateway *g, const char *what)
{
	char *log = NULL;
	size_t len;

	file__read_all(g->log, &log, &len);
	fail_msg("pushgateway %s; its log: %s", what, log ? log : "(none)");
}

/*
 * Started on a free port, without persistence, and ready: its /-/ready
 * answers 200 (polled; a Pushgateway that exits or never gets ready fails
 * the test with its log).
 */
static struct pushgateway start_pushgateway(void)
{
	char listen[64];
	struct pushgateway g;
	char *argv[] = { PUSHGATEWAY, listen, "--persistence.file=", "--log.level=warn", NULL };
	int log_fd, status;

	g.port = free_port();
	snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%d", g.port);
	path_in(g.log, sizeof(g.log), tmpdir, "pushgateway-%d.log", g.port);
	log_fd = open(g.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(log_fd >= 0);
	g.pid = fork();
	assert_true(g.pid >= 0);
	if (g.pid == 0) {
		dup2(log_fd, 1);
		dup2(log_fd, 2);
		execv(argv[0], argv);
		_exit(RUN_EXEC_FAILED);
	}
	close(log_fd);
	for (int i = 0; i < READY_POLLS; i++) {
		char *body = get_body(g.port, "/-/ready");

		free(body);
		if (body)
			return g;
		if (waitpid(g.pid, &status, WNOHANG) == g.pid)
			fail_with_log(&g, "exited before it was ready");
		poll_pause();
	}
	kill(g.pid, SIGKILL);
	wait_exit(g.pid);
	fail_with_log(&g, "never answered /-/ready");
	return g;
}

static void stop_pushgateway(struct pushgateway *g)
{
	kill(g->pid, SIGTERM);
	wait_exit(g->pid);
}

/* `khprof export [FORMAT] RECORD | curl --fail-with-body ...`, as the help shows it. */
static struct run_result push(const struct pushgateway *g, const char *format,
			      const char *record, const char *job)
{
	char script[4 * PATH_MAX];
	char *argv[] = { "/bin/sh", "-c", script, NULL };

	snprintf(script, sizeof(script),
		 "%s export %s %s | %s --silent --show-error --fail-with-body --data-binary @- "
		 "http://127.0.0.1:%d/metrics/job/%s", khprof, format, record, CURL, g->port, job);
	return run_here(argv);
}

/* The metric family name in the group of job, from /api/v1/metrics; NULL if absent. */
static cJSON *pushed_family(cJSON *root, const char *job, const char *name)
{
	cJSON *group;

	cJSON_ArrayForEach(group, cJSON_GetObjectItem(root, "data")) {
		cJSON *labels = cJSON_GetObjectItem(cJSON_GetObjectItem(group, "labels"), "job");

		if (cJSON_IsString(labels) && !strcmp(labels->valuestring, job))
			return cJSON_GetObjectItem(group, name);
	}
	return NULL;
}

static const char *label_of(cJSON *metric, const char *name)
{
	cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(metric, "labels"), name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_export_pushed_and_read_back(void **state)
{
	char *record = realpath("tests/golden/seed_workload.json", NULL);
	struct pushgateway g;
	struct run_result r;
	cJSON *root, *info, *metric, *started;
	char *body;

	(void)state;
	assert_non_null(record);
	g = start_pushgateway();

	/* The default export is accepted: curl exits 0 and says nothing. */
	r = push(&g, "", record, "scan");
	if (r.exit_code != 0)
		fail_msg("push refused (exit %d): %s%s", r.exit_code, r.out, r.err);
	assert_string_equal(r.err, "");
	run_result_free(&r);

	/* OpenMetrics' info type is refused, and --fail-with-body makes it fail. */
	r = push(&g, "--format openmetrics", record, "scan-om");
	assert_int_equal(r.exit_code, 22);
	assert_non_null(strstr(r.out, "unknown metric type \"info\""));
	run_result_free(&r);

	body = get_body(g.port, "/api/v1/metrics");
	assert_non_null(body);
	root = cJSON_Parse(body);
	assert_non_null(root);
	info = pushed_family(root, "scan", "khprof_run_info");
	assert_non_null(info);
	assert_string_equal(cJSON_GetObjectItem(info, "type")->valuestring, "GAUGE");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(info, "metrics")), 1);
	metric = cJSON_GetArrayItem(cJSON_GetObjectItem(info, "metrics"), 0);
	assert_string_equal(cJSON_GetObjectItem(metric, "value")->valuestring, "1");
	assert_string_equal(label_of(metric, "binary_version"), "0.1.0");
	assert_string_equal(label_of(metric, "detector_digest"), "det-abc");
	assert_string_equal(label_of(metric, "config_digest"), "cfg-def");
	assert_string_equal(label_of(metric, "source_kind"), "filesystem");
	assert_string_equal(label_of(metric, "job"), "scan");
	started = pushed_family(root, "scan", "khprof_sessions_started_total");
	assert_non_null(started);
	metric = cJSON_GetArrayItem(cJSON_GetObjectItem(started, "metrics"), 0);
	assert_string_equal(cJSON_GetObjectItem(metric, "value")->valuestring, "1");
	/* The refused push left no group behind. */
	assert_null(pushed_family(root, "scan-om", "khprof_run_info"));
	cJSON_Delete(root);
	free(body);

	/* The Pushgateway's own /metrics serves it to Prometheus, with the job label. */
	body = get_body(g.port, "/metrics");
	assert_non_null(body);
	assert_non_null(strstr(body, "# TYPE khprof_run_info gauge\n"));
	assert_non_null(strstr(body, "binary_version=\"0.1.0\""));
	free(body);

	stop_pushgateway(&g);
	free(record);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_export_pushed_and_read_back),
	};
	int failed;

	if (access(PUSHGATEWAY, X_OK) != 0 || access(CURL, X_OK) != 0) {
		if (running_in_ci()) {
			fprintf(stderr, "test_pushgateway: %s or %s is missing and CI=true forbids "
					"skipping (make test installs them)\n", PUSHGATEWAY, CURL);
			return 1;
		}
		printf("test_pushgateway: skipped: %s or %s is missing (make test installs them)\n",
		       PUSHGATEWAY, CURL);
		return 0;
	}
	{
		char *k = tool_path("KH_KHPROF", "build/khprof");

		khprof = realpath(k, NULL);
		free(k);
	}
	tmpdir = make_temp_dir("khprof-pushgateway");
	if (!khprof || !tmpdir) {
		fprintf(stderr, "test_pushgateway: no build/khprof or no temporary folder\n");
		return 1;
	}
	failed = cmocka_run_group_tests(tests, NULL, NULL);
	if (remove_tree(tmpdir) != 0)
		failed = failed ? failed : 1;
	free(tmpdir);
	free(khprof);
	return failed;
}
