// SPDX-License-Identifier: MIT
/*
 * x86-64's probe sites (usdt_arch.h): the no-ops a site may be, and the
 * AT&T operands of its argument specs ("%rdi", "$5", "-24(%rbp)").
 * Compiled into every build, so that the parser is tested on any machine:
 * the registers' offsets are the kernel's struct pt_regs, a user ABI
 * (<asm/ptrace.h> on x86-64, checked against it there), spelt out here.
 */
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <asm/ptrace.h>
#endif

#include "usdt_arch.h"
#include "usdt_spec.h"

/* Words of struct pt_regs: r15 first, ss last (bpf/arch_x86.bpf.h). */
enum {
	R15, R14, R13, R12, RBP, RBX, R11, R10, R9, R8, RAX, RCX, RDX, RSI, RDI,
	ORIG_RAX, RIP, CS, EFLAGS, RSP, SS, PT_REGS_WORDS
};

#if defined(__x86_64__)
_Static_assert(sizeof(struct pt_regs) == PT_REGS_WORDS * 8, "x86-64's struct pt_regs");
_Static_assert(offsetof(struct pt_regs, rdi) == RDI * 8 &&
		       offsetof(struct pt_regs, rip) == RIP * 8 &&
		       offsetof(struct pt_regs, rsp) == RSP * 8,
	       "x86-64's struct pt_regs");
#endif

struct register_names {
	const char *names[4]; /* 64, 32, 16 and 8-bit spellings */
	size_t offset;
};

#define REG(r64, r32, r16, r8, word) { { r64, r32, r16, r8 }, (word) * 8 }

static const struct register_names registers[] = {
	REG("rip", "eip", "", "", RIP),
	REG("rax", "eax", "ax", "al", RAX),
	REG("rbx", "ebx", "bx", "bl", RBX),
	REG("rcx", "ecx", "cx", "cl", RCX),
	REG("rdx", "edx", "dx", "dl", RDX),
	REG("rsi", "esi", "si", "sil", RSI),
	REG("rdi", "edi", "di", "dil", RDI),
	REG("rbp", "ebp", "bp", "bpl", RBP),
	REG("rsp", "esp", "sp", "spl", RSP),
	REG("r8", "r8d", "r8w", "r8b", R8),
	REG("r9", "r9d", "r9w", "r9b", R9),
	REG("r10", "r10d", "r10w", "r10b", R10),
	REG("r11", "r11d", "r11w", "r11b", R11),
	REG("r12", "r12d", "r12w", "r12b", R12),
	REG("r13", "r13d", "r13w", "r13b", R13),
	REG("r14", "r14d", "r14w", "r14b", R14),
	REG("r15", "r15d", "r15w", "r15b", R15),
};

/*
 * "" in the table marks a spelling the register does not have (%rip has no
 * 16- or 8-bit one), so an empty name must not match it: "8@%" is no
 * register, not %rip.
 */
static int register_offset(const char *name, size_t len)
{
	if (len == 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(registers) / sizeof(registers[0]); i++)
		for (int j = 0; j < 4; j++)
			if (strlen(registers[i].names[j]) == len &&
			    strncmp(registers[i].names[j], name, len) == 0)
				return (int)registers[i].offset;
	return -EINVAL;
}

/* "%reg" at *p; advances past it. */
static int parse_register(const char **p)
{
	const char *start;

	if (**p != '%')
		return -EINVAL;
	start = ++*p;
	while ((**p >= 'a' && **p <= 'z') || (**p >= '0' && **p <= '9'))
		(*p)++;
	return register_offset(start, (size_t)(*p - start));
}

static int parse_operand(const char **p, struct kh_usdt_arg_spec *arg)
{
	uint64_t value = 0;
	int reg;

	if (**p == '$') {
		(*p)++;
		arg->arg_type = USDT_ARG_CONST;
		if (usdt_spec__number(p, &value))
			return -EINVAL;
		arg->val_off = value;
		return 0;
	}
	if (**p == '%') {
		reg = parse_register(p);
		if (reg < 0)
			return reg;
		arg->arg_type = USDT_ARG_REG;
		arg->reg_off = (short)reg;
		return 0;
	}
	/* [OFFSET](%reg): memory at a register plus an offset. */
	if (**p != '(' && usdt_spec__number(p, &value))
		return -EINVAL;
	arg->val_off = value;
	if (**p != '(')
		return -EINVAL;
	(*p)++;
	reg = parse_register(p);
	if (reg < 0 || **p != ')')
		return -EINVAL;
	(*p)++;
	arg->arg_type = USDT_ARG_REG_DEREF;
	arg->reg_off = (short)reg;
	return 0;
}

/*
 * The no-ops an assembler writes for "nop" and its longer forms: 90,
 * 66 90, and 0f 1f /0 ("nopl"/"nopw", keyhog_profile.h's 5-byte site
 * 0f 1f 44 00 00) with its ModRM, SIB and displacement.
 */
static size_t nop_length(const uint8_t *code, size_t n)
{
	size_t at = 0, len;
	uint8_t modrm, mod, rm;

	if (n >= 1 && code[0] == 0x90)
		return 1;
	if (n >= 2 && code[0] == 0x66 && code[1] == 0x90)
		return 2;
	if (n >= 1 && code[0] == 0x66)
		at = 1; /* operand-size prefix: nopw */
	if (n < at + 3 || code[at] != 0x0f || code[at + 1] != 0x1f)
		return 0;
	modrm = code[at + 2];
	if ((modrm >> 3) & 7) /* /0: any other reg field is another instruction */
		return 0;
	mod = modrm >> 6;
	rm = modrm & 7;
	len = at + 3;
	if (mod != 3 && rm == 4) { /* a SIB byte */
		if (n < len + 1)
			return 0;
		if (mod == 0 && (code[len] & 7) == 5)
			len += 4; /* no base: disp32 */
		len++;
	}
	if (mod == 0 && rm == 5)
		len += 4; /* RIP-relative disp32 */
	else if (mod == 1)
		len += 1;
	else if (mod == 2)
		len += 4;
	return len <= n ? len : 0;
}

const struct usdt_arch usdt_arch_x86_64 = {
	.name = "x86-64",
	.machine = EM_X86_64,
	.elf_class = ELFCLASS64,
	.byte_order = ELFDATA2LSB,
	.insn_align = 1,
	.regs_bytes = PT_REGS_WORDS * 8,
	.nop_length = nop_length,
	.parse_operand = parse_operand,
};
