// SPDX-License-Identifier: MIT
/*
 * Metrics for Prometheus: `khprof export` of finished records, checked by
 * Prometheus's own promtool; `khprof attach --serve` scraped by a real
 * Prometheus server (Debian's, loopback only, its TSDB in a temporary
 * folder), whose HTTP API must give back what the workload did.  The
 * server's answers to bad, slow and excess clients: test_serve.c.
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

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include "fileio.h"
#include "hist.h"
#include "khhttp.h"
#include "json.h"
#include "khchild.h"
#include "khtest.h"

#define PROMTOOL "/usr/bin/promtool"
#define PROMETHEUS "/usr/bin/prometheus"
#define WORKLOAD "build/workloads/workload"
/*
 * How long Prometheus may take to start, scrape and answer: generous, as
 * the machine is shared; the tests poll Prometheus's own state until then.
 */
#define PROMETHEUS_DEADLINE_S 120

/* build/khprof, or $KH_KHPROF; set in main(). */
static char *khprof;
static char *tmpdir;

static char *golden(const char *name)
{
	char *path;

	if (asprintf(&path, "%s/tests/golden/%s", test_repo_root(), name) < 0)
		abort();
	return path;
}

/* promtool check metrics < path: exit 0 means no error and no lint problem. */
static void assert_promtool_accepts(const char *path)
{
	char *script;
	char *argv[] = { "/bin/sh", "-c", NULL, NULL };
	struct run_result r;

	if (asprintf(&script, "exec %s check metrics < '%s'", PROMTOOL, path) < 0)
		abort();
	argv[2] = script;
	r = run_here(argv);
	if (r.exit_code != 0)
		fail_msg("promtool check metrics rejects %s (exit %d): %s%s", path, r.exit_code,
			 r.out, r.err);
	run_result_free(&r);
	free(script);
}

static void test_export_prometheus_text_passes_promtool(void **state)
{
	char out[512];
	char *a = golden("seed_workload.json"), *b = golden("identity_variety.json");
	char *c = golden("huge.json");
	char *argv[] = { khprof, "export", "--format", "prometheus", "-o", out, a, b, c, NULL };
	struct run_result r;
	char *text = NULL;
	size_t len;

	(void)state;
	snprintf(out, sizeof(out), "%s/export.prom", tmpdir);
	r = run_here(argv);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out, "");
	assert_int_equal(file__read_all(out, &text, &len), 0);
	/*
	 * Three sessions; identity_variety's values need escaping, and its
	 * carriage return, a control a terminal acts on, becomes U+FFFD.
	 */
	assert_non_null(strstr(text, "khprof_sessions_started_total 3\n"));
	assert_non_null(strstr(text, "binary_version=\"v\tx\\ny\xef\xbf\xbd\""));
	assert_promtool_accepts(out);
	free(text);
	run_result_free(&r);
	free(a);
	free(b);
	free(c);
}

static void test_export_openmetrics_to_stdout(void **state)
{
	char *a = golden("seed_workload.json");
	char *argv[] = { khprof, "export", "--format", "openmetrics", a, NULL };
	char *plain[] = { khprof, "export", a, NULL };
	struct run_result r;

	(void)state;
	/* The default is the Prometheus text format: a gauge, no # EOF. */
	r = run_here(plain);
	assert_int_equal(r.exit_code, 0);
	assert_non_null(strstr(r.out, "# TYPE khprof_run_info gauge\n"));
	assert_null(strstr(r.out, "# EOF"));
	assert_null(strstr(r.out, " info\n"));
	run_result_free(&r);
	r = run_here(argv);
	assert_int_equal(r.exit_code, 0);
	assert_true(has_suffix(r.out, "\n# EOF\n"));
	assert_non_null(strstr(r.out, "# TYPE khprof_stage_calls counter\n"));
	assert_non_null(strstr(r.out, "# TYPE khprof_run info\n"));
	assert_non_null(strstr(r.out, "khprof_sessions_started_total 1\n"));
	run_result_free(&r);
	free(a);
}

