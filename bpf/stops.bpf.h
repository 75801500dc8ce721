/* SPDX-License-Identifier: MIT */
/*
 * The one way a program of khprof's stops a process: kh_stop().  A process
 * is stopped (SIGSTOP) to be caught before it runs on: at the loader until
 * a library's probes are attached, at a watched file's start (attach
 * --exe), at a fork until the child is made safe or followed, after a
 * vforked child's execve.  khprof lets it go with SIGCONT; if khprof is
 * stuck or dies first, its stop keeper does (userspace/capture/stops/).
 *
 * So that the keeper can, every stop is first entered in kh_stops and
 * noted in kh_stop_notes, both shared by every tracer of one khprof and
 * its keeper (the loader reuses the keeper's maps: load.c); a stop whose
 * entry or note cannot be made is not made, and the process runs on
 * (counted as ringbuf_full, as a control event that could not be sent).
 * Without a keeper (stops_kept unset) nothing is ever stopped.
 * Included by khprof.bpf.c.
 */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, KH_STOPS_MAX);
	__type(key, struct kh_stop_key);
	__type(value, struct kh_stop);
} kh_stops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, KH_STOP_NOTES_BYTES);
} kh_stop_notes SEC(".maps");

/* Set by the loader when the maps above are its keeper's (load.c). */
const volatile __u32 stops_kept = 0;
/*
 * khprof's PID namespace, by its inode number, when it is not the
 * initial one (capture/ns/pid_map.c): 0, a task's pid is khprof's too.
 */
const volatile __u32 stops_pidns_inum = 0;

/*
 * The pid khprof sees task's process as: its tgid's number at the level
 * of khprof's namespace (namespaces nest at most 32 deep); 0 when khprof
 * cannot see it, and then nothing may stop it: nobody could let it go.
 */
static __always_inline __u32 kh_local_tgid(struct task_struct *task, __u32 tgid)
{
	struct pid *pid;
	struct upid up;
	unsigned int level;

	if (!stops_pidns_inum)
		return tgid;
	pid = BPF_CORE_READ(task, group_leader, thread_pid);
	level = BPF_CORE_READ(pid, level);
	for (unsigned int i = 0; i < 32 && i <= level; i++)
		if (bpf_probe_read_kernel(&up, sizeof(up), &pid->numbers[i]) == 0 &&
		    BPF_CORE_READ(up.ns, ns.inum) == stops_pidns_inum)
			return (__u32)up.nr;
	return 0;
}

/*
 * Enters a stop of task (NULL: the current task) for e, a reserved
 * control event that names it, with e's time as the stamp, and sends
 * SIGSTOP when send says so (on any kernel for the current task; another
 * needs bpf_send_signal_task, Linux 6.13); without, the process stops
 * itself (KH_STOP_SELF).  0 once the entry is made, the keeper told and
 * the signal sent, e's stop_kind set; else nothing was done and the caller
 * submits e as an event without a stop, or drops it.
 */
static __always_inline int kh_stop_enter(struct task_struct *task, struct kh_event *e,
					 __u32 tgid, enum kh_stop_kind kind, bool send)
{
	struct task_struct *stopped = task ? task : kh_current_task();
	struct kh_stop stop = {};
	struct kh_stop *note;
	long err = 0;

	if (!stops_kept)
		return -1;
	stop.local_tgid = kh_local_tgid(stopped, tgid);
	if (!stop.local_tgid)
		return -1;
	note = bpf_ringbuf_reserve(&kh_stop_notes, sizeof(*note), 0);
	if (!note) {
		count_drop(KH_OUTSIDE_SLOT, KH_DROP_RINGBUF_FULL);
		return -1;
	}
	stop.key.tgid = tgid;
	stop.key.kind = kind;
	stop.key.stamp_ns = e->ts_ns;
	stop.start_boottime_ns = BPF_CORE_READ(stopped, start_boottime);
	/* A second stop of the process in the same ns: the first one holds it. */
	if (bpf_map_update_elem(&kh_stops, &stop.key, &stop, BPF_NOEXIST)) {
		bpf_ringbuf_discard(note, 0);
		return -1;
	}
	if (send)
		err = task ? bpf_send_signal_task(task, SIGSTOP, PIDTYPE_TGID, 0)
			   : bpf_send_signal(SIGSTOP);
	if (err) {
		bpf_map_delete_elem(&kh_stops, &stop.key);
		bpf_ringbuf_discard(note, 0);
		return -1;
	}
	*note = stop;
	/* The keeper times every stop from its note: wake it now. */
	bpf_ringbuf_submit(note, BPF_RB_FORCE_WAKEUP);
	e->stop_kind = kind;
	return 0;
}

/* Stops task (NULL: the current one) for e: kh_stop_enter with SIGSTOP. */
static __always_inline int kh_stop(struct task_struct *task, struct kh_event *e, __u32 tgid,
				   enum kh_stop_kind kind)
{
	return kh_stop_enter(task, e, tgid, kind, true);
}
