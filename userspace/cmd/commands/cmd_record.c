// SPDX-License-Identifier: MIT
/*
 * khprof record: runs a command with its probes attached from its first
 * instruction, once or as a series (--repeat), as a user without khprof's
 * privileges (privileges.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd_trace.h"
#include "commands.h"
#include "exit_codes.h"
#include "fileio.h"
#include "follow.h"
#include "json.h"
#include "live_metrics.h"
#include "log.h"
#include "privileges.h"
#include "record_dir.h"
#include "spread.h"
#include "stops.h"

static const char record_usage[] =
	"usage: khprof record [-o PATH] [--identity KEY=VALUE]... [--mode MODE] [--user USER]\n"
	"                     [--interval DURATION] [--serve [ADDR:]PORT]\n"
	"                     [--follow-forks | --no-follow-forks]\n"
	"                     [--sample[=HZ]] [--stop-limit DURATION|none] [-q] [-v]\n"
	"                     -- COMMAND [ARG...]\n"
	"       khprof record --repeat N [--warmup K] [--append] -o DIR [...]\n"
	"                     -- COMMAND [ARG...]\n"
	"\n"
	"Runs COMMAND with its keyhog probes attached from its first instruction\n"
	"(executable and every library it loads, dlopen included), prints the text\n"
	"report of each session to stderr and exits with COMMAND's status (128+N\n"
	"when killed by signal N, 127 when it is not found, 126 when it cannot run).\n"
	"Every span that completed is recorded however COMMAND ends (exit from any\n"
	"thread, a fatal signal, execve); the record says how it ended.\n"
	"\n"
	"A COMMAND without keyhog probes (a shell script, make, a test runner) has\n"
	"the processes it starts followed, as perf follows children: each one that\n"
	"runs an instrumented program gets records of its own, PATH with .PID before\n"
	"the extension (khprof.PID.json by default).  An instrumented COMMAND is\n"
	"traced alone unless --follow-forks is given: a scanner's children are rarely\n"
	"instrumented, and each followed process costs a tracer (~50 ms of BPF load,\n"
	"done ahead, and 1-20 ms stopped).\n"
	"An instrumented program that execs another ends its records there; the new\n"
	"program is not traced.\n"
	"\n"
	"A COMMAND that starts a container (runc, crun, podman, unshare, chroot,\n"
	"nsenter) is followed into it: the instrumented program there is attached\n"
	"through its own root, and its run id begins with the pid it sees itself as.\n"
	"docker, nerdctl, ctr, crictl and kubectl hand the container to a daemon:\n"
	"khprof says so; 'khprof attach --all' or '--exe PATH --container ID' traces\n"
	"it (docs/FLEET.md).\n"
	"\n"
	"Ctrl-C reaches COMMAND from the terminal.  SIGINT, SIGTERM, SIGHUP and\n"
	"SIGQUIT sent to khprof alone (kill) are passed on to COMMAND, as perf record\n"
	"ends its workload: khprof traces until COMMAND exits, then writes its\n"
	"records, which say how it ended.\n"
	"\n"
	"COMMAND does not get khprof's privileges (docs/PRIVILEGES.md): it runs as\n"
	"--user USER, else under sudo as the user who ran sudo (SUDO_UID, SUDO_GID),\n"
	"else as khprof's own user, with that user's groups, every capability\n"
	"dropped and no_new_privs set.  Root without sudo or --user stays root, and\n"
	"--user root keeps root when it is really wanted.  Under sudo, the records\n"
	"and directories khprof writes belong to the user who ran sudo.\n"
	"\n"
	"Each run replaces the records of the previous run to the same PATH: PATH.2,\n"
	"PATH.3 ... are removed when the first record is written, and those this\n"
	"run does not write again are named on stderr at its end.\n"
	"\n"
	"With --repeat, COMMAND runs K times untimed, then N times, each a fresh\n"
	"process traced from its first instruction, one after the other.  Records\n"
	"go to DIR/run-001.json ... (created if missing; it must not hold run-*.json\n"
	"already, unless --append numbers the new runs after the last one), the text\n"
	"reports are left out, and a table of the spread of all runs in DIR (median,\n"
	"min, max, MAD) goes to stderr ('khprof report DIR' prints it again).  Runs\n"
	"that exit differently stop the series (status 1 unless the odd run's own\n"
	"status says more), and so does a signal (128+N unless the run's status\n"
	"says more); otherwise the exit status is COMMAND's.  `khprof diff` takes\n"
	"DIR as one side.\n"
	"\n"
	"   -o PATH              write the JSON record to PATH; a second session goes to\n"
	"                        PATH with .2 before the extension, and so on.  Without\n"
	"                        -o: khprof.json in the current directory (said on\n"
	"                        stderr), the previous one kept as khprof.json.old, as\n"
	"                        perf keeps perf.data.old; 'khprof report' reads it.\n"
	"                        PATH's directory must exist and be writable: checked\n"
	"                        before COMMAND runs (exit code 2 if not)\n"
	"   --repeat N           run COMMAND N times (1 to 10000); -o names a directory\n"
	"   --warmup K           with --repeat: K traced runs first, not recorded\n"
	"   --append             with --repeat: add to the runs already in DIR, so that\n"
	"                        runs of two builds can alternate (docs/CI.md)\n"
	"   --user USER          run COMMAND as USER (a name or uid) with USER's groups\n"
	"   -q, --quiet          do not print the text reports, interval lines or notes\n"
	"                        (the clock, probe sites the linker discarded, a session\n"
	"                        seen in part); warnings and errors stay\n"
	"   --interval DURATION  also sample stage time, calls, input, CPU and RSS every\n"
	"                        DURATION (10ms to 1h: 100ms, 1s, 2 for two seconds)\n"
	"                        into the record, and\n"
	"                        print a line per interval (docs/SCHEMA.md, series)\n"
	"   --sample[=HZ]        also sample every thread's user stack HZ times per second\n"
	"                        of its CPU time (default 99), each tagged with the stage\n"
	"                        the thread has open, into the record ('khprof report\n"
	"                        --format folded' for flame graphs; docs/SAMPLING.md);\n"
	"                        with --follow-forks, each process in its own record\n"
	"   --identity KEY=VALUE fill or override a RunIdentity field (repeatable)\n"
	"   --mode MODE          batch (default: spans buffered per thread, one kernel\n"
	"                        entry per 256 spans), span (one kernel entry per span)\n"
	"                        or pair (enter and exit probes, as bpftrace scripts)\n"
	"   --follow-forks       also trace the processes COMMAND forks, and theirs, each\n"
	"                        from its first instruction after fork (a vforked one\n"
	"                        from its execve), its records to PATH with .PID before\n"
	"                        the extension (PATH.PID.json, PATH.PID.2.json ...);\n"
	"                        khprof waits for them after COMMAND exits and still\n"
	"                        exits with COMMAND's status; --interval samples\n"
	"                        COMMAND's own process only; not with --repeat\n"
	"                        (docs/PROBES.md, \"Following forks\").  The default for\n"
	"                        a COMMAND without keyhog probes\n"
	"   --no-follow-forks    trace COMMAND's own process only, even without probes\n"
	"   --serve [ADDR:]PORT  serve live metrics at http://ADDR:PORT/metrics while\n"
	"                        tracing (OpenMetrics or Prometheus text; ADDR defaults\n"
	"                        to 127.0.0.1; docs/FLEET.md); not with --repeat\n"
	"   --stop-limit DURATION  the longest a process khprof stopped (at a dlopen, a\n"
	"                        fork, a followed exec) waits for it (default 1s; none:\n"
	"                        until khprof ends); past it the process runs on\n"
	"                        untraced, counted.  Whatever ends khprof, even SIGKILL,\n"
	"                        its stop keeper lets every stopped process go\n"
	"                        (docs/PROBES.md)\n"
	"   -v, --verbose        debug messages, libbpf's own included\n"
	"\n"
	"examples:\n"
	"   khprof record -o profile.json -- build/kh-scan --threads 2 src/\n"
	"   sudo khprof record -o profile.json -- ./scanner repo/    # runs as you\n"
	"   khprof record --user nobody --identity workload_class=nightly -- ./scanner repo/\n"
	"   khprof record -- sh -c 'cd repo && exec ../scanner .'\n"
	"   khprof record -o ci/scan.json -- make scan    # ci/scan.PID.json per scanner run\n"
	"   khprof record -o scan.json -- runc run --bundle /srv/scan-bundle scan1\n"
	"   khprof record --repeat 5 --warmup 1 -o runs/ -- build/kh-scan --threads 2 src/\n"
	"   khprof record --interval 1s -o long.json -- ./scanner monorepo/\n"
	"   khprof record --sample -o stacks.json -- build/kh-scan src/\n"
	"   khprof record --follow-forks -o pool.json -- ./scanner --workers 4 repo/\n"
	"   khprof record --repeat 1 --append -o base-runs/ -- base/kh-scan src/\n";

/* execvp's search, done before fork so the path can be attached first. */
static int resolve_command(const char *cmd, char *out, size_t len)
{
	const char *path_env = getenv("PATH");
	char *paths, *dir, *save;
	int err = -ENOENT;

	if (strchr(cmd, '/')) {
		snprintf(out, len, "%s", cmd);
		return access(out, F_OK) == 0 ? (access(out, X_OK) == 0 ? 0 : -EACCES) : -ENOENT;
	}
	paths = strdup(path_env && *path_env ? path_env : "/usr/local/bin:/usr/bin:/bin");
	if (!paths)
		return -ENOMEM;
	for (dir = strtok_r(paths, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		struct stat st;

		snprintf(out, len, "%s/%s", *dir ? dir : ".", cmd);
		if (stat(out, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (access(out, X_OK) == 0) {
			err = 0;
			break;
		}
		err = -EACCES;
	}
	free(paths);
	return err;
}

/* What the child says through its pipe when it cannot run COMMAND. */
struct child_failure {
	int err;
	char step[48]; /* "" for exec itself */
};

/* Closes fd when khprof opened it (close-on-exec), unless it is keep_a or keep_b. */
static void close_own(int fd, int keep_a, int keep_b)
{
	int flags;

	if (fd > STDERR_FILENO && fd != keep_a && fd != keep_b &&
	    (flags = fcntl(fd, F_GETFD)) >= 0 && (flags & FD_CLOEXEC))
		close(fd);
}

/*
 * In the child before it waits for the tracer: every descriptor khprof
 * opened but the two pipe ends it uses.  The write end of its own ready
 * pipe above all: while the child held it, a tracer that failed and closed
 * its end left the child waiting for ever, and record with it.  Links,
 * maps and sockets are not the command's either.  khprof opens all its
 * descriptors close-on-exec, so that flag tells them from those khprof
 * inherited for the command (a make jobserver's pipe), which stay.
 * /proc/self/fd is listed with getdents64 on a stack buffer: after fork
 * only async-signal-safe calls are safe, and opendir allocates.
 */
struct dirent64_raw { /* what getdents64 returns: <dirent.h> has no raw call */
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static void close_own_descriptors(int keep_a, int keep_b)
{
	char buf[4096] __attribute__((aligned(8)));
	long n;
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dir < 0) { /* no /proc: try each number a descriptor can have */
		struct rlimit lim;
		int max = getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < 65536
				  ? (int)lim.rlim_cur : 65536;

		for (int fd = STDERR_FILENO + 1; fd < max; fd++)
			close_own(fd, keep_a, keep_b);
		return;
	}
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long at = 0; at < n;) {
			const struct dirent64_raw *d = (const void *)(buf + at);
			int fd = 0;
			const char *c = d->d_name;

			for (; *c >= '0' && *c <= '9' && fd < 1 << 24; c++)
				fd = fd * 10 + (*c - '0');
			if (!*c && c != d->d_name && fd != dir)
				close_own(fd, keep_a, keep_b);
			at += d->d_reclen;
		}
	}
	close(dir);
}

/*
 * Child side of record: wait for the tracer, become whom COMMAND runs as,
 * then exec; report failures through error_fd.
 */
static void run_child(int ready_fd, int error_fd, const char *path, char **argv,
		      const sigset_t *mask, const struct run_as *run_as)
{
	struct child_failure failure = { 0 };
	const char *step = "";
	char go;
	int err;

	sigprocmask(SIG_SETMASK, mask, NULL);
	close_own_descriptors(ready_fd, error_fd);
	if (read(ready_fd, &go, 1) != 1)
		_exit(KHPROF_EXIT_FAILURE); /* tracer setup failed; it said why */
	err = run_as__apply(run_as, &step);
	if (!err) {
		execv(path, argv);
		err = -errno;
		step = "";
	}
	failure.err = -err;
	snprintf(failure.step, sizeof(failure.step), "%s", step);
	if (write(error_fd, &failure, sizeof(failure)) < 0)
		_exit(KHPROF_EXIT_CANNOT_EXEC);
	_exit(failure.step[0] ? KHPROF_EXIT_FAILURE
	      : failure.err == ENOENT ? KHPROF_EXIT_NOT_FOUND : KHPROF_EXIT_CANNOT_EXEC);
}

/* The child could not become its user or exec: one line saying which. */
static void report_child_failure(const struct child_failure *f, const char *path,
				 const struct run_as *run_as)
{
	char who[128];

	if (!f->step[0]) {
		log__error("cannot run '%s': %s", path, strerror(f->err));
		return;
	}
	run_as__describe(run_as, who, sizeof(who));
	log__error("cannot run '%s' as %s: %s failed: %s", path, who, f->step, strerror(f->err));
}

/*
 * How the child ended, for its records, before they are written: its
 * status is peeked at (WNOWAIT) and it is reaped afterwards.
 */
static void tell_how_it_ended(struct tracer *t, pid_t pid)
{
	siginfo_t info = { 0 };

	if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0)
		return;
	/* The wait status waitpid would give. */
	tracer__process_ended(t, info.si_code == CLD_EXITED ? (info.si_status & 0xff) << 8
							    : info.si_status & 0x7f);
}

