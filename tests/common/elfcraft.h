/* SPDX-License-Identifier: MIT */
/*
 * elfcraft.h - crafted ELF files for the tests of khprof's checks on the
 * files it traces (usdt/usdt_notes.c): a program built against the probe
 * header (build/workloads/target) read into memory, changed a few bytes at
 * a time as a fuzzer or an attacker would (a header field, a note's
 * address or semaphore, a string), and written to a temporary executable
 * file.  The file is x86-64 little-endian, like the host: its structures
 * are read in place, and 64-bit fields through memcpy (notes are only
 * 4-byte aligned).
 */
#ifndef KHPROF_TEST_ELFCRAFT_H
#define KHPROF_TEST_ELFCRAFT_H

#include <elf.h>
#include <sys/stat.h>

#include "khtest.h"

#define CRAFT_TARGET "build/workloads/target"

struct crafted {
	unsigned char *bytes;
	size_t size;
};

/* c = the bytes of path (the test fails without them). */
static inline void craft_load(struct crafted *c, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	int err = file__read_all(path, &text, &len);

	if (err)
		fail_msg("cannot read %s: %s (make tests builds it)", path, strerror(-err));
	c->bytes = (unsigned char *)text;
	c->size = len;
}

static inline void craft_free(struct crafted *c)
{
	free(c->bytes);
	c->bytes = NULL;
}

static inline uint64_t craft_get64(const struct crafted *c, size_t at)
{
	uint64_t v;

	assert_true(at + sizeof(v) <= c->size);
	memcpy(&v, c->bytes + at, sizeof(v));
	return v;
}

static inline void craft_put64(struct crafted *c, size_t at, uint64_t v)
{
	assert_true(at + sizeof(v) <= c->size);
	memcpy(c->bytes + at, &v, sizeof(v));
}

static inline Elf64_Ehdr *craft_ehdr(struct crafted *c)
{
	return (Elf64_Ehdr *)c->bytes;
}

static inline Elf64_Phdr *craft_phdr(struct crafted *c, size_t i)
{
	Elf64_Ehdr *eh = craft_ehdr(c);

	assert_true(i < eh->e_phnum);
	return (Elf64_Phdr *)(c->bytes + eh->e_phoff) + i;
}

/* The first PT_LOAD whose flags are exactly flags (PF_R | PF_X: the code). */
static inline Elf64_Phdr *craft_load_segment(struct crafted *c, uint32_t flags)
{
	for (size_t i = 0; i < craft_ehdr(c)->e_phnum; i++) {
		Elf64_Phdr *ph = craft_phdr(c, i);

		if (ph->p_type == PT_LOAD && ph->p_flags == flags)
			return ph;
	}
	fail_msg("no PT_LOAD with flags %u", flags);
	return NULL;
}

/* The PT_LOAD right after ph in address order, or NULL. */
static inline Elf64_Phdr *craft_next_load(struct crafted *c, const Elf64_Phdr *ph)
{
	Elf64_Phdr *next = NULL;

	for (size_t i = 0; i < craft_ehdr(c)->e_phnum; i++) {
		Elf64_Phdr *q = craft_phdr(c, i);

		if (q->p_type == PT_LOAD && q->p_vaddr > ph->p_vaddr &&
		    (!next || q->p_vaddr < next->p_vaddr))
			next = q;
	}
	return next;
}

static inline Elf64_Shdr *craft_section(struct crafted *c, const char *name)
{
	Elf64_Ehdr *eh = craft_ehdr(c);
	Elf64_Shdr *sh = (Elf64_Shdr *)(c->bytes + eh->e_shoff);
	const char *names = (const char *)c->bytes + sh[eh->e_shstrndx].sh_offset;

	for (size_t i = 0; i < eh->e_shnum; i++)
		if (!strcmp(names + sh[i].sh_name, name))
			return &sh[i];
	fail_msg("no section %s", name);
	return NULL;
}

/* The address of a symbol of .symtab. */
static inline uint64_t craft_symbol(struct crafted *c, const char *name)
{
	Elf64_Shdr *symtab = craft_section(c, ".symtab");
	Elf64_Shdr *strtab = (Elf64_Shdr *)(c->bytes + craft_ehdr(c)->e_shoff) + symtab->sh_link;
	const Elf64_Sym *syms = (const Elf64_Sym *)(c->bytes + symtab->sh_offset);

	for (size_t i = 0; i < symtab->sh_size / sizeof(*syms); i++)
		if (!strcmp((const char *)c->bytes + strtab->sh_offset + syms[i].st_name, name))
			return syms[i].st_value;
	fail_msg("no symbol %s", name);
	return 0;
}

