// SPDX-License-Identifier: MIT
/*
 * khprof attach --exe PATH: every process running the executable PATH, or
 * with the library PATH loaded, those running when khprof starts and those
 * that start later, each traced as under `attach -p` by a tracer of its own
 * (the BPF side keeps one process's session state per object).  A watcher
 * links PATH's first code for every process; its hits name new processes.
 * With from_start (the default; --no-stop clears it) the watcher's BPF
 * program also stops each one there (SIGSTOP) until its tracer is attached
 * (SIGCONT), as record does at dlopen, so that a scanner run of a few
 * milliseconds is recorded whole; otherwise a new process runs on for the
 * few milliseconds that attaching takes (8 ms measured here, the tracer
 * already loaded).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach_exe.h"
#include "cmd_trace.h"
#include "commands.h"
#include "exit_codes.h"
#include "live_metrics.h"
#include "log.h"
#include "process_trace.h"
#include "procfs.h"
#include "trace.h"
#include "usdt_notes.h"
#include "utf8.h"

/* Pids the watcher reported, attached once its ring buffer is drained. */
#define PENDING_MAX 256

struct exe_attach {
	const struct exe_attach_options *o;
	dev_t dev;
	ino_t ino;
	char real[PATH_MAX];
	struct tracer *watcher;
	struct process_set set; /* the traced processes; set.epoll_fd is the loop's */
	int signal_fd;
	pid_t pending[PENDING_MAX];
	size_t pending_count;
	size_t traced_total;
	bool calibrated;
	struct tracer_calibration calibration; /* the first tracer's, for all */
	/*
	 * A tracer opened and loaded ahead of need: loading takes 20-70 ms,
	 * attaching a few, so a new process is attached that much sooner.
	 */
	struct process_trace *spare;
};

/* epoll tags: which descriptor of what is ready. */
enum tag_kind { TAG_SIGNAL, TAG_WATCHER, TAG_METRICS, TAG_RING, TAG_EXIT };

static uint64_t tag(enum tag_kind kind, struct process_trace *p)
{
	return (uint64_t)(uintptr_t)p | kind; /* malloc'd: the low 3 bits are free */
}

static void on_start(pid_t pid, void *ctx)
{
	struct exe_attach *ea = ctx;

	if (ea->pending_count < PENDING_MAX) {
		ea->pending[ea->pending_count++] = pid;
		return;
	}
	log__warn("PID %d started '%s' while %d others waited: not traced", pid, ea->o->path,
		  PENDING_MAX);
	if (ea->o->from_start)
		kill(pid, SIGCONT);
}

/* A process record with its tracer opened and loaded, not yet attached. */
static struct process_trace *process_open(struct exe_attach *ea)
{
	struct trace_options opts = ea->o->trace;
	struct process_trace *p = process_trace__new();

	if (!p)
		return NULL;
	p->out.quiet = ea->o->quiet;
	p->out.metrics = ea->set.metrics;
	opts.on_profile = output__on_profile;
	opts.ctx = &p->out;
	opts.calibration = ea->calibrated ? &ea->calibration : NULL;
	/*
	 * Every process is running when its tracer attaches (a new one has
	 * reached PATH's first code): its execve ends the records, and a
	 * session it is already in is joined, as under attach -p.
	 */
	opts.joins_running_process = true;
	if (tracer__open(&p->tracer, &opts) != 0) {
		free(p);
		return NULL;
	}
	return p;
}

static void process_start(struct exe_attach *ea, pid_t pid)
{
	uint64_t begin = tracer__now_ns();
	struct process_trace *p;
	int err;

	if (pid == getpid() || process_set__find(&ea->set, pid))
		return;
	p = ea->spare ? ea->spare : process_open(ea);
	ea->spare = NULL;
	if (!p)
		return;
	err = process_set__attach(&ea->set, p, pid, ea->o->output, tag(TAG_RING, p),
				  tag(TAG_EXIT, p));
	if (err == -ECHILD) { /* gone already */
		ea->spare = p;
		return;
	}
	if (err) {
		if (err != -ESRCH)
			log__warn("PID %d runs '%s' but cannot be traced; going on without it", pid,
				  ea->o->path);
		process_trace__discard(p);
		return;
	}
	if (!ea->calibrated) {
		tracer__calibration(p->tracer, &ea->calibration);
		ea->calibrated = true;
	}
	ea->traced_total++;
	log__note("attached to PID %d (%zu probe sites)", pid, tracer__probe_count(p->tracer));
	log__debug("attaching to PID %d took %.1f ms", pid, (double)(tracer__now_ns() - begin) / 1e6);
}