/* The event loop's callback for the followed processes' tracers. */
static void service_follow(void *f)
{
	follow__service(f);
}

/*
 * One traced run of COMMAND (resolved to path), records to output (NULL:
 * none).  detach_now waits for the kernel to remove the uprobes before
 * returning, so that a following run does not share the CPUs with it.
 * Returns COMMAND's status as record's exit code.
 */
static int record_once(const struct trace_cli *cli, const struct run_as *run_as,
		       char **cmd_argv, const char *path, const char *output, bool detach_now)
{
	struct output_state out = { 0 };
	struct trace_options opts = { 0 };
	struct event_loop loop = EVENT_LOOP_INIT;
	struct child_failure failure;
	struct tracer *t = NULL;
	struct follow *follow = NULL;
	struct stops *stops = NULL;
	int ready[2] = { -1, -1 }, exec_err[2] = { -1, -1 };
	sigset_t old_mask;
	int status = 0, code, err;
	bool reaped = false;
	pid_t pid;

	trace_options_from(cli, output, &out, &opts);
	opts.stop_on_loader = true;
	opts.attach_at_once = true;
	code = serve_open(cli, &out, &loop);
	if (code)
		return code;
	/*
	 * Before anything can stop COMMAND, its keeper; COMMAND runs in
	 * khprof's process group, which the keeper holds (stops.h).
	 */
	if (stops__open(&stops, cli->stop_limit_ns, true)) {
		live_metrics__close(out.metrics);
		return KHPROF_EXIT_FAILURE;
	}
	opts.stops = stops;
	if (cli->follow_forks) {
		if (follow__open(&follow, cli, out.metrics)) {
			stops__close(stops);
			live_metrics__close(out.metrics);
			return KHPROF_EXIT_FAILURE;
		}
		follow__configure(follow, &opts);
		loop.extra = (struct loop_source){ follow__epoll_fd(follow), service_follow, follow };
	}
	err = tracer__open(&t, &opts);
	if (err) {
		follow__close(follow);
		stops__close(stops);
		live_metrics__close(out.metrics);
		return KHPROF_EXIT_FAILURE;
	}

	sigprocmask(SIG_SETMASK, NULL, &old_mask);
	if (pipe2(ready, O_CLOEXEC) || pipe2(exec_err, O_CLOEXEC)) {
		log__error("cannot create pipes: %s", strerror(errno));
		code = KHPROF_EXIT_FAILURE;
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		log__error("cannot fork: %s", strerror(errno));
		code = KHPROF_EXIT_FAILURE;
		goto out;
	}
	if (pid == 0)
		run_child(ready[0], exec_err[1], path, cmd_argv, &old_mask, run_as);
	close(ready[0]);
	close(exec_err[1]);
	ready[0] = exec_err[1] = -1;

	err = tracer__attach(t, pid, path);
	if (!err && follow)
		follow__set_calibration(follow, t);
	live_metrics__add_tracer(out.metrics, t, pid);
	if (!err)
		err = loop__open(&loop, t, pid, &old_mask);
	if (err) {
		close(ready[1]); /* the child exits without running the command */
		ready[1] = -1;
		waitpid(pid, NULL, 0);
		/* A malformed executable is bad input (said on stderr), not a tracing failure. */
		code = tracer__bad_file(t) ? KHPROF_EXIT_BAD_INPUT : KHPROF_EXIT_FAILURE;
		goto out;
	}
	/* Loaded and attached: from here khprof needs far less. */
	privileges__drop_own(tracer__attach_needs_admin(t));
	if (write(ready[1], "x", 1) != 1) {
		log__error("cannot start '%s': %s", path, strerror(errno));
		code = KHPROF_EXIT_FAILURE;
		goto out;
	}
	if (read(exec_err[0], &failure, sizeof(failure)) == sizeof(failure)) {
		waitpid(pid, &status, 0);
		report_child_failure(&failure, path, run_as);
		code = exit_code_of(status);
		goto out;
	}

	/* While COMMAND starts: a fork before it is ready waits only for the rest. */
	if (follow)
		follow__prepare(follow);
	loop__run(&loop, t, pid, 0);
	tell_how_it_ended(t, pid);
	tracer__finish(t, 0); /* sessions still open when it exits did not finish */
	if (waitpid(pid, &status, 0) < 0) {
		log__error("cannot wait for '%s': %s", path, strerror(errno));
		code = KHPROF_EXIT_FAILURE;
		goto out;
	}
	reaped = true;
	if (follow) /* the processes it forked may outlive it */
		follow__wait(follow, loop.signal_fd);
	if (follow && follow__records(follow)) {
		char pattern[PATH_MAX];

		path_with_tag(output ? output : KH_DEFAULT_RECORD, ".PID", pattern,
			      sizeof(pattern));
		log__note("%zu record%s of the processes '%s' started written as '%s'",
			  follow__records(follow), follow__records(follow) == 1 ? "" : "s",
			  path, pattern);
	} else if (tracer__probe_count(t) == 0 && !cli->follow_forks) {
		log__warn("'%s' and its libraries have no keyhog probes: it ran untraced (the "
			  "children it forks are followed unless --no-follow-forks; a shell may "
			  "also 'exec' the instrumented program)", path);
	} else if (tracer__records_emitted(t) == 0 && cli->follow_forks) {
		log__note("neither '%s' nor the processes it started reached a keyhog probe: no "
			  "record written", path);
	} else if (tracer__records_emitted(t) == 0) {
		log__note("'%s' reached no keyhog probe: no record written", path);
	}
	code = finish_output(&out, exit_code_of(status));
	if (follow && follow__write_failed(follow) && code == KHPROF_EXIT_OK)
		code = KHPROF_EXIT_FAILURE;
out:
	follow__close(follow);
	loop__close(&loop, &old_mask);
	for (int i = 0; i < 2; i++) {
		if (ready[i] >= 0)
			close(ready[i]);
		if (exec_err[i] >= 0)
			close(exec_err[i]);
	}
	live_metrics__close(out.metrics);
	if (reaped && !detach_now)
		tracer__close_in_background(t);
	else
		tracer__close(t);
	stops__close(stops);
	return code;
}

