// SPDX-License-Identifier: MIT
/*
 * The --serve server under abuse (userspace/common/httpd.c): idle, slow,
 * malformed, pipelined and excess clients against `khprof record --serve`
 * while a scraper scrapes; every scrape must be answered, and each client
 * that got no metrics counted under its reason in
 * khprof_http_requests_rejected_total.
 *
 * Synchronised by events alone: an answer received, a connection the
 * server closed (EOF or reset on the test's side).  A server closes a
 * connection only after counting it, so counts read after that are exact.
 * The server's real deadlines apply, with no hook to shorten them
 * (HTTPD_REQUEST_DEADLINE_MS, 2 s, and a silent connection reaches khprof
 * a second after it connected, TCP_DEFER_ACCEPT): the tests wait for
 * them as events, bounded by the sockets' 30 s limit (khhttp.h), and
 * assert no duration; about 10 s in all.  KH_KHPROF runs them against
 * another build (make test-asan: the sanitizer's).
 */
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "httpd.h"
#include "khchild.h"
#include "khhttp.h"
#include "khtest.h"

#define WORKLOAD "build/workloads/workload"

/* build/khprof, or $KH_KHPROF; set in main(). */
static char *khprof;
static char *tmpdir;

/* `khprof record --serve` of the workload's serve loop, serving once it says "ready". */
struct served {
	struct child k;
	int port;
};

static struct served serve_start(void)
{
	char serve[32], out[PATH_MAX];
	char *argv[] = { khprof, "record", "--mode", "span", "-q", "--serve", serve, "-o", out,
			 "--", WORKLOAD, "serve", NULL };
	struct served s;

	path_in(out, sizeof(out), tmpdir, "serve.json");
	s.port = free_port();
	snprintf(serve, sizeof(serve), "127.0.0.1:%d", s.port);
	/* The command reads khprof's stdin and writes to its stdout. */
	s.k = child_spawn(argv, false);
	child_wait_for_line(&s.k, "ready");
	return s;
}

