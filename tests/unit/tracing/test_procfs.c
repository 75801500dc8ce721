// SPDX-License-Identifier: MIT
/*
 * /proc parsing, checked against what the seed's process_resources() makes
 * of the same text, and sampling of live processes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procfs.h"

/* A stat line with utime=250 and stime=150; name is the comm field. */
static char *stat_line(const char *name, const char *utime, const char *stime)
{
	char *line;

	assert_true(asprintf(&line,
			     "4242 (%s) S 1 4242 4242 0 -1 4194560 100 0 0 0 %s %s 0 0 20 0 1 0 "
			     "12345 1000000 250 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1\n",
			     name, utime, stime) > 0);
	return line;
}

static void expect_cpu(const char *line, long ticks, bool present, uint64_t ms)
{
	struct kh_opt_u64 cpu = { true, 12345 };
	int err = procfs__parse_stat(line, ticks, &cpu);

	assert_int_equal(err, present ? 0 : -EINVAL);
	assert_int_equal(cpu.present, present);
	if (present)
		assert_true(cpu.value == ms);
}

static void test_stat_cpu_time(void **state)
{
	char *line = stat_line("cat", "250", "150");

	(void)state;
	/* (250 + 150) ticks * 1000 / 100 Hz */
	expect_cpu(line, 100, true, 4000);
	expect_cpu(line, 1000, true, 400);
	expect_cpu(line, 3, true, 133333);
	expect_cpu(line, 0, false, 0);
	expect_cpu(line, -1, false, 0);
	free(line);
}

/* The name may hold ')', '(' and blanks: fields start after the last ')'. */
static void test_stat_awkward_names(void **state)
{
	static const char *const names[] = { "a) b", ") (", "x y z", "((", ") S 9 9 9 9 9 9 9 9 9 9 9" };

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *line = stat_line(names[i], "7", "3");

		expect_cpu(line, 100, true, 100);
		free(line);
	}
}

