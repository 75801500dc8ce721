// SPDX-License-Identifier: MIT
/* ELF files on libelf: open, segments, symbols, the interpreter. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "usdt_arch.h"
#include "usdt_elf.h"

int elf__open_fd(int fd, Elf **elf)
{
	*elf = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	*elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!*elf || elf_kind(*elf) != ELF_K_ELF) {
		char magic[SELFMAG];
		bool looks_elf = pread(fd, magic, SELFMAG, 0) == SELFMAG &&
				 memcmp(magic, ELFMAG, SELFMAG) == 0;

		elf_end(*elf);
		*elf = NULL;
		/* ELF's magic, but libelf cannot make sense of the rest. */
		return looks_elf ? -EINVAL : -ENOEXEC;
	}
	return 0;
}

int elf__open(const char *path, int *fd, Elf **elf)
{
	int err;

	*elf = NULL;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	err = elf__open_fd(*fd, elf);
	if (err)
		close(*fd);
	return err;
}

void elf__close(int fd, Elf *elf)
{
	elf_end(elf);
	close(fd);
}

bool elf__has_segments(Elf *elf)
{
	size_t phnum;

	return elf_getphdrnum(elf, &phnum) == 0 && phnum > 0;
}

int elf__segment_of(Elf *elf, uint64_t vaddr, uint64_t *file_offset, bool *executable)
{
	size_t phnum;

	*file_offset = 0;
	*executable = false;
	if (elf_getphdrnum(elf, &phnum) != 0)
		return -ENOENT;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz) {
			*file_offset = vaddr - ph.p_vaddr + ph.p_offset;
			*executable = ph.p_flags & PF_X;
			return 0;
		}
	}
	return -ENOENT;
}

int elf__code_offset(Elf *elf, uint64_t vaddr, uint64_t *file_offset)
{
	size_t phnum;

	*file_offset = 0;
	if (elf_getphdrnum(elf, &phnum) != 0)
		return -ENOENT;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*file_offset = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* --- checking a file's headers (elf__layout) ------------------------------ */

__attribute__((format(printf, 3, 4)))
static int problem_is(char *problem, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(problem, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Whether [offset, offset + n) lies in a file of size bytes, without overflowing. */
static bool in_file(uint64_t offset, uint64_t n, size_t size)
{
	return offset <= size && n <= size - offset;
}

/* Class, byte order and machine: the file must be arch's. */
static int check_ident(Elf *elf, const struct usdt_arch *arch, char *problem, size_t len)
{
	char what[96];
	size_t n;
	const char *ident = elf_getident(elf, &n);
	GElf_Ehdr eh;

	if (!ident || n < EI_NIDENT)
		return problem_is(problem, len, "the ELF header is cut short");
	if ((ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64) ||
	    (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB))
		return problem_is(problem, len, "unknown ELF class %d or byte order %d",
				  ident[EI_CLASS], ident[EI_DATA]);
	if (ident[EI_VERSION] != EV_CURRENT)
		return problem_is(problem, len, "unknown ELF version %d", ident[EI_VERSION]);
	if (!gelf_getehdr(elf, &eh))
		return problem_is(problem, len, "the ELF header is cut short");
	if (!arch || eh.e_machine != arch->machine || ident[EI_CLASS] != arch->elf_class ||
	    ident[EI_DATA] != arch->byte_order) {
		usdt_arch__describe(eh.e_machine, (unsigned char)ident[EI_CLASS],
				    (unsigned char)ident[EI_DATA], what, sizeof(what));
		if (arch)
			snprintf(problem, len, "a %s file (khprof reads %s ones)", what, arch->name);
		else
			snprintf(problem, len, "a %s file (this build of khprof reads none)", what);
		return -ENOTSUP;
	}
	if (eh.e_version != EV_CURRENT || eh.e_ehsize != sizeof(Elf64_Ehdr))
		return problem_is(problem, len, "the ELF header's version or size is wrong");
	return 0;
}

/*
 * The section header table and every section's bytes and name.  From the
 * header's own fields: libelf reads a table that lies past the end of the
 * file as no sections at all, which would make a cut file one without
 * probes.
 */
static int check_sections(Elf *elf, size_t size, char *problem, size_t len)
{
	size_t shnum, shstrndx;
	GElf_Ehdr eh;

	if (!gelf_getehdr(elf, &eh))
		return problem_is(problem, len, "the ELF header is cut short");
	if (!eh.e_shoff) {
		if (eh.e_shnum)
			return problem_is(problem, len, "%u sections without a section header "
					  "table", eh.e_shnum);
		return 0; /* no sections: a loader needs none, and there are no notes */
	}
	if (eh.e_shentsize != sizeof(Elf64_Shdr))
		return problem_is(problem, len, "section header entries of %u bytes, not %zu",
				  eh.e_shentsize, sizeof(Elf64_Shdr));
	if (!in_file(eh.e_shoff, sizeof(Elf64_Shdr), size))
		return problem_is(problem, len, "the section header table lies past the end of "
				  "the file (%zu bytes)", size);
	/* 0 in the header: the count is section 0's sh_size (more than 65279 sections). */
	if (elf_getshdrnum(elf, &shnum) != 0 || (eh.e_shnum && shnum != eh.e_shnum) ||
	    !in_file(eh.e_shoff, (uint64_t)shnum * sizeof(Elf64_Shdr), size))
		return problem_is(problem, len, "the section header table ends past the end "
				  "of the file (%zu bytes)", size);
	if (elf_getshdrstrndx(elf, &shstrndx) != 0 || (shnum && shstrndx >= shnum))
		return problem_is(problem, len, "the section name table's index is out of range");
	for (size_t i = 1; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh))
			return problem_is(problem, len, "section %zu is unreadable", i);
		if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL &&
		    !in_file(sh.sh_offset, sh.sh_size, size))
			return problem_is(problem, len, "section %zu ends past the end of the file "
					  "(%zu bytes)", i, size);
		if (sh.sh_link >= shnum)
			return problem_is(problem, len, "section %zu links to section %u, which "
					  "does not exist", i, sh.sh_link);
		if (shstrndx != SHN_UNDEF && !elf_strptr(elf, shstrndx, sh.sh_name))
			return problem_is(problem, len, "section %zu's name lies outside the "
					  "section name table", i);
	}
	return 0;
}

