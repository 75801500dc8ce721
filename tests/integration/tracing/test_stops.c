// SPDX-License-Identifier: MIT
/*
 * A khprof that dies or is stuck never leaves a process stopped
 * (userspace/capture/stops/stops.h, docs/PROBES.md "When khprof cannot let
 * go"): for each kind of stop (a shell's runs followed, a dlopen under
 * record, a followed fork, a fork made safe, attach --exe's and --all's
 * new processes, attach -p's forks), khprof is killed (SIGKILL) or frozen
 * (SIGSTOP) at each moment of it, and every process the test started
 * must finish with its own status and output.
 *
 * The moments come from khprof itself, not from sleeps: with
 * KHPROF_TEST_STOP_HOOK=FD khprof says "STEP PID KIND" on FD at each step
 * of each stop (stop: it came to the stop; release: it attached what it
 * attaches and is about to let go; released: it let go) and waits for a
 * byte.  The test answers every line but the one it acts at.  "unread":
 * khprof is frozen before the stop is made, and the test waits until the
 * process shows stopped in /proc.  "before": khprof is killed before.
 *
 * Killed, khprof runs with --stop-limit none, so that only its end can let
 * a process go (the keeper's pidfd).  Frozen, the limit is what lets the
 * process go, and khprof, resumed, says it was let go; so that no time
 * decides which stop the keeper lets go and when, the keeper has a hook of
 * its own (KHPROF_TEST_KEEPER_HOOK): with a limit of 1 ms it asks
 * "limit PID KIND" of every stop, and the test lets go the one under test
 * once khprof is frozen at its step (and everything after it, with khprof
 * frozen), and no other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "khtest.h"
#include "ns.h"
#include "record.h"

#define STOPS_WL "build/workloads/stops"

static char *khprof;
static char *workload;
static char *tmpdir;
/*
 * attach --all watches only the cgroup the test makes (/khprof-stops-PID,
 * under the cgroup2 mount), so that no other process of the host is ever
 * stopped; its workload runs in the leaf "target" below it.
 */
static char all_cgroup[64];
static char all_procs[PATH_MAX];
static bool forks_stopped_untraced;

enum kind { K_SHELL, K_DLOPEN, K_FOLLOW, K_SAFE, K_EXE, K_ATTACH, K_ALL, K_COUNT };
enum moment { M_BEFORE, M_UNREAD, M_STOP, M_RELEASE, M_RELEASED, M_COUNT };
enum fate { KILLED, FROZEN };

static const char *const kind_names[] = { "record of a shell", "a dlopen under record",
					  "--follow-forks", "forks made safe",
					  "attach --exe", "attach -p", "attach --all" };
static const char *const moment_steps[] = { "before", "unread", "stop", "release", "released" };
/*
 * The hook's name of each kind's stop under test: a shell's command is the
 * first stop after "go", an exec (dash vforks) or a fork.
 */
static const char *const stop_kinds[] = { NULL, "loader", "fork", "fork", "start", "fork",
					  "start" };

/* One line at a time from a descriptor, whatever else is ready. */
struct source {
	int fd;
	bool eof;
	char buf[16384];
	size_t len;
	char *all; /* everything read (stderr), or NULL */
	size_t all_len;
};

/* What the test answers the keeper's "limit PID KIND" with. */
enum keeper_policy {
	KEEP,      /* n: khprof lets it go (before the trigger) */
	HOLD,      /* after the trigger: a stop of the kind under test waits for a verdict */
	TARGET,    /* y to the stop under test (target_pid, or any of its kind), hold the rest */
	LET_GO,    /* y: khprof is frozen past the stop under test */
};

