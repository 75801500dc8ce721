// SPDX-License-Identifier: MIT
/*
 * aarch64's probe sites as usdt/usdt_arm64.c reads them: the operands of
 * argument specs as GCC prints them ("-8@x0", "8@[sp, 16]", "-4@[x1,
 * -12]"), the NOP a site must be and its alignment.  Run by every build
 * (each build has every architecture's parser); test_usdt.c has x86-64's
 * and the notes of this machine's programs.
 */
#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "usdt_arch.h"
#include "usdt_spec.h"

/* struct user_pt_regs by word: x0-x30, sp, pc, pstate. */
enum { X1 = 1 * 8, X29 = 29 * 8, X30 = 30 * 8, SP = 31 * 8, PC = 32 * 8 };

static const struct usdt_arch *arm64(void)
{
	return usdt_arch__of(EM_AARCH64);
}

static void test_the_row(void **state)
{
	(void)state;
	assert_non_null(arm64());
	assert_string_equal(arm64()->name, "aarch64");
	assert_int_equal(arm64()->elf_class, ELFCLASS64);
	assert_int_equal(arm64()->byte_order, ELFDATA2LSB);
	assert_int_equal(arm64()->insn_align, 4);
	/* What the BPF side copies (bpf/arch_arm64.bpf.h): x0-x30 and sp, up to pc. */
	assert_int_equal(arm64()->regs_bytes, PC);
#if defined(__aarch64__)
	assert_ptr_equal(usdt_arch__native(), arm64());
#else
	assert_ptr_not_equal(usdt_arch__native(), arm64());
#endif
}

/* The examples of issue 33, and the header's own batch site. */
static void test_registers_memory_and_constants(void **state)
{
	struct kh_usdt_spec spec;

	(void)state;
	assert_int_equal(usdt_spec__parse(arm64(), "-8@x0 8@[sp, 16] -4@[x1, -12]", 3, &spec), 0);
	assert_int_equal(spec.arg_cnt, 3);
	assert_int_equal(spec.usdt_cookie, 3);
	assert_int_equal(spec.args[0].arg_type, USDT_ARG_REG);
	assert_int_equal(spec.args[0].reg_off, 0);
	assert_int_equal(spec.args[0].arg_signed, 1);
	assert_int_equal(spec.args[0].arg_bitshift, 0);
	assert_int_equal(spec.args[1].arg_type, USDT_ARG_REG_DEREF);
	assert_int_equal(spec.args[1].reg_off, SP);
	assert_int_equal(spec.args[1].val_off, 16);
	assert_int_equal(spec.args[2].arg_type, USDT_ARG_REG_DEREF);
	assert_int_equal(spec.args[2].reg_off, X1);
	assert_true((int64_t)spec.args[2].val_off == -12);
	assert_int_equal(spec.args[2].arg_signed, 1);
	assert_int_equal(spec.args[2].arg_bitshift, 32);

	assert_int_equal(usdt_spec__parse(arm64(), "8@x5 8@x1 8@x3 8@x4 8@x2 8@x6 8@256", 0, &spec),
			 0);
	assert_int_equal(spec.arg_cnt, 7);
	assert_int_equal(spec.args[6].arg_type, USDT_ARG_CONST);
	assert_int_equal(spec.args[6].val_off, 256);

	/* A 32-bit view of a register, sp itself, a base without an offset, numbers. */
	assert_int_equal(usdt_spec__parse(arm64(), "4@w7 8@sp 8@[x29] 8@x30 -8@-5 8@0x10 1@[x1,8]",
					  0, &spec), 0);
	assert_int_equal(spec.args[0].reg_off, 7 * 8);
	assert_int_equal(spec.args[0].arg_bitshift, 32);
	assert_int_equal(spec.args[1].arg_type, USDT_ARG_REG);
	assert_int_equal(spec.args[1].reg_off, SP);
	assert_int_equal(spec.args[2].arg_type, USDT_ARG_REG_DEREF);
	assert_int_equal(spec.args[2].reg_off, X29);
	assert_int_equal(spec.args[2].val_off, 0);
	assert_int_equal(spec.args[3].reg_off, X30);
	assert_true((int64_t)spec.args[4].val_off == -5);
	assert_int_equal(spec.args[5].val_off, 16);
	assert_int_equal(spec.args[6].reg_off, X1);
	assert_int_equal(spec.args[6].val_off, 8);
	assert_int_equal(spec.args[6].arg_bitshift, 56);
}