static int by_vaddr(const void *a, const void *b)
{
	const struct elf_segment *x = a, *y = b;

	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* RELRO lies in the memory of one writable loadable segment, as a linker puts it. */
static int check_relro(const struct elf_layout *layout, char *problem, size_t len)
{
	if (layout->relro_start == layout->relro_end)
		return 0;
	for (size_t i = 0; i < layout->load_count; i++) {
		const struct elf_segment *s = &layout->loads[i];

		if ((s->flags & PF_W) && layout->relro_start >= s->vaddr &&
		    layout->relro_end <= s->vaddr + s->memsz)
			return 0;
	}
	return problem_is(problem, len, "the RELRO range is not inside a writable segment");
}

/* The program header table and every segment; the PT_LOADs into layout. */
static int check_segments(Elf *elf, struct elf_layout *layout, char *problem, size_t len)
{
	size_t phnum;
	GElf_Ehdr eh;

	if (!gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum) != 0)
		return problem_is(problem, len, "the segment count is unreadable");
	/* As with sections, from the header: libelf may read a table past the end as none. */
	if (eh.e_phnum != PN_XNUM && phnum != eh.e_phnum)
		phnum = eh.e_phnum;
	if (!phnum)
		return 0;
	if (eh.e_phentsize != sizeof(Elf64_Phdr))
		return problem_is(problem, len, "program header entries of %u bytes, not %zu",
				  eh.e_phentsize, sizeof(Elf64_Phdr));
	if (!in_file(eh.e_phoff, (uint64_t)phnum * sizeof(Elf64_Phdr), layout->size))
		return problem_is(problem, len, "the program header table ends past the end "
				  "of the file (%zu bytes)", layout->size);
	layout->loads = calloc(phnum, sizeof(*layout->loads));
	if (!layout->loads)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		struct elf_segment *s;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return problem_is(problem, len, "segment %zu is unreadable", i);
		if (ph.p_filesz && !in_file(ph.p_offset, ph.p_filesz, layout->size))
			return problem_is(problem, len, "segment %zu's file bytes end past the end of "
					  "the file (%zu bytes)", i, layout->size);
		if (ph.p_type == PT_GNU_RELRO) {
			if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr || layout->relro_end)
				return problem_is(problem, len, "a second RELRO range, or one past "
						  "the address space");
			layout->relro_start = ph.p_vaddr;
			layout->relro_end = ph.p_vaddr + ph.p_memsz;
		}
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_filesz > ph.p_memsz || ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			return problem_is(problem, len, "segment %zu holds more file bytes than "
					  "memory, or ends past the address space", i);
		/* The loader maps file offset and address in step, page by page. */
		if ((ph.p_align & (ph.p_align - 1)) ||
		    (ph.p_align > 1 && ph.p_vaddr % ph.p_align != ph.p_offset % ph.p_align))
			return problem_is(problem, len, "segment %zu's address and file offset "
					  "disagree with its alignment", i);
		s = &layout->loads[layout->load_count++];
		*s = (struct elf_segment){ ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz,
					   ph.p_flags };
	}
	qsort(layout->loads, layout->load_count, sizeof(*layout->loads), by_vaddr);
	for (size_t i = 1; i < layout->load_count; i++)
		if (layout->loads[i].vaddr < layout->loads[i - 1].vaddr + layout->loads[i - 1].memsz)
			return problem_is(problem, len, "two loadable segments overlap at 0x%llx",
					  (unsigned long long)layout->loads[i].vaddr);
	return check_relro(layout, problem, len);
}

