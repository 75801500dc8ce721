/* SPDX-License-Identifier: MIT */
/*
 * record --follow-forks: a new process forked by the traced one (clone
 * without CLONE_THREAD) is stopped before its first user instruction and
 * named to khprof, which attaches a tracer of its own to it and then sends
 * SIGCONT (userspace/cmd/follow.c).  Not loaded unless asked for, so that
 * a default start-up pays nothing for it.  Included by khprof.bpf.c.
 */

extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type,
				__u64 value) __ksym;

/*
 * sched_process_fork fires in kernel_clone() after copy_process() and
 * before wake_up_new_task(): the stop is pending before the child runs.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(kh_follow_fork, struct task_struct *parent, struct task_struct *child)
{
	struct kh_event *e;

	if (!traced_tgid || parent->tgid != (pid_t)traced_tgid || child->tgid == parent->tgid)
		return 0;
	/*
	 * A child sharing the parent's memory (vfork, posix_spawn) only
	 * execs or exits; its new program would not be traced anyway.
	 */
	if (child->mm == parent->mm)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
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
	e->arg0 = (__u64)child->tgid;
	if (bpf_send_signal_task(child, SIGSTOP, PIDTYPE_TGID, 0) != 0) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	bpf_ringbuf_submit(e, 0);
	return 0;
}
