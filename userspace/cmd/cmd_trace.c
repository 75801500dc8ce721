// SPDX-License-Identifier: MIT
/*
 * khprof record / khprof attach: trace one process and write a record per
 * session it runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "fileio.h"
#include "json.h"
#include "latency_text.h"
#include "log.h"
#include "notes.h"
#include "spread.h"
#include "text.h"
#include "trace.h"

#define MAX_OVERRIDES 32

static const char record_usage[] =
	"usage: khprof record [-o PATH] [--identity KEY=VALUE]... [--mode MODE] [-q] [-v]\n"
	"                     -- COMMAND [ARG...]\n"
	"       khprof record --repeat N [--warmup K] [--append] -o DIR [...]\n"
	"                     -- COMMAND [ARG...]\n"
	"\n"
	"Runs COMMAND with its keyhog probes attached from its first instruction\n"
	"(executable and every library it loads, dlopen included), prints the text\n"
	"report of each session to stderr and exits with COMMAND's status (128+N\n"
	"when killed by signal N, 127 when it is not found, 126 when it cannot run).\n"
	"\n"
	"With --repeat, COMMAND runs K times untimed, then N times, each a fresh\n"
	"process traced from its first instruction, one after the other.  Records\n"
	"go to DIR/run-001.json ... (created if missing; it must not hold run-*.json\n"
	"already, unless --append numbers the new runs after the last one), the text\n"
	"reports are left out, and a table of the spread of all runs in DIR (median,\n"
	"min, max, MAD) goes to stderr.  Runs that exit differently stop the\n"
	"series (status 1 unless the odd run's own status says more), and so does a\n"
	"signal (128+N unless the run's status says more); otherwise the exit\n"
	"status is COMMAND's.  `khprof diff` takes DIR as one side.\n"
	"\n"
	"   -o PATH              write the JSON record to PATH; a second session goes to\n"
	"                        PATH with .2 before the extension, and so on\n"
	"   --repeat N           run COMMAND N times (1 to 10000); -o names a directory\n"
	"   --warmup K           with --repeat: K traced runs first, not recorded\n"
	"   --append             with --repeat: add to the runs already in DIR, so that\n"
	"                        runs of two builds can alternate (docs/CI.md)\n"
	"   -q, --quiet          do not print the text reports\n"
	"   --identity KEY=VALUE fill or override a RunIdentity field (repeatable)\n"
	"   --mode MODE          batch (default: spans buffered per thread, one kernel\n"
	"                        entry per 64 spans), span (one kernel entry per span)\n"
	"                        or pair (enter and exit probes, as bpftrace scripts)\n"
	"   -v, --verbose        debug messages, libbpf's own included\n"
	"\n"
	"examples:\n"
	"   khprof record -o profile.json -- build/kh-scan --threads 2 src/\n"
	"   khprof record --identity workload_class=nightly -- ./scanner repo/\n"
	"   khprof record --repeat 5 --warmup 1 -o runs/ -- build/kh-scan --threads 2 src/\n"
	"   khprof record --repeat 1 --append -o base-runs/ -- base/kh-scan src/\n";

static const char attach_usage[] =
	"usage: khprof attach -p PID [-o PATH] [--duration SECONDS] [--identity KEY=VALUE]...\n"
	"                     [--mode MODE] [-q] [-v]\n"
	"\n"
	"Profiles a running process until Ctrl-C, SIGTERM, the duration or the\n"
	"process's exit.  A session that was already running when khprof attached\n"
	"is recorded from the attach point and marked as started mid-session.\n"
	"In batch mode, spans a live thread still buffers when khprof detaches\n"
	"(at most 63 per thread) are not seen; --mode span sees every one.\n"
	"\n"
	"   -p PID               the process to trace\n"
	"   -o PATH              write the JSON record(s) to PATH (as for record)\n"
	"   --duration SECONDS   stop after SECONDS (decimals allowed)\n"
	"   --identity KEY=VALUE fill or override a RunIdentity field (repeatable)\n"
	"   --mode MODE          batch (default), span or pair\n"
	"   -q, --quiet          do not print the text reports\n"
	"   -v, --verbose        debug messages\n"
	"\n"
	"examples:\n"
	"   khprof attach -p $(pidof kh-scan) -o live.json\n"
	"   khprof attach -p 4242 --duration 30\n";

struct trace_cli {
	const char *output;
	struct identity_override overrides[MAX_OVERRIDES];
	size_t override_count;
	enum kh_trace_mode mode;
	bool mode_is_default;
	pid_t pid;
	double duration_s;
	unsigned repeat; /* 0: a single run, -o names a file */
	unsigned warmup;
	bool append;     /* --repeat adds to the runs already in its directory */
	bool quiet;
	int first_arg;
};

