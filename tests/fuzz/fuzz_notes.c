// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the stapsdt note reader (usdt/usdt_notes.c) on any
 * bytes as an ELF file, under ASan and UBSan (tests/fuzz/run.sh).  Besides
 * crashes and undefined behaviour it checks what the reader promises the
 * attach code, so that a wrong acceptance fails as loudly as a crash:
 *
 *  - a whole file refused as malformed or unsupported says why;
 *  - a usable site of a file with segments lies on a no-op in the file
 *    bytes of an executable segment, its semaphore on a 2-byte word in the
 *    file bytes of a writable one, outside RELRO (found again here from
 *    the program headers, a second reading beside the reader's own);
 *  - usable sites at one file offset agree on their semaphore;
 *  - every string can be escaped and every refusal said.
 *
 * libFuzzer rather than a mutator of our own: clang 14 ships it
 * (libclang-rt-14-dev), and its coverage feedback finds the deep paths
 * (a note in a section in a segment) that blind mutation of a 30 KB file
 * rarely reaches.
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "promise.h"
#include "usdt_arch.h"
#include "usdt_notes.h"
#include "utf8.h"

/* Pairs of sites compared for agreeing semaphores: bounded, so a file of many notes stays fast. */
#define PAIRS_CHECKED 256

/*
 * Whether [address, address + n) lies in the file bytes of a PT_LOAD with
 * the flags wanted, at offset; outside RELRO when writable.  The file was
 * accepted, so it is a 64-bit little-endian one whose tables are inside it.
 */
static bool in_segment(const uint8_t *data, uint64_t address, uint64_t n, uint32_t wanted,
		       uint64_t offset)
{
	Elf64_Ehdr eh;
	bool found = false;

	memcpy(&eh, data, sizeof(eh));
	for (size_t i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, data + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_GNU_RELRO && (wanted & PF_W) && address >= ph.p_vaddr &&
		    address - ph.p_vaddr < ph.p_memsz)
			return false;
		if (ph.p_type == PT_LOAD && (ph.p_flags & wanted) == wanted &&
		    address >= ph.p_vaddr && address - ph.p_vaddr + n <= ph.p_filesz &&
		    offset == address - ph.p_vaddr + ph.p_offset)
			found = true;
	}
	return found;
}

static void check_usable(const uint8_t *data, size_t size, const struct usdt_note *n)
{
	const struct usdt_arch *arch = usdt_arch__native();
	char buf[256];

	PROMISE(n->refusal == USDT_SITE_OK);
	PROMISE(n->spec.arg_cnt >= 0 && n->spec.arg_cnt <= KH_USDT_MAX_ARGS);
	utf8__escape(n->provider, buf, sizeof(buf));
	utf8__escape(n->name, buf, sizeof(buf));
	utf8__escape(n->args, buf, sizeof(buf));
	if (!n->file_offset)
		return; /* a file without segments: listed, never attached */
	PROMISE(n->file_offset < size);
	PROMISE(arch->nop_length(data + n->file_offset, size - n->file_offset) > 0);
	PROMISE(in_segment(data, n->address, 1, PF_X, n->file_offset));
	if (n->semaphore) {
		PROMISE(n->semaphore % 2 == 0);
		PROMISE(n->semaphore_offset && n->semaphore_offset + 2 <= size);
		PROMISE(in_segment(data, n->semaphore, 2, PF_W, n->semaphore_offset));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usdt_note_list l;
	char buf[256];
	int err = usdt_notes__read_memory(data, size, &l);

	if (err) {
		PROMISE(err == -ENOEXEC || err == -ENOMEM || l.problem[0]);
		return 0;
	}
	for (size_t i = 0; i < l.count; i++)
		check_usable(data, size, &l.notes[i]);
	for (size_t i = 0; i < l.count && i < PAIRS_CHECKED; i++)
		for (size_t j = i + 1; j < l.count && j < PAIRS_CHECKED; j++)
			PROMISE(!l.notes[i].file_offset ||
			      l.notes[i].file_offset != l.notes[j].file_offset ||
			      l.notes[i].semaphore == l.notes[j].semaphore);
	for (size_t i = 0; i < l.refused_count; i++) {
		PROMISE(usdt_refusal__name(l.refused[i].refusal) != NULL);
		PROMISE(l.refused[i].refusal != USDT_SITE_OK);
		usdt_note__refusal_text(&l.refused[i], buf, sizeof(buf));
		PROMISE(!strchr(buf, '\n'));
	}
	usdt_notes__free(&l);
	return 0;
}