struct run {
	enum kind kind;
	pid_t khprof;
	int khprof_code; /* exit code, or 128+signal, once reaped; -1 before */
	int hook;        /* the test's end of khprof's hook socket */
	int keeper_hook; /* and of the keeper's */
	struct source hooks, out, err, keeper;
	enum keeper_policy policy;
	pid_t target_pid;   /* with TARGET: the stop under test's process, 0: the first of its kind */
	bool question_held; /* the keeper waits for a verdict on held_line */
	char held_line[64];
	pid_t want_ended;   /* pump returns GOT_ENDED at the keeper's "ended PID HOW" for it */
	int in;          /* the workload's stdin */
	pid_t target;    /* the test's own child (attach kinds), else 0 */
	pid_t command;   /* record's COMMAND: the shell (K_SHELL), the serve loop */
	char line[512];
};

static void source_init(struct source *s, int fd, bool keep_all)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->all = keep_all ? calloc(1, 1) : NULL;
}

/* The next whole line already read, without its newline; false if none. */
static bool take_line(struct source *s, char *line, size_t size)
{
	char *nl = memchr(s->buf, '\n', s->len);
	size_t n;

	if (!nl)
		return false;
	n = (size_t)(nl - s->buf);
	snprintf(line, size, "%.*s", (int)n, s->buf);
	memmove(s->buf, nl + 1, s->len - n - 1);
	s->len -= n + 1;
	return true;
}

static bool debug_lines;

static void fill(struct source *s)
{
	ssize_t n = read(s->fd, s->buf + s->len, sizeof(s->buf) - s->len - 1);

	if (n <= 0) {
		s->eof = true;
		return;
	}
	if (debug_lines)
		fprintf(stderr, "[fd %d] %.*s", s->fd, (int)n, s->buf + s->len);
	if (s->all) {
		s->all = realloc(s->all, s->all_len + (size_t)n + 1);
		assert_non_null(s->all);
		memcpy(s->all + s->all_len, s->buf + s->len, (size_t)n);
		s->all_len += (size_t)n;
		s->all[s->all_len] = '\0';
	}
	s->len += (size_t)n;
}

/* Lets khprof go on from a hook step. */
static void answer(struct run *r)
{
	/* khprof may be dead already: no SIGPIPE for the test. */
	if (r->hook >= 0 && send(r->hook, "c", 1, MSG_NOSIGNAL) != 1) {
		close(r->hook);
		r->hook = -1;
	}
}

enum got { GOT_HOOK, GOT_OUT, GOT_ERR, GOT_EOF, GOT_ENDED };

static void verdict(struct run *r, char answer)
{
	if (r->keeper_hook >= 0 && send(r->keeper_hook, &answer, 1, MSG_NOSIGNAL) != 1) {
		close(r->keeper_hook);
		r->keeper_hook = -1;
	}
	r->question_held = false;
}

/* The keeper asks about one stop at a time: answered now, or held (policy). */
static void judge(struct run *r)
{
	char kind[16];
	int pid;
	bool of_kind;

	if (!r->question_held)
		return;
	assert_int_equal(sscanf(r->held_line, "limit %d %15s", &pid, kind), 2);
	of_kind = !stop_kinds[r->kind] || !strcmp(kind, stop_kinds[r->kind]);
	if (r->policy == KEEP || (!of_kind && r->policy != LET_GO)) {
		verdict(r, 'n');
	} else if (r->policy == LET_GO) {
		verdict(r, 'y');
	} else if (r->policy == TARGET && (!r->target_pid || pid == r->target_pid)) {
		verdict(r, 'y');
		r->policy = LET_GO;
	} else if (r->policy == TARGET) {
		verdict(r, 'n'); /* another stop of the kind: khprof's */
	}
}

/* From now on the keeper lets go the stop under test (pid, or the first of its kind). */
static void let_go_target(struct run *r, pid_t pid)
{
	r->policy = TARGET;
	r->target_pid = pid;
	judge(r);
}

/*
 * Reads what comes, answering every hook step but the one wanted (step,
 * and kind unless NULL), until that step, a line of the workload's output
 * containing out, or one of khprof's stderr containing err (NULL: not
 * waited for).  r->line holds the line.  GOT_EOF when nothing wanted can
 * come any more.
 */