/* Has a loaded tracer ready for the next process (once calibrated). */
static void prepare_spare(struct exe_attach *ea)
{
	if (!ea->spare && ea->calibrated)
		ea->spare = process_open(ea);
}

static int maps_exe(const struct procfs_mapping *m, void *ctx)
{
	const struct exe_attach *ea = ctx;

	return m->inode == (uint64_t)ea->ino && strcmp(m->path, ea->real) == 0;
}

/* Whether pid runs PATH or has it mapped (a library). */
static bool process_uses(const struct exe_attach *ea, pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (stat(path, &st) == 0 && st.st_dev == ea->dev && st.st_ino == ea->ino)
		return true;
	return procfs__for_each_mapping(pid, maps_exe, (void *)ea) > 0;
}

/* The processes already running PATH when khprof starts. */
static void scan_running(struct exe_attach *ea)
{
	DIR *proc = opendir("/proc");
	struct dirent *d;

	if (!proc)
		return;
	while ((d = readdir(proc))) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (*end || pid <= 0 || pid == getpid())
			continue;
		if (process_uses(ea, (pid_t)pid))
			process_start(ea, (pid_t)pid);
	}
	closedir(proc);
}

/*
 * PATH is read as `khprof probes` and `record` read a file, before a
 * watcher links its first code: a file that is not ELF, malformed or of
 * another architecture is bad input (exit 2), said as `probes` says it.
 */
static int check_file(const char *path)
{
	struct usdt_note_list notes;
	char file[512];
	int err = usdt_notes__read(path, &notes);

	if (!err) {
		usdt_notes__free(&notes);
		return 0;
	}
	utf8__escape(path, file, sizeof(file));
	if (err == -ENOEXEC)
		log__error("cannot watch '%s': not an ELF file", file);
	else if (err == -EINVAL || err == -ENOTSUP)
		log__error("cannot watch '%s': %s ELF file: %s", file,
			   err == -EINVAL ? "malformed" : "unsupported", notes.problem);
	else
		log__error("cannot watch '%s': %s", file, strerror(-err));
	return -EINVAL;
}

static int setup(struct exe_attach *ea, sigset_t *old_mask)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct trace_options watch_opts = ea->o->trace;
	sigset_t stop;
	struct stat st;
	int err;

	if (stat(ea->o->path, &st) != 0 || !realpath(ea->o->path, ea->real)) {
		log__error("cannot watch '%s': %s", ea->o->path, strerror(errno));
		return -EINVAL;
	}
	if (check_file(ea->real))
		return -EINVAL;
	ea->dev = st.st_dev;
	ea->ino = st.st_ino;
	watch_opts.on_profile = NULL;
	/* Each process's own tracer samples it: the watcher records nothing. */
	watch_opts.sample_hz = 0;
	/* The watcher's program stops a process at PATH's start for us. */
	watch_opts.stop_on_loader = ea->o->from_start;
	err = tracer__open(&ea->watcher, &watch_opts);
	if (!err)
		err = tracer__watch_starts(ea->watcher, ea->real, on_start, ea);
	if (!err)
		err = tracer__poll(ea->watcher, 0) < 0 ? -EIO : 0;
	if (err)
		return err;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGQUIT);
	sigprocmask(SIG_BLOCK, &stop, old_mask);
	ea->signal_fd = signalfd(-1, &stop, SFD_CLOEXEC);
	ea->set.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (ea->signal_fd < 0 || ea->set.epoll_fd < 0) {
		log__error("cannot wait for events: %s", strerror(errno));
		return -errno;
	}
	ev.data.u64 = tag(TAG_SIGNAL, NULL);
	epoll_ctl(ea->set.epoll_fd, EPOLL_CTL_ADD, ea->signal_fd, &ev);
	ev.data.u64 = tag(TAG_WATCHER, NULL);
	epoll_ctl(ea->set.epoll_fd, EPOLL_CTL_ADD, tracer__epoll_fd(ea->watcher), &ev);
	if (ea->set.metrics) {
		ev.data.u64 = tag(TAG_METRICS, NULL);
		epoll_ctl(ea->set.epoll_fd, EPOLL_CTL_ADD, live_metrics__fd(ea->set.metrics), &ev);
	}
	return 0;
}

