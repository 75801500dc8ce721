/* SPDX-License-Identifier: MIT */
/*
 * keyhog_profile_arm64.h - aarch64's part of keyhog_profile.h, which
 * includes it (never include it yourself): the probed instruction of a
 * site, the counter batched spans are timed with, a raw system call.
 * keyhog_profile_x86_64.h is x86-64's, beside it; usdt/usdt_arm64.c reads
 * what these sites write.
 */
#ifndef KEYHOG_PROFILE_ARM64_H
#define KEYHOG_PROFILE_ARM64_H

#define KH__ARCH_SITES 1

/*
 * The probed instruction, at local label 990, which the note names: a
 * NOP, which the kernel replaces with a BRK and, hit, emulates or steps
 * out of line.  Nothing is written below sp: the BRK's exception saves
 * the registers on the kernel's stack, and aarch64 has no call-rewriting
 * uprobe path like x86-64's.  AAPCS64 has no red zone either (a leaf
 * function keeps nothing below sp), so the site needs no stack move, and
 * every site is the same 4-byte NOP.
 */
#define KH__SITE_INSN(nop) "990: " nop "\n\t"
#define KH__NOP_HOT "nop"
#define KH__NOP_RARE "nop"
/* An argument: a register or an immediate, printed "x0" or "5" (usdt/usdt_arm64.c). */
#define KH__ARG "nr"
/* The clock_monotonic site's jump over its nop (to local label 995). */
#define KH__JUMP_OVER "b 995f\n\t"
/* What starts a comment to the assembler ('#' begins an immediate here). */
#define KH__ASM_COMMENT "//"

/*
 * CNTVCT_EL0, the generic timer's count, with KH_TIME_TSC set: the counter
 * the vDSO's clock_gettime reads, without its conversion and the isb
 * before it, as x86-64 reads the TSC without serialising: a few cycles of
 * reordering at the edges, far below the bias the tracer removes.  It
 * ticks at CNTFRQ_EL0 (25 MHz to 1 GHz: 1 to 40 ns a tick), constant by
 * the architecture; khprof measures the rate and decides, from evidence,
 * whether to use it (docs/PROBES.md).
 */
static inline uint64_t kh__tsc(void)
{
	uint64_t v;

	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v | KH_TIME_TSC;
}

/* A system call without libc (kh__copy_identity says why): the kernel's ABI. */
static inline long kh__syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b, x2 __asm__("x2") = c, x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e, x5 __asm__("x5") = f;

	__asm__ __volatile__("svc #0"
			     : "+r"(x0)
			     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			     : "memory");
	return x0;
}

#endif /* KEYHOG_PROFILE_ARM64_H */