static enum got pump(struct run *r, const char *step, const char *kind, const char *out,
		     const char *err)
{
	for (;;) {
		struct pollfd fds[4];
		struct source *srcs[4];
		nfds_t n = 0;

		while (take_line(&r->hooks, r->line, sizeof(r->line))) {
			char got_step[16], got_kind[16];
			int pid;

			assert_int_equal(sscanf(r->line, "%15s %d %15s", got_step, &pid, got_kind), 3);
			if (step && !strcmp(got_step, step) && (!kind || !strcmp(got_kind, kind)))
				return GOT_HOOK;
			answer(r);
		}
		/* The workload's lines wait until they are waited for. */
		while (out && take_line(&r->out, r->line, sizeof(r->line)))
			if (strstr(r->line, out))
				return GOT_OUT;
		while (take_line(&r->err, r->line, sizeof(r->line)))
			if (err && strstr(r->line, err))
				return GOT_ERR;
		while (!r->question_held && take_line(&r->keeper, r->held_line, sizeof(r->held_line))) {
			int pid;

			if (sscanf(r->held_line, "ended %d", &pid) == 1) {
				if (r->want_ended && pid == r->want_ended) {
					snprintf(r->line, sizeof(r->line), "%s", r->held_line);
					r->want_ended = 0;
					return GOT_ENDED;
				}
				continue;
			}
			r->question_held = true;
			judge(r);
		}
		if (!r->keeper.eof && r->keeper.fd >= 0 && !r->question_held)
			srcs[n++] = &r->keeper;
		if (!r->hooks.eof && r->hooks.fd >= 0)
			srcs[n++] = &r->hooks;
		if (!r->out.eof && r->out.fd >= 0 && r->out.len + 1 < sizeof(r->out.buf))
			srcs[n++] = &r->out;
		if (!r->err.eof && r->err.fd >= 0)
			srcs[n++] = &r->err;
		if ((!out || r->out.eof) && (!err || r->err.eof) && (!step || r->hooks.eof) &&
		    (!r->want_ended || r->keeper.eof))
			return GOT_EOF;
		for (nfds_t i = 0; i < n; i++)
			fds[i] = (struct pollfd){ .fd = srcs[i]->fd, .events = POLLIN };
		assert_true(poll(fds, n, -1) > 0);
		for (nfds_t i = 0; i < n; i++)
			if (fds[i].revents)
				fill(srcs[i]);
	}
}

/* Waits for a line of output containing what, or fails. */
static void expect_out(struct run *r, const char *what)
{
	if (pump(r, NULL, NULL, what, NULL) != GOT_OUT)
		fail_msg("%s: the workload's output ended before '%s'; khprof said: %s",
			 kind_names[r->kind], what, r->err.all);
}

/*
 * khprof as a shell's job: a process group of its own, its stdin and
 * stdout the workload's (record), stderr and the hook socket the test's.
 */
static void start_khprof(struct run *r, char **argv)
{
	int in[2], out[2], err[2], hook[2], keeper[2];

	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	assert_int_equal(pipe2(err, O_CLOEXEC), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, hook), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, keeper), 0);
	r->khprof = fork();
	assert_true(r->khprof >= 0);
	if (r->khprof == 0) {
		char fd[16];

		setpgid(0, 0);
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		fcntl(hook[1], F_SETFD, 0);
		snprintf(fd, sizeof(fd), "%d", hook[1]);
		setenv("KHPROF_TEST_STOP_HOOK", fd, 1);
		fcntl(keeper[1], F_SETFD, 0);
		snprintf(fd, sizeof(fd), "%d", keeper[1]);
		setenv("KHPROF_TEST_KEEPER_HOOK", fd, 1);
		execv(argv[0], argv);
		_exit(RUN_EXEC_FAILED);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	close(hook[1]);
	close(keeper[1]);
	r->khprof_code = -1;
	r->hook = hook[0];
	r->keeper_hook = keeper[0];
	source_init(&r->hooks, hook[0], false);
	source_init(&r->keeper, keeper[0], false);
	source_init(&r->err, err[0], true);
	if (r->kind == K_ATTACH || r->kind == K_EXE) {
		/* The workload is the test's own child: its pipes come from start_target. */
		close(in[1]);
		close(out[0]);
		return;
	}
	r->in = in[1];
	source_init(&r->out, out[0], false);
}

