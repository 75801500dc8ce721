/* SPDX-License-Identifier: MIT */
/*
 * Reading USDT (stapsdt) notes from ELF files, for `khprof probes` and
 * attach.  Every check of a file and of its sites is made here, before
 * anything is attached (as libbpf's usdt.c does): a file whose headers do
 * not hold together is refused whole, a site the kernel would refuse or
 * that would patch anything but a no-op in code is refused alone, with
 * its reason, and the others stay usable.
 */
#ifndef KHPROF_USDT_NOTES_H
#define KHPROF_USDT_NOTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "khprof_shared.h"
/*
 * elf__symbol and elf__interpreter are in usdt_elf.h; included here until
 * capture/trace.c, which reaches them through this header, includes it.
 */
#include "usdt_elf.h"

/* Why a site was refused; 0 for a usable one.  Names in usdt_notes.c. */
enum usdt_refusal {
	USDT_SITE_OK = 0,
	USDT_SITE_OUTSIDE_CODE = 1,      /* not in an executable segment (a site the linker discarded) */
	USDT_SITE_NOT_IN_FILE = 2,       /* in an executable segment's zero-filled end */
	USDT_SITE_NOT_A_NOP = 3,         /* the instruction there is not a no-op */
	USDT_SITE_ARGUMENTS = 4,         /* an argument spec khprof cannot read */
	USDT_SEMAPHORE_OUTSIDE = 5,      /* not in any segment's file bytes (.bss, or nowhere) */
	USDT_SEMAPHORE_READ_ONLY = 6,    /* in a segment not writable, or in RELRO */
	USDT_SEMAPHORE_MISALIGNED = 7,   /* not 2-byte aligned */
	USDT_SEMAPHORE_CONFLICT = 8,     /* another site at the address has another semaphore */
	USDT_REFUSAL_COUNT
};

struct usdt_note {
	char *provider;
	char *name;
	char *args;          /* argument spec, e.g. "8@%rdi 8@$3" */
	uint64_t address;    /* probe address, adjusted for prelink like libbpf does */
	uint64_t semaphore;  /* semaphore address, 0 if none */
	/* Where the kernel wants them: offsets in the file (0 when unmapped). */
	uint64_t file_offset;
	uint64_t semaphore_offset;
	struct kh_usdt_spec spec; /* args parsed; usdt_cookie 0 */
	enum usdt_refusal refusal;
};

struct usdt_note_list {
	struct usdt_note *notes; /* the usable sites */
	size_t count;
	struct usdt_note *refused; /* the refused ones, each with its refusal */
	size_t refused_count;
	/* Of those, sites outside executable code (a site the linker discarded). */
	size_t outside_code;
	/* Why the file was refused (-EINVAL, -ENOTSUP): "the section header table ends ...". */
	char problem[160];
};

/*
 * Reads every stapsdt note of the ELF file at path.  Returns 0 (an ELF file
 * without notes gives an empty list), -ENOENT/-EACCES when it cannot be
 * opened, -ENOEXEC when it is not an ELF file, -ENOTSUP when it is one of
 * an architecture khprof does not trace here (32-bit, big-endian, another
 * machine), -EINVAL when it is malformed (its headers or a note do not
 * hold together), -ENOMEM; problem says why for -ENOTSUP and -EINVAL.
 * Files without segments (relocatable objects) have their notes listed
 * with offset 0, and are never attached.
 */
int usdt_notes__read(const char *path, struct usdt_note_list *out);
/*
 * The same for an open file (fd stays the caller's): what attaching reads,
 * so that the sites checked are the sites of the file the kernel is handed
 * (capture/attach.c).
 */
int usdt_notes__read_fd(int fd, struct usdt_note_list *out);
/* The same for a file's bytes in memory (the fuzzer's entry). */
int usdt_notes__read_memory(const void *data, size_t size, struct usdt_note_list *out);
void usdt_notes__free(struct usdt_note_list *list);
/* Whether the list has a usable probe provider:name. */
bool usdt_notes__has(const struct usdt_note_list *list, const char *provider, const char *name);

/* The refusal's name, as records spell it: "semaphore_misaligned"; NULL out of range. */
const char *usdt_refusal__name(enum usdt_refusal refusal);
/*
 * Why note was refused, one clause with its addresses and arguments
 * escaped for any output: "its semaphore 0x4011 is not aligned to 2
 * bytes".  buf is returned.
 */
const char *usdt_note__refusal_text(const struct usdt_note *note, char *buf, size_t len);

#endif
