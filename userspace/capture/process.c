// SPDX-License-Identifier: MIT
/*
 * Attaching a process: calibration first (calibrate.c traces khprof's own
 * sites), the scheduler clocks, the peaks, fork and end watchers, the
 * executable's sites and the dynamic loader's hook, then every library it
 * maps (attach.c links each file); joining a session already open, and
 * watching a file for the processes that start it.
 */
#include <errno.h>
#include <limits.h>
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
#include "kfeatures.h"
#include "khprof.skel.h"
#include "latency.h"
#include "log.h"
#include "ns.h"
#include "procfs.h"
#include "sampler.h"
#include "stackstore.h"
#include "stops.h"
#include "tracer_impl.h"
#include "usdt_elf.h"
#include "utf8.h"

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
		err = attach__keep_link(t, fd);
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

	t->skel->bss->traced_tgid = (__u32)t->kernel_pid;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		int fd = bpf_raw_tracepoint_open(NULL, bpf_program__fd(progs[i]));
		int err = attach__keep_link(t, fd);

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
 * need their forks stopped, to be made safe (stops/sites.h).
 */
static int watch_forks(struct tracer *t, pid_t pid)
{
	int fd, err;

	if (!t->opts.on_fork && !features__has(&t->features, KH_FEAT_OPTIMIZED_UPROBES))
		return 0;
	t->skel->bss->protect_forks = !t->opts.on_fork;
	fd = bpf_raw_tracepoint_open(NULL, bpf_program__fd(t->skel->progs.kh_follow_fork));
	err = attach__keep_link(t, fd < 0 ? -errno : fd);
	if (!err) {
		/* A parent that stops itself when its child stops for khprof (trace.c). */
		int self_fd = bpf_raw_tracepoint_open(NULL,
						      bpf_program__fd(t->skel->progs.kh_self_stop));

		err = attach__keep_link(t, self_fd < 0 ? -errno : self_fd);
	}
	if (!err && bpf_program__autoload(t->skel->progs.kh_fork_stop)) {
		/* Before Linux 6.13 the child stops itself (kh_fork_stop). */
		int stop_fd = bpf_raw_tracepoint_open(NULL,
						      bpf_program__fd(t->skel->progs.kh_fork_stop));

		err = attach__keep_link(t, stop_fd < 0 ? -errno : stop_fd);
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
	err = attach__keep_link(t, fd < 0 ? -errno : fd);
	if (err)
		log__error("cannot watch the programs PID %d's children exec: %s", pid,
			   strerror(-err));
	return err;
}

/*
 * The loader calls _dl_debug_state() with _r_debug.r_state saying what it
 * is about: RT_ADD or RT_DELETE before it changes the link map, RT_CONSISTENT
 * once objects are mapped.  Only the last is worth a stop; the BPF side
 * finds r_state from the probe's address.
 */
#define R_DEBUG_R_STATE_OFFSET 24 /* struct r_debug on LP64 */

static int hook_loader(struct tracer *t, const struct ns_view *v, const char *exe)
{
	char interp[PATH_MAX], path[PATH_MAX];
	uint64_t hook_vaddr = 0, hook_offset = 0, r_debug_vaddr = 0, r_debug_offset = 0;
	__u64 offset, cookie = 0, no_semaphore = 0;
	struct held_file loader = { .fd = -1 };
	int err;

	err = elf__interpreter(exe, interp, sizeof(interp));
	if (err || interp[0] == '\0')
		return 0; /* static executable: nothing is ever loaded later */
	/* The loader the process runs: its own root's (a container's), not khprof's. */
	err = ns__inner_path(v, interp, path, sizeof(path));
	/* Opened once: the breakpoint goes into the function of the file read (attach.c). */
	if (!err)
		err = held_file__open(path, &loader);
	if (!err && attach__seen_before(&t->loaders, &t->loader_count, loader.dev, loader.ino)) {
		held_file__close(&loader);
		return 0;
	}
	if (!err)
		err = held_file__read(&loader);
	/* Its code, never its data: a crafted loader's symbol may point anywhere. */
	if (!err)
		err = elf__function_fd(loader.fd, "_dl_debug_state", &hook_vaddr, &hook_offset);
	if (!err &&
	    elf__symbol_fd(loader.fd, "_r_debug", &r_debug_vaddr, &r_debug_offset) == 0) {
		__s64 r_state = (__s64)(r_debug_vaddr + R_DEBUG_R_STATE_OFFSET) - (__s64)hook_vaddr;

		cookie = (__u64)r_state;
		/*
		 * Without cookies one distance serves every loader: a second
		 * loader at another distance makes it unknown (every hit stops).
		 */
		if (t->loader_count > 1 && t->skel->bss->r_state_from_hook != r_state)
			r_state = 0;
		t->skel->bss->r_state_from_hook = r_state;
	}
	offset = hook_offset;
	if (!err)
		err = attach__link_sites(t, t->skel->progs.kh_loader_state, &loader, &offset,
					 &no_semaphore, &cookie, 1);
	held_file__close(&loader);
	/* Gone meanwhile (its link names its pid): no later library to miss. */
	if (err == -ESRCH)
		log__debug("PID %d ended before its loader was watched", t->pid);
	else if (err) {
		char shown[256]; /* the executable's PT_INTERP: its file's string */

		log__warn("cannot watch '%s' for dlopen: %s; libraries loaded later "
			  "will not be traced", utf8__escape(interp, shown, sizeof(shown)),
			  strerror(-err));
	}
	return 0;
}

static const char *const end_program_names[] = { "thread exit",  "thread exit",
						 "thread exit",  "thread exit",
						 "thread exit",  "execve check",
						 "execve check", "exec" };

int attach__process_end(struct tracer *t)
{
	/* One of each kind loads, as the kernel allows (load.c, configure_features). */
	struct bpf_program *progs[] = { t->skel->progs.kh_thread_exit,
					 t->skel->progs.kh_thread_exit_again,
					 t->skel->progs.kh_thread_exit_last,
					 t->skel->progs.kh_thread_exit_old,
					 t->skel->progs.kh_exit_drain,
					 t->skel->progs.kh_exec_check,
					 t->skel->progs.kh_exec_check_old,
					 t->skel->progs.kh_exec };

	const char *skip = getenv("KHPROF_TEST_SKIP_THREAD_EXITS");

	_Static_assert(sizeof(progs) / sizeof(progs[0]) ==
			       sizeof(t->end_links) / sizeof(t->end_links[0]), "one link each");
	_Static_assert(sizeof(end_program_names) / sizeof(end_program_names[0]) ==
			       sizeof(progs) / sizeof(progs[0]), "one name each");
	/* Test hook: thread ends as if the kernel skipped N programs (thread_ends.bpf.h). */
	t->skel->bss->test_skip_thread_exits = skip ? (__u32)atoi(skip) : 0;
	/* Test hook: other threads' entries unreadable at session events (batch.bpf.h). */
	t->skel->bss->test_unread_entries = getenv("KHPROF_TEST_UNREAD_ENTRIES") != NULL;
	t->skel->bss->traced_tgid = (__u32)t->kernel_pid;
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
	__u32 tid = (__u32)pid_map__kernel(t, gettid()); /* listed by the kernel's id */

	bpf_map_delete_elem(bpf_map__fd(t->skel->maps.thread_list), &tid);
}

/*
 * Who the process is as it sees itself and in which container: its pid in
 * its own namespace begins the run ids, as the seed's RunIdentity does
 * with std::process::id().  Read again at each attach of mapped files: a
 * runtime's process joins its container's cgroup after khprof found it.
 */
static void note_identity(struct tracer *t)
{
	if (ns__identity(t->pid, &t->identity) != 0)
		return; /* gone: the records keep what was read before */
	t->sessions.cfg.ns_pid = t->identity.ns_pid ? t->identity.ns_pid : t->pid;
	t->sessions.cfg.cgroup_id = t->identity.cgroup_id;
	t->sessions.cfg.cgroup = t->identity.cgroup[0] ? t->identity.cgroup : NULL;
	t->sessions.cfg.container_id =
		t->identity.container_id[0] ? t->identity.container_id : NULL;
}

static int attach_process(struct tracer *t, pid_t pid, const char *exe_path);

int tracer__attach(struct tracer *t, pid_t pid, const char *exe_path)
{
	uint64_t begin = tracer__now_ns();
	/* Nothing that stops a process is attached before its keeper runs (stops.h). */
	int err = stops__ready(t->opts.stops);

	if (!err)
		err = attach_process(t, pid, exe_path);

	/* Every link of the start-up exists (libraries mapped later follow within ms). */
	warmer__stop(&t->warmer);
	log__debug("start-up: attached in %.1f ms, %.1f ms after the tracer was opened",
		   (double)(tracer__now_ns() - begin) / 1e6,
		   (double)(tracer__now_ns() - t->open_ns) / 1e6);
	return err;
}

static int attach_process(struct tracer *t, pid_t pid, const char *exe_path)
{
	struct ns_view view;
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
	/* The BPF side's programs see it by the kernel's pid, khprof by its own namespace's. */
	t->kernel_pid = pid_map__kernel(t, pid);
	if (!t->kernel_pid) {
		log__error("cannot attach to PID %d: the kernel's id of it is not found (khprof "
			   "runs in a PID namespace of its own)", pid);
		return -ESRCH;
	}
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
	err = ns__view(pid, &view);
	if (err) {
		log__error("cannot attach to PID %d: cannot read '/proc/%d/root': %s", pid, pid,
			   strerror(-err));
		return err;
	}
	note_identity(t);
	err = attach__object_once(t, exe_path, true);
	if (err)
		return err;
	t->skel->bss->abi2_batch_traced = t->abi2_batch;
	err = hook_loader(t, &view, exe_path);
	if (!err && t->sampler)
		err = sampler__attach(t->sampler, pid, t->kernel_pid);
	return err;
}

void tracer__calibration(const struct tracer *t, struct tracer_calibration *out)
{
	out->span_cost_ns = t->sessions.cfg.span_cost_ns;
	out->span_bias_ns = t->sessions.cfg.span_bias_ns;
}

struct mapped_attach {
	struct tracer *t;
	const struct ns_view *view;
	int err;
};

/*
 * Each executable file mapping is a file whose probes may be attached,
 * opened where the process's root has it (ns.h).
 */
static int attach_mapping(const struct procfs_mapping *m, void *ctx)
{
	struct mapped_attach *a = ctx;
	char path[PATH_MAX];

	if (m->perms[2] != 'x' || m->inode == 0 || m->path[0] != '/')
		return 0;
	if (ns__shown_path(a->view, m->path, path, sizeof(path)) != 0) {
		log__debug("skipping '%s' of PID %d: outside its root, in another mount namespace",
			   m->path, a->t->pid);
		return 0;
	}
	a->err = attach__object_once(a->t, path, false);
	return a->err != 0;
}

int tracer__attach_mapped(struct tracer *t)
{
	struct ns_view view;
	struct mapped_attach a = { .t = t, .view = &view };
	char exe[64];
	int err;

	sessions__take_first_sample(&t->sessions);
	err = ns__view(t->pid, &view);
	if (!err)
		err = procfs__for_each_mapping(t->pid, attach_mapping, &a);
	if (err < 0)
		return err == -ENOENT ? -ESRCH : err;
	note_identity(t);
	/* After an execve, the new image's loader (hook_loader skips one already hooked). */
	snprintf(exe, sizeof(exe), "/proc/%d/exe", t->pid);
	if (!a.err)
		hook_loader(t, &view, exe);
	t->skel->bss->abi2_batch_traced = t->abi2_batch;
	if (t->sampler)
		stack_store__read_maps(sampler__store(t->sampler)); /* a library just mapped */
	if (!a.err && t->opts.joins_running_process && !t->sessions.cfg.observed_from_ns)
		attach__join_session(t);
	return a.err;
}

/* Where a data symbol's file offset is mapped (runtime_address). */
struct address_query {
	const char *path;
	uint64_t file_offset;
	uint64_t address;
};

static int find_address(const struct procfs_mapping *m, void *ctx)
{
	struct address_query *q = ctx;

	if (strcmp(m->path, q->path) != 0 || q->file_offset < m->offset ||
	    q->file_offset >= m->offset + (m->end - m->start))
		return 0;
	/*
	 * A file page can be mapped twice: rust-lld starts the data
	 * segment in the page that ends the RELRO segment, whose copy
	 * is zeroed past its end and read-only.  The variable the
	 * program writes is in the writable mapping.
	 */
	q->address = m->start + (q->file_offset - m->offset);
	return m->perms[1] == 'w';
}

/* The runtime address of a data symbol of path in the traced process; 0 if not mapped. */
static uint64_t runtime_address(struct tracer *t, const char *path, uint64_t file_offset)
{
	struct address_query q = { .path = path, .file_offset = file_offset };

	procfs__for_each_mapping(t->pid, find_address, &q);
	return q.address;
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

bool tracer__bad_file(const struct tracer *t)
{
	return t->bad_file;
}

/*
 * The loader-state program has no work of its own to do at a file's start:
 * its event carries the pid, and without a stop request or an r_state
 * offset it reports every hit.  pid 0 links it for every process.
 */
int tracer__watch_starts(struct tracer *t, const char *path, tracer_start_fn fn, void *ctx)
{
	__u64 offset, cookie = 0, no_semaphore = 0;
	struct held_file f;
	uint64_t start;
	char file[256];
	int err;

	err = stops__ready(t->opts.stops);
	if (err)
		return err;
	utf8__escape(path, file, sizeof(file));
	/* Opened once: the breakpoint goes where the file read has its start (attach.c). */
	err = held_file__open(path, &f);
	if (!err)
		err = held_file__read(&f);
	if (err) {
		if (err != -EXDEV) /* said by held_file__read */
			log__error("cannot watch '%s' for new processes: %s", file, strerror(-err));
		held_file__close(&f);
		return err;
	}
	err = elf__start_offset(f.fd, &start);
	if (err) {
		log__error("cannot watch '%s' for new processes: %s", file,
			   err == -ENOENT ? "it has no entry point or DT_INIT" : strerror(-err));
		held_file__close(&f);
		return err;
	}
	t->pid = 0;
	offset = start;
	err = attach__link_sites(t, t->skel->progs.kh_loader_state, &f, &offset, &no_semaphore,
				 &cookie, 1);
	held_file__close(&f);
	if (err) {
		log__error("cannot watch '%s' for new processes: %s", file, strerror(-err));
		return err;
	}
	t->on_start = fn;
	t->start_ctx = ctx;
	return 0;
}

int tracer__watch_execs(struct tracer *t, tracer_start_fn fn, void *ctx)
{
	int fd, err;

	t->pid = 0;
	t->skel->bss->watcher_tgid = (__u32)pid_map__kernel(t, getpid());
	fd = bpf_raw_tracepoint_open(NULL, bpf_program__fd(t->skel->progs.kh_exec_start));
	err = attach__keep_link(t, fd < 0 ? -errno : fd);
	if (err) {
		log__error("cannot watch the processes that start: %s", strerror(-err));
		return err;
	}
	t->on_start = fn;
	t->start_ctx = ctx;
	return 0;
}

int tracer__watch_scope(struct tracer *t, int cgroup_fd)
{
	__u32 key = 0;

	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.watch_scope), &key, &cgroup_fd,
				BPF_ANY))
		return -errno;
	t->skel->bss->watch_scoped = 1;
	return 0;
}

void tracer__watch_plain(struct tracer *t, const struct tracer_file_key *file)
{
	struct kh_file_key key = { file->ino, file->dev, file->generation };
	__u8 one = 1;

	/* Full: the LRU map pushes an old file out, looked at again at its next exec. */
	bpf_map_update_elem(bpf_map__fd(t->skel->maps.plain_files), &key, &one, BPF_ANY);
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
