/* SPDX-License-Identifier: MIT */
/* Reading USDT (stapsdt) notes from ELF files, for `khprof probes` and attach. */
#ifndef KHPROF_USDT_NOTES_H
#define KHPROF_USDT_NOTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct usdt_note {
	char *provider;
	char *name;
	char *args;          /* argument spec, e.g. "8@%rdi 8@$3" */
	uint64_t address;    /* probe address, adjusted for prelink like libbpf does */
	uint64_t semaphore;  /* semaphore address, 0 if none */
	/* Where the kernel wants them: offsets in the file (0 when unmapped). */
	uint64_t file_offset;
	uint64_t semaphore_offset;
};

struct usdt_note_list {
	struct usdt_note *notes;
	size_t count;
};

/*
 * Reads every stapsdt note of the ELF file at path.  Returns 0 (an ELF file
 * without notes gives an empty list), -ENOENT/-EACCES when it cannot be
 * opened, -ENOEXEC when it is not an ELF file, -EINVAL when a note is
 * malformed.
 */
int usdt_notes__read(const char *path, struct usdt_note_list *out);
void usdt_notes__free(struct usdt_note_list *list);
/* Address and file offset of the function or object name (.symtab or .dynsym). */
int elf__symbol(const char *path, const char *name, uint64_t *vaddr, uint64_t *offset);

/*
 * File offset of the first code a process runs from path: the entry point
 * of an executable, the DT_INIT function of a shared library (run when it
 * is loaded, at start-up or by dlopen).  -ENOENT when there is none.
 */
int elf__start_offset(const char *path, uint64_t *offset);

/* PT_INTERP of an executable into buf, "" for a static one. */
int elf__interpreter(const char *path, char *buf, size_t len);

/* Whether the list has probe provider:name. */
bool usdt_notes__has(const struct usdt_note_list *list, const char *provider, const char *name);

#endif
