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

/* Opens path for libelf; 0, -ENOENT/-EACCES, or -ENOEXEC when it is not ELF. */
int elf__open(const char *path, int *fd, struct Elf **elf);
void elf__close(int fd, struct Elf *elf);

/* Whether the file has program headers (an executable or a shared object). */
bool elf__has_segments(struct Elf *elf);

/*
 * The PT_LOAD segment holding vaddr: its file offset, and whether the
 * segment is executable (PF_X).  0, or -ENOENT when no segment holds it.
 */
int elf__segment_of(struct Elf *elf, uint64_t vaddr, uint64_t *file_offset,
		    bool *executable);

#endif /* KHPROF_USDT_ELF_H */
