// SPDX-License-Identifier: MIT
/* ELF files on libelf: open, segments, symbols, the interpreter. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "usdt_elf.h"

int elf__open(const char *path, int *fd, Elf **elf)
{
	*elf = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	*elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!*elf || elf_kind(*elf) != ELF_K_ELF) {
		elf_end(*elf);
		close(*fd);
		return -ENOEXEC;
	}
	return 0;
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

/* The address (st_value) of a defined function or object called name. */
static int find_symbol(Elf *elf, const char *name, uint64_t *vaddr)
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
			     GELF_ST_TYPE(sym.st_info) != STT_OBJECT))
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

int elf__symbol(const char *path, const char *name, uint64_t *vaddr, uint64_t *offset)
{
	Elf *elf;
	int fd, err;

	err = elf__open(path, &fd, &elf);
	if (err)
		return err;
	err = find_symbol(elf, name, vaddr);
	if (!err) {
		bool executable;

		err = elf__segment_of(elf, *vaddr, offset, &executable);
		if (!err && !*offset)
			err = -ENOENT;
	}
	elf__close(fd, elf);
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

int elf__start_offset(const char *path, uint64_t *offset)
{
	bool executable = false, exec_segment;
	size_t phnum;
	GElf_Ehdr eh;
	uint64_t vaddr;
	Elf *elf;
	int fd, err;

	*offset = 0;
	err = elf__open(path, &fd, &elf);
	if (err)
		return err;
	if (!gelf_getehdr(elf, &eh)) {
		elf__close(fd, elf);
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
	if (!vaddr || elf__segment_of(elf, vaddr, offset, &exec_segment) != 0)
		*offset = 0;
	elf__close(fd, elf);
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