struct output_state {
	const char *path;
	bool quiet;
	size_t records;
	bool write_failed;
};

/* PATH for the first record, PATH with ".N" before the extension after. */
static void record_path(const char *path, size_t n, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(path, '.');

	if (n == 1) {
		snprintf(out, len, "%s", path);
		return;
	}
	if (!dot || (slash && dot < slash) || dot == path || (slash && dot == slash + 1))
		dot = path + strlen(path);
	snprintf(out, len, "%.*s.%zu%s", (int)(dot - path), path, n, dot);
}

static void on_profile(const struct kh_profile *p, void *ctx)
{
	struct output_state *out = ctx;
	char *text = profile__render_report(p);
	char path[PATH_MAX];
	char *json;
	int err;

	out->records++;
	if (text && !out->quiet)
		fputs(text, stderr);
	free(text);
	profile__print_notes(p);
	if (!out->path)
		return;
	record_path(out->path, out->records, path, sizeof(path));
	json = profile__to_json(p);
	if (!json) {
		log__error("cannot write record '%s': out of memory", path);
		out->write_failed = true;
		return;
	}
	err = file__write_atomic(path, json, strlen(json));
	free(json);
	if (err) {
		log__error("cannot write record '%s': %s", path, strerror(-err));
		out->write_failed = true;
	}
}

static int parse_identity(struct trace_cli *cli, char *arg)
{
	char *eq = strchr(arg, '=');
	struct kh_profile scratch;
	int err;

	if (!eq || eq == arg) {
		log__error("bad --identity '%s': expected KEY=VALUE", arg);
		return -EINVAL;
	}
	if (cli->override_count == MAX_OVERRIDES) {
		log__error("too many --identity options (at most %d)", MAX_OVERRIDES);
		return -E2BIG;
	}
	*eq = '\0';
	/* Validate now, so a typo fails before anything runs. */
	profile__init(&scratch);
	err = identity__set(&scratch.identity, arg, eq + 1);
	profile__free(&scratch);
	if (err) {
		log__error("bad --identity '%s': not a RunIdentity field or bad value '%s'", arg,
			   eq + 1);
		return -EINVAL;
	}
	cli->overrides[cli->override_count++] = (struct identity_override){ arg, eq + 1 };
	return 0;
}

#define MAX_REPEAT 10000

/* Strict decimal in [min, max] for option: "5", not "5x", "-1" or " 5". */
static int parse_count(const char *option, const char *text, unsigned min, unsigned max,
		       unsigned *out)
{
	uint64_t value;

	if (kh_parse_u64(text, &value) || value < min || value > max) {
		log__error("bad %s '%s': expected a whole number from %u to %u", option, text,
			   min, max);
		return -EINVAL;
	}
	*out = (unsigned)value;
	return 0;
}

