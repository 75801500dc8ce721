// SPDX-License-Identifier: MIT
/*
 * Attaching: the keyhog notes of each file the process maps -> one argument
 * spec per wanted site -> one uprobe-multi link per file (compat.c), plus
 * the dynamic loader's hook so that libraries loaded later are attached.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "calibrate.h"
#include "compat.h"
#include "kfeatures.h"
#include "khprof.skel.h"
#include "latency.h"
#include "fileio.h"
#include "log.h"
#include "sampler.h"
#include "tracer_impl.h"
#include "usdt_notes.h"
#include "usdt_spec.h"

#define PROVIDER "keyhog"

static bool seen_before(struct tracer *t, dev_t dev, ino_t ino)
{
	struct seen_object *grown;

	for (size_t i = 0; i < t->seen_count; i++)
		if (t->seen[i].dev == dev && t->seen[i].ino == ino)
			return true;
	grown = realloc(t->seen, (t->seen_count + 1) * sizeof(*grown));
	if (grown) {
		t->seen = grown;
		t->seen[t->seen_count++] = (struct seen_object){ dev, ino };
	}
	return false;
}

#define MODE_BIT(m) (1u << (m))
#define ALL_MODES (MODE_BIT(KH_MODE_SPAN) | MODE_BIT(KH_MODE_PAIR) | MODE_BIT(KH_MODE_BATCH))

/* Which probes each mode attaches (docs/PROBES.md). */
static const struct {
	const char *name;
	enum kh_probe_kind kind;
	unsigned int modes;
} probe_kinds[] = {
	{ "span", KH_PROBE_SPAN, MODE_BIT(KH_MODE_SPAN) },
	{ "span_enter", KH_PROBE_SPAN_ENTER, MODE_BIT(KH_MODE_PAIR) },
	{ "span_exit", KH_PROBE_SPAN_EXIT, MODE_BIT(KH_MODE_PAIR) },
	{ "batch", KH_PROBE_BATCH, MODE_BIT(KH_MODE_BATCH) },
	{ "batch_register", KH_PROBE_BATCH_REGISTER, MODE_BIT(KH_MODE_BATCH) },
	{ "input_bytes", KH_PROBE_INPUT_BYTES, ALL_MODES },
	{ "input_units", KH_PROBE_INPUT_UNITS, ALL_MODES },
	{ "session_start", KH_PROBE_SESSION_START, ALL_MODES },
	{ "identity", KH_PROBE_IDENTITY, ALL_MODES },
	{ "transition", KH_PROBE_TRANSITION, ALL_MODES },
	{ "session_finish", KH_PROBE_SESSION_FINISH, ALL_MODES },
	/* Probe ABI 4: attached only for its semaphore (wanted_kind). */
	{ "clock_monotonic", KH_PROBE_CLOCK_MONOTONIC, MODE_BIT(KH_MODE_BATCH) },
};

unsigned int tracer__probe_modes(const char *provider, const char *name)
{
	if (strcmp(provider, PROVIDER) != 0)
		return 0;
	for (size_t i = 0; i < sizeof(probe_kinds) / sizeof(probe_kinds[0]); i++)
		if (strcmp(name, probe_kinds[i].name) == 0)
			return probe_kinds[i].modes;
	return 0;
}

/* The probes that carry spans: all that calibration needs of khprof itself. */
static bool is_span_kind(enum kh_probe_kind kind)
{
	return kind == KH_PROBE_SPAN || kind == KH_PROBE_SPAN_ENTER || kind == KH_PROBE_SPAN_EXIT ||
	       kind == KH_PROBE_BATCH || kind == KH_PROBE_BATCH_REGISTER ||
	       kind == KH_PROBE_CLOCK_MONOTONIC;
}

static enum kh_probe_kind wanted_kind(const struct tracer *t, const struct usdt_note *note)
{
	if (strcmp(note->provider, PROVIDER) != 0)
		return 0;
	/* Its semaphore asks the program for CLOCK_MONOTONIC instead of the TSC. */
	if (!t->monotonic_clock && strcmp(note->name, "clock_monotonic") == 0)
		return 0;
	for (size_t i = 0; i < sizeof(probe_kinds) / sizeof(probe_kinds[0]); i++)
		if (strcmp(note->name, probe_kinds[i].name) == 0)
			/* The sampler finds each thread's span stack through batch_register. */
			return (probe_kinds[i].modes & MODE_BIT(t->opts.mode) ||
				(probe_kinds[i].kind == KH_PROBE_BATCH_REGISTER && t->opts.sample_hz)) &&
			       (!t->spans_only || is_span_kind(probe_kinds[i].kind))
				? probe_kinds[i].kind : 0;
	return 0;
}

