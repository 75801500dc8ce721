// SPDX-License-Identifier: MIT
/*
 * The table of usdt_arch.h.  Adding an architecture is a file of its own
 * (its no-op and operands, as usdt_x86_64.c and usdt_arm64.c) and a row
 * here; the build for that machine then reads its files, and every other
 * build keeps calling them unsupported, since uprobes only work on the
 * machine they run on.
 */
#include <elf.h>
#include <stdio.h>

#include "usdt_arch.h"

extern const struct usdt_arch usdt_arch_x86_64;
extern const struct usdt_arch usdt_arch_arm64;

static const struct usdt_arch *const archs[] = {
	&usdt_arch_x86_64,
	&usdt_arch_arm64,
};

/* e_machine of the machine this khprof is built for (0: none khprof knows). */
#if defined(__x86_64__)
#define NATIVE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define NATIVE_MACHINE EM_AARCH64
#else
#define NATIVE_MACHINE EM_NONE
#endif

const struct usdt_arch *usdt_arch__of(uint16_t machine)
{
	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++)
		if (machine != EM_NONE && archs[i]->machine == machine)
			return archs[i];
	return NULL;
}

const struct usdt_arch *usdt_arch__native(void)
{
	return usdt_arch__of(NATIVE_MACHINE);
}

/* Names of machines khprof may be shown files of, supported or not. */
static const struct {
	uint16_t machine;
	const char *name;
} machine_names[] = {
	{ EM_X86_64, "x86-64" },   { EM_386, "x86" },         { EM_AARCH64, "aarch64" },
	{ EM_ARM, "arm" },         { EM_RISCV, "riscv" },     { EM_PPC64, "powerpc64" },
	{ EM_PPC, "powerpc" },     { EM_S390, "s390" },       { EM_MIPS, "mips" },
	{ EM_LOONGARCH, "loongarch" }, { EM_SPARCV9, "sparc64" }, { EM_BPF, "bpf" },
};

const char *usdt_arch__describe(uint16_t machine, unsigned char elf_class,
				unsigned char byte_order, char *buf, size_t len)
{
	const char *name = NULL;

	for (size_t i = 0; i < sizeof(machine_names) / sizeof(machine_names[0]) && !name; i++)
		if (machine_names[i].machine == machine)
			name = machine_names[i].name;
	if (name)
		snprintf(buf, len, "%s %s %s", elf_class == ELFCLASS32 ? "32-bit" : "64-bit",
			 byte_order == ELFDATA2MSB ? "big-endian" : "little-endian", name);
	else
		snprintf(buf, len, "%s %s machine %u", elf_class == ELFCLASS32 ? "32-bit" : "64-bit",
			 byte_order == ELFDATA2MSB ? "big-endian" : "little-endian", machine);
	return buf;
}
