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

#include "usdt_elf.h"
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

/*
 * File offsets of the probe and its semaphore.  The probe must lie in an
 * executable segment, as libbpf's usdt.c requires: a uprobe anywhere else
 * would write its breakpoint into data.  Relocatable objects have no
 * segments; their notes are listed with offset 0 and never attached.
 */
static int note__place(Elf *elf, struct usdt_note *note)
{
	bool executable;

	if (!elf__has_segments(elf))
		return 0;
	if (elf__segment_of(elf, note->address, &note->file_offset, &executable) || !executable)
		return -EINVAL;
	if (note->semaphore &&
	    elf__segment_of(elf, note->semaphore, &note->semaphore_offset, &executable))
		note->semaphore_offset = 0;
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
		err = note__place(elf, note);
		if (err)
			return err;
	}
	return 0;
}

int usdt_notes__read(const char *path, struct usdt_note_list *out)
{
	Elf *elf;
	int fd, err;

	out->notes = NULL;
	out->count = 0;
	err = elf__open(path, &fd, &elf);
	if (err)
		return err;
	err = read_notes(elf, out);
	if (err)
		usdt_notes__free(out);
	elf__close(fd, elf);
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

bool usdt_notes__has(const struct usdt_note_list *list, const char *provider, const char *name)
{
	for (size_t i = 0; i < list->count; i++)
		if (strcmp(list->notes[i].provider, provider) == 0 &&
		    strcmp(list->notes[i].name, name) == 0)
			return true;
	return false;
}