/* Keeps a link (or closes it on failure) until tracer__close. */
/* Appends fd to *fds (closed when memory runs out); passes a negative errno on. */
static int append_fd(int **fds, size_t *count, int fd)
{
	int *grown;

	if (fd < 0)
		return fd;
	grown = realloc(*fds, (*count + 1) * sizeof(*grown));
	if (!grown) {
		close(fd);
		return -ENOMEM;
	}
	*fds = grown;
	grown[(*count)++] = fd;
	return 0;
}

static int keep_link(struct tracer *t, int fd)
{
	return append_fd(&t->link_fds, &t->link_fd_count, fd);
}

static void *copy_of(const void *p, size_t n)
{
	void *q = malloc(n ? n : 1);

	if (q && n)
		memcpy(q, p, n);
	return q;
}

/* Keeps a link's arguments for attach__protect_child; without memory, that child is warned of. */
static void keep_site_set(struct tracer *t, int prog_fd, const char *path, const __u64 *offsets,
			  const __u64 *ref_ctr_offsets, const __u64 *cookies, __u32 count)
{
	struct site_set *grown = realloc(t->site_sets, (t->site_set_count + 1) * sizeof(*grown));
	struct site_set *s;

	if (!grown)
		return;
	t->site_sets = grown;
	s = &grown[t->site_set_count];
	s->prog_fd = prog_fd;
	s->count = count;
	s->path = strdup(path);
	s->offsets = copy_of(offsets, count * sizeof(__u64));
	s->ref_ctr_offsets = copy_of(ref_ctr_offsets, count * sizeof(__u64));
	s->cookies = copy_of(cookies, count * sizeof(__u64));
	if (!s->path || !s->offsets || !s->ref_ctr_offsets || !s->cookies) {
		free(s->path);
		free(s->offsets);
		free(s->ref_ctr_offsets);
		free(s->cookies);
		return;
	}
	t->site_set_count++;
}

void attach__free_site_sets(struct tracer *t)
{
	for (size_t i = 0; i < t->site_set_count; i++) {
		free(t->site_sets[i].path);
		free(t->site_sets[i].offsets);
		free(t->site_sets[i].ref_ctr_offsets);
		free(t->site_sets[i].cookies);
	}
	free(t->site_sets);
	t->site_sets = NULL;
	t->site_set_count = 0;
}

/*
 * Links prog_fd to count sites of path in process pid: one uprobe-multi
 * link, or on kernels without them one perf-event uprobe per site
 * (compat.h).  Each link's fd goes to keep(ctx, fd), which takes a
 * negative errno too; the first error is returned.
 */
static int link_sites_with(struct tracer *t, int prog_fd, const char *path, const __u64 *offsets,
			   const __u64 *ref_ctr_offsets, const __u64 *cookies, __u32 count,
			   pid_t pid, int (*keep)(void *ctx, int fd), void *ctx)
{
	int err = 0;

	if (features__has(&t->features, KH_FEAT_UPROBE_MULTI))
		return keep(ctx, compat__uprobe_multi_link(prog_fd, path, offsets, ref_ctr_offsets,
							   cookies, count, pid));
	for (__u32 i = 0; i < count && !err; i++)
		err = keep(ctx, compat__uprobe_perf_link(
					prog_fd, path, offsets[i], ref_ctr_offsets[i], cookies[i], pid,
					features__has(&t->features, KH_FEAT_BPF_COOKIE)));
	return err;
}

static int keep_tracer_link(void *ctx, int fd)
{
	return keep_link(ctx, fd);
}

/* The identity sites' program: sleepable, or not where uprobes cannot sleep (load.c). */
static struct bpf_program *identity_prog(const struct tracer *t)
{
	return bpf_program__autoload(t->skel->progs.kh_usdt_identity)
		       ? t->skel->progs.kh_usdt_identity
		       : t->skel->progs.kh_usdt_identity_nosleep;
}

/* Links prog to count sites of path and keeps the links until tracer__close. */
static int link_sites(struct tracer *t, struct bpf_program *prog, const char *path,
		      const __u64 *offsets, const __u64 *ref_ctr_offsets, const __u64 *cookies,
		      __u32 count)
{
	int err = 0;

	/* Without cookies the BPF side finds a site's spec by its file and offset. */
	if (!features__has(&t->features, KH_FEAT_BPF_COOKIE) &&
	    (prog == t->skel->progs.kh_usdt || prog == identity_prog(t)))
		err = compat__store_site_ids(bpf_map__fd(t->skel->maps.kh_sites),
					     bpf_map__fd(t->skel->maps.__bpf_usdt_ip_to_spec_id),
					     path, offsets, cookies, count);
	if (!err)
		err = link_sites_with(t, bpf_program__fd(prog), path, offsets, ref_ctr_offsets,
				      cookies, count, t->pid, keep_tracer_link, t);

	if (!err && prog == t->skel->progs.kh_usdt)
		keep_site_set(t, bpf_program__fd(prog), path, offsets, ref_ctr_offsets, cookies,
			      count);
	return err;
}

