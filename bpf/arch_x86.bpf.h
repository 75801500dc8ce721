/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86-64's registers (arch.bpf.h): struct pt_regs, r15 first, ss last,
 * 168 bytes.  usdt/usdt_x86_64.c names the same offsets.
 */
#ifndef KHPROF_ARCH_X86_BPF_H
#define KHPROF_ARCH_X86_BPF_H

#define KH_REGS_WORDS 21
#define KH_REGS_IP 16
#define KH_REGS_CS 17
#define KH_REGS_SP 19

/* The ring the registers were taken in, from CS, read whole (a 2-byte context read is refused). */
static __always_inline bool kh_regs_user(const __u64 *regs)
{
	return (regs[KH_REGS_CS] & 3) == 3;
}

#endif
