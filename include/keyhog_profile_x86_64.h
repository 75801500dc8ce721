/* SPDX-License-Identifier: MIT */
/*
 * keyhog_profile_x86_64.h - x86-64's part of keyhog_profile.h, which
 * includes it (never include it yourself): the probed instruction of a
 * site, the counter batched spans are timed with, a raw system call.
 * keyhog_profile_arm64.h is aarch64's, beside it; usdt/usdt_x86_64.c
 * reads what these sites write.
 */
#ifndef KEYHOG_PROFILE_X86_64_H
#define KEYHOG_PROFILE_X86_64_H

#define KH__ARCH_SITES 1

/*
 * The probed instruction, at local label 990, which the note names.  On
 * hot sites it is a 5-byte nop so the kernel can use its optimized-uprobe
 * path (a call into a trampoline instead of a trap; KH__NOP_HOT below).
 * That call pushes a return address below %rsp, where a leaf function may
 * keep locals (the x86-64 red zone), so the site first moves %rsp below
 * the red zone and restores it afterwards.  Operands are registers or
 * immediates only (KH__ARG): an %rsp-relative operand would be 128 bytes
 * off inside the site.
 */
#define KH__SITE_INSN(nop)                                                     \
	"lea -128(%%rsp), %%rsp\n\t"                                           \
	"990: " nop "\n\t"                                                     \
	"lea 128(%%rsp), %%rsp\n\t"

/*
 * Hot sites get a 5-byte nop, which the kernel rewrites at the first hit
 * into a call to its uprobe trampoline: each later hit is ~140 ns cheaper
 * than a trap here, but the rewrite costs the program ~31 us once.  Sites
 * hit a handful of times per session (session events, identity,
 * transitions) keep the classic 1-byte nop and its trap.
 */
#define KH__NOP_HOT ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00"
#define KH__NOP_RARE "nop"
/* An argument: a register or an immediate, printed "%rdi" or "$5". */
#define KH__ARG "nr"
/* The clock_monotonic site's jump over its nop (to local label 995). */
#define KH__JUMP_OVER "jmp 995f\n\t"
/* What starts a comment to the assembler (KH__GROUP's section name). */
#define KH__ASM_COMMENT "#"

/*
 * The TSC with KH_TIME_TSC set: ~11 ns here against ~26 for the vDSO's
 * CLOCK_MONOTONIC.  Not serialising: a few cycles of reordering at the
 * edges, far below the bias the tracer removes.
 */
static inline uint64_t kh__tsc(void)
{
	return __builtin_ia32_rdtsc() | KH_TIME_TSC;
}

/* A system call without libc (kh__copy_identity says why): the kernel's ABI. */
static inline long kh__syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	long ret;

	__asm__ __volatile__("syscall"
			     : "=a"(ret)
			     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			     : "rcx", "r11", "memory");
	return ret;
}

#endif /* KEYHOG_PROFILE_X86_64_H */