/*
 * attach -p's process (serve) or attach --exe's and --all's (run): the
 * test's child, pipes and a session of its own; --all's in the watched cgroup.
 */
static void start_target(struct run *r, const char *how, const char *status)
{
	char *argv[] = { workload, (char *)how, (char *)status, NULL };
	int in[2], out[2];

	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	r->target = fork();
	assert_true(r->target >= 0);
	if (r->target == 0) {
		int procs = r->kind == K_ALL ? open(all_procs, O_WRONLY | O_CLOEXEC) : -1;

		if (r->kind == K_ALL && (procs < 0 || write(procs, "0", 1) != 1))
			_exit(RUN_SETUP_FAILED);
		/*
		 * A session of its own, as a daemon's: in the test's group, its
		 * stop ended by SIGHUP whenever the group lost its last tie to
		 * the session meanwhile (the test's launcher exiting; POSIX
		 * job control, docs/PROBES.md): exit 129 for 6, in 2 of 4 background runs of
		 * test_stops whose launching shell had exited.
		 */
		setsid();
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		execv(argv[0], argv);
		_exit(RUN_EXEC_FAILED);
	}
	close(in[0]);
	close(out[1]);
	r->in = in[1];
	source_init(&r->out, out[0], false);
}

static void send_line(struct run *r, const char *line)
{
	assert_int_equal(write(r->in, line, strlen(line)), (ssize_t)strlen(line));
}

static char state_of(pid_t pid)
{
	char path[64], buf[512], *close_paren;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return '?';
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	close_paren = strrchr(buf, ')');
	return close_paren && close_paren[1] == ' ' ? close_paren[2] : '?';
}

/*
 * Polls /proc until pid shows stopped: the stop was made (no time decides).
 * Only where nothing else lets it go (--stop-limit none).
 */
static void wait_stopped(pid_t pid)
{
	char state;

	while ((state = state_of(pid)) != 'T') {
		if (state == 'Z' || state == '?')
			fail_msg("PID %d ended without being stopped", (int)pid);
		sched_yield();
	}
}

/* Whether a child of parent shows stopped in /proc. */
static bool child_stopped(pid_t parent)
{
	DIR *proc = opendir("/proc");
	struct dirent *d;
	bool found = false;

	assert_non_null(proc);
	while (!found && (d = readdir(proc))) {
		char path[300], buf[512], *close_paren;
		FILE *f;
		char state;
		int ppid;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && (close_paren = strrchr(buf, ')')) &&
		    sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2)
			found = ppid == parent && state == 'T';
		fclose(f);
	}
	closedir(proc);
	return found;
}

static void wait_child_stopped(pid_t parent)
{
	while (!child_stopped(parent))
		sched_yield();
}

static void reap_khprof(struct run *r)
{
	int status;

	assert_int_equal(waitpid(r->khprof, &status, 0), r->khprof);
	r->khprof_code = exit_code_of_status(status);
}

/* Kills khprof, or stops it until thaw (it is the test's child: seen stopped). */
static void act(struct run *r, enum fate fate)
{
	int status;

	if (fate == KILLED) {
		assert_int_equal(kill(r->khprof, SIGKILL), 0);
		reap_khprof(r);
		assert_int_equal(r->khprof_code, 128 + SIGKILL);
		return;
	}
	assert_int_equal(kill(r->khprof, SIGSTOP), 0);
	assert_int_equal(waitpid(r->khprof, &status, WUNTRACED), r->khprof);
	assert_true(WIFSTOPPED(status));
}

/* The stop under test is made: the workload is told to do what khprof stops it for. */
static void trigger(struct run *r)
{
	r->policy = HOLD;
	switch (r->kind) {
	case K_SHELL:
		send_line(r, "go\n");
		break;
	case K_DLOPEN:
		send_line(r, "dlopen\n");
		break;
	case K_FOLLOW:
	case K_SAFE:
	case K_ATTACH:
		send_line(r, "fork 4\n");
		break;
	case K_EXE:
	case K_ALL:
		start_target(r, "run", "6");
		break;
	default:
		fail();
	}
}

