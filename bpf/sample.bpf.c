// SPDX-License-Identifier: GPL-2.0
/*
 * sample.bpf.c - the stack sampler of `khprof --sample`: a BPF object of
 * its own, loaded only when asked, so that tracing without it loads and
 * costs what it did.  Its one program runs at each CPU-clock sample of a
 * traced thread (perf events opened per thread with inherit by
 * userspace/capture/stacks/sampler.c), takes the user stack by its frame pointers
 * and tags it with the innermost span the thread has open, read from the
 * thread's own span stack (struct kh_thread_state, probe ABI 4): no kernel
 * entry at the span edges is needed, so it works in every mode.
 *
 * Linux 6.1 is the floor: bpf_get_stack with BPF_F_USER_STACK, task
 * storage, a ring buffer; no kfuncs.  The sample is built in the ring
 * buffer's own memory: the program's stack holds a few words.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "khprof_shared.h"
#include "khprof_sample.h"
#include "arch.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader once the traced process exists. */
__u32 traced_tgid;
/* Samples the ring buffer had no room for. */
__u64 ring_full;

/*
 * khprof.bpf.c's thread_store, shared with bpf_map__reuse_fd: where each
 * thread's kh_thread_state is, learnt from its batch_register probe.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct kh_thread_info);
} thread_store SEC(".maps");

/* 2 MiB: ~3,100 samples, 0.8 s of 999 Hz on 4 threads. */
#define RING_BYTES (2 << 20)
#define WAKE_BYTES (RING_BYTES / 4)
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RING_BYTES);
} samples SEC(".maps");

static __always_inline void tag_of(struct kh_sample_event *e)
{
	struct kh_thread_info *info;
	__u32 head[2], depth;

	info = bpf_task_storage_get(&thread_store, bpf_get_current_task_btf(), 0, 0);
	if (!info || !info->state_addr) {
		e->tag = KH_SAMPLE_TAG_UNREGISTERED;
		return;
	}
	if (bpf_probe_read_user(head, sizeof(head),
				(const void *)(info->state_addr + KH_TS_DEPTH_OFF))) {
		e->tag = KH_SAMPLE_TAG_UNREADABLE;
		return;
	}
	depth = head[0];
	e->attribution = head[1];
	if (depth == 0) {
		e->tag = KH_SAMPLE_TAG_NO_STAGE;
		return;
	}
	if (depth > KH_USER_SPAN_DEPTH) {
		e->tag = KH_SAMPLE_TAG_TOO_DEEP;
		return;
	}
	if (bpf_probe_read_user(&e->stage, sizeof(e->stage),
				(const void *)(info->state_addr + KH_TS_STAGE_OFF +
					       (depth - 1) * sizeof(__u32)))) {
		e->tag = KH_SAMPLE_TAG_UNREADABLE;
		return;
	}
	e->tag = KH_SAMPLE_TAG_STAGE;
}

/*
 * The registers are read as words by index (arch.bpf.h), not as CO-RE
 * fields, so that libbpf loads no kernel BTF for this object (two
 * relocations cost ~85 ms of every --sample start here, the search of the
 * kernel's 126,000 types).
 */

SEC("perf_event")
int kh_sample(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct kh_sample_event *e;
	unsigned long regs;
	long n;

	if (!traced_tgid || (__u32)(id >> 32) != traced_tgid)
		return 0;
	e = bpf_ringbuf_reserve(&samples, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&ring_full, 1);
		return 0;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->tid = (__u32)id;
	e->stage = 0;
	e->attribution = 0;
	/* Where the sample interrupted the thread. */
	e->in_kernel = !kh_regs_user((const __u64 *)ctx);
	tag_of(e);
	/* The user registers, also when the sample interrupted the kernel. */
	regs = (unsigned long)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs || bpf_probe_read_kernel(&e->sp, sizeof(e->sp),
					   (const void *)(regs + KH_REGS_SP * sizeof(__u64))))
		e->sp = 0;
	e->lr = 0;
#ifdef KH_REGS_LR
	/* A leaf's return address, until its prologue stores it (stackstore.c). */
	if (regs && bpf_probe_read_kernel(&e->lr, sizeof(e->lr),
					  (const void *)(regs + KH_REGS_LR * sizeof(__u64))))
		e->lr = 0;
#endif
	if (!e->sp || bpf_probe_read_user(e->words, sizeof(e->words), (const void *)e->sp))
		e->sp = 0;
	n = bpf_get_stack(ctx, e->ips, sizeof(e->ips), BPF_F_USER_STACK);
	e->frames = n < 0 ? (__s32)n : (__s32)(n / sizeof(__u64));
	/*
	 * khprof is woken once a quarter of the ring is full, not at every
	 * sample: at 999 Hz a wakeup per sample would cost it a context switch
	 * a millisecond, on the CPUs the program runs on.  It takes what is
	 * left when a record is written (sampler__drain), so nothing waits.
	 */
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= WAKE_BYTES
				      ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return 0;
}
