// SPDX-License-Identifier: MIT
/*
 * stapsdt note reader on libelf.  libbpf parses the same notes when it
 * attaches, but does not expose a listing, which `khprof probes` and the
 * attach logic (which probes does this file carry?) both need.
 *
 * Files come from anyone (a container's binaries, a program built to
 * attack the tracer), and a uprobe writes into the file's pages, which
 * every process mapping the file shares.  So every site is checked here
 * against what the kernel will do with it, before anything attaches:
 * a breakpoint only on a no-op in the code the file holds, a semaphore
 * only in writable data the file holds, aligned, and agreeing with every
 * other site at its address (the kernel refuses a second uprobe at one
 * offset with another counter, and one refusal fails the whole link).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "usdt_arch.h"
#include "usdt_elf.h"
#include "usdt_notes.h"
#include "usdt_spec.h"
#include "utf8.h"

#define STAPSDT_NOTE_TYPE 3
#define STAPSDT_NOTE_NAME "stapsdt"

static const char *const refusal_names[] = {
	[USDT_SITE_OK] = "ok",
	[USDT_SITE_OUTSIDE_CODE] = "outside_code",
	[USDT_SITE_NOT_IN_FILE] = "not_in_file",
	[USDT_SITE_NOT_A_NOP] = "not_a_nop",
	[USDT_SITE_ARGUMENTS] = "arguments",
	[USDT_SEMAPHORE_OUTSIDE] = "semaphore_outside",
	[USDT_SEMAPHORE_READ_ONLY] = "semaphore_read_only",
	[USDT_SEMAPHORE_MISALIGNED] = "semaphore_misaligned",
	[USDT_SEMAPHORE_CONFLICT] = "semaphore_conflict",
};
_Static_assert(sizeof(refusal_names) / sizeof(refusal_names[0]) == USDT_REFUSAL_COUNT,
	       "a name for each refusal");

const char *usdt_refusal__name(enum usdt_refusal refusal)
{
	return (unsigned)refusal < USDT_REFUSAL_COUNT ? refusal_names[refusal] : NULL;
}

const char *usdt_note__refusal_text(const struct usdt_note *note, char *buf, size_t len)
{
	char args[96];

	switch (note->refusal) {
	case USDT_SITE_OUTSIDE_CODE:
		snprintf(buf, len, "it lies outside executable code (a site the linker discarded)");
		break;
	case USDT_SITE_NOT_IN_FILE:
		snprintf(buf, len, "it lies in the zero-filled end of a code segment, past the "
			 "bytes the file holds");
		break;
	case USDT_SITE_NOT_A_NOP:
		snprintf(buf, len, "the instruction there is not a no-op");
		break;
	case USDT_SITE_ARGUMENTS:
		snprintf(buf, len, "khprof cannot read its arguments '%s'",
			 utf8__escape(note->args, args, sizeof(args)));
		break;
	case USDT_SEMAPHORE_OUTSIDE:
		snprintf(buf, len, "its semaphore 0x%" PRIx64 " is not in data the file holds",
			 note->semaphore);
		break;
	case USDT_SEMAPHORE_READ_ONLY:
		snprintf(buf, len, "its semaphore 0x%" PRIx64 " is in read-only memory",
			 note->semaphore);
		break;
	case USDT_SEMAPHORE_MISALIGNED:
		snprintf(buf, len, "its semaphore 0x%" PRIx64 " is not aligned to 2 bytes",
			 note->semaphore);
		break;
	case USDT_SEMAPHORE_CONFLICT:
		snprintf(buf, len, "another site at its address has a semaphore other than its "
			 "own (0x%" PRIx64 ")", note->semaphore);
		break;
	default:
		snprintf(buf, len, "it is usable");
	}
	return buf;
}

/* Copies the NUL-terminated string at *pos within [*pos, end), advancing *pos. */
static char *take_string(const char **pos, const char *end)
{
	const char *nul = memchr(*pos, '\0', (size_t)(end - *pos));
	char *copy;

	if (!nul)
		return NULL;
	copy = strdup(*pos);
	*pos = nul + 1;
	return copy;
}

