// SPDX-License-Identifier: MIT
/*
 * stapsdt note reader on libelf.  libbpf parses the same notes when it
 * attaches, but does not expose a listing, which `khprof probes` and the
 * attach logic (which probes does this file carry?) both need.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "usdt_notes.h"

#define STAPSDT_NOTE_TYPE 3
#define STAPSDT_NOTE_NAME "stapsdt"

static Elf_Scn *find_section(Elf *elf, const char *wanted, GElf_Shdr *shdr_out)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *name;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && strcmp(name, wanted) == 0) {
			*shdr_out = shdr;
			return scn;
		}
	}
	return NULL;
}

/* Copies the NUL-terminated string at *pos within [*pos, end), advancing *pos. */
static char *take_string(const char **pos, const char *end)
{
	const char *nul = memchr(*pos, '\0', end - *pos);
	char *copy;

	if (!nul)
		return NULL;
	copy = strdup(*pos);
	*pos = nul + 1;
	return copy;
}

static int append_note(struct usdt_note_list *list, const char *desc, size_t desc_len,
		       uint64_t base_section_addr)
{
	const char *pos = desc + 3 * sizeof(uint64_t), *end = desc + desc_len;
	struct usdt_note note = { 0 }, *grown;
	uint64_t addrs[3];

	if (desc_len < sizeof(addrs) + 3)
		return -EINVAL;
	memcpy(addrs, desc, sizeof(addrs));
	note.address = addrs[0];
	/* Prelink moves code but not the note: .stapsdt.base tells by how much. */
	if (base_section_addr && addrs[1])
		note.address += base_section_addr - addrs[1];
	note.semaphore = addrs[2];
	note.provider = take_string(&pos, end);
	note.name = note.provider ? take_string(&pos, end) : NULL;
	note.args = note.name ? take_string(&pos, end) : NULL;
	if (!note.args) {
		free(note.provider);
		free(note.name);
		return -EINVAL;
	}
	grown = realloc(list->notes, (list->count + 1) * sizeof(*grown));
	if (!grown) {
		free(note.provider);
		free(note.name);
		free(note.args);
		return -ENOMEM;
	}
	list->notes = grown;
	list->notes[list->count++] = note;
	return 0;
}

/* The file offset of a virtual address, from the PT_LOAD segment holding it. */
static uint64_t file_offset_of(Elf *elf, uint64_t vaddr)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz)
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	return 0;
}

static int read_notes(Elf *elf, struct usdt_note_list *out)
{
	GElf_Shdr notes_shdr, base_shdr;
	uint64_t base_addr = 0;
	Elf_Scn *notes;
	Elf_Data *data;
	GElf_Nhdr nhdr;
	size_t off = 0, name_off, desc_off;
	struct usdt_note *note;
	int err;

	notes = find_section(elf, ".note.stapsdt", &notes_shdr);
	if (!notes)
		return 0;
	if (notes_shdr.sh_type != SHT_NOTE)
		return -EINVAL;
	if (find_section(elf, ".stapsdt.base", &base_shdr))
		base_addr = base_shdr.sh_addr;
	data = elf_getdata(notes, NULL);
	if (!data)
		return -EINVAL;
	while ((off = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		const char *buf = data->d_buf;

		if (nhdr.n_type != STAPSDT_NOTE_TYPE || nhdr.n_namesz != sizeof(STAPSDT_NOTE_NAME) ||
		    strcmp(buf + name_off, STAPSDT_NOTE_NAME) != 0)
			continue;
		err = append_note(out, buf + desc_off, nhdr.n_descsz, base_addr);
		if (err)
			return err;
		note = &out->notes[out->count - 1];
		note->file_offset = file_offset_of(elf, note->address);
		if (note->semaphore)
			note->semaphore_offset = file_offset_of(elf, note->semaphore);
	}
	return 0;
}

/* Opens path for libelf; -ENOENT/-EACCES, or -ENOEXEC when it is not ELF. */
static int elf_open(const char *path, int *fd, Elf **elf)
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

static void elf_close(int fd, Elf *elf)
{
	elf_end(elf);
	close(fd);
}

int usdt_notes__read(const char *path, struct usdt_note_list *out)
{
	Elf *elf;
	int fd, err;

	out->notes = NULL;
	out->count = 0;
	err = elf_open(path, &fd, &elf);
	if (err)
		return err;
	err = read_notes(elf, out);
	if (err)
		usdt_notes__free(out);
	elf_close(fd, elf);
	return err;
}

void usdt_notes__free(struct usdt_note_list *list)
{
	for (size_t i = 0; i < list->count; i++) {
		free(list->notes[i].provider);
		free(list->notes[i].name);
		free(list->notes[i].args);
	}
	free(list->notes);
	list->notes = NULL;
	list->count = 0;
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

	err = elf_open(path, &fd, &elf);
	if (err)
		return err;
	err = find_symbol(elf, name, vaddr);
	if (!err) {
		*offset = file_offset_of(elf, *vaddr);
		err = *offset ? 0 : -ENOENT;
	}
	elf_close(fd, elf);
	return err;
}

/* DT_INIT of a shared object, or 0. */
static uint64_t dt_init_of(Elf *elf)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *data;
		GElf_Dyn dyn;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_DYNAMIC)
			continue;
		data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_DYN);
		for (int j = 0; data && gelf_getdyn(data, j, &dyn); j++) {
			if (dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == DT_INIT)
				return dyn.d_un.d_ptr;
		}
	}
	return 0;
}

int elf__start_offset(const char *path, uint64_t *offset)
{
	bool executable = false;
	size_t phnum;
	GElf_Ehdr eh;
	uint64_t vaddr;
	Elf *elf;
	int fd, err;

	*offset = 0;
	err = elf_open(path, &fd, &elf);
	if (err)
		return err;
	if (!gelf_getehdr(elf, &eh)) {
		elf_close(fd, elf);
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
	*offset = vaddr ? file_offset_of(elf, vaddr) : 0;
	elf_close(fd, elf);
	return *offset ? 0 : -ENOENT;
}

int elf__interpreter(const char *path, char *buf, size_t len)
{
	size_t phnum;
	Elf *elf;
	int fd, err;

	buf[0] = '\0';
	err = elf_open(path, &fd, &elf);
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
	elf_close(fd, elf);
	return err;
}

bool usdt_notes__has(const struct usdt_note_list *list, const char *provider, const char *name)
{
	for (size_t i = 0; i < list->count; i++)
		if (strcmp(list->notes[i].provider, provider) == 0 &&
		    strcmp(list->notes[i].name, name) == 0)
			return true;
	return false;
}
