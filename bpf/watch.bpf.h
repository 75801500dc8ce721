/* SPDX-License-Identifier: GPL-2.0 */
/*
 * watch.bpf.h - part of khprof.bpf.c: attach --all's watcher of every
 * execve on the host.  A process that execs a file not known to be plain
 * (without keyhog probes, nor libraries that have them) is named to khprof
 * and stopped before its first instruction, by the same loader_stop as a
 * loader event and attach --exe's start; khprof looks at the file, attaches
 * a tracer if it carries probes, and resumes it.  A file found plain is
 * kept in plain_files, so that its later execs cost one lookup here and no
 * stop.  Loaded only for that watcher (capture/kernel/load.c).  Included
 * before loader_stop, which keeps a scoped watcher to its cgroup.
 */
#ifndef KHPROF_WATCH_BPF_H
#define KHPROF_WATCH_BPF_H

/* Defined in khprof.bpf.c: the one stop of the BPF side. */
static __always_inline int loader_stop(__u64 arg0, __u64 arg1);

/*
 * --container: the cgroup (v2) below which alone a watcher names and stops
 * processes, so that the host's others are never stopped (watch_scoped 0:
 * every process).  Checked in loader_stop, where a tracer of one process
 * leaves it 0.
 */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} watch_scope SEC(".maps");
__u32 watch_scoped = 0;

static __always_inline bool watch_in_scope(void)
{
	return !watch_scoped || bpf_current_task_under_cgroup(&watch_scope, 0) == 1;
}

/*
 * Files khprof found plain.  LRU: one pushed out is looked at once more at
 * its next exec (a stop of a millisecond or so), never traced wrongly.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct kh_file_key);
	__type(value, __u8);
} plain_files SEC(".maps");

/* khprof itself: its own execs (none today) are never stopped by it. */
__u32 watcher_tgid = 0;

SEC("tp_btf/sched_process_exec")
int BPF_PROG(kh_exec_start, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	struct kh_file_key key = {};
	struct inode *inode;

	if ((__u32)task->tgid == watcher_tgid)
		return 0;
	/* The file now running: a script's interpreter, not the script. */
	inode = BPF_CORE_READ(bprm, file, f_inode);
	key.ino = BPF_CORE_READ(inode, i_ino);
	key.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	key.generation = BPF_CORE_READ(inode, i_generation);
	if (bpf_map_lookup_elem(&plain_files, &key))
		return 0;
	return loader_stop((__u64)key.dev << 32 | key.generation, key.ino);
}

#endif /* KHPROF_WATCH_BPF_H */