static bool child_exited(const struct protected_child *c)
{
	struct pollfd p = { .fd = c->pid_fd, .events = POLLIN };

	return poll(&p, 1, 0) != 0; /* readable once it exited (or an error) */
}

/*
 * Closing a child's links while it runs breaks it: a site it has not hit
 * since the fork is left invalid (measured: SIGILL at the site once khprof
 * had exited).  So the links of children still running are handed to a
 * process of khprof's own that waits for them to exit.
 */
static void hold_until_children_exit(struct tracer *t)
{
	struct protected_child *c;
	pid_t pid;

	for (c = t->children; c && child_exited(c); c = c->next)
		;
	if (!c)
		return;
	pid = process__fork_quiet();
	if (pid == 0) {
		for (c = t->children; c; c = c->next) {
			struct pollfd p = { .fd = c->pid_fd, .events = POLLIN };

			while (poll(&p, 1, -1) < 0 && errno == EINTR)
				;
		}
		_exit(0);
	}
	if (pid < 0)
		log__warn("cannot keep the probe sites of the processes PID %d forked working: "
			  "fork failed: %s", t->pid, strerror(errno));
}

void attach__stop_watching_forks(struct tracer *t, bool closing)
{
	if (t->fork_link_fd >= 0) {
		for (size_t i = 0; i < t->link_fd_count; i++)
			if (t->link_fds[i] == t->fork_link_fd)
				t->link_fds[i] = -1;
		close(t->fork_link_fd);
		t->fork_link_fd = -1;
		/* A fork already stopped is in the ring buffer: resumed here, never left stopped. */
		if (t->rb) {
			t->closing = closing;
			ring_buffer__consume(t->rb);
		}
	}
	attach__release_children(t, true);
}

static void *close_child(void *arg)
{
	struct protected_child *c = arg;

	for (size_t i = 0; i < c->link_fd_count; i++)
		close(c->link_fds[i]);
	free(c->link_fds);
	close(c->pid_fd);
	free(c);
	return NULL;
}

/*
 * Each link's detach waits for an RCU-tasks grace period (about 80 ms
 * here): not while the next forked child waits stopped.
 */
static void close_child_later(struct protected_child *c)
{
	pthread_attr_t attr;
	pthread_t thread;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&thread, &attr, close_child, c) != 0)
		close_child(c);
	pthread_attr_destroy(&attr);
}

void attach__release_children(struct tracer *t, bool all)
{
	struct protected_child **link = &t->children;

	if (all)
		hold_until_children_exit(t);

	while (*link) {
		struct protected_child *c = *link;

		if (!all && !child_exited(c)) {
			link = &c->next;
			continue;
		}
		*link = c->next;
		close_child_later(c);
	}
}

/*
 * A child forked by the traced process, stopped before its first
 * instruction.  On Linux 6.18 a hot (nop5) site the parent has hit is a
 * call into the parent's [uprobes-trampoline] page, which fork does not
 * copy: the child would take SIGSEGV there.  Registering the sites for the
 * child's process puts the kernel's breakpoint back over that call in the
 * child's memory (a hit then maps a trampoline of the child's own).  The
 * link must stay while the child runs: closing it at once leaves the call
 * in place (measured: the child still crashes).  Its program, kh_untraced,
 * does nothing, so the child's hits are in no record.
 */
static int keep_child_link(void *ctx, int fd)
{
	struct protected_child *c = ctx;

	return append_fd(&c->link_fds, &c->link_fd_count, fd);
}

void attach__protect_child(struct tracer *t, pid_t child)
{
	uint64_t begin = tracer__now_ns();
	struct protected_child *c;
	size_t failed = 0;

	attach__release_children(t, false);
	if (!t->site_set_count)
		return;
	c = calloc(1, sizeof(*c));
	if (c)
		c->link_fds = calloc(t->site_set_count, sizeof(*c->link_fds));
	if (c && c->link_fds)
		c->pid_fd = (int)syscall(SYS_pidfd_open, child, 0);
	if (!c || !c->link_fds || c->pid_fd < 0) {
		bool gone = c && c->link_fds && errno == ESRCH;

		if (c)
			free(c->link_fds);
		free(c);
		if (!gone)
			log__warn("PID %d forked by PID %d may crash at a probe site: %s", child,
				  t->pid, strerror(errno));
		return;
	}
	for (size_t i = 0; i < t->site_set_count; i++) {
		const struct site_set *s = &t->site_sets[i];

		if (link_sites_with(t, bpf_program__fd(t->skel->progs.kh_untraced), s->path,
				    s->offsets, s->ref_ctr_offsets, s->cookies, s->count, child,
				    keep_child_link, c))
			failed++;
	}
	c->next = t->children;
	t->children = c;
	log__debug("PID %d forked by PID %d: its %zu probed files linked in %.2f ms", child, t->pid,
		   c->link_fd_count, (double)(tracer__now_ns() - begin) / 1e6);
	if (failed && !child_exited(c))
		log__warn("PID %d forked by PID %d may crash at a probe site: cannot link %zu of "
			  "its %zu probed files", child, t->pid, failed, t->site_set_count);
}