int elf__layout(Elf *elf, const struct usdt_arch *arch, struct elf_layout *layout,
		char *problem, size_t len)
{
	int err;

	memset(layout, 0, sizeof(*layout));
	problem[0] = '\0';
	layout->raw = (const unsigned char *)elf_rawfile(elf, &layout->size);
	if (!layout->raw)
		return problem_is(problem, len, "its bytes are unreadable");
	err = check_ident(elf, arch, problem, len);
	if (!err)
		err = check_sections(elf, layout->size, problem, len);
	if (!err)
		err = check_segments(elf, layout, problem, len);
	if (err)
		elf__layout_free(layout);
	return err;
}

void elf__layout_free(struct elf_layout *layout)
{
	free(layout->loads);
	layout->loads = NULL;
	layout->load_count = 0;
}

/* The address (st_value) of a defined function (or, unless functions_only, object) called name. */
static int find_symbol(Elf *elf, const char *name, bool functions_only, uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr) ||
		    (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM) || !shdr.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < shdr.sh_size / shdr.sh_entsize; i++) {
			GElf_Sym sym;
			const char *sym_name;

			if (!gelf_getsym(data, (int)i, &sym) || sym.st_value == 0 ||
			    (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
			     (functions_only || GELF_ST_TYPE(sym.st_info) != STT_OBJECT)))
				continue;
			sym_name = elf_strptr(elf, shdr.sh_link, sym.st_name);
			if (sym_name && strcmp(sym_name, name) == 0) {
				*vaddr = sym.st_value;
				return 0;
			}
		}
	}
	return -ENOENT;
}

/*
 * name's address and file offset in fd's file: a data symbol's anywhere in
 * a segment's memory (code_only false), or a function's in the bytes the
 * file holds of an executable segment, where a uprobe may go (code_only).
 */
static int symbol_of(int fd, const char *name, bool code_only, uint64_t *vaddr,
		     uint64_t *offset)
{
	Elf *elf;
	int err;

	err = elf__open_fd(fd, &elf);
	if (err)
		return err;
	err = find_symbol(elf, name, code_only, vaddr);
	if (!err && code_only)
		err = elf__code_offset(elf, *vaddr, offset);
	else if (!err) {
		bool executable;

		err = elf__segment_of(elf, *vaddr, offset, &executable);
	}
	if (!err && !*offset)
		err = -ENOENT;
	elf_end(elf);
	return err;
}

int elf__symbol_fd(int fd, const char *name, uint64_t *vaddr, uint64_t *offset)
{
	return symbol_of(fd, name, false, vaddr, offset);
}

int elf__function_fd(int fd, const char *name, uint64_t *vaddr, uint64_t *offset)
{
	return symbol_of(fd, name, true, vaddr, offset);
}

int elf__symbol(const char *path, const char *name, uint64_t *vaddr, uint64_t *offset)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = elf__symbol_fd(fd, name, vaddr, offset);
	close(fd);
	return err;
}

/* The entries of the file's PT_DYNAMIC segment, or NULL without one (a static file). */
static Elf_Data *dynamic_entries(Elf *elf)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return NULL;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_DYNAMIC)
			return elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						    ELF_T_DYN);
	}
	return NULL;
}

/* DT_INIT of a shared object, or 0. */
static uint64_t dt_init_of(Elf *elf)
{
	Elf_Data *data = dynamic_entries(elf);
	GElf_Dyn dyn;

	for (int j = 0; data && gelf_getdyn(data, j, &dyn) && dyn.d_tag != DT_NULL; j++)
		if (dyn.d_tag == DT_INIT)
			return dyn.d_un.d_ptr;
	return 0;
}

