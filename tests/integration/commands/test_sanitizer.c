// SPDX-License-Identifier: MIT
/*
 * khprof built with AddressSanitizer (build/asan/khprof, which make tests
 * builds: Makefile, "the sanitizer build") traces for real and exits
 * without a report: no memory error, and nothing LeakSanitizer finds
 * unfreed at exit, for a plain record and for an attach --serve that was
 * scraped and sent a bad request and an idle connection.  Kept short: one
 * small record and one attach.  The metrics server's own tests run in that
 * build with make test-asan.
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

#include "khchild.h"
#include "khhttp.h"
#include "khtest.h"
#include "outbuf.h"

#define WORKLOAD "build/workloads/workload"
/* What a sanitizer's report starts with, leaks included. */
#define REPORT "Sanitizer"

/* build/asan/khprof, or $KH_KHPROF_ASAN; set in main(). */
static char *asan_khprof;
static char *tmpdir;

/* Everything left on a child's stream, to its end (malloc'd). */
static char *read_rest(FILE *from)
{
	struct outbuf text;
	char chunk[4096], *rest;
	size_t n;

	outbuf__init(&text);
	while ((n = fread(chunk, 1, sizeof(chunk), from)) > 0)
		outbuf__put(&text, chunk, n);
	rest = outbuf__finish(&text);
	assert_non_null(rest);
	return rest;
}

static void assert_no_report(const char *what, const char *err)
{
	if (strstr(err, REPORT))
		fail_msg("%s under AddressSanitizer reported:\n%s", what, err);
}

/* A plain record: libbpf's objects and the tracer freed before exit. */
static void test_record_exits_clean(void **state)
{
	char out[PATH_MAX];
	char *argv[] = { asan_khprof, "record", "-q", "-o", out, "--", WORKLOAD, "mix", "100",
			 NULL };
	struct run_result r;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "mix.json");
	r = run_here(argv);
	assert_no_report("khprof record", r.err);
	assert_int_equal(r.exit_code, 0);
	assert_int_equal(access(out, R_OK), 0);
	run_result_free(&r);
}

/* attach --serve, scraped, refused once, and left with an idle client at exit. */
static void test_served_attach_exits_clean(void **state)
{
	char pid_text[16], serve[32], out[PATH_MAX], *text, *err;
	char *argv[] = { asan_khprof, "attach", "-q", "--mode", "span", "-p", pid_text,
			 "--serve", serve, "-o", out, NULL };
	struct child workload, k;
	int port = free_port(), idle;
	char *answer;

	(void)state;
	path_in(out, sizeof(out), tmpdir, "served.json");
	snprintf(serve, sizeof(serve), "127.0.0.1:%d", port);
	workload = serve_loop_start_pid(WORKLOAD, pid_text, sizeof(pid_text));
	k = attach_spawn(argv);
	serve_loop_command(&workload, "session\n");
	serve_loop_command(&workload, "begin\n");
	text = http_get(port, "/metrics");
	assert_non_null(text);
	assert_non_null(strstr(text, "khprof_sessions_open{state=\"scanning\"} 1\n"));
	free(text);
	answer = http_exchange(port, "GET /nothing HTTP/1.1\r\n\r\n", 25);
	assert_int_equal(http_status(answer), 404);
	free(answer);
	idle = connect_loopback(port);
	assert_true(idle >= 0);
	/* The workload's exit ends the trace; khprof exits, then says all it has to. */
	serve_loop_stop(&workload);
	err = read_rest(k.from);
	assert_no_report("khprof attach --serve", err);
	assert_int_equal(child_wait(&k), 0);
	free(err);
	close(idle);
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_sanitizer",
		.need = "khprof traces with BPF and needs root",
		.tmp_prefix = "khprof-asan",
		.tmpdir = &tmpdir,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_exits_clean),
		cmocka_unit_test(test_served_attach_exits_clean),
	};

	asan_khprof = tool_path("KH_KHPROF_ASAN", "build/asan/khprof");
	if (access(asan_khprof, X_OK) != 0) {
		fprintf(stderr, "test_sanitizer: no '%s' (make tests builds it)\n", asan_khprof);
		return 1;
	}
	return run_root_tests(&rt, tests);
}