/* Where --repeat puts run i: DIR/run-001.json, wider past 999 runs. */
static void repeat_path(const char *dir, unsigned i, char *out, size_t len)
{
	snprintf(out, len, "%s/run-%03u.json", dir, i);
}

/*
 * DIR exists (made here if missing).  A series starts at run 1 in a
 * directory without runs, or with --append after the last run there.
 */
static int prepare_repeat_dir(const char *dir, bool append, unsigned *first)
{
	struct stat st;
	size_t files;
	unsigned last;
	int err = dir__create(dir, 0777);

	if (err && err != -EEXIST) {
		log__error("cannot create directory '%s': %s", dir, strerror(-err));
		return err;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		log__error("cannot write records to '%s': not a directory (--repeat takes a "
			   "directory for -o)", dir);
		return -ENOTDIR;
	}
	if (record_dir__count_runs(dir, &files, &last)) {
		log__error("cannot list the runs in '%s'", dir);
		return -EIO;
	}
	if (files && !append) {
		log__error("cannot write records to '%s': it already holds run-*.json (remove "
			   "them, choose another directory, or add to them with --append)", dir);
		return -EEXIST;
	}
	*first = last + 1;
	return 0;
}

/*
 * Waits for the run's khprof child.  Signals for the series come here
 * (blocked, read with sigwaitinfo); the terminal's SIGINT already reached
 * the child through the process group, the others are passed on.  *stop is the
 * signal that should end the series after this run, or 0.
 */