static void note__free(struct usdt_note *note)
{
	free(note->provider);
	free(note->name);
	free(note->args);
}

/*
 * One note's description: three addresses, then provider, name and
 * arguments, each NUL-terminated inside it.  Like libbpf: an empty name is
 * malformed, and arguments that start with ':' are none.
 */
static int parse_note(const char *desc, size_t desc_len, uint64_t base_section_addr,
		      struct usdt_note *note)
{
	const char *pos = desc + 3 * sizeof(uint64_t), *end = desc + desc_len;
	uint64_t addrs[3];

	memset(note, 0, sizeof(*note));
	if (desc_len < sizeof(addrs) + 3)
		return -EINVAL;
	memcpy(addrs, desc, sizeof(addrs));
	note->address = addrs[0];
	/* Prelink moves code but not the note: .stapsdt.base tells by how much. */
	if (base_section_addr && addrs[1])
		note->address += base_section_addr - addrs[1];
	note->semaphore = addrs[2];
	note->provider = take_string(&pos, end);
	note->name = note->provider ? take_string(&pos, end) : NULL;
	note->args = note->name ? take_string(&pos, end) : NULL;
	if (!note->args || !note->name[0]) {
		note__free(note);
		return -EINVAL;
	}
	if (note->args[0] == ':')
		note->args[0] = '\0';
	return 0;
}

/* The PT_LOAD whose addresses [vaddr, vaddr + memsz) hold address, or NULL. */
static const struct elf_segment *segment_of(const struct elf_layout *l, uint64_t address)
{
	for (size_t i = 0; i < l->load_count; i++)
		if (address >= l->loads[i].vaddr && address - l->loads[i].vaddr < l->loads[i].memsz)
			return &l->loads[i];
	return NULL;
}

/*
 * Where the probe goes: on a no-op the file holds in executable code.
 * libbpf's usdt.c requires an executable segment, but measures it with
 * p_memsz: past p_filesz the loader fills memory with zeros, while the
 * same file offset holds the next segment's bytes (.rodata), into which
 * the kernel would write its breakpoint.  Unlike libbpf, a site outside
 * code does not make the whole file unusable: --gc-sections discards an
 * unreferenced function but keeps its note, whose address then points
 * into whatever lies at the start of the file (rustc leaves such copies of
 * inlined functions: 2 of 16 sites of tests/workloads-rs).  Those sites
 * can never fire; they are refused like the others, and counted apart.
 */
static enum usdt_refusal place_probe(const struct elf_layout *l, const struct usdt_arch *arch,
				     struct usdt_note *note)
{
	const struct elf_segment *s = segment_of(l, note->address);
	uint64_t in_segment;

	if (!s || !(s->flags & PF_X))
		return USDT_SITE_OUTSIDE_CODE;
	in_segment = note->address - s->vaddr;
	if (in_segment >= s->filesz)
		return USDT_SITE_NOT_IN_FILE;
	note->file_offset = s->offset + in_segment;
	/* Misaligned, it is no instruction (aarch64's are aligned words). */
	if (note->address % arch->insn_align ||
	    !arch->nop_length(l->raw + note->file_offset, s->filesz - in_segment))
		return USDT_SITE_NOT_A_NOP;
	return USDT_SITE_OK;
}

/*
 * Where the kernel counts attachments: a 16-bit word it increments in the
 * writable mapping of that file offset.  Only data the file holds is
 * mapped from it (.bss past p_filesz is anonymous memory, and its file
 * offset is another segment's bytes), only a writable mapping is updated,
 * and RELRO data is made read-only once the program is relocated.
 */
static enum usdt_refusal place_semaphore(const struct elf_layout *l, struct usdt_note *note)
{
	const struct elf_segment *s = segment_of(l, note->semaphore);
	uint64_t in_segment = s ? note->semaphore - s->vaddr : 0;