/*
 * A counting cpu-clock event per CPU (no sampling, so no timer), which the
 * BPF side reads for the scheduler's clock (sched_clock_now); CPUs that are
 * possible but not online are skipped, they run nothing.
 */
static int open_sched_clocks(struct tracer *t)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
	};
	int map_fd = bpf_map__fd(t->skel->maps.sched_clocks);

	for (int cpu = 0; cpu < t->ncpus; cpu++) {
		int fd = (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		int err;

		if (fd < 0 && errno == ENODEV)
			continue;
		if (fd < 0 || bpf_map_update_elem(map_fd, &cpu, &fd, BPF_ANY)) {
			err = -errno;
			if (fd >= 0)
				close(fd);
			log__error("cannot open the scheduler clock of CPU %d: %s (khprof needs "
				   "perf events, CAP_PERFMON)", cpu, strerror(-err));
			return err;
		}
		err = keep_link(t, fd);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Thread creation and RSS changes of the traced process, for the peaks
 * between samples (bpf/khprof.bpf.c).  Tracepoint links detach without a
 * grace period of their own.
 */
static int watch_peaks(struct tracer *t, pid_t pid)
{
	struct bpf_program *progs[] = { t->skel->progs.kh_rss_stat, t->skel->progs.kh_process_fork };

	t->skel->bss->traced_tgid = (__u32)pid;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		int err = keep_link(t, bpf_raw_tracepoint_open(NULL, bpf_program__fd(progs[i])));

		if (err) {
			log__error("cannot watch the threads and memory of process %d: %s "
				   "(khprof needs tp_btf programs, Linux 5.5 or later)", pid,
				   strerror(-err));
			return err;
		}
	}
	return 0;
}

/*
 * --follow-forks: the new processes pid forks (bpf/follow.bpf.h).  Without
 * it, only kernels that rewrite probe sites into calls (optimized uprobes)
 * need their forks stopped, to be made safe (attach__protect_child).
 */
static int watch_forks(struct tracer *t, pid_t pid)
{
	int fd, err;

	if (!t->opts.on_fork && !features__has(&t->features, KH_FEAT_OPTIMIZED_UPROBES))
		return 0;
	t->skel->bss->protect_forks = !t->opts.on_fork;
	fd = bpf_raw_tracepoint_open(NULL, bpf_program__fd(t->skel->progs.kh_follow_fork));
	err = keep_link(t, fd < 0 ? -errno : fd);
	if (!err && bpf_program__autoload(t->skel->progs.kh_fork_stop)) {
		/* Before Linux 6.13 the child stops itself (kh_fork_stop). */
		int stop_fd = bpf_raw_tracepoint_open(NULL,
						      bpf_program__fd(t->skel->progs.kh_fork_stop));

		err = keep_link(t, stop_fd < 0 ? -errno : stop_fd);
	}
	if (err) {
		log__error("cannot watch the processes PID %d forks: %s", pid, strerror(-err));
		return err;
	}
	t->fork_link_fd = fd;
	if (!t->opts.on_fork)
		return 0;
	/* A vforked child is followed from its execve (dash and make vfork). */
	fd = bpf_raw_tracepoint_open(NULL, bpf_program__fd(t->skel->progs.kh_follow_exec));
	err = keep_link(t, fd < 0 ? -errno : fd);
	if (err)
		log__error("cannot watch the programs PID %d's children exec: %s", pid,
			   strerror(-err));
	return err;
}

/*
 * Parses the argument spec of one site into specs[*n]; its id is the
 * site's cookie.  The specs are stored by store_specs, all at once.
 */
static int add_spec(struct tracer *t, const char *path, const struct usdt_note *note,
		    enum kh_probe_kind kind, struct kh_usdt_spec *specs, __u32 *ids, __u32 *n,
		    __u64 *cookie)
{
	__u32 id = t->spec_count;

	if (usdt_spec__parse(note->args, kind, &specs[*n]) != 0) {
		log__warn("skipping probe '%s:%s' in '%s': unsupported arguments '%s'",
			  note->provider, note->name, path, note->args);
		return 1;
	}
	if (id >= KH_MAX_PROBE_SITES) {
		log__error("cannot attach to '%s': more than %d keyhog probe sites", path,
			   KH_MAX_PROBE_SITES);
		return -E2BIG;
	}
	ids[*n] = id;
	*n += 1;
	t->spec_count++;
	*cookie = id;
	return 0;
}

/*
 * One BPF_MAP_UPDATE_BATCH for a file's sites instead of one update per
 * site: 183 update syscalls at every start of a kh-scan record before.
 */
static int store_specs(struct tracer *t, const struct kh_usdt_spec *specs, const __u32 *ids,
		       __u32 n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u32 count = n;

	if (n && bpf_map_update_batch(bpf_map__fd(t->skel->maps.__bpf_usdt_specs), ids, specs,
				      &count, &opts)) {
		log__error("cannot store probe arguments: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static void report_attach_error(const char *path, int err)
{
	if (err == -EPERM || err == -EACCES)
		log__error("cannot attach to '%s': permission denied "
			   "(run as root or grant CAP_BPF and CAP_PERFMON)", path);
	else if (err == -EINVAL || err == -EOPNOTSUPP)
		log__error("cannot attach to '%s': %s (khprof needs perf-event uprobes, "
			   "CONFIG_UPROBE_EVENTS)", path, strerror(-err));
	else
		log__error("cannot attach to '%s': %s", path, strerror(-err));
}

int attach__object(struct tracer *t, const char *path)
{
	struct usdt_note_list notes;
	__u64 *offsets = NULL, *ref_ctr_offsets = NULL, *cookies = NULL;
	struct kh_usdt_spec *specs = NULL;
	__u32 *ids = NULL, nspecs = 0;
	__u32 count = 0, first_identity, identities;
	int err;

	err = usdt_notes__read(path, &notes);
	if (err) {
		log__debug("skipping '%s': %s", path, strerror(-err));
		return 0;
	}
	if (notes.count) {
		offsets = calloc(notes.count, sizeof(*offsets));
		ref_ctr_offsets = calloc(notes.count, sizeof(*ref_ctr_offsets));
		cookies = calloc(notes.count, sizeof(*cookies));
		specs = calloc(notes.count, sizeof(*specs));
		ids = calloc(notes.count, sizeof(*ids));
		if (!offsets || !ref_ctr_offsets || !cookies || !specs || !ids) {
			err = -ENOMEM;
			goto out;
		}
	}
	/*
	 * Identity sites fill the arrays from the end: they get a link of their
	 * own to kh_usdt_identity, the sleepable program that can fault their
	 * strings in (bpf/khprof.bpf.c).
	 */
	first_identity = (__u32)notes.count;
	for (size_t i = 0; i < notes.count; i++) {
		const struct usdt_note *note = &notes.notes[i];
		enum kh_probe_kind kind = wanted_kind(t, note);
		__u32 at;

		if (!kind || !note->file_offset)
			continue;
		at = kind == KH_PROBE_IDENTITY ? first_identity - 1 : count;
		err = add_spec(t, path, note, kind, specs, ids, &nspecs, &cookies[at]);
		if (err < 0)
			goto out;
		if (err > 0)
			continue;
		offsets[at] = note->file_offset;
		ref_ctr_offsets[at] = note->semaphore_offset;
		if (kind == KH_PROBE_IDENTITY)
			first_identity--;
		else
			count++;
	}
	identities = (__u32)notes.count - first_identity;
	err = store_specs(t, specs, ids, nspecs);
	if (err)
		goto out;
	/* Probe ABI 3 and older: no clock word; their batches keep the TSC. */
	if (t->monotonic_clock && usdt_notes__has(&notes, PROVIDER, "batch") &&
	    !usdt_notes__has(&notes, PROVIDER, "clock_monotonic"))
		log__warn("'%s' predates probe ABI 4: its batched spans are timed with the TSC, "
			  "which khprof does not trust here (rebuild it with this khprof's header "
			  "or crate, or use --mode span)", path);
	/* Probe ABI 2: khprof cannot learn where its threads keep their buffers. */
	if (t->opts.mode == KH_MODE_BATCH && usdt_notes__has(&notes, PROVIDER, "batch") &&
	    !usdt_notes__has(&notes, PROVIDER, "batch_register"))
		t->abi2_batch = true;
	if (count)
		err = link_sites(t, t->skel->progs.kh_usdt, path, offsets, ref_ctr_offsets, cookies,
				 count);
	if (!err && identities)
		err = link_sites(t, identity_prog(t), path, offsets + first_identity,
				 ref_ctr_offsets + first_identity, cookies + first_identity,
				 identities);
	if (err) {
		report_attach_error(path, err);
		goto out;
	}
	if (count + identities)
		log__debug("attached %u probe sites in '%s'", count + identities, path);
	t->probe_count += count + identities;
	/* From here an execve ends the records (bpf/khprof.bpf.c, kh_exec). */
	if (count + identities)
		t->skel->bss->image_traced = 1;
out:
	free(offsets);
	free(ref_ctr_offsets);
	free(cookies);
	free(specs);
	free(ids);
	usdt_notes__free(&notes);
	return err;
}

static int attach_object_once(struct tracer *t, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return 0;
	if (seen_before(t, st.st_dev, st.st_ino))
		return 0;
	return attach__object(t, path);
}

/*
 * The loader calls _dl_debug_state() with _r_debug.r_state saying what it
 * is about: RT_ADD or RT_DELETE before it changes the link map, RT_CONSISTENT
 * once objects are mapped.  Only the last is worth a stop; the BPF side
 * finds r_state from the probe's address.
 */
#define R_DEBUG_R_STATE_OFFSET 24 /* struct r_debug on LP64 */

static int hook_loader(struct tracer *t, const char *exe)
{
	char interp[PATH_MAX];
	uint64_t hook_vaddr = 0, hook_offset = 0, r_debug_vaddr = 0, r_debug_offset = 0;
	__u64 offset, cookie = 0, no_semaphore = 0;
	int err;

	err = elf__interpreter(exe, interp, sizeof(interp));
	if (err || interp[0] == '\0')
		return 0; /* static executable: nothing is ever loaded later */
	err = elf__symbol(interp, "_dl_debug_state", &hook_vaddr, &hook_offset);
	if (!err && elf__symbol(interp, "_r_debug", &r_debug_vaddr, &r_debug_offset) == 0)
		t->skel->bss->r_state_from_hook =
			(__s64)(r_debug_vaddr + R_DEBUG_R_STATE_OFFSET) - (__s64)hook_vaddr;
	offset = hook_offset;
	if (!err)
		err = link_sites(t, t->skel->progs.kh_loader_state, interp, &offset, &no_semaphore,
				 &cookie, 1);
	if (err)
		log__warn("cannot watch '%s' for dlopen: %s; libraries loaded later "
			  "will not be traced", interp, strerror(-err));
	return 0;
}

static const char *const end_program_names[] = { "thread exit", "thread exit",
						 "thread exit",  "execve check",
						 "execve check", "exec" };

int attach__process_end(struct tracer *t)
{
	/* One of each kind loads, as the kernel allows (load.c, configure_features). */
	struct bpf_program *progs[] = { t->skel->progs.kh_thread_exit,
					 t->skel->progs.kh_thread_exit_old,
					 t->skel->progs.kh_exit_drain,
					 t->skel->progs.kh_exec_check,
					 t->skel->progs.kh_exec_check_old,
					 t->skel->progs.kh_exec };

	_Static_assert(sizeof(progs) / sizeof(progs[0]) ==
			       sizeof(t->end_links) / sizeof(t->end_links[0]), "one link each");
	t->skel->bss->traced_tgid = (__u32)t->pid;
	/* Under record, the child khprof forked has yet to exec COMMAND. */
	t->skel->bss->execs_expected = t->opts.joins_running_process ? 0 : 1;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		struct bpf_link *link;

		if (!bpf_program__autoload(progs[i]))
			continue;
		link = bpf_program__attach(progs[i]);
		if (!link) {
			int err = -errno;

			log__error("cannot watch the %s of PID %d: %s", end_program_names[i],
				   t->pid, strerror(errno));
			return err;
		}
		t->end_links[i] = link;
	}
	return 0;
}

/*
 * khprof's own thread registered its buffer while calibrating: forget it,
 * so that the threads khprof knows are the traced process's.
 */
static void forget_own_thread(struct tracer *t)
{
	__u32 tid = (__u32)gettid();

	bpf_map_delete_elem(bpf_map__fd(t->skel->maps.thread_list), &tid);
}

static int attach_process(struct tracer *t, pid_t pid, const char *exe_path);

int tracer__attach(struct tracer *t, pid_t pid, const char *exe_path)
{
	uint64_t begin = tracer__now_ns();
	int err = attach_process(t, pid, exe_path);

	/* Every link of the start-up exists (libraries mapped later follow within ms). */
	warmer__stop(&t->warmer);
	log__debug("start-up: attached in %.1f ms, %.1f ms after the tracer was opened",
		   (double)(tracer__now_ns() - begin) / 1e6,
		   (double)(tracer__now_ns() - t->open_ns) / 1e6);
	return err;
}

static int attach_process(struct tracer *t, pid_t pid, const char *exe_path)
{
	int err;

	if (t->opts.calibration) {
		t->sessions.cfg.span_cost_ns = t->opts.calibration->span_cost_ns;
		t->sessions.cfg.span_bias_ns = t->opts.calibration->span_bias_ns;
	} else {
		err = calibrate__run(t);
		if (err)
			return err;
	}
	/*
	 * Either way: whatever listed khprof's own thread (its calibration
	 * spans), its end is none of the traced process's; with a reused
	 * calibration there is usually nothing to forget, and the delete
	 * costs one syscall.
	 */
	forget_own_thread(t);
	t->pid = pid;
	t->sessions.cfg.pid = pid;
	err = open_sched_clocks(t);
	if (!err)
		err = watch_peaks(t, pid);
	if (!err)
		err = watch_forks(t, pid); /* a forked child is followed, or made safe */
	if (!err)
		err = attach__process_end(t);
	if (err)
		return err;
	/* Without the off-CPU split the rest of the trace goes on (latency.c warns). */
	t->sessions.cfg.off_cpu = latency__attach(t->skel, pid, t->sched_links) == 0;
	err = attach_object_once(t, exe_path);
	if (err)
		return err;
	t->skel->bss->abi2_batch_traced = t->abi2_batch;
	err = hook_loader(t, exe_path);
	if (!err && t->sampler)
		err = sampler__attach(t->sampler, pid);
	return err;
}

void tracer__calibration(const struct tracer *t, struct tracer_calibration *out)
{
	out->span_cost_ns = t->sessions.cfg.span_cost_ns;
	out->span_bias_ns = t->sessions.cfg.span_bias_ns;
}

int tracer__attach_mapped(struct tracer *t)
{
	char maps_path[64], line[PATH_MAX + 128];
	FILE *maps;
	int err = 0;

	sessions__take_first_sample(&t->sessions);
	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", t->pid);
	maps = fopen(maps_path, "re");
	if (!maps)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), maps)) {
		char perms[8], path[PATH_MAX];
		unsigned long long inode;

		path[0] = '\0';
		if (sscanf(line, "%*x-%*x %7s %*x %*x:%*x %llu %4095[^\n]", perms, &inode, path) < 2)
			continue;
		if (perms[2] != 'x' || inode == 0 || path[0] != '/')
			continue;
		err = attach_object_once(t, path);
		if (err)
			break;
	}
	fclose(maps);
	t->skel->bss->abi2_batch_traced = t->abi2_batch;
	if (t->sampler)
		stack_store__read_maps(sampler__store(t->sampler)); /* a library just mapped */
	if (!err && t->opts.joins_running_process && !t->sessions.cfg.observed_from_ns)
		attach__join_session(t);
	return err;
}