static int wait_run(pid_t child, const sigset_t *signals, int *stop)
{
	siginfo_t si;
	int status;

	for (;;) {
		pid_t done = waitpid(child, &status, WNOHANG);

		if (done == child)
			return status;
		if (done < 0 && errno != EINTR)
			return W_EXITCODE(KHPROF_EXIT_FAILURE, 0);
		if (sigwaitinfo(signals, &si) < 0 || si.si_signo == SIGCHLD)
			continue;
		*stop = si.si_signo;
		if (!signal_reached_group(si.si_signo, si.si_code))
			kill(child, si.si_signo);
	}
}

/* Reads every run in DIR back and prints how much they varied. */
static void print_repeat_spread(const char *dir, const char *command)
{
	struct kh_profile *runs;
	size_t read_ok, unreadable;
	char *text;

	if (record_dir__read_runs(dir, &runs, &read_ok, &unreadable))
		return;
	text = read_ok ? runs__render_spread(runs, read_ok) : NULL;
	if (text) {
		log__note("%zu run%s of '%s' recorded in '%s':", read_ok, read_ok == 1 ? "" : "s",
			  command, dir);
		fputs(text, stderr);
	}
	free(text);
	for (size_t i = 0; i < read_ok; i++)
		profile__free(&runs[i]);
	free(runs);
}