/* The process the stop under test holds, once it exists (for "unread"). */
static pid_t stopped_process(struct run *r)
{
	if (r->kind == K_SHELL) {
		wait_child_stopped(r->command);
		return 0;
	}
	if (r->kind == K_DLOPEN) {
		wait_stopped(r->command);
		return r->command;
	}
	if (r->kind == K_EXE || r->kind == K_ALL) {
		wait_stopped(r->target);
		return r->target;
	}
	expect_out(r, "forked ");
	wait_stopped((pid_t)atol(r->line + strlen("forked ")));
	return 0;
}

/* khprof running, and the workload started and past its first stops. */
static void start(struct run *r, enum fate fate)
{
	const char *limit = fate == KILLED ? "none" : "1ms";
	char out[512];
	char *argv[16] = { khprof };
	size_t n = 1;

	path_in(out, sizeof(out), tmpdir, "stops.json");
	if (r->kind == K_ATTACH) {
		static char pid[16];

		start_target(r, "serve", "3");
		send_line(r, "ping\n");
		expect_out(r, "pong");
		snprintf(pid, sizeof(pid), "%d", (int)r->target);
		argv[n++] = "attach";
		argv[n++] = "-p";
		argv[n++] = pid;
		argv[n++] = "-o";
		argv[n++] = out;
	} else if (r->kind == K_EXE) {
		argv[n++] = "attach";
		argv[n++] = "--exe";
		argv[n++] = workload;
	} else if (r->kind == K_ALL) {
		argv[n++] = "attach";
		argv[n++] = "--all";
		argv[n++] = "--container";
		argv[n++] = all_cgroup;
	} else {
		argv[n++] = "record";
		argv[n++] = "-o";
		argv[n++] = out;
		argv[n++] = r->kind == K_FOLLOW || r->kind == K_SHELL ? "--follow-forks"
								     : "--no-follow-forks";
	}
	argv[n++] = "-q";
	argv[n++] = "--stop-limit";
	argv[n++] = (char *)limit;
	if (r->kind == K_SHELL) {
		static char script[1024];

		snprintf(script, sizeof(script),
			 "echo \"ready $$\"; read go; for s in 3 4 5; do %s run $s; "
			 "echo \"status $?\"; done; echo end", workload);
		argv[n++] = "--";
		argv[n++] = "/bin/sh";
		argv[n++] = "-c";
		argv[n++] = script;
	} else if (r->kind != K_EXE && r->kind != K_ATTACH && r->kind != K_ALL) {
		argv[n++] = "--";
		argv[n++] = workload;
		argv[n++] = "serve";
		argv[n++] = "3";
	}
	argv[n] = NULL;
	start_khprof(r, argv);
	if (r->kind == K_SHELL) {
		expect_out(r, "ready ");
		r->command = (pid_t)atol(r->line + strlen("ready "));
	} else if (r->kind != K_EXE && r->kind != K_ATTACH && r->kind != K_ALL) {
		send_line(r, "ping\n");
		expect_out(r, "pong ");
		r->command = (pid_t)atol(r->line + strlen("pong "));
	} else if (pump(r, NULL, NULL, NULL, r->kind == K_ATTACH ? "attached to PID" : "watching ") !=
		   GOT_ERR) {
		fail_msg("%s: khprof did not start: %s", kind_names[r->kind], r->err.all);
	}
}

/*
 * The test's own child's exit status, once its output ends: the hooks are
 * answered meanwhile (the keeper may wait for a verdict on its stop).
 */
static int wait_target(struct run *r)
{
	assert_int_equal(pump(r, NULL, NULL, "\x01", NULL), GOT_EOF);
	return wait_exit(r->target);
}