/* The value of the sample whose line starts with prefix ("name{labels} "), or fails. */
static double sample_value(const char *text, const char *prefix)
{
	const char *at = strstr(text, prefix);

	if (!at)
		fail_msg("no sample '%s'", prefix);
	return strtod(at + strlen(prefix), NULL);
}

/* An exposition's seconds value "S.NNNNNNNNN" as whole ns. */
static uint64_t sample_ns(const char *text, const char *prefix)
{
	const char *at = strstr(text, prefix);
	unsigned long long whole, frac;

	if (!at || sscanf(at + strlen(prefix), "%llu.%9llu", &whole, &frac) != 2)
		fail_msg("no seconds sample '%s'", prefix);
	return whole * 1000000000ull + frac;
}

/*
 * A real record's latency histogram, exported: each bound's count is the
 * record's buckets up to that bound exactly (worked out here bucket by
 * bucket from their edges), +Inf and _count are the spans, _sum is the
 * stage's elapsed time; promtool accepts it.
 */
static void test_export_histogram_is_the_records_buckets(void **state)
{
	char record[512], out[512], prefix[160], err[256], le[32];
	char *rec_argv[] = { khprof, "record", "-q", "-o", record, "--", WORKLOAD, "mix", "300",
			     NULL };
	char *exp_argv[] = { khprof, "export", "--format", "prometheus", "-o", out, record, NULL };
	const char *stage = "confirmed-patterns";
	const struct kh_stage_dist *d;
	struct run_result r;
	struct kh_profile p;
	char *text = NULL;
	size_t len;

	(void)state;
	snprintf(record, sizeof(record), "%s/mix.json", tmpdir);
	snprintf(out, sizeof(out), "%s/mix.prom", tmpdir);
	r = run_here(rec_argv);
	assert_int_equal(r.exit_code, 0);
	run_result_free(&r);
	r = run_here(exp_argv);
	assert_int_equal(r.exit_code, 0);
	run_result_free(&r);
	assert_int_equal(profile__read_file(record, &p, err, sizeof(err)), 0);
	assert_int_equal(file__read_all(out, &text, &len), 0);
	d = &p.ext.latency.stages[KH_STAGE_CONFIRMED_PATTERNS];
	assert_true(d->present && d->spans == 300);
	for (unsigned int j = 0; j < KH_SPAN_BOUNDS; j++) {
		uint64_t expected = 0;

		for (uint32_t i = 0; i < KH_HIST_BUCKETS; i++)
			if (kh_hist_bucket_low(i) + kh_hist_bucket_width(i) - 1 <= kh_span_bound_ns(j))
				expected += d->counts[i];
		/* le as Prometheus reads it: the bound in seconds. */
		snprintf(prefix, sizeof(prefix), "khprof_stage_span_seconds_bucket{stage=\"%s\",le=\"",
			 stage);
		{
			const char *at = strstr(text, prefix);
			double bound_s = (double)kh_span_bound_ns(j) / 1e9;

			/* Find this bound's line among the stage's 17. */
			while (at && (sscanf(at + strlen(prefix), "%31[^\"]", le) != 1 ||
				      strtod(le, NULL) != bound_s))
				at = strstr(at + 1, prefix);
			if (!at)
				fail_msg("no bucket of %s at %llu ns", stage,
					 (unsigned long long)kh_span_bound_ns(j));
			snprintf(prefix, sizeof(prefix),
				 "khprof_stage_span_seconds_bucket{stage=\"%s\",le=\"%s\"} ", stage, le);
			if (sample_value(text, prefix) != (double)expected)
				fail_msg("%s: %g, the record's buckets say %llu", prefix,
					 sample_value(text, prefix), (unsigned long long)expected);
		}
	}
	snprintf(prefix, sizeof(prefix), "khprof_stage_span_seconds_bucket{stage=\"%s\",le=\"+Inf\"} ",
		 stage);
	assert_true(sample_value(text, prefix) == 300);
	snprintf(prefix, sizeof(prefix), "khprof_stage_span_seconds_count{stage=\"%s\"} ", stage);
	assert_true(sample_value(text, prefix) == 300);
	snprintf(prefix, sizeof(prefix), "khprof_stage_span_seconds_sum{stage=\"%s\"} ", stage);
	{
		uint64_t sum = sample_ns(text, prefix), elapsed = 0;
		char root[160], decoded[160];

		snprintf(root, sizeof(root), "khprof_stage_elapsed_seconds_total{stage=\"%s\","
			 "attribution=\"root\"} ", stage);
		snprintf(decoded, sizeof(decoded), "khprof_stage_elapsed_seconds_total{stage=\"%s\","
			 "attribution=\"decoded\"} ", stage);
		for (size_t i = 0; i < p.stage_count; i++)
			if (p.stages[i].stage == KH_STAGE_CONFIRMED_PATTERNS)
				elapsed = p.stages[i].elapsed_ns;
		assert_true(elapsed > 0);
		assert_int_equal(sum, elapsed);
		assert_int_equal(sum, sample_ns(text, root) + sample_ns(text, decoded));
	}
	assert_promtool_accepts(out);
	profile__free(&p);
	free(text);
}