static void test_stat_numbers_like_rust(void **state)
{
	static const struct {
		const char *utime, *stime;
		long ticks;
		bool present;
		uint64_t ms;
	} cases[] = {
		/* str::parse::<u64> takes a leading '+', nothing else. */
		{ "+1", "1", 1, true, 2000 },
		{ "-1", "1", 1, false, 0 },
		{ "1x", "1", 1, false, 0 },
		/* u128 intermediate: 2^64-1 ticks at 1000 Hz is still 2^64-1 ms */
		{ "18446744073709551615", "0", 1000, true, UINT64_MAX },
		/* ... but does not fit in u64 at 100 Hz */
		{ "18446744073709551615", "0", 100, false, 0 },
		{ "18446744073709551616", "0", 1000, false, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *line = stat_line("p", cases[i].utime, cases[i].stime);

		expect_cpu(line, cases[i].ticks, cases[i].present, cases[i].ms);
		free(line);
	}
}

static void test_stat_truncated(void **state)
{
	(void)state;
	expect_cpu("", 100, false, 0);
	expect_cpu("4242 (cat", 100, false, 0);
	expect_cpu("4242 (cat)", 100, false, 0);
	expect_cpu("4242 (cat) S 1 2 3 4 5 6 7 8 9 10", 100, false, 0);
	expect_cpu("4242 (cat) S 1 2 3 4 5 6 7 8 9 10 11", 100, false, 0);
	expect_cpu("4242 (cat) S 1 2 3 4 5 6 7 8 9 10 11 12", 100, true, 230);
	/* The byte after ')' is skipped whatever it is, like the seed's +2. */
	expect_cpu("4242 (cat)\tS\t1 2 3 4 5 6 7 8 9 10 11 12", 100, true, 230);
}

static const char status_text[] =
	"Name:\tkh-scan\n"
	"Umask:\t0022\n"
	"State:\tS (sleeping)\n"
	"VmPeak:\t   12000 kB\n"
	"VmSize:\t   11000 kB\n"
	"VmRSS:\t    2172 kB\n"
	"RssAnon:\t     100 kB\n"
	"Threads:\t3\n"
	"Cpus_allowed_list:\t0-1\n";

static void test_status_fields(void **state)
{
	struct kh_resource_snapshot s;

	(void)state;
	memset(&s, 0xff, sizeof(s));
	procfs__parse_status(status_text, &s);
	assert_true(s.resident_bytes.present && s.resident_bytes.value == 2172 * 1024);
	assert_true(s.virtual_bytes.present && s.virtual_bytes.value == 11000 * 1024);
	assert_true(s.thread_count.present && s.thread_count.value == 3);
}

static void test_status_absent_and_bad(void **state)
{
	struct kh_resource_snapshot s;

	(void)state;
	memset(&s, 0, sizeof(s));
	/* Kernel threads have no Vm lines. */
	procfs__parse_status("Name:\tkthreadd\nThreads:\t1\n", &s);
	assert_false(s.resident_bytes.present);
	assert_false(s.virtual_bytes.present);
	assert_true(s.thread_count.present);
	/* find_map: a line that does not parse is passed over, not fatal. */
	procfs__parse_status("VmRSS:\tlots kB\nVmRSS:\t7 kB\n", &s);
	assert_true(s.resident_bytes.present && s.resident_bytes.value == 7 * 1024);
	/* The scaled value must fit in u64. */
	procfs__parse_status("VmSize:\t18014398509481984 kB\n", &s);
	assert_false(s.virtual_bytes.present);
	procfs__parse_status("VmSize:\t18014398509481983 kB\n", &s);
	assert_true(s.virtual_bytes.present && s.virtual_bytes.value == 18014398509481983ull * 1024);
	/* The prefix must start the line; an empty value is absent. */
	procfs__parse_status(" VmRSS:\t5 kB\nVmRSSx:\t6 kB\nThreads:\n2\n", &s);
	assert_false(s.resident_bytes.present);
	assert_false(s.thread_count.present);
	procfs__parse_status("", &s);
	assert_false(s.thread_count.present);
}

static void test_sample_self(void **state)
{
	struct kh_resource_snapshot s;

	(void)state;
	assert_int_equal(procfs__sample(getpid(), &s), 0);
	assert_true(s.cpu_time_ms.present);
	assert_true(s.resident_bytes.present && s.resident_bytes.value > 0);
	assert_true(s.virtual_bytes.present && s.virtual_bytes.value >= s.resident_bytes.value);
	assert_true(s.thread_count.present && s.thread_count.value >= 1);
}

static void test_sample_missing_process(void **state)
{
	struct kh_resource_snapshot s;

	(void)state;
	/* Above any pid_max the kernel allows. */
	assert_int_equal(procfs__sample(INT_MAX, &s), -ENOENT);
	assert_false(s.cpu_time_ms.present);
	assert_false(s.resident_bytes.present);
	assert_false(s.thread_count.present);
}

/* Another process whose name holds ") (" is sampled like any other. */
static void test_sample_child_with_awkward_name(void **state)
{
	struct kh_resource_snapshot s;
	int ready[2], release[2];
	char byte;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(release), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_NAME, "a) (b c", 0, 0, 0);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		/* Blocks until the parent has sampled and closes its end. */
		close(release[1]);
		_exit(read(release[0], &byte, 1) == 0 ? 0 : 1);
	}
	close(ready[1]);
	close(release[0]);
	assert_int_equal(read(ready[0], &byte, 1), 1);
	assert_int_equal(procfs__sample(pid, &s), 0);
	assert_true(s.cpu_time_ms.present);
	assert_true(s.thread_count.present && s.thread_count.value == 1);
	close(release[1]);
	close(ready[0]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

/* proc(5)'s maps lines: a file, one anonymous, a deleted file with a space in its name. */
static void test_mapping_lines(void **state)
{
	struct procfs_mapping m;

	(void)state;
	assert_int_equal(procfs__parse_mapping("7f3a1c000000-7f3a1c021000 r-xp 00002000 fe:01 "
					       "1311 /usr/lib/libkh.so\n", &m), 0);
	assert_int_equal(m.start, 0x7f3a1c000000ull);
	assert_int_equal(m.end, 0x7f3a1c021000ull);
	assert_int_equal(m.offset, 0x2000);
	assert_int_equal(m.inode, 1311);
	assert_int_equal(m.dev_major, 0xfe);
	assert_int_equal(m.dev_minor, 1);
	assert_string_equal(m.perms, "r-xp");
	assert_string_equal(m.path, "/usr/lib/libkh.so");

	assert_int_equal(procfs__parse_mapping("7ffd5000-7ffd7000 rw-p 00000000 00:00 0\n", &m), 0);
	assert_int_equal(m.inode, 0);
	assert_string_equal(m.path, "");

	assert_int_equal(procfs__parse_mapping("1000-2000 rw-s 00000000 00:01 77     "
					       "/memfd:kh work (deleted)\n", &m), 0);
	assert_string_equal(m.path, "/memfd:kh work (deleted)");
	assert_int_equal(m.dev_minor, 1);

	assert_int_equal(procfs__parse_mapping("not a mapping\n", &m), -EINVAL);
	assert_int_equal(procfs__parse_mapping("1000-2000 r-xp\n", &m), -EINVAL);
}

struct own_text {
	uintptr_t address;
	bool found;
	size_t seen;
};

static int find_own_text(const struct procfs_mapping *m, void *ctx)
{
	struct own_text *o = ctx;

	o->seen++;
	if (o->address < m->start || o->address >= m->end)
		return 0;
	o->found = m->perms[2] == 'x' && m->inode != 0 && m->path[0] == '/';
	return 7; /* stops the walk, and is what it returns */
}

/* This binary's own code is an executable file mapping; the walk stops when told. */
static void test_mappings_of_self(void **state)
{
	struct own_text o = { .address = (uintptr_t)&find_own_text };
	size_t all;

	(void)state;
	assert_int_equal(procfs__for_each_mapping(getpid(), find_own_text, &o), 7);
	assert_true(o.found);
	all = o.seen;
	o = (struct own_text){ .address = 0 };
	assert_int_equal(procfs__for_each_mapping(getpid(), find_own_text, &o), 0);
	assert_true(o.seen >= all);
	assert_int_equal(procfs__for_each_mapping(getpid(), NULL, NULL), 0);
	assert_int_equal(procfs__for_each_mapping(-1, NULL, NULL), -ENOENT);
}

/* The state and start time of a stat line whose name holds ") T ", and a truncated one. */
static void test_stop_stat(void **state)
{
	char *line = stat_line("a) T (b", "1", "2");
	struct procfs_stop_view v = { 0 };

	(void)state;
	assert_int_equal(procfs__parse_stop_stat(line, &v), 0);
	assert_int_equal(v.state, 'S');
	assert_int_equal(v.start_ticks, 12345);
	free(line);
	assert_int_equal(procfs__parse_stop_stat("4242 (x) T 1 2 3\n", &v), -EINVAL);
	assert_int_equal(procfs__parse_stop_stat("no name here", &v), -EINVAL);
}

static bool stop_pending(const char *masks)
{
	struct procfs_stop_view v;
	char *status;

	assert_true(asprintf(&status, "Name:\tx\nState:\tT (stopped)\n%s", masks) > 0);
	assert_int_equal(procfs__parse_stop_status(status, &v), 0);
	assert_int_equal(v.state, 'T');
	free(status);
	return v.stop_pending;
}

/* A stop signal pending, shared or the thread's own: SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU only. */
static void test_stop_pending(void **state)
{
	struct procfs_stop_view v;

	(void)state;
	assert_false(stop_pending("SigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n"));
	/* SIGCONT (18: bit 17) and SIGCHLD (17: bit 16) are not stop signals. */
	assert_false(stop_pending("SigPnd:\t0000000000030000\nShdPnd:\t0000000000000000\n"));
	assert_true(stop_pending("SigPnd:\t0000000000000000\nShdPnd:\t0000000000080000\n"));
	assert_true(stop_pending("SigPnd:\t0000000000040000\nShdPnd:\t0000000000000000\n"));
	assert_true(stop_pending("ShdPnd:\t0000000000200000\n")); /* SIGTTOU */
	assert_false(stop_pending("ShdPnd:\t0000000000400000\n")); /* SIGURG */
	assert_int_equal(procfs__parse_stop_status("Name:\tx\n", &v), -EINVAL);
}

/* A live child stopped, as the kernel shows it: state T, its start time, nothing pending. */
static void test_stop_view_of_child(void **state)
{
	struct procfs_stop_view v;
	pid_t pid = fork();
	siginfo_t info;

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0) {
		raise(SIGSTOP);
		_exit(0);
	}
	assert_int_equal(waitid(P_PID, (id_t)pid, &info, WSTOPPED | WNOWAIT), 0);
	assert_int_equal(procfs__stop_view(pid, true, &v), 0);
	assert_int_equal(v.state, 'T');
	assert_true(v.start_ticks > 0);
	assert_false(v.stop_pending);
	/* Asked to stop again while stopped: the signal waits, pending. */
	assert_int_equal(kill(pid, SIGTSTP), 0);
	assert_int_equal(procfs__stop_view(pid, false, &v), 0);
	assert_int_equal(v.state, 'T');
	assert_true(v.stop_pending);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(procfs__stop_view(pid, true, &v), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stat_cpu_time),
		cmocka_unit_test(test_stat_awkward_names),
		cmocka_unit_test(test_stat_numbers_like_rust),
		cmocka_unit_test(test_stat_truncated),
		cmocka_unit_test(test_status_fields),
		cmocka_unit_test(test_status_absent_and_bad),
		cmocka_unit_test(test_sample_self),
		cmocka_unit_test(test_sample_missing_process),
		cmocka_unit_test(test_sample_child_with_awkward_name),
		cmocka_unit_test(test_mapping_lines),
		cmocka_unit_test(test_mappings_of_self),
		cmocka_unit_test(test_stop_stat),
		cmocka_unit_test(test_stop_pending),
		cmocka_unit_test(test_stop_view_of_child),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