/* The runtime address of a data symbol of path in the traced process; 0 if not mapped. */
static uint64_t runtime_address(struct tracer *t, const char *path, uint64_t file_offset)
{
	char maps_path[64], line[PATH_MAX + 128];
	uint64_t address = 0;
	FILE *maps;

	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", t->pid);
	maps = fopen(maps_path, "re");
	if (!maps)
		return 0;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long long start, end, offset;
		char perms[8], name[PATH_MAX];

		name[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*x:%*x %*u %4095[^\n]", &start, &end, perms,
			   &offset, name) < 5 || strcmp(name, path) != 0)
			continue;
		if (file_offset < offset || file_offset >= offset + (end - start))
			continue;
		/*
		 * A file page can be mapped twice: rust-lld starts the data
		 * segment in the page that ends the RELRO segment, whose copy
		 * is zeroed past its end and read-only.  The variable the
		 * program writes is in the writable mapping.
		 */
		address = start + (file_offset - offset);
		if (perms[1] == 'w')
			break;
	}
	fclose(maps);
	return address;
}

/*
 * The program's kh_current_state (probe ABI 3), read once the probes are
 * live: KH_STATE_COUNT when no session is open, the open session's state
 * otherwise.  The executable's copy is the one the process uses when it
 * has one (weak symbols bind to the first definition).  Returns
 * KH_STATE_COUNT + 1 when the program does not say (ABI 2 or unreadable).
 */