static void test_export_bad_input(void **state)
{
	char *good = golden("seed_workload.json");
	char *missing[] = { khprof, "export", good, "/nonexistent.json", NULL };
	char *format[] = { khprof, "export", "--format", "xml", good, NULL };
	char *none[] = { khprof, "export", NULL };
	char *bad_path = write_temp("{\"schema\": 5}");
	char *malformed[] = { khprof, "export", bad_path, NULL };
	struct run_result r;

	(void)state;
	r = run_here(missing);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "cannot read record '/nonexistent.json'"));
	assert_string_equal(r.out, ""); /* nothing half-written */
	run_result_free(&r);
	assert_run_exits(malformed, 2, NULL);
	assert_run_exits(format, 2, "unknown format 'xml'");
	assert_run_exits(none, 2, NULL);
	unlink(bad_path);
	free(bad_path);
	free(good);
}

/* --- HTTP from the test's side ------------------------------------------ */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Pause between two polls of Prometheus's state (not a synchronisation). */
static void poll_pause(void)
{
	struct timespec pause = { .tv_nsec = 200 * 1000000 };

	nanosleep(&pause, NULL);
}

/* --- Prometheus ----------------------------------------------------------- */

struct prometheus {
	pid_t pid;
	int port;
};

static struct prometheus start_prometheus(int target_port)
{
	char config[512], data[512], listen[64], log[512];
	char *config_text, *config_arg, *data_arg, *listen_arg;
	struct prometheus p;
	char *argv[6];
	int log_fd;

