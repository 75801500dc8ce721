/* SPDX-License-Identifier: GPL-2.0 */
/*
 * aarch64's registers (arch.bpf.h): struct user_pt_regs, x0-x30, sp, pc,
 * pstate, which begins the kernel's struct pt_regs (its own fields come
 * after) and is bpf_perf_event_data's regs.  usdt/usdt_arm64.c names the
 * same offsets.  An argument spec names x0-x30 or sp, so the words copied
 * for one stop at pc: 264 bytes of a program's stack where x86-64 copies
 * 168 (bpf/batch.bpf.h).
 */
#ifndef KHPROF_ARCH_ARM64_BPF_H
#define KHPROF_ARCH_ARM64_BPF_H

#define KH_REGS_WORDS 33
#define KH_REGS_LR 30
#define KH_REGS_SP 31
#define KH_REGS_IP 32
#define KH_REGS_PSTATE 33

/* PSTATE.M[3:0] is EL0t (0) in user mode, AArch32's too (M[4] aside). */
static __always_inline bool kh_regs_user(const __u64 *regs)
{
	return (regs[KH_REGS_PSTATE] & 0xf) == 0;
}

#endif