/* What every process of the run must have done, whatever happened to khprof. */
static void expect_results(struct run *r)
{
	switch (r->kind) {
	case K_SHELL:
		expect_out(r, "status 3");
		expect_out(r, "status 4");
		expect_out(r, "status 5");
		expect_out(r, "end");
		break;
	case K_DLOPEN:
		expect_out(r, "loaded");
		close(r->in);
		r->in = -1;
		expect_out(r, "exit ");
		assert_string_equal(r->line, "exit 3");
		break;
	case K_FOLLOW:
	case K_SAFE:
	case K_ATTACH:
		expect_out(r, "child ");
		assert_string_equal(r->line, "child 4");
		/* Afterwards the program forks as ever, stopped or not. */
		send_line(r, "fork 5\n");
		expect_out(r, "child ");
		assert_string_equal(r->line, "child 5");
		close(r->in);
		r->in = -1;
		expect_out(r, "exit ");
		assert_string_equal(r->line, "exit 3");
		if (r->kind == K_ATTACH)
			assert_int_equal(wait_target(r), 3);
		break;
	case K_EXE:
	case K_ALL:
		assert_int_equal(wait_target(r), 6);
		break;
	default:
		fail();
	}
}

/* A frozen khprof resumed: it comes to the stop, finds it let go, and ends as usual. */
static void thaw_and_end(struct run *r, enum moment moment)
{
	assert_int_equal(kill(r->khprof, SIGCONT), 0);
	if (moment == M_UNREAD) {
		/* Only once khprof has come to the stop does it count it: then it may end. */
		assert_int_equal(pump(r, "stop", stop_kinds[r->kind], NULL, NULL), GOT_HOOK);
	}
	answer(r);
	/* attach --exe and --all watch until told; the others end with their process, which has. */
	if (r->kind == K_EXE || r->kind == K_ALL)
		assert_int_equal(kill(r->khprof, SIGTERM), 0);
	pump(r, NULL, NULL, NULL, "\x01"); /* answers every step to the end */
	reap_khprof(r);
	/* record exits with COMMAND's status: the shell's is its last echo's. */
	assert_int_equal(r->khprof_code,
			 r->kind == K_DLOPEN || r->kind == K_FOLLOW || r->kind == K_SAFE ? 3 : 0);
	if (!strstr(r->err.all, "released untraced after waiting"))
		fail_msg("%s, frozen at %s: khprof did not say it was let go: %s",
			 kind_names[r->kind], moment_steps[moment], r->err.all);
	/*
	 * The record written after khprof came to the stop counts it: attach
	 * -p's, written once every event is read.  (A session that finishes
	 * while khprof is frozen may be written before the fork's stop is
	 * read, from the other ring: then stderr alone says it.)
	 */
	if (r->kind == K_ATTACH) {
		char path[512];
		struct kh_profile p;

		path_in(path, sizeof(path), tmpdir, "stops.json");
		load_record(path, &p);
		if (p.ext.stops_let_go < 1)
			fail_msg("%s, frozen at %s: the record counts no stop let go",
				 kind_names[r->kind], moment_steps[moment]);
		profile__free(&p);
	}
}

static void close_run(struct run *r)
{
	if (r->hook >= 0)
		close(r->hook);
	if (r->keeper_hook >= 0)
		close(r->keeper_hook);
	if (r->in >= 0)
		close(r->in);
	if (r->out.fd >= 0)
		close(r->out.fd);
	close(r->err.fd);
	free(r->err.all);
}

/* Whether a fork of an untraced kind is stopped here at all (optimized uprobes). */
static bool applies(enum kind kind, enum moment moment)
{
	return moment == M_BEFORE || forks_stopped_untraced || (kind != K_SAFE && kind != K_ATTACH);
}

