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
 * Stops task (NULL: the current task, on any kernel; another task needs
 * bpf_send_signal_task, Linux 6.13) for e, a reserved control event that
 * names it, with e's time as the stop's stamp; e's arg1 says the kind.
 * 0 once the SIGSTOP is sent, the entry made and the keeper told; else
 * nothing was done and the caller submits e as an event without a stop,
 * or drops it.
 */
static __always_inline int kh_stop(struct task_struct *task, struct kh_event *e, __u32 tgid,
				   enum kh_stop_kind kind)
{
	struct kh_stop stop = {};
	struct kh_stop *note;
	long err;

	if (!stops_kept)
		return -1;
	note = bpf_ringbuf_reserve(&kh_stop_notes, sizeof(*note), 0);
	if (!note) {
		count_drop(KH_OUTSIDE_SLOT, KH_DROP_RINGBUF_FULL);
		return -1;
	}
	stop.key.tgid = tgid;
	stop.key.kind = kind;
	stop.key.stamp_ns = e->ts_ns;
	stop.start_boottime_ns = BPF_CORE_READ(task ? task : kh_current_task(), start_boottime);
	/* A second stop of the process in the same ns: the first one holds it. */
	if (bpf_map_update_elem(&kh_stops, &stop.key, &stop, BPF_NOEXIST)) {
		bpf_ringbuf_discard(note, 0);
		return -1;
	}
	err = task ? bpf_send_signal_task(task, SIGSTOP, PIDTYPE_TGID, 0) : bpf_send_signal(SIGSTOP);
	if (err) {
		bpf_map_delete_elem(&kh_stops, &stop.key);
		bpf_ringbuf_discard(note, 0);
		return -1;
	}
	*note = stop;
	/* The keeper times every stop from its note: wake it now. */
	bpf_ringbuf_submit(note, BPF_RB_FORCE_WAKEUP);
	e->arg1 = kind;
	return 0;
}
