// SPDX-License-Identifier: MIT
/*
 * Traced workload for tests/integration/tracing/test_stops.c: a program
 * khprof stops (at a fork, a dlopen, its start) whose results the test
 * checks after khprof was killed or stuck.  Built like an outside program:
 * only include/keyhog_profile.h.
 *
 *   stops run STATUS     a session of 1000 spans, then exits STATUS
 *   stops serve STATUS   a session of 1000 spans (its probe sites hot), then
 *                        one command per line on stdin, each answered on
 *                        stdout: "fork N": a child runs 1000 spans on the
 *                        sites its parent made hot and exits N, the parent
 *                        says "forked PID", then "child S" with the status
 *                        it got (128+signal for one killed); "dlopen":
 *                        libkhplugin.so loaded
 *                        and one of its spans run, says "loaded"; "ping":
 *                        says "pong PID".  At EOF: "exit STATUS" and exits so.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keyhog_profile.h"

static volatile unsigned long sink;

static void spans(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		KH_SPAN_SCOPE(KH_STAGE_DECODE);
		for (unsigned j = 0; j < 200; j++)
			sink += j;
	}
}

/* Said whole with one write, so that no stdio buffer is copied by a fork. */
static void say(const char *fmt, int value)
{
	dprintf(STDOUT_FILENO, fmt, value);
}

static int fork_child(int status)
{
	pid_t pid = fork();
	int got;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		spans(1000);
		_exit(status);
	}
	say("forked %d\n", (int)pid);
	if (waitpid(pid, &got, 0) != pid)
		return -1;
	return WIFEXITED(got) ? WEXITSTATUS(got) : 128 + WTERMSIG(got);
}

static int load_plugin(void)
{
	unsigned long (*plugin_span)(unsigned long);
	void *handle = dlopen("libkhplugin.so", RTLD_NOW | RTLD_LOCAL);

	if (!handle)
		return -1;
	plugin_span = (unsigned long (*)(unsigned long))dlsym(handle, "khwork_entropy_span");
	if (!plugin_span)
		return -1;
	sink += plugin_span(100);
	return 0;
}

static int serve(int status)
{
	char line[64];

	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "fork ", 5))
			say("child %d\n", fork_child(atoi(line + 5)));
		else if (!strcmp(line, "dlopen\n"))
			say(load_plugin() == 0 ? "loaded\n" : "not loaded %d\n", 0);
		else if (!strcmp(line, "ping\n"))
			say("pong %d\n", (int)getpid());
		else
			say("unknown command\n", 0);
	}
	say("exit %d\n", status);
	return status;
}

int main(int argc, char **argv)
{
	int status;

	if (argc != 3) {
		fprintf(stderr, "usage: stops run|serve STATUS\n");
		return 2;
	}
	status = atoi(argv[2]);
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	spans(1000);
	if (!strcmp(argv[1], "serve"))
		status = serve(status);
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	return status;
}
