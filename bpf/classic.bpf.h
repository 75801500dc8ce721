/* SPDX-License-Identifier: GPL-2.0 */
/*
 * classic.bpf.h - part of khprof.bpf.c, included first: what differs in
 * the object built for kernels without bpf_loop (Linux 5.17; Debian 11's
 * 5.10), the same source compiled a second time with -DKH_CLASSIC
 * (build/bpf/khprof_classic.bpf.o).  The loader picks that object's bytes
 * for khprof's one skeleton where bpf_loop is missing
 * (userspace/capture/kernel/load.c); the build checks that both objects
 * give the same skeleton, so globals, maps and programs never differ,
 * only code.
 *
 * A .rodata flag cannot stand in here: a kernel that predates bpf_loop
 * also predates the callback reference it takes (BPF_PSEUDO_FUNC, 5.13),
 * which its verifier refuses before it looks for dead code.  So:
 *  - kh_loop is a bounded loop (the verifier walks every iteration; each
 *    loop's bound is its caller's, KH_CLASSIC_THREADS for the walk over a
 *    process's threads, whose bpf_loop allows 65,536);
 *  - KH_GLOBAL functions are static: 5.10's global functions take no
 *    pointer but the context (pointers came in 5.12);
 *  - the current task is bpf_get_current_task(), read with BPF_CORE_READ
 *    (bpf_get_current_task_btf is 5.11);
 *  - kfuncs (5.13) are never called.
 * On kernels with bpf_loop none of this is compiled in.
 */
#ifndef KHPROF_CLASSIC_BPF_H
#define KHPROF_CLASSIC_BPF_H

#ifdef KH_CLASSIC
/* Live threads a process CPU sample sums (process_cpu_ns); more are not counted. */
#ifndef KH_CLASSIC_THREADS
#define KH_CLASSIC_THREADS 256
#endif
/* CPUs whose per-CPU offsets and RSS parts are read (layout.bpf.h). */
#ifndef KH_CLASSIC_CPUS
#define KH_CLASSIC_CPUS 1024
#endif
/*
 * Batched spans given their off-CPU split (add_batch_offcpu): none.  Each
 * walks the thread's 64 logged switches, and the two loops nested took
 * kh_usdt past the verifier's 1,000,000 instructions already at 8 spans
 * (measured on 6.18); a span-mode span's one walk fits.
 */
#define KH_CLASSIC_OFFCPU_SPANS 0
/*
 * Off-CPU intervals a span-mode span sums (latency.bpf.h): each one a
 * copy of the walk's body for the verifier; a span with more is counted
 * as truncated.
 */
#define KH_OFFCPU_WALK 64

/* cb(i, ctx) for i below n and max, until it returns nonzero, as bpf_loop does. */
#define kh_loop(max, n, cb, ctx)                                                             \
	({                                                                                     \
		__u32 __kh_n = (n);                                                            \
		for (__u32 __kh_i = 0; __kh_i < (max); __kh_i++)                               \
			if (__kh_i >= __kh_n || cb(__kh_i, ctx))                               \
				break;                                                         \
		0;                                                                             \
	})
#define KH_GLOBAL static
/* No batch path: khprof traces in span mode with this object (kh_usdt). */
#define KH_BATCH_PATH 0
#define kh_current_task() ((struct task_struct *)bpf_get_current_task())
#define KH_TASK_READ(task, field) BPF_CORE_READ(task, field)
#else
#define kh_loop(max, n, cb, ctx) bpf_loop(n, cb, ctx, 0)
#define KH_GLOBAL
#define KH_BATCH_PATH 1
#define kh_current_task() bpf_get_current_task_btf()
#define KH_TASK_READ(task, field) ((task)->field)
#endif

#endif /* KHPROF_CLASSIC_BPF_H */
