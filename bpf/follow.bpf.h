/* SPDX-License-Identifier: MIT */
/*
 * record --follow-forks: a new process forked by the traced one (clone
 * without CLONE_THREAD) is stopped before its first user instruction and
 * named to khprof, which attaches a tracer of its own to it and then sends
 * SIGCONT (userspace/cmd/follow.c).  Without the option it is loaded too:
 * a child forked by a traced process must be made safe before it runs on
 * Linux 6.18 (attach__protect_child in userspace/capture/attach.c).
 * Included by khprof.bpf.c.
 */

/*
 * Without --follow-forks (protect_forks set): the processes descending
 * from the traced one, whose forks are stopped too, since a grandchild
 * inherits its parent's rewritten sites just the same
 * (attach__protect_child).  LRU: an entry outlives its process harmlessly.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} untraced_family SEC(".maps");

__u32 protect_forks = 0;

/*
 * Following: children the traced process vforked (dash, make and
 * posix_spawn do), named at their execve instead of their fork; until the
 * exec they share the parent's memory and only exec or exit.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u8);
} vfork_children SEC(".maps");

/*
 * Kernels without bpf_send_signal_task (before Linux 6.13): children to be
 * stopped by kh_fork_stop, in their own context, as they first return to
 * user space.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} fork_stops SEC(".maps");

static __always_inline struct kh_event *fork_event(__u32 child_tgid)
{
	struct kh_event *e = bpf_ringbuf_reserve(&control, sizeof(*e), 0);

	if (!e) {
		/* khprof would never resume it: leave the child running, untraced. */
		count_drop(KH_OUTSIDE_SLOT, KH_DROP_RINGBUF_FULL);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = KH_EVENT_FORK;
	e->pid = traced_tgid;
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->slot = KH_OUTSIDE_SLOT;
	e->ts_ns = bpf_ktime_get_ns();
	e->arg0 = child_tgid;
	return e;
}

/*
 * sched_process_fork fires in kernel_clone() after copy_process() and
 * before wake_up_new_task(): the stop is pending before the child runs.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(kh_follow_fork, struct task_struct *parent, struct task_struct *child)
{
	struct kh_event *e;

	__u32 parent_tgid = (__u32)parent->tgid, child_tgid = (__u32)child->tgid;
	__u8 one = 1;

	if (!traced_tgid || child_tgid == parent_tgid)
		return 0;
	if (parent_tgid != traced_tgid &&
	    (!protect_forks || !bpf_map_lookup_elem(&untraced_family, &parent_tgid)))
		return 0;
	/*
	 * A child sharing the parent's memory (vfork, posix_spawn) only
	 * execs or exits: unprotected it runs no site of the parent's, and
	 * followed it is named at its exec (kh_follow_exec).
	 */
	if (BPF_CORE_READ(child, mm) == BPF_CORE_READ(parent, mm)) {
		if (!protect_forks)
			bpf_map_update_elem(&vfork_children, &child_tgid, &one, BPF_ANY);
		return 0;
	}
	if (protect_forks)
		bpf_map_update_elem(&untraced_family, &child_tgid, &one, BPF_ANY);
	if (!have_send_signal_task) {
		/* Named to khprof once it has stopped (kh_fork_stop). */
		if (bpf_map_update_elem(&fork_stops, &child_tgid, &one, BPF_ANY))
			count_drop(KH_OUTSIDE_SLOT, KH_DROP_RINGBUF_FULL);
		return 0;
	}
	e = fork_event(child_tgid);
	if (!e)
		return 0;
	if (bpf_send_signal_task(child, SIGSTOP, PIDTYPE_TGID, 0) != 0) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/*
 * The current task, when marked in marks (its tgid, once): stopped with
 * bpf_send_signal, which any kernel has for the current task, and named
 * to khprof after the stop is pending, so khprof's SIGCONT cannot come
 * before it.
 */
static __always_inline int stop_current_if_marked(void *marks, __u32 tgid)
{
	struct kh_event *e;

	if (!bpf_map_lookup_elem(marks, &tgid))
		return 0;
	bpf_map_delete_elem(marks, &tgid);
	e = fork_event(tgid);
	if (!e)
		return 0;
	if (bpf_send_signal(SIGSTOP) != 0) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/*
 * A vforked child's execve succeeded: stopped before the new program's
 * first instruction, and followed from there like a forked child.  It is
 * the current task here, so bpf_send_signal stops it on every kernel.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(kh_follow_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	return stop_current_if_marked(&vfork_children, (__u32)task->tgid);
}

/*
 * A traced process that sends itself SIGSTOP: util-linux's nsenter (and
 * other "continue as child" wrappers) waits for its child with WUNTRACED
 * and stops itself when the child stops, for a job-control shell to
 * resume, so the stop khprof puts a child in at its fork or execve stops
 * the parent too, and nobody resumes it.  khprof is told (on the control
 * ring, as the stops themselves), and resumes the parent of a child it
 * stopped; its pending SIGSTOP is dropped by that SIGCONT, whichever comes
 * first.  Loaded where forks are stopped.
 */
SEC("tp_btf/signal_generate")
int BPF_PROG(kh_self_stop, int sig, struct kernel_siginfo *info, struct task_struct *task,
	     int group, int result)
{
	struct kh_event *e;

	if (sig != SIGSTOP || !traced_tgid || (__u32)task->tgid != traced_tgid ||
	    (__u32)(bpf_get_current_pid_tgid() >> 32) != traced_tgid)
		return 0;
	e = bpf_ringbuf_reserve(&control, sizeof(*e), 0);
	if (!e) {
		count_drop(KH_OUTSIDE_SLOT, KH_DROP_RINGBUF_FULL);
		return 0;
	}
	fill_event(e, KH_EVENT_SELF_STOP, KH_OUTSIDE_SLOT);
	event_submit(e);
	return 0;
}

/*
 * Before Linux 6.13, no BPF program can signal another task, so a child
 * kh_follow_fork marked stops itself: every task returning from a system
 * call passes sys_exit while a program is attached there, the child first
 * as it returns from fork, before its first user instruction.  Loaded
 * only on those kernels (kfeatures.c): attached, every
 * system call of every process takes the tracepoint's slow path.
 */
SEC("tp_btf/sys_exit")
int BPF_PROG(kh_fork_stop, struct pt_regs *regs, long ret)
{
	return stop_current_if_marked(&fork_stops, (__u32)(bpf_get_current_pid_tgid() >> 32));
}
