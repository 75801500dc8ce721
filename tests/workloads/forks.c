// SPDX-License-Identifier: MIT
/*
 * Traced workload for `khprof record --follow-forks`
 * (tests/integration/tracing/test_follow.c), built like an outside program: only
 * include/keyhog_profile.h.  A family of processes, each counting its own
 * spans and printing them on stdout as "PID STAGE CALLS" lines (written
 * whole with dprintf, so that no stdio buffer is copied by a fork):
 *
 *   first       session 1: 10 hot_patterns; forks "inherit" while
 *               session 2 is open (4 entropy before the fork, 6 after),
 *               then "second"; waits for both; exits 3
 *   inherit     forked inside the first's open session: 5 entropy in it
 *               and finishes it, then a session of its own with 2 decode
 *   second      a session with 20 hot_patterns; forks "grandchild" and
 *               waits for it
 *   grandchild  a session with 7 decode and 3 reporting
 *
 * "forks flood" (test_follow's test_control_ring) stops its tracer,
 * khprof, fills khprof's event ring with identities, forks a child
 * that runs the probe site the parent made hot (crashed on Linux 6.18
 * unless khprof protects it), prints "loading PID" and dlopens
 * libkhplugin.so, where khprof stops it until the library's probes are
 * attached.  The test resumes khprof once both wait on it: neither may be
 * lost to the full ring.  Exits 0, its counts said as above.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keyhog_profile.h"

static volatile uint64_t sink;

static void spans(uint32_t stage, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		KH_SPAN_SCOPE(stage);
		for (unsigned j = 0; j < 1000; j++)
			sink += j;
	}
}

static void say(uint32_t stage, unsigned calls)
{
	dprintf(STDOUT_FILENO, "%d %u %u\n", (int)getpid(), stage, calls);
}

static void session(uint32_t stage, unsigned n, uint32_t stage2, unsigned n2)
{
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	spans(stage, n);
	spans(stage2, n2);
	KH_SESSION_FINISH(0);
}

static pid_t fork_or_die(void)
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("forks: cannot fork");
		exit(2);
	}
	return pid;
}

static void wait_for(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		dprintf(STDERR_FILENO, "forks: child %d failed\n", (int)pid);
		exit(2);
	}
}

/* Polls /proc until pid is stopped: it must be before the ring is filled. */
static void wait_stopped(pid_t pid)
{
	char path[64], buf[512], *state;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (;;) {
		f = fopen(path, "r");
		if (!f || !fgets(buf, sizeof(buf), f)) {
			dprintf(STDERR_FILENO, "forks: cannot read '%s'\n", path);
			exit(2);
		}
		fclose(f);
		state = strrchr(buf, ')');
		if (state && state[1] == ' ' && state[2] == 'T')
			return;
		sched_yield();
	}
}

static int flood(int identities)
{
	unsigned long (*plugin_span)(unsigned long);
	pid_t tracer = getppid(), child;
	char path[64], comm[32] = "";
	void *handle;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)tracer);
	f = fopen(path, "r");
	if (!f || !fgets(comm, sizeof(comm), f) || strcmp(comm, "khprof\n")) {
		dprintf(STDERR_FILENO, "forks: flood needs khprof as its parent\n");
		exit(2);
	}
	fclose(f);
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	spans(KH_STAGE_DECODE, 200);
	if (kill(tracer, SIGSTOP) != 0) {
		dprintf(STDERR_FILENO, "forks: cannot stop khprof: %s\n", strerror(errno));
		exit(2);
	}
	wait_stopped(tracer);
	/* Some 300 bytes each: several times the 256 KiB ring. */
	for (int i = 0; i < identities; i++)
		KH_IDENTITY("binary_version", "flood");
	child = fork_or_die();
	if (child == 0) {
		spans(KH_STAGE_DECODE, 200);
		say(KH_STAGE_DECODE, 200);
		return 0;
	}
	dprintf(STDOUT_FILENO, "loading %d\n", (int)getpid());
	handle = dlopen("libkhplugin.so", RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		dprintf(STDERR_FILENO, "forks: cannot dlopen 'libkhplugin.so': %s\n", dlerror());
		exit(2);
	}
	plugin_span = (unsigned long (*)(unsigned long))dlsym(handle, "khwork_entropy_span");
	for (int i = 0; i < 10; i++)
		sink += plugin_span(100);
	wait_for(child);
	KH_SESSION_FINISH(0);
	say(KH_STAGE_DECODE, 200);
	say(KH_STAGE_ENTROPY, 10);
	return 0;
}

int main(int argc, char **argv)
{
	pid_t inherit, second, grandchild;

	if (argc > 1 && !strcmp(argv[1], "flood"))
		return flood(argc > 2 ? atoi(argv[2]) : 4000);

	session(KH_STAGE_HOT_PATTERNS, 10, KH_STAGE_HOT_PATTERNS, 0);
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	spans(KH_STAGE_ENTROPY, 4);
	inherit = fork_or_die();
	if (inherit == 0) {
		spans(KH_STAGE_ENTROPY, 5);
		KH_SESSION_FINISH(0);
		say(KH_STAGE_ENTROPY, 5);
		session(KH_STAGE_DECODE, 2, KH_STAGE_DECODE, 0);
		say(KH_STAGE_DECODE, 2);
		return 0;
	}
	spans(KH_STAGE_ENTROPY, 6);
	KH_SESSION_FINISH(0);
	say(KH_STAGE_HOT_PATTERNS, 10);
	say(KH_STAGE_ENTROPY, 10);
	second = fork_or_die();
	if (second == 0) {
		session(KH_STAGE_HOT_PATTERNS, 20, KH_STAGE_HOT_PATTERNS, 0);
		say(KH_STAGE_HOT_PATTERNS, 20);
		grandchild = fork_or_die();
		if (grandchild == 0) {
			session(KH_STAGE_DECODE, 7, KH_STAGE_REPORTING, 3);
			say(KH_STAGE_DECODE, 7);
			say(KH_STAGE_REPORTING, 3);
			return 0;
		}
		wait_for(grandchild);
		return 0;
	}
	wait_for(inherit);
	wait_for(second);
	return 3;
}
