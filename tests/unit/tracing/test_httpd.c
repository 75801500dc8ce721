// SPDX-License-Identifier: MIT
/*
 * The metrics server's request parser: the status each request head gets,
 * the Accept header it hands to the renderer, HEAD.  (The socket side is
 * exercised against a live khprof in tests/integration/commands/test_metrics.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "httpd.h"

static int parse(const char *head, char *accept, size_t accept_len, int *head_only)
{
	return httpd__parse_request(head, strlen(head), "/metrics", accept, accept_len,
				    head_only);
}

static void test_statuses(void **state)
{
	static const struct {
		const char *head;
		int status;
	} cases[] = {
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 200 },
		{ "GET /metrics HTTP/1.0\n\n", 200 },
		{ "GET /metrics?name[]=up HTTP/1.1\r\n\r\n", 200 },
		{ "HEAD /metrics HTTP/1.1\r\n\r\n", 200 },
		{ "POST /metrics HTTP/1.1\r\n\r\n", 405 },
		{ "DELETE /metrics HTTP/1.1\r\n\r\n", 405 },
		{ "GET /metric HTTP/1.1\r\n\r\n", 404 },
		{ "GET /metrics/ HTTP/1.1\r\n\r\n", 404 },
		{ "POST / HTTP/1.1\r\n\r\n", 404 },
		{ "GET /metrics HTTP/2.0\r\n\r\n", 505 },
		{ "GET /metrics HTTP/0.9\r\n\r\n", 505 },
		/* A higher minor version is read as 1.1 (RFC 9110 section 2.5). */
		{ "GET /metrics HTTP/1.9\r\n\r\n", 200 },
		{ "GET /metrics HTTP/1.10\r\n\r\n", 400 },
		/* The absolute form (RFC 9112 section 3.2.2). */
		{ "GET http://127.0.0.1:9464/metrics HTTP/1.1\r\n\r\n", 200 },
		{ "HEAD HTTPS://[::1]/metrics?x=1 HTTP/1.1\r\n\r\n", 200 },
		{ "GET http://127.0.0.1/metricsx HTTP/1.1\r\n\r\n", 404 },
		{ "GET http://127.0.0.1 HTTP/1.1\r\n\r\n", 404 },
		{ "GET http:/metrics HTTP/1.1\r\n\r\n", 404 },
		/* An empty line before the request line is ignored (RFC 9112 section 2.2). */
		{ "\r\nGET /metrics HTTP/1.1\r\n\r\n", 200 },
		{ "GET /metrics HTTP/1.1 x\r\n\r\n", 400 },
		{ "GET  /metrics HTTP/1.1\r\n\r\n", 400 },
		{ "GET /metrics\r\n\r\n", 400 },
		{ "G(T /metrics HTTP/1.1\r\n\r\n", 400 },
		{ "GET /metrics HTTP/x.1\r\n\r\n", 400 },
		{ "GET /metrics HTTP/1.1\r\nbroken header\r\n\r\n", 400 },
		{ "GET /metrics HTTP/1.1\r\n: empty name\r\n\r\n", 400 },
		{ "\r\n\r\n", 400 },
	};
	char accept[64];
	int head_only;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int status = parse(cases[i].head, accept, sizeof(accept), &head_only);

		if (status != cases[i].status)
			fail_msg("'%s': %d, expected %d", cases[i].head, status, cases[i].status);
		assert_int_equal(head_only, strncmp(cases[i].head, "HEAD ", 5) == 0 && status == 200);
	}
}

static void test_accept_header(void **state)
{
	char accept[32];
	int head_only;

	(void)state;
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nACCEPT:  text/plain \r\n\r\n", accept,
			       sizeof(accept), &head_only), 200);
	assert_string_equal(accept, "text/plain");
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nX-Accept: a\r\n\r\n", accept,
			       sizeof(accept), &head_only), 200);
	assert_string_equal(accept, "");
	/* A long value is cut to the buffer, never past it. */
	assert_int_equal(parse("GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;"
			       "version=1.0.0\r\n\r\n", accept, sizeof(accept), &head_only), 200);
	assert_int_equal(strlen(accept), sizeof(accept) - 1);
	assert_string_equal(accept, "application/openmetrics-text;ve");
}

/* The reason label's values: one per reason, snake_case, none twice. */
static void test_reject_names(void **state)
{
	(void)state;
	for (uint32_t i = 0; i < HTTPD_REJECT_COUNT; i++) {
		const char *name = httpd__reject_name(i);

		assert_true(name[0] && strspn(name, "abcdefghijklmnopqrstuvwxyz_") == strlen(name));
		for (uint32_t j = 0; j < i; j++)
			assert_string_not_equal(name, httpd__reject_name(j));
	}
	assert_string_equal(httpd__reject_name(HTTPD_REJECT_TOO_MANY), "too_many");
	assert_string_equal(httpd__reject_name(HTTPD_REJECT_COUNT), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statuses),
		cmocka_unit_test(test_accept_header),
		cmocka_unit_test(test_reject_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
