// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the argument-spec parser (usdt/usdt_spec.c and the
 * operands of usdt_x86_64.c and usdt_arm64.c, each on every input) on any
 * string, under ASan and UBSan (tests/fuzz/run.sh; why libFuzzer:
 * fuzz_notes.c).  A spec it accepts must be one the BPF side can read: at
 * most KH_USDT_MAX_ARGS arguments, each of 1, 2, 4 or 8 bytes (the shift
 * that takes the rest off), of a known type, reading a register among
 * those the architecture's BPF side copies (usdt_arch.h's regs_bytes).
 */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "promise.h"
#include "usdt_arch.h"
#include "usdt_spec.h"

static void check(const struct usdt_arch *arch, const char *text)
{
	struct kh_usdt_spec spec;

	if (usdt_spec__parse(arch, text, 7, &spec) != 0)
		return;
	PROMISE(spec.arg_cnt >= 0 && spec.arg_cnt <= KH_USDT_MAX_ARGS);
	PROMISE(spec.usdt_cookie == 7);
	for (int i = 0; i < spec.arg_cnt; i++) {
		const struct kh_usdt_arg_spec *a = &spec.args[i];

		PROMISE(a->arg_bitshift == 0 || a->arg_bitshift == 32 || a->arg_bitshift == 48 ||
			a->arg_bitshift == 56);
		PROMISE(a->arg_type <= 2);
		PROMISE(a->arg_type == 0 ||
			(a->reg_off >= 0 && a->reg_off % 8 == 0 &&
			 (size_t)a->reg_off + 8 <= arch->regs_bytes));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	check(usdt_arch__of(EM_X86_64), text);
	check(usdt_arch__of(EM_AARCH64), text);
	free(text);
	return 0;
}
