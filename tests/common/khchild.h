/* SPDX-License-Identifier: MIT */
/*
 * khchild.h - a child process with pipes, driven line by line: the traced
 * workload's serve loop and a khprof whose stderr says when it is ready.
 * (tests/integration/test_trace.c keeps its own copy of these helpers.)
 */
#ifndef KHPROF_TEST_KHCHILD_H
#define KHPROF_TEST_KHCHILD_H

#include "khtest.h"

struct child {
	pid_t pid;
	int to;    /* its stdin */
	FILE *from; /* its stdout, or its stderr with capture_stderr */
};

static inline struct child child_spawn(char *const argv[], bool capture_stderr)
{
	int in[2], out[2];
	struct child c;

	/* Close-on-exec, so no later child keeps another's stdin open. */
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	c.pid = fork();
	assert_true(c.pid >= 0);
	if (c.pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], capture_stderr ? 2 : 1);
		execv(argv[0], argv);
		_exit(RUN_EXEC_FAILED);
	}
	close(in[0]);
	close(out[1]);
	c.to = in[1];
	c.from = fdopen(out[0], "r");
	assert_non_null(c.from);
	return c;
}

/* Reads lines until one contains needle; fails at EOF. */
static inline void child_wait_for_line(struct child *c, const char *needle)
{
	char line[512];

	while (fgets(line, sizeof(line), c->from))
		if (strstr(line, needle))
			return;
	fail_msg("stream ended before a line with '%s'", needle);
}

static inline void child_send(struct child *c, const char *line)
{
	assert_int_equal(write(c->to, line, strlen(line)), (ssize_t)strlen(line));
}

/* Waits for the child; its exit status, or 128 + the signal that ended it. */
static inline int child_wait(struct child *c)
{
	int status;

	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	if (c->to >= 0)
		close(c->to);
	fclose(c->from);
	c->to = -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#endif /* KHPROF_TEST_KHCHILD_H */