/* --interval: takes the processes' samples due at now; when the next is due (0: none). */
static uint64_t sample_due(struct exe_attach *ea, uint64_t now)
{
	uint64_t wake = 0;

	for (struct process_trace *p = ea->set.list; p; p = p->next)
		wake = tracer__sample_due(p->tracer, now, wake);
	return wake;
}

/* Runs until a signal or the deadline (0: none). */
static void run(struct exe_attach *ea, uint64_t deadline_ns)
{
	for (;;) {
		struct epoll_event events[16];
		uint64_t now = tracer__now_ns(), wake = sample_due(ea, now);
		int n;

		if (deadline_ns && now >= deadline_ns)
			return;
		n = epoll_wait(ea->set.epoll_fd, events, 16, tracer__wait_ms(now, wake, deadline_ns));
		if (n < 0 && errno != EINTR)
			return;
		for (int i = 0; i < n; i++) {
			enum tag_kind kind = (enum tag_kind)(events[i].data.u64 & 7);
			struct process_trace *p =
				(struct process_trace *)(uintptr_t)(events[i].data.u64 & ~7ull);

			if (kind == TAG_SIGNAL) {
				struct signalfd_siginfo si;

				/* Taken, so that unblocking it later does not kill khprof. */
				if (read(ea->signal_fd, &si, sizeof(si)) < 0)
					log__debug("cannot read the signal: %s", strerror(errno));
				return;
			}
			if (kind == TAG_WATCHER)
				tracer__poll(ea->watcher, 0);
			else if (kind == TAG_METRICS)
				live_metrics__service(ea->set.metrics);
			else if (kind == TAG_RING)
				tracer__poll(p->tracer, 0);
			else if (kind == TAG_EXIT) {
				process_set__end(&ea->set, p, true);
				/* Later events of this batch may name p: take them again. */
				break;
			}
		}
		for (size_t i = 0; i < ea->pending_count; i++) {
			process_start(ea, ea->pending[i]);
			/* Stopped at its start whether or not it could be traced. */
			if (ea->o->from_start)
				kill(ea->pending[i], SIGCONT);
		}
		ea->pending_count = 0;
		prepare_spare(ea);
	}
}

/*
 * Where the records go, since without -o there are none (a watch runs as
 * a service, often in /, and would litter its working directory).
 */
static void announce(const struct exe_attach *ea)
{
	char pattern[PATH_MAX];

	if (ea->o->output) {
		path_with_tag(ea->o->output, ".PID", pattern, sizeof(pattern));
		log__note("watching '%s' for processes, their records to '%s'; stop with Ctrl-C",
			  ea->real, pattern);
	} else {
		log__note("watching '%s' for processes; %sno record is written without -o (-o "
			  "PATH writes PATH.PID.json per process); stop with Ctrl-C", ea->real,
			  ea->o->quiet ? "" : "their reports go to stderr, ");
	}
}

int attach_exe(const struct exe_attach_options *o)
{
	struct exe_attach ea = { .o = o, .set.epoll_fd = -1, .signal_fd = -1 };
	sigset_t old_mask;
	uint64_t deadline = 0;
	int err;

	if (o->serve) {
		err = live_metrics__open(&ea.set.metrics, o->serve);
		if (err)
			return err == -EINVAL ? KHPROF_EXIT_USAGE : KHPROF_EXIT_FAILURE;
	}
	sigprocmask(SIG_SETMASK, NULL, &old_mask);
	err = setup(&ea, &old_mask);
	if (!err) {
		announce(&ea);
		scan_running(&ea);
		prepare_spare(&ea);
		if (o->duration_s > 0)
			deadline = tracer__now_ns() + (uint64_t)(o->duration_s * 1e9);
		run(&ea, deadline);
	}
	while (ea.set.list)
		process_set__end(&ea.set, ea.set.list, false);
	if (ea.spare)
		process_trace__discard(ea.spare);
	tracer__close(ea.watcher);
	live_metrics__close(ea.set.metrics);
	if (ea.set.epoll_fd >= 0)
		close(ea.set.epoll_fd);
	if (ea.signal_fd >= 0)
		close(ea.signal_fd);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	if (err)
		return err == -EINVAL ? KHPROF_EXIT_USAGE : KHPROF_EXIT_FAILURE;
	if (ea.traced_total == 0)
		log__note("no process ran '%s': no record written", ea.real);
	return ea.set.write_failed ? KHPROF_EXIT_FAILURE : KHPROF_EXIT_OK;
}