static void scenario(enum kind kind, enum moment moment, enum fate fate)
{
	struct run r = { .kind = kind, .in = -1, .hook = -1, .keeper_hook = -1 };

	if (!applies(kind, moment))
		return;
	r.out.fd = -1;
	start(&r, fate);
	if (moment == M_BEFORE) {
		act(&r, fate);
		trigger(&r);
	} else if (moment == M_UNREAD) {
		/* Frozen first, khprof cannot come to the stop the trigger makes. */
		act(&r, FROZEN);
		trigger(&r);
		if (fate == KILLED) {
			stopped_process(&r);
			act(&r, KILLED);
		} else {
			let_go_target(&r, 0);
		}
	} else {
		trigger(&r);
		if (pump(&r, moment_steps[moment], stop_kinds[kind], NULL, NULL) != GOT_HOOK)
			fail_msg("%s: khprof never came to '%s %s': %s", kind_names[kind],
				 moment_steps[moment], stop_kinds[kind] ? stop_kinds[kind] : "",
				 r.err.all);
		act(&r, fate);
		if (fate == FROZEN) {
			int pid;

			assert_int_equal(sscanf(r.line, "%*s %d", &pid), 1);
			if (debug_lines)
				fprintf(stderr, "[frozen at %s: PID %d in state %c]\n", r.line, pid,
					state_of((pid_t)pid));
			let_go_target(&r, (pid_t)pid);
		}
	}
	expect_results(&r);
	if (fate == FROZEN) {
		thaw_and_end(&r, moment);
	} else {
		/* Every stop still held when khprof died was let go by its keeper. */
		pump(&r, NULL, NULL, NULL, "\x01");
		if (moment != M_BEFORE && moment != M_RELEASED &&
		    !strstr(r.err.all, "waited stopped for it"))
			fail_msg("%s, killed at %s: the keeper did not say it let go: %s",
				 kind_names[kind], moment_steps[moment], r.err.all);
	}
	close_run(&r);
}

#define KIND_TESTS(name, kind)                                                     \
	static void test_killed_##name(void **state)                               \
	{                                                                          \
		(void)state;                                                       \
		for (enum moment m = 0; m < M_COUNT; m++)                          \
			scenario(kind, m, KILLED);                                 \
	}                                                                          \
	static void test_frozen_##name(void **state)                               \
	{                                                                          \
		(void)state;                                                       \
		for (enum moment m = M_UNREAD; m <= M_RELEASE; m++)                \
			scenario(kind, m, FROZEN);                                 \
	}

/* The cgroup attach --all watches, and its leaf for the workload (cgroup v2). */
static int make_all_cgroup(void **state)
{
	const char *mount = ns__cgroup2_mount();
	char dir[PATH_MAX];

	(void)state;
	if (!mount[0])
		fail_msg("no cgroup2 file system mounted: attach --all's test needs one");
	snprintf(all_cgroup, sizeof(all_cgroup), "/khprof-stops-%d", (int)getpid());
	path_in(dir, sizeof(dir), mount, "%s", all_cgroup + 1);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		fail_msg("cannot make cgroup '%s': %s", dir, strerror(errno));
	path_in(dir, sizeof(dir), mount, "%s/target", all_cgroup + 1);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		fail_msg("cannot make cgroup '%s': %s", dir, strerror(errno));
	path_in(all_procs, sizeof(all_procs), dir, "cgroup.procs");
	return 0;
}

/* Every process of the cgroup has ended (each scenario waits for its own). */
static int remove_all_cgroup(void **state)
{
	const char *mount = ns__cgroup2_mount();
	char dir[PATH_MAX];

	(void)state;
	path_in(dir, sizeof(dir), mount, "%s/target", all_cgroup + 1);
	rmdir(dir);
	path_in(dir, sizeof(dir), mount, "%s", all_cgroup + 1);
	rmdir(dir);
	return 0;
}

KIND_TESTS(shell, K_SHELL)
KIND_TESTS(dlopen, K_DLOPEN)
KIND_TESTS(follow, K_FOLLOW)
KIND_TESTS(safe, K_SAFE)
KIND_TESTS(exe, K_EXE)
KIND_TESTS(attach, K_ATTACH)
KIND_TESTS(all, K_ALL)

/*
 * A process khprof stopped that someone else asks to stop meanwhile (a
 * job-control shell's Ctrl-Z: SIGTSTP) is theirs once the stop ends: the
 * keeper does not SIGCONT it, which would throw their stop away, and it
 * runs again, to its own end, when they continue it.
 */
