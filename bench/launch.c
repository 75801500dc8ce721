// SPDX-License-Identifier: MIT
/*
 * launch -o FILE -- COMMAND [ARG...]
 *
 * Reads CLOCK_MONOTONIC, exports it as KH_BENCH_T0 (ns), fork+execs COMMAND,
 * waits for it with wait4 and appends one line to FILE:
 *
 *   wall_ns=W maxrss_kib=R status=S
 *
 * W is fork to reap; R is wait4's ru_maxrss for COMMAND (the larger of its
 * own peak and that of any child it reaped); S is the exit status, or
 * 128+N when killed by signal N.  COMMAND's stdout and stderr are inherited.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	unsigned long long t0, t1;
	struct rusage ru;
	char t0s[32];
	int status, code;
	FILE *out;
	pid_t pid;

	if (argc < 5 || strcmp(argv[1], "-o") || strcmp(argv[3], "--")) {
		fprintf(stderr, "usage: launch -o FILE -- COMMAND [ARG...]\n");
		return 2;
	}
	out = fopen(argv[2], "a");
	if (!out) {
		fprintf(stderr, "launch: cannot open '%s': %s\n", argv[2], strerror(errno));
		return 2;
	}
	t0 = now_ns();
	snprintf(t0s, sizeof(t0s), "%llu", t0);
	setenv("KH_BENCH_T0", t0s, 1);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "launch: cannot fork: %s\n", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		execvp(argv[4], argv + 4);
		fprintf(stderr, "launch: cannot run '%s': %s\n", argv[4], strerror(errno));
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0) {
		fprintf(stderr, "launch: wait4: %s\n", strerror(errno));
		return 2;
	}
	t1 = now_ns();
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	fprintf(out, "wall_ns=%llu maxrss_kib=%ld status=%d\n", t1 - t0, ru.ru_maxrss, code);
	fclose(out);
	return 0;
}