static int parse_cli(int argc, char **argv, bool attach, struct trace_cli *cli)
{
	enum { OPT_IDENTITY = 256, OPT_MODE, OPT_DURATION, OPT_REPEAT, OPT_WARMUP, OPT_APPEND };
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "identity", required_argument, NULL, OPT_IDENTITY },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "repeat", required_argument, NULL, OPT_REPEAT },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "append", no_argument, NULL, OPT_APPEND },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	const char *usage = attach ? attach_usage : record_usage;
	uint32_t mode;
	char *end;
	int c;

	memset(cli, 0, sizeof(*cli));
	cli->mode = KH_MODE_BATCH;
	cli->mode_is_default = true;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+o:p:qv", options, NULL)) != -1) {
		switch (c) {
		case 'o':
			cli->output = optarg;
			break;
		case 'p':
			if (!attach)
				goto bad_option;
			errno = 0;
			cli->pid = (pid_t)strtol(optarg, &end, 10);
			if (errno || *end || cli->pid <= 0) {
				log__error("bad PID '%s'", optarg);
				return -EINVAL;
			}
			break;
		case OPT_DURATION:
			if (!attach)
				goto bad_option;
			errno = 0;
			cli->duration_s = strtod(optarg, &end);
			if (errno || *end || !(cli->duration_s > 0)) {
				log__error("bad duration '%s': expected a positive number of seconds",
					   optarg);
				return -EINVAL;
			}
			break;
		case OPT_IDENTITY:
			if (parse_identity(cli, optarg))
				return -EINVAL;
			break;
		case OPT_MODE:
			cli->mode_is_default = false;
			if (kh_trace_mode__parse(optarg, &mode)) {
				log__error("unknown mode '%s' (batch, span or pair)", optarg);
				return -EINVAL;
			}
			cli->mode = mode;
			break;
		case OPT_REPEAT:
			if (attach)
				goto bad_option;
			if (parse_count("--repeat", optarg, 1, MAX_REPEAT, &cli->repeat))
				return -EINVAL;
			break;
		case OPT_WARMUP:
			if (attach)
				goto bad_option;
			if (parse_count("--warmup", optarg, 0, MAX_REPEAT, &cli->warmup))
				return -EINVAL;
			break;
		case OPT_APPEND:
			if (attach)
				goto bad_option;
			cli->append = true;
			break;
		case 'q':
			cli->quiet = true;
			break;
		case 'v':
			khprof_verbose = true;
			break;
		default:
			goto bad_option;
		}
	}
	if ((cli->warmup || cli->append) && !cli->repeat) {
		log__error("%s needs --repeat", cli->warmup ? "--warmup" : "--append");
		return -EINVAL;
	}
	if (cli->repeat && !cli->output) {
		log__error("--repeat needs -o DIR for the records");
		return -EINVAL;
	}
	cli->first_arg = optind;
	if (attach && (cli->pid == 0 || optind != argc)) {
		log__error(cli->pid == 0 ? "attach needs -p PID" : "unexpected argument '%s'",
			   argv[optind]);
		fputs(usage, stderr);
		return -EINVAL;
	}
	if (!attach && optind >= argc) {
		log__error("record needs a command to run after '--'");
		fputs(usage, stderr);
		return -EINVAL;
	}
	return 0;
bad_option:
	log__error("unknown option '%s'", argv[optind - 1]);
	fputs(usage, stderr);
	return -EINVAL;
}

/*
 * What record and attach share: the command line, and records go to out,
 * written to output (NULL: not written).
 */
static void trace_options_from(const struct trace_cli *cli, const char *output,
			       struct output_state *out, struct trace_options *opts)
{
	out->path = output;
	out->quiet = cli->quiet;
	opts->mode = cli->mode;
	opts->mode_is_default = cli->mode_is_default;
	opts->overrides = cli->overrides;
	opts->override_count = cli->override_count;
	opts->on_profile = on_profile;
	opts->ctx = out;
}

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

/* The signals that end a trace: khprof handles them instead of dying. */
static void stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGQUIT);
}

static int block_signals(sigset_t *old)
{
	sigset_t set;

	stop_signals(&set);
	if (sigprocmask(SIG_BLOCK, &set, old))
		return -errno;
	return signalfd(-1, &set, SFD_CLOEXEC);
}

struct event_loop {
	int epoll_fd;
	int signal_fd;
	int pid_fd;
};

static int loop__open(struct event_loop *loop, struct tracer *t, pid_t pid, sigset_t *old)
{
	struct epoll_event ev = { .events = EPOLLIN };

	loop->epoll_fd = loop->signal_fd = loop->pid_fd = -1;
	loop->signal_fd = block_signals(old);
	loop->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->signal_fd < 0 || loop->pid_fd < 0 || loop->epoll_fd < 0 || tracer__poll(t, 0) < 0)
		return -errno;
	ev.data.fd = loop->signal_fd;
	epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, loop->signal_fd, &ev);
	ev.data.fd = loop->pid_fd;
	epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, loop->pid_fd, &ev);
	ev.data.fd = tracer__epoll_fd(t);
	epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	return 0;
}

static void loop__close(struct event_loop *loop, const sigset_t *old)
{
	if (loop->epoll_fd >= 0)
		close(loop->epoll_fd);
	if (loop->pid_fd >= 0)
		close(loop->pid_fd);
	if (loop->signal_fd >= 0)
		close(loop->signal_fd);
	sigprocmask(SIG_SETMASK, old, NULL);
}