static int record_repeat(const struct trace_cli *cli, const struct run_as *run_as,
			 char **cmd_argv, const char *path)
{
	unsigned total = cli->warmup + cli->repeat, number = 1;
	char run_path[PATH_MAX];
	sigset_t signals, old_mask;
	int first_code = -1, code = KHPROF_EXIT_OK, stop = 0;

	if (prepare_repeat_dir(cli->output, cli->append, &number))
		return KHPROF_EXIT_BAD_INPUT;
	/* Once for the series: each run's khprof is a fork of this one and inherits it. */
	tracer__decide_clock(cli->mode, cli->quiet_asked);
	stop_signals(&signals);
	sigaddset(&signals, SIGCHLD);
	sigprocmask(SIG_BLOCK, &signals, &old_mask);

	for (unsigned i = 0; i < total && !stop; i++) {
		bool warmup = i < cli->warmup;
		struct stat st;
		pid_t child;

		if (!warmup)
			repeat_path(cli->output, number++, run_path, sizeof(run_path));
		fflush(NULL);
		child = fork();
		if (child < 0) {
			log__error("cannot fork: %s", strerror(errno));
			code = KHPROF_EXIT_FAILURE;
			break;
		}
		if (child == 0) {
			sigprocmask(SIG_SETMASK, &old_mask, NULL);
			_exit(record_once(cli, run_as, cmd_argv, path, warmup ? NULL : run_path,
					  true));
		}
		code = exit_code_of(wait_run(child, &signals, &stop));
		if (first_code < 0)
			first_code = code;
		if (stop) {
			log__error("stopped after run %u of %u of '%s': interrupted", i + 1, total,
				   path);
			/* An incomplete series must not pass for a good one. */
			code = code ? code : 128 + stop;
			break;
		}
		if (code != first_code) {
			log__error("run %u of '%s' exited with %d, the first run with %d: the runs "
				   "are not alike, so the series stops", i + 1, path, code, first_code);
			code = code ? code : KHPROF_EXIT_FAILURE;
			break;
		}
		if (!warmup && stat(run_path, &st) != 0) {
			log__error("run %u of '%s' wrote no record '%s'", i + 1, path, run_path);
			code = code ? code : KHPROF_EXIT_FAILURE;
			break;
		}
	}
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	print_repeat_spread(cli->output, path);
	return code;
}