	snprintf(config, sizeof(config), "%s/prometheus.yml", tmpdir);
	p.port = free_port();
	/* A TSDB of its own: an earlier test's series would still be in the lookback. */
	snprintf(data, sizeof(data), "%s/tsdb-%d", tmpdir, p.port);
	snprintf(log, sizeof(log), "%s/prometheus.log", tmpdir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", p.port);
	if (asprintf(&config_text,
		     "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
		     "scrape_configs:\n  - job_name: khprof\n    static_configs:\n"
		     "      - targets: ['127.0.0.1:%d']\n", target_port) < 0 ||
	    asprintf(&config_arg, "--config.file=%s", config) < 0 ||
	    asprintf(&data_arg, "--storage.tsdb.path=%s", data) < 0 ||
	    asprintf(&listen_arg, "--web.listen-address=%s", listen) < 0)
		abort();
	assert_int_equal(file__write_atomic(config, config_text, strlen(config_text)), 0);
	argv[0] = PROMETHEUS;
	argv[1] = config_arg;
	argv[2] = data_arg;
	argv[3] = listen_arg;
	argv[4] = "--log.level=warn";
	argv[5] = NULL;
	/* Its log goes to a file (a pipe nobody reads could fill and stop it). */
	log_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(log_fd >= 0);
	p.pid = fork();
	assert_true(p.pid >= 0);
	if (p.pid == 0) {
		dup2(log_fd, 1);
		dup2(log_fd, 2);
		execv(argv[0], argv);
		_exit(RUN_EXEC_FAILED);
	}
	close(log_fd);
	free(config_text);
	free(config_arg);
	free(data_arg);
	free(listen_arg);
	return p;
}

static void stop_prometheus(struct prometheus *p)
{
	kill(p->pid, SIGTERM);
	wait_exit(p->pid);
}

static bool target_is_up(int port)
{
	char *body = http_get(port, "/api/v1/targets?state=active");
	cJSON *root = body ? cJSON_Parse(body) : NULL;
	cJSON *targets = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "data"), "activeTargets");
	cJSON *health = cJSON_GetObjectItem(cJSON_GetArrayItem(targets, 0), "health");
	bool up = cJSON_IsString(health) && strcmp(health->valuestring, "up") == 0;

	cJSON_Delete(root);
	free(body);
	return up;
}

static void url_encode(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (; *in && o + 4 < len; in++) {
		unsigned char c = (unsigned char)*in;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-_.~", c))
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, len - o, "%%%02X", c);
	}
	out[o] = '\0';
}

/*
 * The value of an instant query that selects exactly one series; false
 * while Prometheus has none (or several).  labels, when not NULL, gets
 * the series' labels as JSON text (malloc'd).
 */
static bool query_one(int port, const char *promql, double *value, char **labels)
{
	char encoded[1024], path[1200], *body;
	cJSON *root, *result, *sample;
	bool found = false;

	url_encode(promql, encoded, sizeof(encoded));
	snprintf(path, sizeof(path), "/api/v1/query?query=%s", encoded);
	body = http_get(port, path);
	root = body ? cJSON_Parse(body) : NULL;
	result = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "data"), "result");
	if (cJSON_GetArraySize(result) == 1) {
		sample = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(result, 0),
								 "value"), 1);
		if (cJSON_IsString(sample)) {
			*value = strtod(sample->valuestring, NULL);
			found = true;
		}
		if (labels)
			*labels = cJSON_PrintUnformatted(
				cJSON_GetObjectItem(cJSON_GetArrayItem(result, 0), "metric"));
	}
	cJSON_Delete(root);
	free(body);
	return found;
}

/* Polls promql until Prometheus holds expected for it, or fails at the deadline. */
static void assert_prometheus_value(int port, const char *promql, double expected)
{
	uint64_t deadline = now_ns() + PROMETHEUS_DEADLINE_S * 1000000000ull;
	double value = -1;
	bool found = false;

	while (now_ns() < deadline) {
		found = query_one(port, promql, &value, NULL);
		if (found && value == expected)
			return;
		poll_pause();
	}
	fail_msg("Prometheus has %s = %g (%s), expected %g", promql, value,
		 found ? "one series" : "no single series", expected);
}

/* Polls promql until it selects exactly one series, or fails at the deadline. */
static void assert_prometheus_found(int port, const char *promql)
{
	uint64_t deadline = now_ns() + PROMETHEUS_DEADLINE_S * 1000000000ull;
	double value;

	while (now_ns() < deadline) {
		if (query_one(port, promql, &value, NULL))
			return;
		poll_pause();
	}
	fail_msg("Prometheus found no single series for %s", promql);
}

/* --- live metrics ---------------------------------------------------------- */

struct traced {
	struct child workload;
	struct child khprof;
	int port;
};

/* The workload's serve loop with `khprof attach --serve` on it. */
static struct traced start_traced(void)
{
	char pid_text[16], serve[32], out[PATH_MAX];
	char *khprof_argv[] = { khprof, "attach", "--mode", "span", "-q", "-p", pid_text,
				"--serve", serve, "-o", out, NULL };
	struct traced t;

