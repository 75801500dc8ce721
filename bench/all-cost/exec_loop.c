// SPDX-License-Identifier: MIT
/*
 * exec_loop ROUNDS PROGRAM [ARG...]: runs the command ROUNDS times;
 * exec_loop -each PROGRAM...: runs each PROGRAM (no arguments) once.
 * Fork, execve and wait; prints the mean wall time of one start to exit in
 * µs: what attach --all adds to every execve of the host
 * (bench/all-cost/run.sh, make bench row 14).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int run(char **argv)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 1;
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "exec_loop: %s failed\n", argv[0]);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	bool each = argc > 2 && !strcmp(argv[1], "-each");
	long rounds = each ? argc - 2 : argc > 2 ? atol(argv[1]) : 0;
	double begin;

	if (rounds <= 0) {
		fprintf(stderr, "usage: exec_loop ROUNDS PROGRAM [ARG...] | -each PROGRAM...\n");
		return 2;
	}
	begin = now_us();
	for (long r = 0; r < rounds; r++) {
		char *one[] = { argv[2 + r], NULL };

		if (run(each ? one : argv + 2))
			return 1;
	}
	printf("exec_us=%.1f\n", (now_us() - begin) / rounds);
	return 0;
}