/* The command's end ends the trace; khprof's status is the command's, 0. */
static void serve_stop(struct served *s)
{
	child_close_input(&s->k);
	assert_int_equal(child_wait(&s->k), 0);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A scrape that must be answered; its exposition (malloc'd). */
static char *scrape(int port)
{
	char *text = http_get(port, "/metrics");

	if (!text)
		fail_msg("a scrape of 127.0.0.1:%d got no metrics", port);
	assert_non_null(strstr(text, "khprof_http_requests_rejected_total{reason="));
	return text;
}

/* khprof_http_requests_rejected_total{reason="REASON"} in an exposition. */
static long rejected(const char *text, const char *reason)
{
	char prefix[96];
	const char *at;

	snprintf(prefix, sizeof(prefix), "khprof_http_requests_rejected_total{reason=\"%s\"} ",
		 reason);
	at = strstr(text, prefix);
	if (!at)
		fail_msg("no sample '%s'", prefix);
	return atol(at + strlen(prefix));
}

/* A scrape's count for reason. */
static long rejected_now(int port, const char *reason)
{
	char *text = scrape(port);
	long n = rejected(text, reason);

	free(text);
	return n;
}

static int connect_idle(int port)
{
	int fd = connect_loopback(port);

	assert_true(fd >= 0);
	return fd;
}

/*
 * Reads and drops what comes until the server closes fd (EOF, or a reset
 * when it closed with bytes of ours unread), then closes it.  The
 * socket's 30 s limit bounds the wait: a server that never closes fails.
 */
static void assert_closed_by_server(int fd)
{
	char buf[4096];
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		;
	if (n < 0 && errno != ECONNRESET)
		fail_msg("the server did not close a connection: %s", strerror(errno));
	close(fd);
}

/* Whether the server has closed fd, without waiting (data before it is dropped). */
static bool closed_by_server(int fd)
{
	char buf[4096];
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		;
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/*
 * The starvation case: twelve connections that never send a byte,
 * each opened again as soon as the server closes it, and a scraper beside
 * them: every scrape is answered (the server used to take 8 clients and
 * close a ninth at once).  Each idle one is closed at its request
 * deadline and counted as too slow.
 */
static void test_idle_clients_do_not_starve_a_scraper(void **state)
{
	enum { IDLE = 12, ROUNDS = 2 };
	struct served s;
	int idle[IDLE];
	long too_slow;
	char *text;

	(void)state;
	s = serve_start();
	for (int i = 0; i < IDLE; i++)
		idle[i] = connect_idle(s.port);
	free(scrape(s.port));
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < IDLE; i++) {
			assert_closed_by_server(idle[i]);
			idle[i] = connect_idle(s.port);
			free(scrape(s.port));
		}
	}
	text = scrape(s.port);
	/* Those seen closed, and any of the open twelve whose deadline came since. */
	too_slow = rejected(text, "too_slow");
	if (too_slow < IDLE * ROUNDS || too_slow > IDLE * (ROUNDS + 1))
		fail_msg("too_slow = %ld after %d idle connections closed", too_slow, IDLE * ROUNDS);
	assert_int_equal(rejected(text, "too_many"), 0);
	assert_int_equal(rejected(text, "malformed"), 0);
	free(text);
	for (int i = 0; i < IDLE; i++)
		close(idle[i]);
	serve_stop(&s);
}

/*
 * More unfinished requests than the server has slots: a scraper that
 * comes after them all is answered, as the oldest of them make room.  They
 * are closed oldest first whether to make room or at their deadline, so
 * the first ones are closed by the time the scrape is answered; which of
 * the two closed them depends on this test's speed, except when it
 * scraped within the deadline of its first connection: then room alone.
 * (Each sends the start of a request: one that sends nothing reaches
 * khprof a second later, TCP_DEFER_ACCEPT, long after the scraper.)
 */
static void test_more_unfinished_requests_than_slots(void **state)
{
	enum { SLOW = HTTPD_MAX_CLIENTS + 16, MADE_ROOM = SLOW + 1 - HTTPD_MAX_CLIENTS };
	static const char start[] = "GET /metrics HTTP/1.1\r\n";
	struct served s;
	int slow[SLOW];
	uint64_t first;
	long too_many;
	char *text;

	(void)state;
	s = serve_start();
	first = now_ns();
	for (int i = 0; i < SLOW; i++) {
		slow[i] = connect_idle(s.port);
		assert_int_equal(send(slow[i], start, strlen(start), MSG_NOSIGNAL),
				 (ssize_t)strlen(start));
	}
	text = scrape(s.port);
	too_many = rejected(text, "too_many");
	if (now_ns() - first < HTTPD_REQUEST_DEADLINE_MS * 1000000ull)
		assert_int_equal(too_many, MADE_ROOM);
	free(text);
	for (int i = 0; i < SLOW; i++)
		assert_closed_by_server(slow[i]);
	/* Each one ended once, under one of the two reasons. */
	text = scrape(s.port);
	assert_int_equal(rejected(text, "too_many") + rejected(text, "too_slow"), SLOW);
	assert_true(rejected(text, "too_many") >= too_many);
	free(text);
	serve_stop(&s);
}

/*
 * Slowloris: clients that begin a request and add a byte now and then,
 * never finishing it.  Bytes do not move the deadline: the server closes
 * each within its request deadline while they keep sending, and a scrape
 * between any two of their bytes is answered.
 */
static void test_slowloris(void **state)
{
	enum { SLOW = 20 };
	static const char start[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";
	static const char trickle[] = "X-Slow: 1\r\n";
	uint64_t bound = now_ns() + 30 * 1000000000ull;
	int slow[SLOW], open_count = SLOW;
	size_t sent[SLOW] = { 0 };
	struct served s;

	(void)state;
	s = serve_start();
	for (int i = 0; i < SLOW; i++) {
		slow[i] = connect_idle(s.port);
		assert_int_equal(send(slow[i], start, strlen(start), MSG_NOSIGNAL),
				 (ssize_t)strlen(start));
	}
	/* One byte from one of them per scrape, in turn, until the server closed all. */
	for (int turn = 0; open_count > 0; turn = (turn + 1) % SLOW) {
		if (now_ns() > bound)
			fail_msg("%d slowloris connections still open after 30 s", open_count);
		if (slow[turn] < 0)
			continue;
		if (closed_by_server(slow[turn]) ||
		    send(slow[turn], &trickle[sent[turn]++ % strlen(trickle)], 1,
			 MSG_NOSIGNAL) != 1) {
			close(slow[turn]);
			slow[turn] = -1;
			open_count--;
			continue;
		}
		free(scrape(s.port));
	}
	assert_int_equal(rejected_now(s.port, "too_slow"), SLOW);
	assert_int_equal(rejected_now(s.port, "too_large"), 0);
	serve_stop(&s);
}

/* One exchange on a connection of its own; the answer's status (0: none). */
static int exchange_status(int port, const char *request, size_t len)
{
	char *answer = http_exchange(port, request, len);
	int status = http_status(answer);

	free(answer);
	return status;
}

/*
 * Bad requests get HTTP's answers at once, each counted under its reason;
 * the absolute form and a higher HTTP/1 minor version are served.
 */
static void test_bad_requests_by_reason(void **state)
{
	static const struct {
		const char *request;
		int status;
		const char *reason; /* counted under, NULL: served */
	} cases[] = {
		{ "GET /metrics HTTP/1.0\r\n\r\n", 200, NULL },
		{ "HEAD /metrics HTTP/1.1\r\n\r\n", 200, NULL },
		{ "GET /metrics?x=1 HTTP/1.1\r\n\r\n", 200, NULL },
		{ "GET http://127.0.0.1/metrics HTTP/1.1\r\nHost: x\r\n\r\n", 200, NULL },
		{ "GET /metrics HTTP/1.9\r\n\r\n", 200, NULL },
		{ "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405, "method" },
		{ "GET / HTTP/1.1\r\n\r\n", 404, "path" },
		{ "GET /metricsx HTTP/1.1\r\n\r\n", 404, "path" },
		{ "garbage\r\n\r\n", 400, "malformed" },
		{ "GET /metrics\r\n\r\n", 400, "malformed" },
		{ "GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n", 400, "malformed" },
		/* A TLS ClientHello's first bytes: refused without waiting for a line end. */
		{ "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400, "malformed" },
		{ "GET /metrics HTTP/2.0\r\n\r\n", 505, "version" },
		{ "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "version" },
	};
	static const char *const reasons[] = { "malformed", "too_large", "too_slow", "too_many",
					       "method", "path", "version", "pipelined",
					       "aborted", "internal" };
	long expected[sizeof(reasons) / sizeof(reasons[0])] = { 0 };
	char *big = malloc(20000), *answer, *text;
	struct served s;
	int fd;

	(void)state;
	assert_int_equal(sizeof(reasons) / sizeof(reasons[0]), HTTPD_REJECT_COUNT);
	s = serve_start();
	/* Connected and closed without a byte: no request, not counted. */
	close(connect_idle(s.port));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int status = exchange_status(s.port, cases[i].request, strlen(cases[i].request));

		if (status != cases[i].status)
			fail_msg("'%s' got %d, expected %d", cases[i].request, status,
				 cases[i].status);
		for (size_t r = 0; cases[i].reason && r < HTTPD_REJECT_COUNT; r++)
			expected[r] += !strcmp(reasons[r], cases[i].reason);
	}
	/* A request head larger than the bound, and a megabyte without a line end. */
	memset(big, 'a', 20000);
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	assert_int_equal(exchange_status(s.port, big, 20000), 431);
	memset(big, 'a', 20000);
	assert_int_equal(exchange_status(s.port, big, 20000), 431);
	expected[1] += 2;
	/* Two requests at once: the first is answered, the second counted. */
	answer = http_exchange(s.port, "GET /metrics HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n",
			       50);
	assert_int_equal(http_status(answer), 200);
	assert_null(strstr(strstr(answer, "\r\n\r\n"), "HTTP/1.1 200"));
	free(answer);
	expected[7]++;
	/* Closed by the client inside its request: malformed, once the server saw it. */
	fd = connect_idle(s.port);
	assert_int_equal(send(fd, "GET /met", 8, MSG_NOSIGNAL), 8);
	shutdown(fd, SHUT_WR);
	assert_closed_by_server(fd);
	expected[0]++;

	text = scrape(s.port);
	for (size_t r = 0; r < HTTPD_REJECT_COUNT; r++)
		if (rejected(text, reasons[r]) != expected[r])
			fail_msg("rejected{reason=\"%s\"} = %ld, expected %ld", reasons[r],
				 rejected(text, reasons[r]), expected[r]);
	free(text);
	free(big);
	serve_stop(&s);
}

/* A --serve address beyond loopback is served, with one warning; loopback with none. */
static void test_wide_address_warns_once(void **state)
{
	char out[PATH_MAX];
	char *wide[] = { khprof, "record", "-q", "--serve", "0.0.0.0:0", "-o", out, "--",
			 WORKLOAD, "nested", "1", NULL };
	char *loopback[] = { khprof, "record", "-q", "--serve", "127.0.0.2:0", "-o", out, "--",
			     WORKLOAD, "nested", "1", NULL };
	struct run_result r;
	const char *at;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "wide.json");
	r = run_here(wide);
	assert_int_equal(r.exit_code, 0);
	at = strstr(r.err, "khprof: warning: serving metrics on '0.0.0.0:");
	at = at ? strstr(at, "beyond loopback") : NULL;
	if (!at || strstr(at + 1, "beyond loopback"))
		fail_msg("wanted one warning for 0.0.0.0; stderr: %s", r.err);
	run_result_free(&r);
	r = run_here(loopback);
	assert_int_equal(r.exit_code, 0);
	assert_null(strstr(r.err, "beyond loopback"));
	run_result_free(&r);
}

/* A bad or busy --serve address fails before anything is traced. */
static void test_serve_address_errors(void **state)
{
	char busy[32], pid_text[16];
	char *bad[] = { khprof, "attach", "-p", pid_text, "--serve", "localhost:http", NULL };
	char *range[] = { khprof, "attach", "-p", pid_text, "--serve", "127.0.0.1:70000", NULL };
	char *taken[] = { khprof, "attach", "-p", pid_text, "--serve", busy, NULL };
	char *repeat[] = { khprof, "record", "--repeat", "2", "-o", tmpdir, "--serve", "0", "--",
			   "/bin/true", NULL };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int holder = socket(AF_INET, SOCK_STREAM, 0);
	struct run_result r;

	(void)state;
	snprintf(pid_text, sizeof(pid_text), "%d", getpid());
	assert_int_equal(bind(holder, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(holder, 1), 0);
	assert_int_equal(getsockname(holder, (struct sockaddr *)&a, &len), 0);
	snprintf(busy, sizeof(busy), "127.0.0.1:%d", ntohs(a.sin_port));

	assert_run_exits(bad, 2, "bad --serve 'localhost:http'");
	assert_run_exits(range, 2, NULL);
	r = run_here(taken);
	assert_int_equal(r.exit_code, 1);
	assert_non_null(strstr(r.err, "cannot serve metrics on"));
	assert_non_null(strstr(r.err, "Address already in use"));
	run_result_free(&r);
	assert_run_exits(repeat, 2, "--serve cannot be used with --repeat");
	close(holder);
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_serve",
		.need = "--serve traces with BPF and needs root",
		.tmp_prefix = "khprof-serve",
		.tmpdir = &tmpdir,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serve_address_errors),
		cmocka_unit_test(test_wide_address_warns_once),
		cmocka_unit_test(test_bad_requests_by_reason),
		cmocka_unit_test(test_idle_clients_do_not_starve_a_scraper),
		cmocka_unit_test(test_more_unfinished_requests_than_slots),
		cmocka_unit_test(test_slowloris),
	};

	khprof = tool_path("KH_KHPROF", "build/khprof");
	return run_root_tests(&rt, tests);
}
