/* SPDX-License-Identifier: GPL-2.0 */
/*
 * compat.bpf.h - part of khprof.bpf.c: what the BPF side uses from kernels
 * newer than Linux 6.1 (the classic object of bpf/classic.bpf.h does
 * without them before 5.17), each behind a flag the loader sets
 * from the running kernel before load (userspace/capture/kernel/kfeatures.c).
 *
 * The kfuncs are weak: libbpf leaves a call to one the kernel lacks as an
 * invalid call (imm 0), and the verifier accepts it as long as the flag's
 * branch around it is dead, which it proves from the frozen .rodata
 * (Linux 5.16 and later).  So one object loads everywhere, and on a new
 * kernel the flags cost nothing: the dead branches are removed before JIT.
 */
#ifndef KHPROF_COMPAT_BPF_H
#define KHPROF_COMPAT_BPF_H

/* Set by the loader before load (enum kh_kernel_feature, features.h). */
const volatile bool have_preempt_kfuncs = 0;     /* Linux 6.10 */
/* Set with it where the verifier lets kh_usdt call on with preemption off (6.15). */
const volatile bool probes_preempt_off = 0;
const volatile bool have_rdonly_cast = 0;        /* Linux 6.2 */
const volatile bool have_copy_from_user_str = 0; /* Linux 6.12 */
const volatile bool have_send_signal_task = 0;   /* Linux 6.13 */
const volatile bool have_uprobe_func_ip = 0;     /* Linux 6.4 */
const volatile bool have_percpu_rss = 0;         /* Linux 6.2: mm's RSS counters per CPU */
/*
 * Without uprobe-multi links each site is a perf-event uprobe, whose BPF
 * programs run for every process that maps the file and passes any
 * tracer's filter: kh_usdt then keeps to traced_tgid itself.
 */
const volatile bool filter_tgid = 0;

/*
 * The object for kernels without bpf_loop (classic.bpf.h) calls no kfunc:
 * kfuncs came in Linux 5.13, and so do the flags' values the loader sets
 * there (every one of these kernels lacks).
 */
#ifdef KH_CLASSIC
#define bpf_preempt_disable() ((void)0)
#define bpf_preempt_enable() ((void)0)
#define bpf_copy_from_user_str(dst, size, src, flags) (-1)
#define bpf_rdonly_cast(obj, btf_id) ((void *)(obj))
#define bpf_send_signal_task(task, sig, type, value) (-1)
#endif

/*
 * Uprobe programs run with migration disabled but preemption enabled, so a
 * per-CPU read-modify-write could interleave with another traced thread on
 * the same CPU.  Disabling preemption around the update keeps every count
 * exact without atomic instructions.  Kernels without these kfuncs that run
 * preempt=none or voluntary never preempt a BPF program; on one that runs
 * preempt=full the loader names the risk (features.c).
 */
#ifndef KH_CLASSIC
extern void bpf_preempt_disable(void) __ksym __weak;
extern void bpf_preempt_enable(void) __ksym __weak;
#endif

static __always_inline void kh_preempt_disable(void)
{
	if (have_preempt_kfuncs)
		bpf_preempt_disable();
}

static __always_inline void kh_preempt_enable(void)
{
	if (have_preempt_kfuncs)
		bpf_preempt_enable();
}

/*
 * Around a whole uprobe program's body (bpf/khprof.bpf.c, before kh_usdt
 * says why); a no-op where the verifier refuses the global subprograms
 * the body calls (libbpf's bpf_usdt_arg) with preemption off, before 6.15.
 */
static __always_inline void kh_probe_preempt_disable(void)
{
	if (probes_preempt_off)
		bpf_preempt_disable();
}

static __always_inline void kh_probe_preempt_enable(void)
{
	if (probes_preempt_off)
		bpf_preempt_enable();
}