int elf__start_offset(int fd, uint64_t *offset)
{
	bool executable = false;
	size_t phnum;
	GElf_Ehdr eh;
	uint64_t vaddr;
	Elf *elf;
	int err;

	*offset = 0;
	err = elf__open_fd(fd, &elf);
	if (err)
		return err;
	if (!gelf_getehdr(elf, &eh)) {
		elf_end(elf);
		return -ENOEXEC;
	}
	/* A position-independent executable is ET_DYN too: it has PT_INTERP. */
	executable = eh.e_type == ET_EXEC;
	if (elf_getphdrnum(elf, &phnum) != 0)
		phnum = 0;
	for (size_t i = 0; i < phnum && !executable; i++) {
		GElf_Phdr ph;

		executable = gelf_getphdr(elf, i, &ph) && ph.p_type == PT_INTERP;
	}
	vaddr = executable ? eh.e_entry : dt_init_of(elf);
	/* A uprobe goes there: into code the file holds, never past it. */
	if (!vaddr || elf__code_offset(elf, vaddr, offset) != 0)
		*offset = 0;
	elf_end(elf);
	return *offset ? 0 : -ENOENT;
}

int elf__interpreter(const char *path, char *buf, size_t len)
{
	size_t phnum;
	Elf *elf;
	int fd, err;

	buf[0] = '\0';
	err = elf__open(path, &fd, &elf);
	if (err)
		return err;
	if (elf_getphdrnum(elf, &phnum) != 0)
		phnum = 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		size_t size;
		char *raw;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_INTERP)
			continue;
		raw = elf_rawfile(elf, &size);
		if (!raw || ph.p_offset + ph.p_filesz > size || ph.p_filesz == 0 ||
		    ph.p_filesz >= len) {
			err = -ENOEXEC;
			break;
		}
		memcpy(buf, raw + ph.p_offset, ph.p_filesz);
		buf[ph.p_filesz - 1] = '\0';
		break;
	}
	elf__close(fd, elf);
	return err;
}

/* DT_NEEDED entries read per file; more are not followed (attach --all). */
#define NEEDED_MAX 64

/* The string at offset in the dynamic string table, NUL-terminated within it; NULL if not. */
static const char *dyn_string(const char *strtab, uint64_t size, uint64_t offset)
{
	if (offset >= size || !memchr(strtab + offset, '\0', size - offset))
		return NULL;
	return strtab + offset;
}

int elf__needed(const char *path, void (*fn)(const char *name, void *ctx), void *ctx,
		char *runpath, size_t len)
{
	uint64_t needed[NEEDED_MAX], strtab = 0, strsz = 0, run = 0, rpath = 0, strtab_offset = 0;
	size_t count = 0, size;
	bool have_runpath = false, have_rpath = false, executable;
	const char *raw, *name;
	Elf_Data *data;
	GElf_Dyn dyn;
	Elf *elf;
	int fd, err;

	runpath[0] = '\0';
	err = elf__open(path, &fd, &elf);
	if (err)
		return err;
	data = dynamic_entries(elf);
	for (int j = 0; data && gelf_getdyn(data, j, &dyn) && dyn.d_tag != DT_NULL; j++) {
		if (dyn.d_tag == DT_NEEDED && count < NEEDED_MAX)
			needed[count++] = dyn.d_un.d_val;
		else if (dyn.d_tag == DT_STRTAB)
			strtab = dyn.d_un.d_ptr;
		else if (dyn.d_tag == DT_STRSZ)
			strsz = dyn.d_un.d_val;
		else if (dyn.d_tag == DT_RUNPATH) {
			run = dyn.d_un.d_val;
			have_runpath = true;
		} else if (dyn.d_tag == DT_RPATH) {
			rpath = dyn.d_un.d_val;
			have_rpath = true;
		}
	}
	/* No dynamic section (static): nothing needed, no error. */
	raw = elf_rawfile(elf, &size);
	if (strtab && (!raw || elf__segment_of(elf, strtab, &strtab_offset, &executable) != 0 ||
		       strtab_offset > size || strsz > size - strtab_offset)) {
		elf__close(fd, elf);
		return -ENOEXEC;
	}
	/* The loader ignores DT_RPATH when DT_RUNPATH is there. */
	if (strtab && (have_runpath || have_rpath) &&
	    (name = dyn_string(raw + strtab_offset, strsz, have_runpath ? run : rpath)))
		snprintf(runpath, len, "%s", name);
	for (size_t i = 0; strtab && i < count; i++)
		if ((name = dyn_string(raw + strtab_offset, strsz, needed[i])))
			fn(name, ctx);
	elf__close(fd, elf);
	return 0;
}
