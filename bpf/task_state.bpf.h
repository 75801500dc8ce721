/* SPDX-License-Identifier: GPL-2.0 */
/*
 * task_state.bpf.h - part of khprof.bpf.c: per-thread state where the
 * kernel has no task-local storage (BPF_MAP_TYPE_TASK_STORAGE, Linux 5.11;
 * Debian 11's 5.10 lacks it).
 *
 * The maps stay declared as task storage; on such a kernel the loader makes
 * them hash maps keyed by thread id before the load (bpf_map__set_type,
 * userspace/capture/kernel/load.c) and clears have_task_storage, so the
 * verifier keeps one branch of each accessor below and the helpers of the
 * other (unknown to 5.10) never reach it.  Task storage is freed by the
 * kernel when its task ends; the hash entries are deleted by the thread's
 * exit program (kh_task_state_exit, from thread_end), which every mode
 * loads.  Cost where used: a hash lookup instead of a task-storage one at
 * each flush, 2.3 ns a batched span here (thread_ends.bpf.h measured it).
 *
 * Every caller passes the current task (uprobes, and the exit, exec and
 * do_exit hooks, which run in the thread concerned), so the hash key is
 * the current thread id: bpf_get_current_pid_tgid works on every kernel,
 * where a read of task->pid through a BTF pointer needs
 * bpf_get_current_task_btf (Linux 5.11) in uprobes.
 */
#ifndef KHPROF_TASK_STATE_BPF_H
#define KHPROF_TASK_STATE_BPF_H

/* Set by the loader before load (KH_FEAT_TASK_STORAGE, kfeatures.h). */
const volatile bool have_task_storage = 0;

/*
 * A new thread's first value in the hash maps: zero, as task storage
 * starts.  Read only; sized for the larger of the two values.
 */
#define KH_TASK_STATE_ZERO_BYTES                                                             \
	(sizeof(struct kh_task_stack) > sizeof(struct kh_thread_info)                          \
		 ? sizeof(struct kh_task_stack) : sizeof(struct kh_thread_info))
const volatile char kh_task_state_zero[KH_TASK_STATE_ZERO_BYTES] = {};

static __always_inline __u32 kh_current_tid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

/*
 * bpf_task_storage_get for the current task, on either kind of map;
 * flags as bpf_task_storage_get's (BPF_LOCAL_STORAGE_GET_F_CREATE).  A
 * full hash map (KH_MAX_THREADS threads at once) fails the creation as a
 * busy task storage does: the callers count it.
 */
static __always_inline void *kh_task_state_get(void *map, struct task_struct *task, __u64 flags)
{
	__u32 tid;
	void *value;

	if (have_task_storage)
		return bpf_task_storage_get(map, task, 0, flags);
	tid = kh_current_tid();
	value = bpf_map_lookup_elem(map, &tid);
	if (value || !(flags & BPF_LOCAL_STORAGE_GET_F_CREATE))
		return value;
	bpf_map_update_elem(map, &tid, (const void *)kh_task_state_zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, &tid);
}

/* bpf_task_storage_delete for the current task, on either kind of map. */
static __always_inline void kh_task_state_delete(void *map, struct task_struct *task)
{
	__u32 tid;

	if (have_task_storage) {
		bpf_task_storage_delete(map, task);
		return;
	}
	tid = kh_current_tid();
	bpf_map_delete_elem(map, &tid);
}

/*
 * The current thread ends: its entries in the hash maps go (task storage
 * goes with the task by itself).
 */
static __always_inline void kh_task_state_exit(void *thread_map, void *stack_map)
{
	__u32 tid;

	if (have_task_storage)
		return;
	tid = kh_current_tid();
	bpf_map_delete_elem(thread_map, &tid);
	bpf_map_delete_elem(stack_map, &tid);
}

#endif /* KHPROF_TASK_STATE_BPF_H */
