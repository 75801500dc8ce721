/* SPDX-License-Identifier: MIT */
/*
 * usdt_arch.h - the architectures whose probe sites khprof reads, one row
 * each in usdt_arch.c's table: the ELF machine, class and byte order of
 * their files, and what only that architecture knows about a site (the
 * no-op a site must be, the operands of its argument specs), in a file of
 * its own beside the others (usdt_x86_64.c, usdt_arm64.c).  Every build
 * has every row, so that each parser is tested anywhere; a build reads
 * the files of its own architecture alone (usdt_arch__native): the
 * kernel's uprobes patch the instructions and read the registers of the
 * machine they run on.
 */
#ifndef KHPROF_USDT_ARCH_H
#define KHPROF_USDT_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "khprof_shared.h"

struct usdt_arch {
	const char *name;         /* as messages name it: "x86-64" */
	uint16_t machine;         /* e_machine: EM_X86_64 */
	unsigned char elf_class;  /* ELFCLASS64 */
	unsigned char byte_order; /* ELFDATA2LSB */
	/*
	 * A site's address is a multiple of this (1 on x86-64, 4 on aarch64,
	 * whose kernel refuses a uprobe elsewhere, and with it the whole
	 * uprobe-multi link of the file).
	 */
	unsigned int insn_align;
	/*
	 * The bytes of the registers an argument spec may name, from the
	 * start of the kernel's struct pt_regs: reg_off + 8 is within them
	 * (the BPF side copies that many: bpf/arch.bpf.h's KH_REGS_WORDS).
	 */
	size_t regs_bytes;
	/*
	 * Length of the no-op at code (n bytes of the file from there), 0
	 * when it is none.  Every emitter places a site on a no-op
	 * (<sys/sdt.h>'s "nop", keyhog_profile.h's and the crate's nops), so
	 * the kernel's breakpoint there replaces nothing the program
	 * computes; anywhere else it could land inside an instruction.
	 */
	size_t (*nop_length)(const uint8_t *code, size_t n);
	/*
	 * One operand after "SIZE@" at *p ("%rdi", "$5", "-8(%rbp)" on
	 * x86-64; "x0", "5", "[sp, 16]" on aarch64), into arg's type,
	 * register and offset; advances *p past it.  0 or -EINVAL.
	 */
	int (*parse_operand)(const char **p, struct kh_usdt_arg_spec *arg);
};

/* The architecture this khprof traces; NULL when it has no row (no probe is read). */
const struct usdt_arch *usdt_arch__native(void);

/* The row of an ELF machine (EM_AARCH64), whatever this build traces; NULL when none. */
const struct usdt_arch *usdt_arch__of(uint16_t machine);

/* An argument spec's kinds (libbpf's enum __bpf_usdt_arg_type): arg_type. */
enum { USDT_ARG_CONST = 0, USDT_ARG_REG = 1, USDT_ARG_REG_DEREF = 2 };

/*
 * What an ELF file of this machine, class and byte order is, for a
 * message: "64-bit little-endian aarch64", "32-bit x86".  buf is returned.
 */
const char *usdt_arch__describe(uint16_t machine, unsigned char elf_class,
				unsigned char byte_order, char *buf, size_t len);

#endif /* KHPROF_USDT_ARCH_H */