	path_in(out, sizeof(out), tmpdir, "attach-serve.json");
	t.workload = serve_loop_start_pid(WORKLOAD, pid_text, sizeof(pid_text));
	t.port = free_port();
	snprintf(serve, sizeof(serve), "127.0.0.1:%d", t.port);
	t.khprof = attach_spawn(khprof_argv);
	return t;
}

static void stop_traced(struct traced *t)
{
	serve_loop_stop(&t->workload);
	/* The workload's exit ends the trace; khprof exits on its own. */
	assert_int_equal(child_wait(&t->khprof), 0);
}

/*
 * Three finished sessions of `nested 10` (each: 10 hot-patterns spans
 * around 2 entropy spans, 10 decoded decode spans, 10 x 4096 bytes, 10
 * units) and one session still open with 10 hot-patterns spans: what
 * Prometheus scraped from khprof must be exactly that.
 */
static void test_prometheus_scrapes_live_totals(void **state)
{
	struct traced t;
	struct prometheus prom;
	uint64_t deadline;
	char *labels = NULL;
	double value;

	(void)state;
	t = start_traced();
	for (int i = 0; i < 3; i++)
		serve_loop_command(&t.workload, "session\n");
	serve_loop_command(&t.workload, "begin\n");
	serve_loop_command(&t.workload, "spans\n");
	serve_loop_command(&t.workload, "spans\n");

	prom = start_prometheus(t.port);
	deadline = now_ns() + PROMETHEUS_DEADLINE_S * 1000000000ull;
	while (!target_is_up(prom.port) && now_ns() < deadline)
		poll_pause();
	if (!target_is_up(prom.port))
		fail_msg("Prometheus did not report the khprof target up within %d s",
			 PROMETHEUS_DEADLINE_S);

	assert_prometheus_value(prom.port, "khprof_stage_calls_total{stage=\"hot-patterns\"}", 40);
	assert_prometheus_value(prom.port, "khprof_stage_calls_total{stage=\"entropy\"}", 60);
	assert_prometheus_value(prom.port, "khprof_stage_calls_total{stage=\"decode\"}", 30);
	assert_prometheus_value(prom.port, "khprof_input_bytes_total", 3 * 10 * 4096);
	assert_prometheus_value(prom.port, "khprof_input_units_total", 30);
	assert_prometheus_value(prom.port, "khprof_sessions_started_total", 4);
	assert_prometheus_value(prom.port,
				"khprof_sessions_ended_total{status=\"completed\"}", 3);
	assert_prometheus_value(prom.port, "khprof_sessions_open{state=\"scanning\"}", 1);
	/* Decode ran with decoded attribution only. */
	assert_prometheus_value(prom.port, "khprof_stage_elapsed_seconds_total"
				"{stage=\"decode\",attribution=\"root\"}", 0);
	assert_prometheus_value(prom.port, "sum(khprof_drops_total)", 0);
	/*
	 * The identity arrived as an OpenMetrics info family.  (The open
	 * session sent no identity: its series has "unknown" values.)
	 */
	assert_true(query_one(prom.port, "khprof_run_info{binary_version=\"workload 1.0\"}",
			      &value, &labels));
	assert_true(value == 1);
	assert_non_null(strstr(labels, "\"binary_version\":\"workload 1.0\""));
	free(labels);

	/* Live: the open session ends, and the next scrapes show it. */
	serve_loop_command(&t.workload, "end\n");
	assert_prometheus_value(prom.port,
				"khprof_sessions_ended_total{status=\"completed\"}", 4);
	assert_prometheus_value(prom.port, "khprof_sessions_open{state=\"scanning\"}", 0);
	assert_prometheus_value(prom.port, "khprof_stage_calls_total{stage=\"hot-patterns\"}", 40);
	/* docs/FLEET.md's queries run and select one series each. */
	assert_prometheus_found(prom.port, "topk(1, sum by (instance, stage) "
			       "(rate(khprof_stage_elapsed_seconds_total[1m])))");
	assert_prometheus_found(prom.port, "sum by (instance, stage) (rate("
			       "khprof_stage_span_seconds_sum{stage=\"entropy\"}[1m])) / "
			       "sum by (instance, stage) (rate(khprof_stage_span_seconds_count"
			       "{stage=\"entropy\"}[1m]))");
	assert_prometheus_found(prom.port, "rate(khprof_input_bytes_total[1m]) / 2^20");
	assert_prometheus_found(prom.port, "rate(khprof_input_bytes_total[1m]) * on (instance) "
			       "group_left (binary_version) khprof_run_info{binary_version="
			       "\"workload 1.0\"}");
	/* Every scrape Prometheus made was answered, whatever the reason would be. */
	assert_prometheus_value(prom.port, "sum(khprof_http_requests_rejected_total)", 0);

	stop_prometheus(&prom);
	stop_traced(&t);
}