static void test_stop_of_someone_else(void **state)
{
	struct run r = { .kind = K_EXE, .in = -1, .hook = -1, .keeper_hook = -1 };
	int pid;

	(void)state;
	r.out.fd = -1;
	start(&r, FROZEN);
	trigger(&r);
	assert_int_equal(pump(&r, "stop", "start", NULL, NULL), GOT_HOOK);
	act(&r, FROZEN);
	assert_int_equal(sscanf(r.line, "%*s %d", &pid), 1);
	assert_int_equal(pid, r.target);
	assert_int_equal(kill(r.target, SIGTSTP), 0);
	r.want_ended = r.target;
	let_go_target(&r, r.target);
	assert_int_equal(pump(&r, NULL, NULL, NULL, NULL), GOT_ENDED);
	assert_non_null(strstr(r.line, "handed-over"));
	assert_int_equal(state_of(r.target), 'T');
	/* The shell's fg. */
	assert_int_equal(kill(r.target, SIGCONT), 0);
	assert_int_equal(wait_target(&r), 6);
	thaw_and_end(&r, M_STOP);
	close_run(&r);
}

/* --stop-limit's syntax, and a keeper started by hand. */
static void test_stop_limit_errors(void **state)
{
	char *bad[] = { khprof, "record", "--stop-limit", "soon", "--", "/bin/true", NULL };
	char *by_hand[] = { khprof, NULL }, target[PATH_MAX];
	struct run_result r;

	(void)state;
	r = run_here(bad);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "bad stop limit 'soon'"));
	run_result_free(&r);
	/* The keeper is khprof's binary under another name, never started by hand. */
	assert_true(asprintf(&by_hand[0], "%s/khprof-keeper", tmpdir) > 0);
	assert_non_null(realpath(khprof, target));
	assert_int_equal(symlink(target, by_hand[0]), 0);
	r = run_here(by_hand);
	assert_int_equal(r.exit_code, 2);
	assert_non_null(strstr(r.err, "is started by khprof, not by hand"));
	run_result_free(&r);
	unlink(by_hand[0]);
	free(by_hand[0]);
}

/*
 * What `khprof features` says of optimized uprobes: only with them are the
 * forks of a process khprof does not follow stopped (docs/PROBES.md).
 */
static bool kernel_optimizes_uprobes(void)
{
	return khprof_has_feature(khprof, "optimized_uprobes");
}

int main(void)
{
	static const struct root_tests rt = {
		.name = "test_stops",
		.need = "BPF integration tests need root (CAP_BPF, CAP_PERFMON)",
		.tmp_prefix = "khprof-stops",
		.tmpdir = &tmpdir,
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_killed_shell),  cmocka_unit_test(test_frozen_shell),
		cmocka_unit_test(test_killed_dlopen), cmocka_unit_test(test_frozen_dlopen),
		cmocka_unit_test(test_killed_follow), cmocka_unit_test(test_frozen_follow),
		cmocka_unit_test(test_killed_safe),   cmocka_unit_test(test_frozen_safe),
		cmocka_unit_test(test_killed_exe),    cmocka_unit_test(test_frozen_exe),
		cmocka_unit_test(test_killed_attach), cmocka_unit_test(test_frozen_attach),
		cmocka_unit_test_setup_teardown(test_killed_all, make_all_cgroup, remove_all_cgroup),
		cmocka_unit_test_setup_teardown(test_frozen_all, make_all_cgroup, remove_all_cgroup),
		cmocka_unit_test(test_stop_of_someone_else),
		cmocka_unit_test(test_stop_limit_errors),
	};

	debug_lines = getenv("KH_STOPS_DEBUG") != NULL;
	/* A workload's stdin whose reader was killed with khprof's group fails one write, not the test. */
	signal(SIGPIPE, SIG_IGN);
	khprof = tool_path("KH_KHPROF", "build/khprof");
	workload = tool_path("KH_STOPS_WORKLOAD", STOPS_WL);
	if (geteuid() == 0)
		forks_stopped_untraced = kernel_optimizes_uprobes();
	return run_root_tests(&rt, tests);
}
