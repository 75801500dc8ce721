/* SPDX-License-Identifier: MIT */
/* Reading USDT (stapsdt) notes from ELF files, for `khprof probes` and attach. */
#ifndef KHPROF_USDT_NOTES_H
#define KHPROF_USDT_NOTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * elf__symbol and elf__interpreter are in usdt_elf.h; included here until
 * capture/trace.c, which reaches them through this header, includes it.
 */
#include "usdt_elf.h"

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
 * malformed or its probe lies outside the file's executable segments.
 */
int usdt_notes__read(const char *path, struct usdt_note_list *out);
void usdt_notes__free(struct usdt_note_list *list);
/* Whether the list has probe provider:name. */
bool usdt_notes__has(const struct usdt_note_list *list, const char *provider, const char *name);

#endif