static size_t lines_starting(const char *text, const char *prefix)
{
	size_t n = 0;

	for (const char *at = strstr(text, prefix); at; at = strstr(at + 1, prefix))
		if (at == text || at[-1] == '\n')
			n++;
	return n;
}

/* Bucket of v on the histogram's bounds: (lo, hi] in seconds; hi +Inf above the top. */
static void bound_bucket(uint64_t v, double *lo, double *hi)
{
	*lo = 0;
	for (unsigned int j = 0; j < KH_SPAN_BOUNDS; j++) {
		*hi = (double)kh_span_bound_ns(j) / 1e9;
		if (v <= kh_span_bound_ns(j))
			return;
		*lo = *hi;
	}
	*hi = 1.0 / 0.0;
}

/* Polls promql until it has one series, and returns its value. */
static double prometheus_value(int port, const char *promql)
{
	uint64_t deadline = now_ns() + PROMETHEUS_DEADLINE_S * 1000000000ull;
	double value;

	while (now_ns() < deadline) {
		if (query_one(port, promql, &value, NULL))
			return value;
		poll_pause();
	}
	fail_msg("Prometheus found no single series for %s", promql);
	return -1;
}

/*
 * The histogram through a real Prometheus: the workload times 40 spans
 * itself, 30 short and 10 long around the 16383 ns bound, in an open
 * session (read live from the BPF maps); Prometheus's bucket for that
 * bound must hold what the workload counted below it, and
 * histogram_quantile must fall in the bucket of the true quantile.  When
 * the session ends its spans move to the finished record: the series
 * keep their values.
 */