enum loop_end { LOOP_PROCESS_EXITED, LOOP_SIGNALLED, LOOP_TIMEOUT };

/*
 * Runs until the process exits, a signal arrives (forwarded to the child
 * with forward_to set) or the deadline passes (0: none).
 */
static enum loop_end loop__run(struct event_loop *loop, struct tracer *t, pid_t forward_to,
			       uint64_t deadline_ns)
{
	for (;;) {
		struct epoll_event events[4];
		int timeout = -1, n;

		if (deadline_ns) {
			uint64_t now = tracer__now_ns();

			if (now >= deadline_ns)
				return LOOP_TIMEOUT;
			timeout = (int)((deadline_ns - now + 999999) / 1000000);
		}
		n = epoll_wait(loop->epoll_fd, events, 4, timeout);
		if (n < 0 && errno != EINTR)
			return LOOP_PROCESS_EXITED;
		for (int i = 0; i < n; i++) {
			int fd = events[i].data.fd;

			if (fd == loop->pid_fd) {
				tracer__poll(t, 0);
				return LOOP_PROCESS_EXITED;
			}
			if (fd == loop->signal_fd) {
				struct signalfd_siginfo si;

				if (read(loop->signal_fd, &si, sizeof(si)) != sizeof(si))
					continue;
				if (!forward_to)
					return LOOP_SIGNALLED;
				/* The terminal already sent SIGINT to the whole group. */
				if (si.ssi_signo != SIGINT)
					kill(forward_to, si.ssi_signo);
				continue;
			}
			tracer__poll(t, 0);
		}
	}
}

static int exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return KHPROF_EXIT_FAILURE;
}

static int finish_output(const struct output_state *out, int code)
{
	return out->write_failed && code == 0 ? KHPROF_EXIT_FAILURE : code;
}

/* Child side of record: wait for the tracer, then exec; report exec errors. */
static void run_child(int ready_fd, int error_fd, const char *path, char **argv,
		      const sigset_t *mask)
{
	char go;
	int err;

	sigprocmask(SIG_SETMASK, mask, NULL);
	if (read(ready_fd, &go, 1) != 1)
		_exit(KHPROF_EXIT_FAILURE); /* tracer setup failed; it said why */
	execv(path, argv);
	err = errno;
	if (write(error_fd, &err, sizeof(err)) < 0)
		_exit(KHPROF_EXIT_CANNOT_EXEC);
	_exit(err == ENOENT ? KHPROF_EXIT_NOT_FOUND : KHPROF_EXIT_CANNOT_EXEC);
}

/*
 * One traced run of COMMAND (resolved to path), records to output (NULL:
 * none).  detach_now waits for the kernel to remove the uprobes before
 * returning, so that a following run does not share the CPUs with it.
 * Returns COMMAND's status as record's exit code.
 */
static int record_once(const struct trace_cli *cli, char **cmd_argv, const char *path,
		       const char *output, bool detach_now)
{
	struct output_state out = { 0 };
	struct trace_options opts = { 0 };
	struct event_loop loop = { -1, -1, -1 };
	struct tracer *t = NULL;
	int ready[2] = { -1, -1 }, exec_err[2] = { -1, -1 };
	sigset_t old_mask;
	int status = 0, code, err, child_errno = 0;
	bool reaped = false;
	pid_t pid;

	trace_options_from(cli, output, &out, &opts);
	opts.stop_on_loader = true;
	err = tracer__open(&t, &opts);
	if (err)
		return KHPROF_EXIT_FAILURE;

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
		run_child(ready[0], exec_err[1], path, cmd_argv, &old_mask);
	close(ready[0]);
	close(exec_err[1]);
	ready[0] = exec_err[1] = -1;

	err = tracer__attach(t, pid, path);
	if (!err)
		err = loop__open(&loop, t, pid, &old_mask);
	if (err) {
		close(ready[1]); /* the child exits without running the command */
		ready[1] = -1;
		waitpid(pid, NULL, 0);
		code = KHPROF_EXIT_FAILURE;
		goto out;
	}
	if (write(ready[1], "x", 1) != 1) {
		log__error("cannot start '%s': %s", path, strerror(errno));
		code = KHPROF_EXIT_FAILURE;
		goto out;
	}
	if (read(exec_err[0], &child_errno, sizeof(child_errno)) == sizeof(child_errno)) {
		waitpid(pid, &status, 0);
		log__error("cannot run '%s': %s", path, strerror(child_errno));
		code = exit_code_of(status);
		goto out;
	}

	loop__run(&loop, t, pid, 0);
	tracer__finish(t, 0); /* sessions still open when it exits did not finish */
	if (waitpid(pid, &status, 0) < 0) {
		log__error("cannot wait for '%s': %s", path, strerror(errno));
		code = KHPROF_EXIT_FAILURE;
		goto out;
	}
	reaped = true;
	if (tracer__probe_count(t) == 0)
		log__warn("'%s' and its libraries have no keyhog probes: it ran untraced", path);
	else if (tracer__records_emitted(t) == 0)
		log__note("'%s' reached no keyhog probe: no record written", path);
	code = finish_output(&out, exit_code_of(status));
out:
	loop__close(&loop, &old_mask);
	for (int i = 0; i < 2; i++) {
		if (ready[i] >= 0)
			close(ready[i]);
		if (exec_err[i] >= 0)
			close(exec_err[i]);
	}
	if (reaped && !detach_now)
		tracer__close_in_background(t);
	else
		tracer__close(t);
	return code;
}

