// SPDX-License-Identifier: MIT
/*
 * aarch64's probe sites (usdt_arch.h): the no-op a site may be, and the
 * operands of its argument specs as GCC prints them into a stapsdt note:
 * a register ("x0", "w1", "sp"), a constant ("5", "-12", "0x10"), or
 * memory at a register plus an offset ("[sp, 16]", "[x1, -12]", "[x29]").
 * keyhog_profile.h's own sites name registers and constants only;
 * <sys/sdt.h>'s may name memory.  Anything else is refused, as libbpf's
 * usdt.c refuses it (a constant with a '#', a register the BPF side cannot
 * read such as xzr, a pre- or post-indexed address).
 *
 * Compiled into every build, so that the parser is tested on any machine:
 * the registers' offsets are those of struct user_pt_regs (x0-x30, sp,
 * pc, pstate), a user ABI that begins the kernel's struct pt_regs
 * (checked against <asm/ptrace.h> on aarch64), spelt out here.
 */
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__aarch64__)
#include <asm/ptrace.h>
#endif

#include "usdt_arch.h"
#include "usdt_spec.h"

/* Words of struct user_pt_regs (bpf/arch_arm64.bpf.h). */
enum { X0 = 0, SP = 31, PC = 32, PSTATE = 33 };

#if defined(__aarch64__)
_Static_assert(offsetof(struct user_pt_regs, sp) == SP * 8 &&
		       offsetof(struct user_pt_regs, pc) == PC * 8 &&
		       offsetof(struct user_pt_regs, pstate) == PSTATE * 8,
	       "aarch64's struct user_pt_regs");
#endif

/* "x0"-"x30" and "w0"-"w30" (its low half), "sp": a word of user_pt_regs, or -EINVAL. */
static int register_word(const char *name, size_t len)
{
	unsigned int n = 0;

	if (len == 2 && !strncmp(name, "sp", 2))
		return SP;
	if (len < 2 || len > 3 || (name[0] != 'x' && name[0] != 'w'))
		return -EINVAL;
	/* Digits only, no leading zero: "x07" is not how a register is written. */
	if (len == 3 && name[1] == '0')
		return -EINVAL;
	for (size_t i = 1; i < len; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -EINVAL;
		n = n * 10 + (unsigned int)(name[i] - '0');
	}
	return n <= 30 ? (int)(X0 + n) : -EINVAL;
}

/* A register name at *p; advances past it.  Its word, or -EINVAL. */
static int parse_register(const char **p)
{
	const char *start = *p;

	while ((**p >= 'a' && **p <= 'z') || (**p >= '0' && **p <= '9'))
		(*p)++;
	return register_word(start, (size_t)(*p - start));
}

static int parse_operand(const char **p, struct kh_usdt_arg_spec *arg)
{
	uint64_t value = 0;
	int word;

	if (**p == '-' || (**p >= '0' && **p <= '9')) {
		arg->arg_type = USDT_ARG_CONST;
		if (usdt_spec__number(p, &value))
			return -EINVAL;
		arg->val_off = value;
		return 0;
	}
	if (**p >= 'a' && **p <= 'z') {
		word = parse_register(p);
		if (word < 0)
			return word;
		arg->arg_type = USDT_ARG_REG;
		arg->reg_off = (short)(word * 8);
		return 0;
	}
	/* [BASE] or [BASE, OFFSET]: the base a 64-bit register or sp. */
	if (**p != '[')
		return -EINVAL;
	(*p)++;
	if (**p != 'x' && **p != 's')
		return -EINVAL;
	word = parse_register(p);
	if (word < 0)
		return word;
	if (**p == ',') {
		(*p)++;
		if (**p == ' ')
			(*p)++;
		if (usdt_spec__number(p, &value))
			return -EINVAL;
	}
	if (**p != ']')
		return -EINVAL;
	(*p)++;
	arg->arg_type = USDT_ARG_REG_DEREF;
	arg->reg_off = (short)(word * 8);
	arg->val_off = value;
	return 0;
}

/*
 * NOP (d503201f), the only no-op a site is: the other hints of its space
 * (yield, wfe, bti, paciasp...) each do something.  Every instruction is
 * one aligned little-endian word.
 */
static size_t nop_length(const uint8_t *code, size_t n)
{
	static const uint8_t nop[4] = { 0x1f, 0x20, 0x03, 0xd5 };

	return n >= sizeof(nop) && !memcmp(code, nop, sizeof(nop)) ? sizeof(nop) : 0;
}

const struct usdt_arch usdt_arch_arm64 = {
	.name = "aarch64",
	.machine = EM_AARCH64,
	.elf_class = ELFCLASS64,
	.byte_order = ELFDATA2LSB,
	.insn_align = 4,
	/* Up to pc: an argument names x0-x30 or sp. */
	.regs_bytes = PC * 8,
	.nop_length = nop_length,
	.parse_operand = parse_operand,
};
