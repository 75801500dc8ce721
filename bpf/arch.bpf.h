/* SPDX-License-Identifier: GPL-2.0 */
/*
 * arch.bpf.h - the registers of the machine the object is built for
 * (-D__TARGET_ARCH_x86 or arm64, the Makefile's ARCH): one file per
 * architecture beside the others, as usdt/ keeps its argument specs.
 * Each defines, in 64-bit words of the registers a uprobe or a perf event
 * hands its program (the user registers, which on both architectures
 * begin the kernel's struct pt_regs and are all of bpf_perf_event_data's
 * regs, a user ABI: read by index, with no CO-RE relocation):
 *
 *   KH_REGS_WORDS   the words an argument spec may name (usdt/'s reg_off / 8)
 *   KH_REGS_IP      the instruction pointer
 *   KH_REGS_SP      the stack pointer
 *   KH_REGS_LR      the link register, where there is one (aarch64's x30)
 *   kh_regs_user(r) whether the registers r were taken in user mode
 */
#ifndef KHPROF_ARCH_BPF_H
#define KHPROF_ARCH_BPF_H

#if defined(__TARGET_ARCH_x86)
#include "arch_x86.bpf.h"
#elif defined(__TARGET_ARCH_arm64)
#include "arch_arm64.bpf.h"
#else
#error "khprof's BPF side knows the registers of x86 and arm64 (-D__TARGET_ARCH_x86 or arm64)"
#endif

#endif