/*
 * Refused: registers the BPF side cannot read (x31, the zero registers,
 * pc), spellings no assembler prints ("x01", "X0", a '#'), addressing
 * modes that are no operand (pre- and post-indexed, a 32-bit base), the
 * other architecture's syntax, and anything cut short.
 */
static void test_malformed_operands(void **state)
{
	static const char *const bad[] = {
		"8@x31", "8@w31", "8@xzr", "8@wzr", "8@pc", "8@lr", "8@fp", "8@x01", "8@X0",
		"8@x", "8@", "8@#5", "8@x0x1", "8@[w1]", "8@[x1, #8]", "8@[x1, 8]!",
		"8@[x1], 8", "8@[x1, 8", "8@[x1,  8]", "8@[ x1]", "8@[x1 ,8]", "8@[x1, ]",
		"8@[]", "8@[sp, x2]", "8@%rdi", "8@$5", "8@-8(%rax)", "8@x0 8@%rax",
		"8@99999999999999999999", "8@[x1, 99999999999999999999]", "8@-",
	};
	struct kh_usdt_spec spec;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (usdt_spec__parse(arm64(), bad[i], 0, &spec) != -EINVAL)
			fail_msg("accepted '%s'", bad[i]);
	/* And aarch64's operands are not x86-64's. */
	assert_int_equal(usdt_spec__parse(usdt_arch__of(EM_X86_64), "8@x0", 0, &spec), -EINVAL);
	assert_int_equal(usdt_spec__parse(usdt_arch__of(EM_X86_64), "8@[sp, 16]", 0, &spec),
			 -EINVAL);
}

/* Every register an operand names lies within what the BPF side copies. */
static void test_every_register_is_copied(void **state)
{
	struct kh_usdt_spec spec;
	char text[16];

	(void)state;
	for (int n = 0; n <= 30; n++) {
		snprintf(text, sizeof(text), "8@x%d", n);
		assert_int_equal(usdt_spec__parse(arm64(), text, 0, &spec), 0);
		assert_int_equal(spec.args[0].reg_off, n * 8);
		snprintf(text, sizeof(text), "-4@w%d", n);
		assert_int_equal(usdt_spec__parse(arm64(), text, 0, &spec), 0);
		assert_int_equal(spec.args[0].reg_off, n * 8);
		assert_true((size_t)spec.args[0].reg_off + 8 <= arm64()->regs_bytes);
	}
}

/* NOP (d503201f) alone: other hints do something (yield, bti, paciasp). */
static void test_only_nop_is_a_site(void **state)
{
	static const uint8_t nop[] = { 0x1f, 0x20, 0x03, 0xd5 };
	static const uint8_t others[][4] = {
		{ 0x3f, 0x20, 0x03, 0xd5 }, /* yield */
		{ 0x5f, 0x24, 0x03, 0xd5 }, /* bti c */
		{ 0x3f, 0x23, 0x03, 0xd5 }, /* paciasp */
		{ 0x1f, 0x20, 0x03, 0x55 }, /* one bit off */
		{ 0x20, 0x08, 0x80, 0x52 }, /* mov w0, #0x41 */
	};

	(void)state;
	assert_int_equal(arm64()->nop_length(nop, sizeof(nop)), 4);
	assert_int_equal(arm64()->nop_length(nop, 3), 0);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		assert_int_equal(arm64()->nop_length(others[i], 4), 0);
	/* x86-64's one-byte nop is no aarch64 instruction. */
	assert_int_equal(arm64()->nop_length((const uint8_t *)"\x90\x90\x90\x90", 4), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_row),
		cmocka_unit_test(test_registers_memory_and_constants),
		cmocka_unit_test(test_malformed_operands),
		cmocka_unit_test(test_every_register_is_copied),
		cmocka_unit_test(test_only_nop_is_a_site),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