/* The file offset that holds vaddr (in some PT_LOAD's file bytes). */
static inline size_t craft_offset_of(struct crafted *c, uint64_t vaddr)
{
	for (size_t i = 0; i < craft_ehdr(c)->e_phnum; i++) {
		const Elf64_Phdr *ph = craft_phdr(c, i);

		if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr &&
		    vaddr < ph->p_vaddr + ph->p_filesz)
			return (size_t)(vaddr - ph->p_vaddr + ph->p_offset);
	}
	fail_msg("0x%" PRIx64 " is in no segment's file bytes", vaddr);
	return 0;
}

/*
 * The file offset of the description of the stapsdt note keyhog:name:
 * address at +0, .stapsdt.base's at +8, semaphore at +16, then provider,
 * name and arguments (craft_note_string).
 */
static inline size_t craft_note(struct crafted *c, const char *name)
{
	const Elf64_Shdr *sh = craft_section(c, ".note.stapsdt");

	for (size_t at = sh->sh_offset; at + sizeof(Elf64_Nhdr) <= sh->sh_offset + sh->sh_size;) {
		const Elf64_Nhdr *n = (const Elf64_Nhdr *)(c->bytes + at);
		size_t desc = at + sizeof(*n) + ((n->n_namesz + 3) & ~3u);
		const char *provider = (const char *)c->bytes + desc + 24;

		if (!strcmp(provider, "keyhog") && !strcmp(provider + strlen(provider) + 1, name))
			return desc;
		at = desc + ((n->n_descsz + 3) & ~3u);
	}
	fail_msg("no note keyhog:%s", name);
	return 0;
}

/* The file offset of a note's string: 0 provider, 1 name, 2 arguments. */
static inline size_t craft_note_string(struct crafted *c, size_t desc, int which)
{
	size_t at = desc + 24;

	for (int i = 0; i < which; i++)
		at += strlen((const char *)c->bytes + at) + 1;
	return at;
}

static inline void craft_set_note_address(struct crafted *c, const char *name, uint64_t address)
{
	craft_put64(c, craft_note(c, name), address);
}

static inline void craft_set_note_semaphore(struct crafted *c, const char *name, uint64_t address)
{
	craft_put64(c, craft_note(c, name) + 16, address);
}

/*
 * A note's string (0 provider, 1 name, 2 arguments) replaced in place by
 * text, padded with blanks to the old length (text must not be longer).
 */
static inline void craft_set_note_string(struct crafted *c, const char *name, int which,
					 const char *text)
{
	size_t at = craft_note_string(c, craft_note(c, name), which);
	size_t len = strlen((const char *)c->bytes + at), n = strlen(text);

	assert_true(n <= len);
	memset(c->bytes + at, ' ', len);
	memcpy(c->bytes + at, text, n);
}

/*
 * The file of the issue (#38): the code segment's memory grown over the
 * next segment (.rodata), and site moved to where, by the code segment's
 * arithmetic, target_rodata's bytes are in the file.  The program still
 * runs (the loader maps .rodata over the grown end); a breakpoint there
 * would be written into target_rodata.
 */
static inline void craft_grow_code_over_rodata(struct crafted *c, const char *site)
{
	Elf64_Phdr *code = craft_load_segment(c, PF_R | PF_X), *next = craft_next_load(c, code);
	size_t rodata = craft_offset_of(c, craft_symbol(c, "target_rodata"));

	assert_non_null(next);
	code->p_memsz = next->p_vaddr + next->p_memsz - code->p_vaddr;
	craft_set_note_address(c, site, code->p_vaddr + (rodata - code->p_offset));
}

/* Writes c to a fresh executable temporary file; its path, malloc'd (unlink it). */
static inline char *craft_save(const struct crafted *c)
{
	char *path;
	int fd = temp_file(&path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, c->bytes, c->size), (ssize_t)c->size);
	assert_int_equal(fchmod(fd, 0755), 0);
	close(fd);
	return path;
}

#endif /* KHPROF_TEST_ELFCRAFT_H */
