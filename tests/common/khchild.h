/* SPDX-License-Identifier: MIT */
/*
 * khchild.h - a child process with pipes, driven line by line: a traced
 * workload's serve loop, and a khprof whose stderr says when it is ready.
 * Every integration test that talks to a running child uses these.
 */
#ifndef KHPROF_TEST_KHCHILD_H
#define KHPROF_TEST_KHCHILD_H

#include "khtest.h"

struct child {
	pid_t pid;
	int to;     /* its stdin, or -1 once closed */
	FILE *from; /* its stdout, or its stderr with capture_stderr; NULL once closed */
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

/*
 * Reads lines until one contains needle, copied to line_out when it is not
 * NULL; fails at EOF.
 */
static inline void child_read_line(struct child *c, const char *needle, char *line_out,
				   size_t len)
{
	char line[512];

	while (fgets(line, sizeof(line), c->from))
		if (strstr(line, needle)) {
			if (line_out)
				snprintf(line_out, len, "%s", line);
			return;
		}
	fail_msg("stream ended before a line with '%s'", needle);
}

static inline void child_wait_for_line(struct child *c, const char *needle)
{
	child_read_line(c, needle, NULL, 0);
}

/* The next line that starts with prefix, its rest parsed as a number; fails at EOF. */
static inline long child_wait_for_number(struct child *c, const char *prefix)
{
	char line[256];

	while (fgets(line, sizeof(line), c->from))
		if (!strncmp(line, prefix, strlen(prefix)))
			return atol(line + strlen(prefix));
	fail_msg("stream ended before a line starting '%s'", prefix);
	return -1;
}

static inline void child_send(struct child *c, const char *line)
{
	assert_int_equal(write(c->to, line, strlen(line)), (ssize_t)strlen(line));
}

/* EOF on its stdin. */
static inline void child_close_input(struct child *c)
{
	if (c->to >= 0)
		close(c->to);
	c->to = -1;
}

/* Closes both pipes, without waiting for the child. */
static inline void child_close(struct child *c)
{
	child_close_input(c);
	if (c->from)
		fclose(c->from);
	c->from = NULL;
}

/* Waits for the child and closes its pipes; its exit status, or 128 + the signal. */
static inline int child_wait(struct child *c)
{
	int code = wait_exit(c->pid);

	child_close(c);
	return code;
}

/*
 * A workload's serve loop (`workload serve`, `workload-rs serve`), once it
 * said "ready"; each command line it reads is answered with "done".
 */
static inline struct child serve_loop_start(const char *program)
{
	char *argv[] = { (char *)program, "serve", NULL };
	struct child w = child_spawn(argv, false);

	child_wait_for_line(&w, "ready");
	return w;
}

/* serve_loop_start, with the loop's pid as text in pid_text (for khprof attach -p). */
static inline struct child serve_loop_start_pid(const char *program, char *pid_text, size_t len)
{
	struct child w = serve_loop_start(program);

	snprintf(pid_text, len, "%d", w.pid);
	return w;
}

/* khprof attach as argv says, once it said its probes are live; stderr captured. */
static inline struct child attach_spawn(char *const argv[])
{
	struct child k = child_spawn(argv, true);

	child_wait_for_line(&k, "attached to PID");
	return k;
}

/* One serve-loop command, run to completion. */
static inline void serve_loop_command(struct child *w, const char *line)
{
	child_send(w, line);
	child_wait_for_line(w, "done");
}

/* Ends the serve loop (EOF on its stdin) and checks it exited cleanly. */
static inline void serve_loop_stop(struct child *w)
{
	child_close_input(w);
	assert_int_equal(child_wait(w), 0);
}

#endif /* KHPROF_TEST_KHCHILD_H */