	if (!note->semaphore)
		return USDT_SITE_OK;
	if (!s || in_segment >= s->filesz || s->filesz - in_segment < sizeof(uint16_t))
		return USDT_SEMAPHORE_OUTSIDE;
	if (!(s->flags & PF_W) ||
	    (note->semaphore >= l->relro_start && note->semaphore < l->relro_end))
		return USDT_SEMAPHORE_READ_ONLY;
	if (note->semaphore % sizeof(uint16_t))
		return USDT_SEMAPHORE_MISALIGNED;
	note->semaphore_offset = s->offset + in_segment;
	return USDT_SITE_OK;
}

static int by_file_offset(const void *a, const void *b)
{
	const struct usdt_note *x = *(struct usdt_note *const *)a;
	const struct usdt_note *y = *(struct usdt_note *const *)b;

	return x->file_offset < y->file_offset ? -1 : x->file_offset > y->file_offset;
}

/*
 * Sites at one file offset are one uprobe to the kernel, which refuses a
 * second with another semaphore: every site of such an offset is refused
 * (one refused already keeps its first reason).
 */
static int refuse_conflicts(struct usdt_note *notes, size_t count)
{
	struct usdt_note **placed = calloc(count ? count : 1, sizeof(*placed));
	size_t n = 0;

	if (!placed)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		if (notes[i].file_offset)
			placed[n++] = &notes[i];
	qsort(placed, n, sizeof(*placed), by_file_offset);
	for (size_t i = 0, j; i < n; i = j) {
		bool differ = false;

		for (j = i + 1; j < n && placed[j]->file_offset == placed[i]->file_offset; j++)
			differ |= placed[j]->semaphore != placed[i]->semaphore;
		for (size_t k = i; differ && k < j; k++)
			if (!placed[k]->refusal)
				placed[k]->refusal = USDT_SEMAPHORE_CONFLICT;
	}
	free(placed);
	return 0;
}

/* Checks each site, in the order a reader would fix them. */
static int check_sites(const struct elf_layout *l, const struct usdt_arch *arch,
		       struct usdt_note *notes, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		struct usdt_note *n = &notes[i];

		/* Without segments (a relocatable object) nothing is attached. */
		if (l->load_count)
			n->refusal = place_probe(l, arch, n);
		if (!n->refusal && usdt_spec__parse(arch, n->args, 0, &n->spec))
			n->refusal = USDT_SITE_ARGUMENTS;
		if (!n->refusal && l->load_count)
			n->refusal = place_semaphore(l, n);
	}
	return l->load_count ? refuse_conflicts(notes, count) : 0;
}

static int append(struct usdt_note **list, size_t *count, const struct usdt_note *note)
{
	struct usdt_note *grown = realloc(*list, (*count + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	*list = grown;
	grown[(*count)++] = *note;
	return 0;
}

/* The notes of one .note.stapsdt section, appended to *all. */
static int read_section(Elf_Scn *scn, const GElf_Shdr *shdr, uint64_t base_addr,
			struct usdt_note **all, size_t *count, char *problem, size_t len)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nhdr;
	int err;

	if (shdr->sh_type != SHT_NOTE || !data)
		return snprintf(problem, len, ".note.stapsdt is not a readable note section"),
		       -EINVAL;
	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		const char *buf = data->d_buf;
		struct usdt_note note;

		off = next;
		if (nhdr.n_type != STAPSDT_NOTE_TYPE || nhdr.n_namesz != sizeof(STAPSDT_NOTE_NAME) ||
		    memcmp(buf + name_off, STAPSDT_NOTE_NAME, sizeof(STAPSDT_NOTE_NAME)) != 0)
			continue;
		if (parse_note(buf + desc_off, nhdr.n_descsz, base_addr, &note))
			return snprintf(problem, len, "a stapsdt note's strings are not terminated, "
					"or its name is empty"), -EINVAL;
		err = append(all, count, &note);
		if (err) {
			note__free(&note);
			return err;
		}
	}
	if (off != data->d_size)
		return snprintf(problem, len, "a note runs past the end of .note.stapsdt"), -EINVAL;
	return 0;
}

