/* SPDX-License-Identifier: MIT */
/*
 * usdt_where.h - where a probe site is in its program's source: the
 * function that holds it (from DWARF, else the symbol table) and the
 * file:line a reader would look at (DWARF's line table, or for a site in
 * an inlined header function such as KH_SPAN_SCOPE's, the line that
 * called it).  On elfutils' libdw, Debian's DWARF reader, rather than a
 * DWARF parser of our own.
 */
#ifndef KHPROF_USDT_WHERE_H
#define KHPROF_USDT_WHERE_H

#include <stdbool.h>
#include <stdint.h>

struct usdt_where {
	char function[512]; /* "" when neither DWARF nor a symbol covers the address; a
			     * mangled name cut short would not demangle (C++ and Rust
			     * names of generics pass 128 bytes) */
	char file[256];     /* "" without DWARF line information */
	unsigned int line;
	char unit[256];     /* the compile unit, when it is not file: whose copy of a header function */
};

struct usdt_where_ctx;

/* Opens path for lookups; 0, or -errno (-ENOEXEC when it is not ELF). */
int usdt_where__open(const char *path, struct usdt_where_ctx **ctx);
/* Fills *out for the probe at virtual address address (struct usdt_note's). */
void usdt_where__find(struct usdt_where_ctx *ctx, uint64_t address, struct usdt_where *out);
/* Whether the file has DWARF at all (else only functions, from symbols). */
bool usdt_where__has_dwarf(const struct usdt_where_ctx *ctx);
void usdt_where__close(struct usdt_where_ctx *ctx);

#endif
