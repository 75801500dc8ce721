/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pidns.bpf.h - part of khprof.bpf.c: khprof in a PID namespace of its own
 * (a container without the host's, a pod's shared one).  The kernel's
 * programs see every task by its pid in the initial namespace, khprof by
 * its pid in its own: this iterator gives each task khprof can see both,
 * so that the loader translates once where pids cross (capture/ns/
 * pid_map.c).  Loaded only there: in the initial namespace the two are one.
 */
#ifndef KHPROF_PIDNS_BPF_H
#define KHPROF_PIDNS_BPF_H

/* Namespaces nest at most 32 deep (MAX_PID_NS_LEVEL). */
#define KH_PID_NS_LEVEL_MAX 32

SEC("iter/task")
int kh_pid_map(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	/* bpf_get_current_task_btf came with Linux 5.11: the untyped one on 5.10. */
	struct task_struct *me = (struct task_struct *)bpf_get_current_task();
	struct kh_pid_pair pair;
	struct pid *mine, *theirs;
	struct upid mine_up, up;
	unsigned int level;

	if (!task)
		return 0;
	mine = BPF_CORE_READ(me, thread_pid);
	theirs = BPF_CORE_READ(task, thread_pid);
	level = BPF_CORE_READ(mine, level);
	if (!mine || !theirs || level > KH_PID_NS_LEVEL_MAX || BPF_CORE_READ(theirs, level) < level)
		return 0;
	/* Its pid at khprof's level, when that level is khprof's namespace. */
	if (bpf_probe_read_kernel(&mine_up, sizeof(mine_up), &mine->numbers[level]) ||
	    bpf_probe_read_kernel(&up, sizeof(up), &theirs->numbers[level]) || up.ns != mine_up.ns)
		return 0;
	pair.kernel_tid = (__u32)BPF_CORE_READ(task, pid);
	pair.local_tid = (__u32)up.nr;
	bpf_seq_write(ctx->meta->seq, &pair, sizeof(pair));
	return 0;
}

#endif /* KHPROF_PIDNS_BPF_H */
