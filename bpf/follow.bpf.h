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

extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type,
				__u64 value) __ksym;

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

__u32 protect_forks;

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

/* Stops task before its next user instruction and names it to khprof as a fork. */
static __always_inline int name_stopped_child(struct task_struct *task, __u32 tgid)
{
	struct kh_event *e = bpf_ringbuf_reserve(&control, sizeof(*e), 0);

	if (!e) {
		/* khprof would never resume it: leave the child running, untraced. */
		count_drop(KH_OUTSIDE_SLOT, KH_DROP_RINGBUF_FULL);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = KH_EVENT_FORK;
	e->pid = traced_tgid;
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->slot = KH_OUTSIDE_SLOT;
	e->ts_ns = bpf_ktime_get_ns();
	e->arg0 = (__u64)tgid;
	if (bpf_send_signal_task(task, SIGSTOP, PIDTYPE_TGID, 0) != 0) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/*
 * sched_process_fork fires in kernel_clone() after copy_process() and
 * before wake_up_new_task(): the stop is pending before the child runs.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(kh_follow_fork, struct task_struct *parent, struct task_struct *child)
{
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
	return name_stopped_child(child, child_tgid);
}

/*
 * A vforked child's execve succeeded: stopped before the new program's
 * first instruction, and followed from there like a forked child.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(kh_follow_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = (__u32)task->tgid;

	if (!bpf_map_lookup_elem(&vfork_children, &tgid))
		return 0;
	bpf_map_delete_elem(&vfork_children, &tgid);
	return name_stopped_child(task, tgid);
}