/*
 * bpf_copy_from_user_str (sleepable programs) faults a string's pages in;
 * bpf_probe_read_user_str fails on a page the program never touched (a
 * literal in .rodata).  Without the kfunc, a one-byte bpf_copy_from_user
 * (sleepable programs, Linux 5.10) faults in the page the string starts
 * on, then the one it goes on into, and the read is tried again: khprof
 * reading the string later could find the process gone.  Sleepable
 * programs only (kh_usdt_identity).
 */
#ifndef KH_CLASSIC
extern int bpf_copy_from_user_str(void *dst, __u32 dst__sz, const void *unsafe_ptr__ign,
				  __u64 flags) __ksym __weak;
#endif

static __always_inline int kh_read_user_str(char *dst, __u32 size, const void *src)
{
	__u64 next = ((__u64)src | 4095) + 1;
	char byte;
	int n;

	if (have_copy_from_user_str)
		return bpf_copy_from_user_str(dst, size, src, 0);
	n = bpf_probe_read_user_str(dst, size, src);
#ifdef KH_CLASSIC
	/* Not sleepable there (sleepable uprobes are 6.1): khprof reads what failed (on_identity). */
	return n;
#endif
	if (n >= 0 || bpf_copy_from_user(&byte, 1, src))
		return n;
	n = bpf_probe_read_user_str(dst, size, src);
	if (n >= 0 || next - (__u64)src >= size || bpf_copy_from_user(&byte, 1, (void *)next))
		return n;
	return bpf_probe_read_user_str(dst, size, src);
}

/*
 * Plain loads through an untrusted pointer (bpf_rdonly_cast, Linux 6.2);
 * elsewhere the same fields are read with bpf_probe_read_kernel.  Few
 * kfuncs: libbpf 1.1 finds each one by a linear search of the kernel's
 * BTF, about 1 ms apiece here, paid at every start.
 */
#ifndef KH_CLASSIC
extern void *bpf_rdonly_cast(const void *obj__ign, __u32 btf_id__k) __ksym __weak;
#endif

/*
 * A task's mm through an untrusted copy of the pointer: each pointer
 * loaded from a trusted one costs the verifier up to four searches of the
 * kernel's BTF by name (btf_nested_type_is_trusted), a linear scan here;
 * with the casts, verifying kh_rss_stat took 0.43 ms instead of 1.14 and
 * kh_usdt 9.7 instead of 10.5 (medians of 9 loads, log_level 4 statistics).
 */
static __always_inline struct mm_struct *kh_task_mm(struct task_struct *task)
{
	struct task_struct *untrusted;

	if (!have_rdonly_cast)
		return BPF_CORE_READ(task, mm);
	untrusted = bpf_rdonly_cast(task, KERNEL_TYPE_ID(task_struct));
	return untrusted->mm;
}

/*
 * Where the probe that is running sits: bpf_get_func_ip (uprobes since
 * Linux 6.4); before that, the uprobe handler has already set the
 * registers' ip back to the breakpoint's address.
 */
static __always_inline __u64 kh_probe_ip(struct pt_regs *ctx)
{
	if (have_uprobe_func_ip)
		return bpf_get_func_ip(ctx);
	return ((const __u64 *)ctx)[KH_REGS_IP]; /* arch.bpf.h */
}

/*
 * sched_switch's prev_state argument (Linux 5.18); before it the task's
 * own state, which the scheduler has not changed yet at the tracepoint
 * (__state since 5.14, state before).  A BPF_PROG that declares the
 * argument reads it at entry, which older verifiers refuse ("doesn't have
 * 4-th argument"), so it is read here behind the flag.
 */
const volatile bool have_switch_prev_state = 0;

struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int kh_switch_prev_state(unsigned long long *ctx,
							 struct task_struct *prev)
{
	if (have_switch_prev_state)
		return (unsigned int)ctx[3];
	if (bpf_core_field_exists(prev->__state))
		return BPF_CORE_READ(prev, __state);
	return (unsigned int)BPF_CORE_READ((struct task_struct___pre514 *)prev, state);
}

#ifndef KH_CLASSIC
extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type,
				__u64 value) __ksym __weak;
#endif

#endif /* KHPROF_COMPAT_BPF_H */