static void test_prometheus_histogram_matches_workload(void **state)
{
	const char *bucket = "khprof_stage_span_seconds_bucket{stage=\"confirmed-patterns\","
			     "le=\"1.6383e-05\"}";
	unsigned long long inner20, outer20, inner36, outer36;
	long below, above, straddle;
	char line[512], promql[320];
	struct prometheus prom;
	double got, lo, hi, unused;
	struct traced t;
	uint64_t deadline;

	(void)state;
	t = start_traced();
	serve_loop_command(&t.workload, "begin\n");
	child_send(&t.workload, "hist\n");
	child_read_line(&t.workload, "hist below=", line, sizeof(line));
	assert_int_equal(sscanf(line, "hist below=%ld above=%ld straddle=%ld", &below, &above,
				&straddle), 3);
	child_read_line(&t.workload, "hist_rank ", line, sizeof(line));
	assert_int_equal(sscanf(line, "hist_rank inner20=%llu outer20=%llu inner36=%llu "
				"outer36=%llu", &inner20, &outer20, &inner36, &outer36), 4);
	child_wait_for_line(&t.workload, "done");
	assert_int_equal(below + above + straddle, 40);

	prom = start_prometheus(t.port);
	deadline = now_ns() + PROMETHEUS_DEADLINE_S * 1000000000ull;
	while (!target_is_up(prom.port) && now_ns() < deadline)
		poll_pause();
	assert_prometheus_value(prom.port, "khprof_stage_span_seconds_count"
				"{stage=\"confirmed-patterns\"}", 40);
	assert_prometheus_value(prom.port, "khprof_stage_span_seconds_bucket"
				"{stage=\"confirmed-patterns\",le=\"+Inf\"}", 40);
	/* The scrape that has all 40 spans has this bucket too (one scrape, one commit). */
	got = prometheus_value(prom.port, bucket);
	if (straddle == 0 && got != below)
		fail_msg("%s = %g, the workload counted %ld spans below 16383 ns", bucket, got, below);
	if (got < below || got > below + straddle)
		fail_msg("%s = %g, the workload counted %ld below and %ld either side", bucket, got,
			 below, straddle);
	/* histogram_quantile lands in the bucket of the 20th and 36th shortest span. */
	got = prometheus_value(prom.port, "histogram_quantile(0.5, khprof_stage_span_seconds_bucket"
			       "{stage=\"confirmed-patterns\"})");
	bound_bucket(inner20, &lo, &unused);
	bound_bucket(outer20, &unused, &hi);
	if (!(got >= lo && got <= hi))
		fail_msg("p50 %g s outside [%g, %g] (own %llu..%llu ns)", got, lo, hi, inner20, outer20);
	got = prometheus_value(prom.port, "histogram_quantile(0.9, khprof_stage_span_seconds_bucket"
			       "{stage=\"confirmed-patterns\"})");
	bound_bucket(inner36, &lo, &unused);
	bound_bucket(outer36, &unused, &hi);
	if (!(got >= lo && got <= hi))
		fail_msg("p90 %g s outside [%g, %g] (own %llu..%llu ns)", got, lo, hi, inner36, outer36);
	/* docs/FLEET.md's p99 query runs and selects one series. */
	assert_prometheus_found(prom.port, "histogram_quantile(0.99, sum by (instance, stage, le) "
			       "(rate(khprof_stage_span_seconds_bucket{stage=\"confirmed-patterns\"}"
			       "[1m])))");

	/* The session ends: the same spans now come from its record. */
	got = prometheus_value(prom.port, bucket);
	serve_loop_command(&t.workload, "end\n");
	assert_prometheus_value(prom.port, "khprof_sessions_ended_total{status=\"completed\"}", 1);
	assert_prometheus_value(prom.port, bucket, got);
	assert_prometheus_value(prom.port, "khprof_stage_span_seconds_count"
				"{stage=\"confirmed-patterns\"}", 40);
	/* _sum is the stage's elapsed time, both attributions. */
	snprintf(promql, sizeof(promql), "sum by (stage) (khprof_stage_span_seconds_sum{stage="
		 "\"confirmed-patterns\"}) - sum by (stage) (khprof_stage_elapsed_seconds_total"
		 "{stage=\"confirmed-patterns\"})");
	assert_prometheus_value(prom.port, promql, 0);

	stop_prometheus(&prom);
	stop_traced(&t);
}

