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
 *
 * --container WHICH: PATH is the path inside that container, opened
 * through the root of a process in it (capture/ns), and only the
 * container's processes are traced (a file of an image's shared layer is
 * one inode for every container of that image).
 *
 * --all: the watcher sees every execve on the host instead of one file's
 * start (bpf/watch.bpf.h), stopped the same way; a process whose new
 * program, or a library it names, carries keyhog probes is traced, any
 * other is resumed at once and its file remembered in the BPF side, so
 * that the file's later execs are not stopped (host_scan.c).  The same
 * pending list, the same resume: one stop for every way a process is found.
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
#include "host_scan.h"
#include "live_metrics.h"
#include "log.h"
#include "ns.h"
#include "process_trace.h"
#include "procfs.h"
#include "trace.h"
#include "usdt_notes.h"
#include "utf8.h"

/* Pids the watcher reported, attached once its ring buffer is drained. */
#define PENDING_MAX 256

/* A process the watcher stopped, and the file it execs (--all). */
struct pending {
	pid_t pid;
	bool has_file;
	struct tracer_file_key file;
};

/* --all with -o and no --keep: the records of a long watch stay bounded. */
#define KEEP_DEFAULT_ALL 1000

struct exe_attach {
	const struct exe_attach_options *o;
	dev_t dev;
	ino_t ino;
	char real[PATH_MAX];      /* PATH as it is named: khprof's path, or the container's */
	char open_path[PATH_MAX]; /* where khprof opens it (through the container's root) */
	char cgroup[NS_CGROUP_MAX]; /* --container: its cgroup; "" any */
	char what[PATH_MAX + 64]; /* what the watch is of, for messages */
	struct host_scan *scan;   /* --all */
	int scope_fd;             /* --container: its cgroup, open for the watcher; -1 */
	bool scoped;              /* the kernel names only the container's processes */
	size_t scanned;           /* processes looked at when the watch began */
	struct retention retain;  /* --keep */
	struct tracer *watcher;
	struct process_set set; /* the traced processes; set.epoll_fd is the loop's */
	int signal_fd;
	struct pending pending[PENDING_MAX];
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

static void on_start(pid_t pid, const struct tracer_file_key *file, void *ctx)
{
	struct exe_attach *ea = ctx;

	if (ea->pending_count < PENDING_MAX) {
		ea->pending[ea->pending_count++] =
			(struct pending){ pid, file != NULL, file ? *file : (struct tracer_file_key){ 0 } };
		return;
	}
	log__warn("PID %d started %s while %d others waited: not traced", pid, ea->what,
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
	p->out.quiet = p->out.quiet_notes = ea->o->quiet;
	p->out.metrics = ea->set.metrics;
	p->out.retain = ea->retain.keep ? &ea->retain : NULL;
	opts.on_profile = output__on_profile;
	opts.ctx = &p->out;
	opts.calibration = ea->calibrated ? &ea->calibration : NULL;
	/*
	 * Every process is running when its tracer attaches (a new one has
	 * reached PATH's first code): its execve ends the records, and a
	 * session it is already in is joined, as under attach -p.
	 */
	opts.joins_running_process = true;
	/*
	 * --all stops a process at its execve, before its loader maps its
	 * libraries: their probes are attached at the loader's stops, as
	 * under record, not after their code ran (--exe stops it at the
	 * program's entry, its libraries mapped already).
	 */
	opts.stop_on_loader = ea->o->all && ea->o->from_start;
	if (tracer__open(&p->tracer, &opts) != 0) {
		free(p);
		return NULL;
	}
	return p;
}

/*
 * --container: whether pid is in the container's cgroup (or one below it):
 * the kernel said so already where it keeps the watch to it; else by the
 * path /proc shows.
 */
static bool in_container(const struct exe_attach *ea, pid_t pid)
{
	struct ns_identity id;
	size_t len = strlen(ea->cgroup);

	if (!ea->cgroup[0] || ea->scoped)
		return true;
	if (ns__identity(pid, &id) != 0)
		return false;
	return !strncmp(id.cgroup, ea->cgroup, len) &&
	       (id.cgroup[len] == '\0' || id.cgroup[len] == '/' || !strcmp(ea->cgroup, "/"));
}

/*
 * Waits for a traced process's tracer to see the execve the watcher
 * reported (--all): its event comes from the same tracepoint, within
 * microseconds, while the process waits stopped.  Bounded, for a ring
 * that lost it.
 */
#define EXEC_EVENT_WAIT_MS 100

static bool saw_exec(struct process_trace *p)
{
	uint64_t until = tracer__now_ns() + EXEC_EVENT_WAIT_MS * 1000000ull;

	tracer__poll(p->tracer, 0);
	while (!tracer__execed(p->tracer) && tracer__now_ns() < until)
		tracer__poll(p->tracer, 10);
	return tracer__execed(p->tracer);
}

static void process_start(struct exe_attach *ea, pid_t pid)
{
	uint64_t begin = tracer__now_ns();
	struct process_trace *p;
	int err;

	if (pid == getpid())
		return;
	p = process_set__find(&ea->set, pid);
	/*
	 * --all: a traced process ran another instrumented program.  Its
	 * tracer ended its records at the execve (docs/PROBES.md); the new
	 * program gets a tracer of its own.
	 */
	if (p && ea->o->all && saw_exec(p))
		process_set__end(&ea->set, p, true);
	else if (p)
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
			log__warn("PID %d runs %s but cannot be traced; going on without it", pid,
				  ea->what);
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

struct uses_query {
	const struct exe_attach *ea;
	struct ns_view view;
};

/* A mapping of the file: the same inode, opened where the process's root has it. */
static int maps_file(const struct procfs_mapping *m, void *ctx)
{
	const struct uses_query *q = ctx;
	char path[PATH_MAX];
	struct stat st;

	return m->perms[2] == 'x' && m->inode && m->path[0] == '/' &&
	       ns__shown_path(&q->view, m->path, path, sizeof(path)) == 0 &&
	       stat(path, &st) == 0 && st.st_dev == q->ea->dev && st.st_ino == q->ea->ino;
}

/* Whether pid runs PATH or has it mapped (a library). */
static bool process_uses(const struct exe_attach *ea, pid_t pid)
{
	struct uses_query q = { .ea = ea };
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (stat(path, &st) == 0 && st.st_dev == ea->dev && st.st_ino == ea->ino)
		return true;
	return ns__view(pid, &q.view) == 0 &&
	       procfs__for_each_mapping(pid, maps_file, &q) > 0;
}

/* A process running when khprof starts: traced when it uses PATH (--all: any instrumented file). */
static int consider_running(pid_t pid, void *ctx)
{
	struct exe_attach *ea = ctx;

	if (pid == getpid())
		return 0;
	ea->scanned++;
	if (ea->o->all ? host_scan__running(ea->scan, pid) : process_uses(ea, pid))
		process_start(ea, pid);
	return 0;
}

/*
 * The processes already running when khprof starts: every one, or with
 * --container those of its cgroup tree (read from the cgroups themselves,
 * which name their processes whatever cgroup namespace khprof is in).
 */
static void scan_running(struct exe_attach *ea)
{
	uint64_t begin = tracer__now_ns();
	DIR *proc;
	struct dirent *d;

	if (ea->cgroup[0] && ns__for_each_member(ea->cgroup, consider_running, ea) >= 0)
		goto done;
	if (!(proc = opendir("/proc")))
		return;
	while ((d = readdir(proc))) {
		char *end;
		long pid = strtol(d->d_name, &end, 10);

		if (!*end && pid > 0 && in_container(ea, (pid_t)pid))
			consider_running((pid_t)pid, ea);
	}
	closedir(proc);
done:
	if (ea->o->all)
		log__debug("--all: %zu processes and %zu distinct files looked at in %.1f ms",
			   ea->scanned, host_scan__files_read(ea->scan),
			   (double)(tracer__now_ns() - begin) / 1e6);
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
	return KHPROF_EXIT_USAGE;
}

/* --container WHICH: a process in it and its cgroup; 0, or the exit code. */
static int resolve_container(struct exe_attach *ea, pid_t *pid)
{
	int err = ns__container_process(ea->o->container, pid, ea->cgroup);

	if (err == -EINVAL) {
		usage_error("attach", "bad --container '%s': expected a host PID, a container id "
			    "or a cgroup path", ea->o->container);
		return KHPROF_EXIT_USAGE;
	}
	if (err) {
		log__error("cannot find container '%s': no such process, container id or cgroup",
			   ea->o->container);
		return KHPROF_EXIT_FAILURE;
	}
	return 0;
}

/*
 * --exe PATH [--container WHICH]: the file to watch, as khprof opens it,
 * and what it is called in messages.  0, or the exit code.
 */
static int resolve_target(struct exe_attach *ea)
{
	const struct exe_attach_options *o = ea->o;
	struct ns_view view;
	struct stat st;
	pid_t pid;
	int err;

	if (!o->container) {
		if (stat(o->path, &st) != 0 || !realpath(o->path, ea->real)) {
			log__error("cannot watch '%s': %s", o->path, strerror(errno));
			return KHPROF_EXIT_USAGE;
		}
		snprintf(ea->open_path, sizeof(ea->open_path), "%s", ea->real);
		snprintf(ea->what, sizeof(ea->what), "'%s'", ea->real);
	} else {
		err = resolve_container(ea, &pid);
		if (err)
			return err;
		if (!pid) {
			log__error("cannot watch '%s' in container '%s': no process in it, whose root "
				   "would give the path", o->path, o->container);
			return KHPROF_EXIT_FAILURE;
		}
		/* Its own path: whatever its root has there, not what khprof's has. */
		err = ns__view(pid, &view);
		if (!err)
			err = ns__inner_path(&view, o->path, ea->open_path, sizeof(ea->open_path));
		if (!err && stat(ea->open_path, &st) != 0)
			err = -errno;
		if (err) {
			log__error("cannot watch '%s' in container '%s' (PID %d's root): %s", o->path,
				   o->container, pid, strerror(-err));
			return err == -ENOENT ? KHPROF_EXIT_USAGE : KHPROF_EXIT_FAILURE;
		}
		snprintf(ea->real, sizeof(ea->real), "%s", o->path);
		snprintf(ea->what, sizeof(ea->what), "'%s' in container '%s'", o->path,
			 o->container);
	}
	ea->dev = st.st_dev;
	ea->ino = st.st_ino;
	return 0;
}

/*
 * --container: the watcher stops and names only the processes below the
 * container's cgroup, in the kernel; without a cgroup2 file system the
 * others are stopped too, and let go here (in_container).
 */
static void scope_watcher(struct exe_attach *ea)
{
	int err;

	if (!ea->cgroup[0])
		return;
	ea->scope_fd = ns__cgroup_open(ea->cgroup);
	err = ea->scope_fd < 0 ? ea->scope_fd : tracer__watch_scope(ea->watcher, ea->scope_fd);
	ea->scoped = !err;
	if (err)
		log__note("cannot keep the watch to cgroup '%s' in the kernel (%s): the host's other "
			  "processes are stopped at %s too, for well under a millisecond",
			  ea->cgroup, strerror(-err), ea->o->all ? "their execve" : "its start");
}

/* 0, or khprof's exit code. */
static int setup(struct exe_attach *ea, sigset_t *old_mask)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct trace_options watch_opts = ea->o->trace;
	sigset_t stop;
	int err;

	if (ea->o->all) {
		pid_t pid;

		ea->scan = host_scan__new();
		if (!ea->scan)
			return KHPROF_EXIT_FAILURE;
		err = ea->o->container ? resolve_container(ea, &pid) : 0;
		if (err)
			return err;
		snprintf(ea->what, sizeof(ea->what), "a program with keyhog probes%s%s%s",
			 ea->o->container ? " in container '" : "",
			 ea->o->container ? ea->o->container : "", ea->o->container ? "'" : "");
	} else {
		err = resolve_target(ea);
		if (!err)
			err = check_file(ea->open_path);
		if (err)
			return err;
	}
	watch_opts.on_profile = NULL;
	/* Each process's own tracer samples it: the watcher records nothing. */
	watch_opts.sample_hz = 0;
	/* The watcher's program stops a process at PATH's start (--all: its execve) for us. */
	watch_opts.stop_on_loader = ea->o->from_start;
	watch_opts.watch_execs = ea->o->all;
	err = tracer__open(&ea->watcher, &watch_opts);
	if (!err)
		err = ea->o->all ? tracer__watch_execs(ea->watcher, on_start, ea)
				 : tracer__watch_starts(ea->watcher, ea->open_path, on_start, ea);
	if (!err)
		scope_watcher(ea);
	if (!err)
		err = tracer__poll(ea->watcher, 0) < 0 ? -EIO : 0;
	if (err)
		return KHPROF_EXIT_FAILURE;
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
		return KHPROF_EXIT_FAILURE;
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
			const struct pending *w = &ea->pending[i];
			uint64_t looked = tracer__now_ns();
			int probes = w->has_file ? host_scan__execed(ea->scan, w->pid) : 1;

			if (w->has_file)
				log__debug("PID %d's program looked at in %.0f us: %s", w->pid,
					   (double)(tracer__now_ns() - looked) / 1e3,
					   probes > 0 ? "probes" : probes == 0 ? "none" : "gone");

			if (probes == 0)
				/* Plain: its file's next execs are not stopped at all. */
				tracer__watch_plain(ea->watcher, &w->file);
			else if (probes > 0 && in_container(ea, w->pid))
				process_start(ea, w->pid);
			/* Stopped at its start whether or not it could be traced. */
			if (ea->o->from_start)
				kill(w->pid, SIGCONT);
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
	char pattern[PATH_MAX], what[PATH_MAX + 96];

	if (ea->o->all)
		snprintf(what, sizeof(what), "every process of %s for keyhog probes",
			 ea->o->container ? "the container" : "the host");
	else
		snprintf(what, sizeof(what), "%s for processes", ea->what);
	if (ea->o->output) {
		path_with_tag(ea->o->output, ".PID", pattern, sizeof(pattern));
		log__note("watching %s, their records to '%s'; stop with Ctrl-C", what, pattern);
	} else {
		log__note("watching %s; %sno record is written without -o (-o PATH writes "
			  "PATH.PID.json per process); stop with Ctrl-C", what,
			  ea->o->quiet ? "" : "their reports go to stderr, ");
	}
}

int attach_exe(const struct exe_attach_options *o)
{
	struct exe_attach ea = { .o = o, .set.epoll_fd = -1, .signal_fd = -1, .scope_fd = -1 };
	sigset_t old_mask;
	uint64_t deadline = 0;
	int err;

	ea.retain.keep = o->keep ? o->keep : o->all && o->output ? KEEP_DEFAULT_ALL : 0;
	if (o->serve) {
		err = live_metrics__open(&ea.set.metrics, o->serve);
		live_metrics__by_container(ea.set.metrics);
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
	if (ea.scope_fd >= 0)
		close(ea.scope_fd);
	live_metrics__close(ea.set.metrics);
	if (ea.set.epoll_fd >= 0)
		close(ea.set.epoll_fd);
	if (ea.signal_fd >= 0)
		close(ea.signal_fd);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	host_scan__free(ea.scan);
	if (ea.retain.removed)
		log__note("removed %zu older record%s to keep the newest %zu (--keep)",
			  ea.retain.removed, ea.retain.removed == 1 ? "" : "s", ea.retain.keep);
	retention__free(&ea.retain);
	if (err)
		return err;
	if (ea.traced_total == 0)
		log__note("no process ran %s: no record written", ea.what);
	return ea.set.write_failed ? KHPROF_EXIT_FAILURE : KHPROF_EXIT_OK;
}