/* Where --repeat puts run i: DIR/run-001.json, wider past 999 runs. */
static void repeat_path(const char *dir, unsigned i, char *out, size_t len)
{
	snprintf(out, len, "%s/run-%03u.json", dir, i);
}

/*
 * The run number of a record --repeat wrote, from its file name: 0 for
 * anything else (a second session's run-001.2.json included).
 */
static unsigned run_number(const char *path)
{
	const char *name = strrchr(path, '/');
	unsigned number;
	int end = 0;

	name = name ? name + 1 : path;
	if (sscanf(name, "run-%u.json%n", &number, &end) != 1 || name[end] != '\0')
		return 0;
	return number;
}

/* DIR/run-*.json, sorted by name; 0, or a glob(3) error other than no match. */
static int glob_runs(const char *dir, glob_t *found)
{
	char pattern[PATH_MAX];
	int err;

	snprintf(pattern, sizeof(pattern), "%s/run-*.json", dir);
	err = glob(pattern, 0, NULL, found);
	return err == GLOB_NOMATCH ? 0 : err;
}

/*
 * DIR exists (made here if missing).  A series starts at run 1 in a
 * directory without runs, or with --append after the last run there.
 */
static int prepare_repeat_dir(const char *dir, bool append, unsigned *first)
{
	struct stat st;
	glob_t found = { 0 };
	unsigned last = 0;

	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		log__error("cannot create directory '%s': %s", dir, strerror(errno));
		return -errno;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		log__error("cannot write records to '%s': not a directory (--repeat takes a "
			   "directory for -o)", dir);
		return -ENOTDIR;
	}
	if (glob_runs(dir, &found)) {
		log__error("cannot list the runs in '%s'", dir);
		return -EIO;
	}
	for (size_t i = 0; i < found.gl_pathc; i++) {
		unsigned n = run_number(found.gl_pathv[i]);

		last = n > last ? n : last;
	}
	globfree(&found);
	if (found.gl_pathc && !append) {
		log__error("cannot write records to '%s': it already holds run-*.json (remove "
			   "them, choose another directory, or add to them with --append)", dir);
		return -EEXIST;
	}
	*first = last + 1;
	return 0;
}