/* The same exposition in both formats, and promtool accepts the text one. */
static void test_served_metrics_pass_promtool(void **state)
{
	char path[512], *text, *om;
	struct traced t;

	(void)state;
	t = start_traced();
	serve_loop_command(&t.workload, "session\n");
	/* An open session with 10 spans of every stage: all 25 histograms, read live. */
	serve_loop_command(&t.workload, "begin\n");
	serve_loop_command(&t.workload, "stages\n");
	text = http_get(t.port, "/metrics");
	assert_non_null(text);
	assert_non_null(strstr(text, "khprof_stage_calls_total{stage=\"hot-patterns\"} 20\n"));
	assert_non_null(strstr(text, "# TYPE khprof_stage_span_seconds histogram\n"));
	assert_int_equal(lines_starting(text, "khprof_stage_span_seconds_count{"), KH_STAGE_COUNT);
	assert_int_equal(lines_starting(text, "khprof_stage_span_seconds_bucket{"),
			 KH_STAGE_COUNT * (KH_SPAN_BOUNDS + 1));
	assert_non_null(strstr(text, "khprof_stage_span_seconds_bucket{stage=\"hot-patterns\","
				     "le=\"+Inf\"} 20\n"
				     "khprof_stage_span_seconds_count{stage=\"hot-patterns\"} 20\n"));
	assert_non_null(strstr(text, "khprof_stage_span_seconds_count{stage=\"scanner-queue-wait\"} "
				     "10\n"));
	snprintf(path, sizeof(path), "%s/served.prom", tmpdir);
	assert_int_equal(file__write_atomic(path, text, strlen(text)), 0);
	assert_promtool_accepts(path);
	{
		const char request[] = "GET /metrics HTTP/1.1\r\nAccept: application/"
				       "openmetrics-text;version=1.0.0\r\n\r\n";
		char *answer = http_exchange(t.port, request, sizeof(request) - 1);

		assert_int_equal(http_status(answer), 200);
		assert_non_null(strstr(answer, "Content-Type: application/openmetrics-text; "
					       "version=1.0.0"));
		om = strstr(answer, "\r\n\r\n");
		assert_non_null(om);
		assert_true(has_suffix(om, "# EOF\n"));
		assert_non_null(strstr(om, "khprof_stage_calls_total{stage=\"hot-patterns\"} 20\n"));
		assert_non_null(strstr(om, "# TYPE khprof_stage_span_seconds histogram\n"
					   "# UNIT khprof_stage_span_seconds seconds\n"));
		assert_int_equal(lines_starting(om, "khprof_stage_span_seconds_count{"),
				 KH_STAGE_COUNT);
		free(answer);
	}
	free(text);
	stop_traced(&t);
}

/* record --serve: the same server while record runs its command. */
static void test_record_serves_while_the_command_runs(void **state)
{
	char serve[32], *text, out[PATH_MAX];
	char *argv[] = { khprof, "record", "--mode", "span", "-q", "--serve", serve, "-o", out,
			 "--", WORKLOAD, "serve", NULL };
	struct child k;
	int port = free_port();

	(void)state;
	path_in(out, sizeof(out), tmpdir, "record-serve.json");
	snprintf(serve, sizeof(serve), "127.0.0.1:%d", port);
	/* The command reads khprof's stdin and writes to its stdout. */
	k = child_spawn(argv, false);
	child_wait_for_line(&k, "ready");
	serve_loop_command(&k, "session\n");
	serve_loop_command(&k, "begin\n");
	text = http_get(port, "/metrics");
	assert_non_null(text);
	assert_non_null(strstr(text, "khprof_stage_calls_total{stage=\"hot-patterns\"} 10\n"));
	assert_non_null(strstr(text, "khprof_sessions_ended_total{status=\"completed\"} 1\n"));
	assert_non_null(strstr(text, "khprof_sessions_open{state=\"scanning\"} 1\n"));
	free(text);
	child_close_input(&k);
	/* The command's own status; its end closes the open session. */
	assert_int_equal(child_wait(&k), 0);
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_metrics",
		.need = "--serve tests attach with BPF and need root",
		.tmp_prefix = "khprof-metrics",
		.tmpdir = &tmpdir,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_export_prometheus_text_passes_promtool),
		cmocka_unit_test(test_export_openmetrics_to_stdout),
		cmocka_unit_test(test_export_bad_input),
		cmocka_unit_test(test_export_histogram_is_the_records_buckets),
		cmocka_unit_test(test_served_metrics_pass_promtool),
		cmocka_unit_test(test_record_serves_while_the_command_runs),
		cmocka_unit_test(test_prometheus_scrapes_live_totals),
		cmocka_unit_test(test_prometheus_histogram_matches_workload),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
