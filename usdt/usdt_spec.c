// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <asm/ptrace.h>

#include "usdt_spec.h"

enum { ARG_CONST = 0, ARG_REG = 1, ARG_REG_DEREF = 2 };

struct register_names {
	const char *names[4]; /* 64, 32, 16 and 8-bit spellings */
	size_t offset;
};

#define REG(r64, r32, r16, r8, field) { { r64, r32, r16, r8 }, offsetof(struct pt_regs, field) }

static const struct register_names registers[] = {
	REG("rip", "eip", "", "", rip),
	REG("rax", "eax", "ax", "al", rax),
	REG("rbx", "ebx", "bx", "bl", rbx),
	REG("rcx", "ecx", "cx", "cl", rcx),
	REG("rdx", "edx", "dx", "dl", rdx),
	REG("rsi", "esi", "si", "sil", rsi),
	REG("rdi", "edi", "di", "dil", rdi),
	REG("rbp", "ebp", "bp", "bpl", rbp),
	REG("rsp", "esp", "sp", "spl", rsp),
	REG("r8", "r8d", "r8w", "r8b", r8),
	REG("r9", "r9d", "r9w", "r9b", r9),
	REG("r10", "r10d", "r10w", "r10b", r10),
	REG("r11", "r11d", "r11w", "r11b", r11),
	REG("r12", "r12d", "r12w", "r12b", r12),
	REG("r13", "r13d", "r13w", "r13b", r13),
	REG("r14", "r14d", "r14w", "r14b", r14),
	REG("r15", "r15d", "r15w", "r15b", r15),
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
	int off;

	if (**p != '%')
		return -EINVAL;
	start = ++*p;
	while ((**p >= 'a' && **p <= 'z') || (**p >= '0' && **p <= '9'))
		(*p)++;
	off = register_offset(start, *p - start);
	return off;
}

/* One "SIZE@OPERAND" at *p. */
static int parse_arg(const char **p, struct kh_usdt_arg_spec *arg)
{
	char *end;
	long size = strtol(*p, &end, 10);
	int reg;

	if (end == *p || *end != '@' || (labs(size) != 1 && labs(size) != 2 &&
					  labs(size) != 4 && labs(size) != 8))
		return -EINVAL;
	*p = end + 1;
	arg->arg_signed = size < 0;
	arg->arg_bitshift = (char)(64 - labs(size) * 8);
	if (**p == '$') {
		arg->arg_type = ARG_CONST;
		arg->val_off = (uint64_t)strtoll(*p + 1, &end, 0);
		if (end == *p + 1)
			return -EINVAL;
		*p = end;
		return 0;
	}
	if (**p == '%') {
		reg = parse_register(p);
		if (reg < 0)
			return reg;
		arg->arg_type = ARG_REG;
		arg->reg_off = (short)reg;
		return 0;
	}
	/* [OFFSET](%reg): memory at a register plus an offset. */
	arg->val_off = (uint64_t)strtoll(*p, &end, 0);
	*p = end;
	if (**p != '(')
		return -EINVAL;
	(*p)++;
	reg = parse_register(p);
	if (reg < 0 || **p != ')')
		return -EINVAL;
	(*p)++;
	arg->arg_type = ARG_REG_DEREF;
	arg->reg_off = (short)reg;
	return 0;
}

int usdt_spec__parse(const char *args, uint64_t cookie, struct kh_usdt_spec *spec)
{
	const char *p = args;

	memset(spec, 0, sizeof(*spec));
	spec->usdt_cookie = cookie;
	for (;;) {
		while (*p == ' ')
			p++;
		if (!*p)
			return 0;
		if (spec->arg_cnt == KH_USDT_MAX_ARGS ||
		    parse_arg(&p, &spec->args[spec->arg_cnt]) != 0)
			return -EINVAL;
		spec->arg_cnt++;
		if (*p && *p != ' ')
			return -EINVAL;
	}
}