int cmd_record(int argc, char **argv)
{
	struct trace_cli cli;
	struct run_as run_as;
	char path[PATH_MAX];
	int err;

	if (wants_help(argc, argv)) {
		fputs(record_usage, stdout);
		return KHPROF_EXIT_OK;
	}
	if (parse_cli(argc, argv, false, &cli))
		return KHPROF_EXIT_USAGE;
	if (run_as__resolve(cli.user, &run_as))
		return KHPROF_EXIT_USAGE;
	/* Before COMMAND runs, not after: a profile must not be lost to a typo in -o. */
	if (!cli.repeat && output__prepare(&cli))
		return KHPROF_EXIT_USAGE;
	err = resolve_command(argv[cli.first_arg], path, sizeof(path));
	if (err) {
		log__error("cannot run '%s': %s", argv[cli.first_arg],
			   err == -ENOENT ? "command not found" : strerror(-err));
		return err == -ENOENT ? KHPROF_EXIT_NOT_FOUND : KHPROF_EXIT_CANNOT_EXEC;
	}
	choose_mode_for(path, &cli);
	note_daemon_client(path);
	choose_follow_for(path, &cli);
	if (cli.repeat) {
		cli.quiet = true; /* N reports would bury the spread table */
		return record_repeat(&cli, &run_as, argv + cli.first_arg, path);
	}
	return record_once(&cli, &run_as, argv + cli.first_arg, path, cli.output, false);
}