/* Every .note.stapsdt section (a relocatable object has one per COMDAT group). */
static int read_notes(Elf *elf, struct usdt_note **all, size_t *count, char *problem,
		      size_t len)
{
	size_t shstrndx;
	uint64_t base_addr = 0;
	Elf_Scn *scn = NULL;
	int err = 0;

	if (elf_getshdrstrndx(elf, &shstrndx) || shstrndx == SHN_UNDEF)
		return 0; /* no section names: no notes to find */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *name;

		if (gelf_getshdr(scn, &shdr) && (name = elf_strptr(elf, shstrndx, shdr.sh_name)) &&
		    strcmp(name, ".stapsdt.base") == 0 && !base_addr)
			base_addr = shdr.sh_addr;
	}
	while (!err && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *name;

		if (gelf_getshdr(scn, &shdr) && (name = elf_strptr(elf, shstrndx, shdr.sh_name)) &&
		    strcmp(name, ".note.stapsdt") == 0)
			err = read_section(scn, &shdr, base_addr, all, count, problem, len);
	}
	return err;
}

/* Checks the file, reads and checks its notes, and sorts them into out. */
static int read_elf(Elf *elf, struct usdt_note_list *out)
{
	const struct usdt_arch *arch = usdt_arch__native();
	struct usdt_note *all = NULL;
	struct elf_layout layout;
	size_t count = 0;
	int err;

	err = elf__layout(elf, arch, &layout, out->problem, sizeof(out->problem));
	if (err)
		return err;
	err = read_notes(elf, &all, &count, out->problem, sizeof(out->problem));
	if (!err)
		err = check_sites(&layout, arch, all, count);
	for (size_t i = 0; i < count; i++) {
		struct usdt_note *n = &all[i];

		if (!err)
			err = n->refusal ? append(&out->refused, &out->refused_count, n)
					 : append(&out->notes, &out->count, n);
		if (err) {
			note__free(n);
			continue;
		}
		if (n->refusal)
			n->file_offset = n->semaphore_offset = 0;
		out->outside_code += n->refusal == USDT_SITE_OUTSIDE_CODE;
	}
	/* The list's entries own the strings now (or were freed above). */
	free(all);
	elf__layout_free(&layout);
	return err;
}

static void list_init(struct usdt_note_list *out)
{
	memset(out, 0, sizeof(*out));
}

int usdt_notes__read_fd(int fd, struct usdt_note_list *out)
{
	Elf *elf;
	int err;

	list_init(out);
	err = elf__open_fd(fd, &elf);
	if (err == -EINVAL)
		snprintf(out->problem, sizeof(out->problem), "libelf cannot read its header");
	if (err)
		return err;
	err = read_elf(elf, out);
	if (err)
		usdt_notes__free(out);
	elf_end(elf);
	return err;
}

int usdt_notes__read(const char *path, struct usdt_note_list *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	list_init(out);
	if (fd < 0)
		return -errno;
	err = usdt_notes__read_fd(fd, out);
	close(fd);
	return err;
}

int usdt_notes__read_memory(const void *data, size_t size, struct usdt_note_list *out)
{
	/* libelf may convert the image in place: a copy of its own. */
	char *copy = malloc(size ? size : 1);
	Elf *elf;
	int err = -ENOEXEC;

	list_init(out);
	if (elf_version(EV_CURRENT) == EV_NONE || !copy) {
		free(copy);
		return copy ? -EINVAL : -ENOMEM;
	}
	memcpy(copy, data, size);
	elf = elf_memory(copy, size);
	if (elf && elf_kind(elf) == ELF_K_ELF)
		err = read_elf(elf, out);
	if (err)
		usdt_notes__free(out);
	elf_end(elf);
	free(copy);
	return err;
}

void usdt_notes__free(struct usdt_note_list *list)
{
	for (size_t i = 0; i < list->count; i++)
		note__free(&list->notes[i]);
	for (size_t i = 0; i < list->refused_count; i++)
		note__free(&list->refused[i]);
	free(list->notes);
	free(list->refused);
	list->notes = list->refused = NULL;
	list->count = list->refused_count = list->outside_code = 0;
}

bool usdt_notes__has(const struct usdt_note_list *list, const char *provider, const char *name)
{
	for (size_t i = 0; i < list->count; i++)
		if (strcmp(list->notes[i].provider, provider) == 0 &&
		    strcmp(list->notes[i].name, name) == 0)
			return true;
	return false;
}