#define STATE_UNKNOWN (KH_STATE_COUNT + 1)

static uint32_t read_current_state(struct tracer *t)
{
	char exe_link[64], exe[PATH_MAX];
	uint64_t vaddr, offset, address;
	uint32_t state;
	struct iovec local = { &state, sizeof(state) }, remote;
	ssize_t len;

	snprintf(exe_link, sizeof(exe_link), "/proc/%d/exe", t->pid);
	len = readlink(exe_link, exe, sizeof(exe) - 1);
	if (len <= 0)
		return STATE_UNKNOWN;
	exe[len] = '\0';
	if (elf__symbol(exe_link, "kh_current_state", &vaddr, &offset) != 0)
		return STATE_UNKNOWN;
	address = runtime_address(t, exe, offset);
	if (!address)
		return STATE_UNKNOWN;
	remote = (struct iovec){ (void *)(uintptr_t)address, sizeof(state) };
	if (process_vm_readv(t->pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(state))
		return STATE_UNKNOWN;
	return state <= KH_STATE_COUNT ? state : STATE_UNKNOWN;
}

/* Reads attempts before a table the program keeps rewriting is given up. */
#define IDENTITY_READS 8

/*
 * The identity the open session set before khprof was there, from the
 * program's kh_identity_table (keyhog_profile.h), read as a whole and
 * taken when its generation was even and unchanged across the read.  The
 * executable's copy, as for kh_current_state.  Returns the keys taken; a
 * program whose header predates the table has none.
 */
static size_t read_identity_table(struct tracer *t, uint32_t slot)
{
	struct kh_identity_table *table = malloc(sizeof(*table));
	char exe_link[64], exe[PATH_MAX];
	uint64_t vaddr, offset, address, before;
	struct iovec local, remote;
	size_t taken = 0;
	ssize_t len;
	int attempt;

	snprintf(exe_link, sizeof(exe_link), "/proc/%d/exe", t->pid);
	len = readlink(exe_link, exe, sizeof(exe) - 1);
	if (!table || len <= 0 || elf__symbol(exe_link, "kh_identity_table", &vaddr, &offset)) {
		free(table);
		return 0;
	}
	exe[len] = '\0';
	address = runtime_address(t, exe, offset);
	for (attempt = 0; address && attempt < IDENTITY_READS; attempt++) {
		local = (struct iovec){ &before, sizeof(before) };
		remote = (struct iovec){ (void *)(uintptr_t)(address + offsetof(struct
			kh_identity_table, generation)), sizeof(before) };
		if (process_vm_readv(t->pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(before))
			break;
		local = (struct iovec){ table, sizeof(*table) };
		remote = (struct iovec){ (void *)(uintptr_t)address, sizeof(*table) };
		if (process_vm_readv(t->pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof(*table))
			break;
		if (!(before & 1) && table->generation == before)
			break; /* a consistent copy */
	}
	if (attempt == IDENTITY_READS)
		log__warn("PID %d kept rewriting its identity while khprof read it: the record "
			  "lacks the identity set before the attach", t->pid);
	else if (address && attempt < IDENTITY_READS &&
		 table->version == KH_IDENTITY_TABLE_VERSION &&
		 table->count <= KH_IDENTITY_TABLE_SLOTS) {
		for (uint32_t i = 0; i < table->count; i++) {
			table->entries[i].key[KH_IDENTITY_TABLE_KEY - 1] = '\0';
			table->entries[i].value[KH_IDENTITY_TABLE_VALUE - 1] = '\0';
			sessions__set_identity(&t->sessions, slot, table->entries[i].key,
					       table->entries[i].value);
			taken++;
		}
	}
	free(table);
	return taken;
}

void attach__join_session(struct tracer *t)
{
	const uint32_t slot = 1;
	uint32_t state;

	t->sessions.cfg.observed_from_ns = tracer__now_ns();
	state = read_current_state(t);
	if (state == STATE_UNKNOWN) {
		log__debug("PID %d does not say which state it is in (probe ABI 2)", t->pid);
		return;
	}
	if (state == KH_STATE_COUNT)
		return; /* no session open: the next one is recorded whole */
	/* The open session gets a slot of its own, as if its start had been seen. */
	t->skel->bss->slot_busy[slot] = 1;
	t->skel->bss->slot_start_ns[slot] = t->sessions.cfg.observed_from_ns;
	t->skel->bss->active_slot = slot;
	sessions__open_partial(&t->sessions, slot, state);
	t->sessions.saw_session = true;
	log__debug("PID %d: %zu identity keys set before the attach", t->pid,
		   read_identity_table(t, slot));
}

size_t tracer__probe_count(const struct tracer *t)
{
	return t->probe_count;
}

/*
 * The loader-state program has no work of its own to do at a file's start:
 * its event carries the pid, and without a stop request or an r_state
 * offset it reports every hit.  pid 0 links it for every process.
 */
int tracer__watch_starts(struct tracer *t, const char *path, tracer_start_fn fn, void *ctx)
{
	__u64 offset, cookie = 0, no_semaphore = 0;
	uint64_t start;
	int err;

	err = elf__start_offset(path, &start);
	if (err) {
		log__error("cannot watch '%s' for new processes: %s", path,
			   err == -ENOENT ? "it has no entry point or DT_INIT" : strerror(-err));
		return err;
	}
	t->pid = 0;
	offset = start;
	err = link_sites(t, t->skel->progs.kh_loader_state, path, &offset, &no_semaphore, &cookie,
			 1);
	if (err) {
		log__error("cannot watch '%s' for new processes: %s", path, strerror(-err));
		return err;
	}
	t->on_start = fn;
	t->start_ctx = ctx;
	return 0;
}

/*
 * Debian's kernels add perf_event_paranoid 3, their default: perf_event_open
 * then needs CAP_SYS_ADMIN, CAP_PERFMON is not enough (measured under
 * 6.12 and 7.3: the tracers --follow-forks loads later could not open their
 * scheduler clocks).
 */
static bool perf_needs_admin(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int level = 2;

	if (f) {
		if (fscanf(f, "%d", &level) != 1)
			level = 2;
		fclose(f);
	}
	return level >= 3;
}

bool tracer__attach_needs_admin(const struct tracer *t)
{
	return !features__has(&t->features, KH_FEAT_UPROBE_MULTI) || perf_needs_admin();
}