/*
 * Waits for the run's khprof child.  Signals for the series come here
 * (blocked, read with sigwaitinfo); SIGINT already reached the child through
 * the terminal's process group, the others are passed on.  *stop is the
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
		if (si.si_signo != SIGINT)
			kill(child, si.si_signo);
	}
}

/* Reads every run in DIR back and prints how much they varied. */
static void print_repeat_spread(const char *dir, const char *command)
{
	struct kh_profile *runs;
	char problem[256], *text;
	glob_t found = { 0 };
	size_t read_ok = 0;

	if (glob_runs(dir, &found) || found.gl_pathc == 0) {
		globfree(&found);
		return;
	}
	runs = calloc(found.gl_pathc, sizeof(*runs));
	for (size_t i = 0; runs && i < found.gl_pathc; i++)
		if (run_number(found.gl_pathv[i]) &&
		    profile__read_file(found.gl_pathv[i], &runs[read_ok], problem,
				       sizeof(problem)) == 0)
			read_ok++;
	globfree(&found);
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

static int record_repeat(const struct trace_cli *cli, char **cmd_argv, const char *path)
{
	unsigned total = cli->warmup + cli->repeat, number = 1;
	char run_path[PATH_MAX];
	sigset_t signals, old_mask;
	int first_code = -1, code = KHPROF_EXIT_OK, stop = 0;

	if (prepare_repeat_dir(cli->output, cli->append, &number))
		return KHPROF_EXIT_BAD_INPUT;
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
			_exit(record_once(cli, cmd_argv, path, warmup ? NULL : run_path, true));
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
	char path[PATH_MAX];
	int err;

	if (wants_help(argc, argv)) {
		fputs(record_usage, stdout);
		return KHPROF_EXIT_OK;
	}
	if (parse_cli(argc, argv, false, &cli))
		return KHPROF_EXIT_USAGE;
	err = resolve_command(argv[cli.first_arg], path, sizeof(path));
	if (err) {
		log__error("cannot run '%s': %s", argv[cli.first_arg],
			   err == -ENOENT ? "command not found" : strerror(-err));
		return err == -ENOENT ? KHPROF_EXIT_NOT_FOUND : KHPROF_EXIT_CANNOT_EXEC;
	}
	if (cli.repeat) {
		cli.quiet = true; /* N reports would bury the spread table */
		return record_repeat(&cli, argv + cli.first_arg, path);
	}
	return record_once(&cli, argv + cli.first_arg, path, cli.output, false);
}

int cmd_attach(int argc, char **argv)
{
	struct output_state out = { 0 };
	struct trace_options opts = { 0 };
	struct event_loop loop = { -1, -1, -1 };
	struct tracer *t = NULL;
	struct trace_cli cli;
	char exe[64];
	sigset_t old_mask;
	uint64_t deadline = 0;
	enum loop_end end = LOOP_SIGNALLED;
	int code = KHPROF_EXIT_FAILURE, err;

	if (wants_help(argc, argv)) {
		fputs(attach_usage, stdout);
		return KHPROF_EXIT_OK;
	}
	if (parse_cli(argc, argv, true, &cli))
		return KHPROF_EXIT_USAGE;
	if (kill(cli.pid, 0) != 0 && errno == ESRCH) {
		log__error("cannot attach to PID %d: no such process", cli.pid);
		return KHPROF_EXIT_FAILURE;
	}
	snprintf(exe, sizeof(exe), "/proc/%d/exe", cli.pid);

	trace_options_from(&cli, cli.output, &out, &opts);
	if (tracer__open(&t, &opts))
		return KHPROF_EXIT_FAILURE;
	sigprocmask(SIG_SETMASK, NULL, &old_mask);
	err = tracer__attach(t, cli.pid, exe);
	if (!err)
		err = tracer__attach_mapped(t);
	if (err == -ESRCH)
		log__error("cannot attach to PID %d: no such process", cli.pid);
	if (!err)
		err = loop__open(&loop, t, cli.pid, &old_mask);
	if (err)
		goto out;
	if (tracer__probe_count(t) == 0)
		log__warn("PID %d has no keyhog probes in its executable or libraries; "
			  "waiting for one to be loaded", cli.pid);
	else
		log__note("attached to PID %d (%zu probe sites); stop with Ctrl-C", cli.pid,
			  tracer__probe_count(t));
	if (cli.duration_s > 0)
		deadline = tracer__now_ns() + (uint64_t)(cli.duration_s * 1e9);
	end = loop__run(&loop, t, 0, deadline);
	tracer__finish(t, end == LOOP_PROCESS_EXITED ? 1 : -1);
	if (tracer__records_emitted(t) == 0)
		log__note("no keyhog activity seen in PID %d: no record written", cli.pid);
	code = finish_output(&out, KHPROF_EXIT_OK);
out:
	loop__close(&loop, &old_mask);
	/* A live process keeps paying for probes until they are detached. */
	if (end == LOOP_PROCESS_EXITED)
		tracer__close_in_background(t);
	else
		tracer__close(t);
	return code;
}
