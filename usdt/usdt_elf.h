/* SPDX-License-Identifier: MIT */
/*
 * usdt_elf.h - what khprof reads of an ELF file besides its probe notes:
 * symbols, the program interpreter, and the PT_LOAD segment of an address
 * (for the file offsets uprobes want).  On libelf.
 */
#ifndef KHPROF_USDT_ELF_H
#define KHPROF_USDT_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The functions that read an open file (fd) read the file khprof attaches
 * to, never the one at its path a moment later: capture/attach.c opens a
 * file once, reads it through its descriptor and hands the kernel the
 * same descriptor (docs/PROBES.md, "What khprof checks in a file").  fd
 * stays the caller's.
 */

/*
 * Address and file offset of the function or object name (.symtab or
 * .dynsym): a data symbol, read in a process's memory, never a place for
 * a breakpoint (elf__function_fd is).
 */
int elf__symbol(const char *path, const char *name, uint64_t *vaddr, uint64_t *offset);
int elf__symbol_fd(int fd, const char *name, uint64_t *vaddr, uint64_t *offset);

/*
 * Address and file offset of the function name, inside the bytes the file
 * holds of an executable segment: where a uprobe may go (a symbol of a
 * crafted file pointed into data is -ENOENT, as one not there).
 */
int elf__function_fd(int fd, const char *name, uint64_t *vaddr, uint64_t *offset);

/*
 * File offset of the first code a process runs from fd's file: the entry
 * point of an executable, the DT_INIT function of a shared library (run
 * when it is loaded, at start-up or by dlopen).  -ENOENT when there is
 * none.
 */
int elf__start_offset(int fd, uint64_t *offset);

/* PT_INTERP of an executable into buf, "" for a static one. */
int elf__interpreter(const char *path, char *buf, size_t len);

/*
 * The libraries an executable or shared object names (DT_NEEDED, the first
 * 64), each passed to fn, and its search path into runpath (DT_RUNPATH,
 * else DT_RPATH; "" for none), read through PT_DYNAMIC and DT_STRTAB with
 * every string bounds-checked against the file.  0 (a static file names
 * none), -ENOENT/-EACCES, or -ENOEXEC for a file that is not ELF or whose
 * string table lies outside it.
 */
int elf__needed(const char *path, void (*fn)(const char *name, void *ctx), void *ctx,
		char *runpath, size_t len);

/* libelf's handle (typedef struct Elf Elf in <libelf.h>). */
struct Elf;

/*
 * Opens path for libelf; 0, -ENOENT/-EACCES, -ENOEXEC when it is not ELF,
 * or -EINVAL when it starts as ELF but libelf cannot read its header.
 */
int elf__open(const char *path, int *fd, struct Elf **elf);
void elf__close(int fd, struct Elf *elf);
/* The same on an open file, which stays the caller's (end the handle with elf_end). */
int elf__open_fd(int fd, struct Elf **elf);

/* Whether the file has program headers (an executable or a shared object). */
bool elf__has_segments(struct Elf *elf);

/*
 * The PT_LOAD segment holding vaddr anywhere in its memory (.bss
 * included): the file offset the loader's arithmetic gives it, and
 * whether the segment is executable (PF_X).  For data symbols, read in
 * the process's memory; never for a place to put a breakpoint (a uprobe
 * writes to the file's page at that offset, which past the segment's file
 * bytes is another segment's data): elf__code_offset is for those.
 * 0, or -ENOENT when no segment holds it.
 */
int elf__segment_of(struct Elf *elf, uint64_t vaddr, uint64_t *file_offset,
		    bool *executable);

/*
 * File offset of vaddr inside the bytes the file holds of an executable
 * segment (p_filesz, not p_memsz).  0, or -ENOENT.
 */
int elf__code_offset(struct Elf *elf, uint64_t vaddr, uint64_t *file_offset);

/* A PT_LOAD segment of a checked file (elf__layout). */
struct elf_segment {
	uint64_t vaddr;
	uint64_t memsz;
	uint64_t offset;
	uint64_t filesz;
	uint32_t flags; /* PF_R, PF_W, PF_X */
};

/*
 * What khprof relies on in a file whose headers were checked: its bytes,
 * its PT_LOAD segments (in ascending, non-overlapping address order) and
 * the range PT_GNU_RELRO makes read-only after relocation.
 */
struct elf_layout {
	const unsigned char *raw;
	size_t size;
	struct elf_segment *loads;
	size_t load_count;
	uint64_t relro_start, relro_end; /* equal: none */
};

struct usdt_arch;

/*
 * Checks that the headers of elf hold together, as a loader and libbpf
 * rely on them (every table and every segment's and section's bytes
 * inside the file, segments that do not overlap, section names inside
 * their table), and that it is a file of arch (class, byte order,
 * machine), and fills layout.  0; -ENOTSUP for a file of another
 * architecture (or arch NULL), -EINVAL for a malformed one, with problem
 * saying what, e.g. "the section header table ends past the end of the
 * file"; -ENOMEM.
 */
int elf__layout(struct Elf *elf, const struct usdt_arch *arch, struct elf_layout *layout,
		char *problem, size_t len);
void elf__layout_free(struct elf_layout *layout);

#endif /* KHPROF_USDT_ELF_H */
