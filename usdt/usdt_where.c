// SPDX-License-Identifier: MIT
/*
 * usdt_where.c - a probe site's function and source line (usdt_where.h).
 *
 * libdw does the DWARF: its scopes of an address give the function and
 * the chain of inlined calls, its line table the line.  The symbol table
 * (libelf) names the function of a file built without -g.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "usdt_elf.h"
#include "usdt_where.h"

struct usdt_where_ctx {
	int fd;
	Elf *elf;
	Dwarf *dwarf; /* NULL: no DWARF in the file */
};

int usdt_where__open(const char *path, struct usdt_where_ctx **out)
{
	struct usdt_where_ctx *ctx = calloc(1, sizeof(*ctx));
	int err;

	*out = NULL;
	if (!ctx)
		return -ENOMEM;
	err = elf__open(path, &ctx->fd, &ctx->elf);
	if (err) {
		free(ctx);
		return err;
	}
	ctx->dwarf = dwarf_begin_elf(ctx->elf, DWARF_C_READ, NULL);
	*out = ctx;
	return 0;
}

bool usdt_where__has_dwarf(const struct usdt_where_ctx *ctx)
{
	return ctx && ctx->dwarf;
}

void usdt_where__close(struct usdt_where_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->dwarf)
		dwarf_end(ctx->dwarf);
	elf__close(ctx->fd, ctx->elf);
	free(ctx);
}

/* The function symbol that covers address, from .symtab, else .dynsym. */
static void symbol_of(Elf *elf, uint64_t address, char *buf, size_t len)
{
	for (int pass = 0; pass < 2 && !buf[0]; pass++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *data;

			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) || !sh.sh_entsize ||
			    !(data = elf_getdata(scn, NULL)))
				continue;
			for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym sym;
				const char *name;

				if (!gelf_getsym(data, (int)i, &sym) ||
				    GELF_ST_TYPE(sym.st_info) != STT_FUNC || address < sym.st_value ||
				    address >= sym.st_value + sym.st_size)
					continue;
				name = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (name && name[0]) {
					snprintf(buf, len, "%s", name);
					return;
				}
			}
		}
	}
}

static void source_of(Dwarf_Die *cu, Dwarf_Word file_index, char *buf, size_t len)
{
	Dwarf_Files *files;
	size_t count;
	const char *name;

	if (dwarf_getsrcfiles(cu, &files, &count) == 0 && file_index < count &&
	    (name = dwarf_filesrc(files, file_index, NULL, NULL)))
		snprintf(buf, len, "%s", name);
}

static void dwarf_where(Dwarf *dwarf, uint64_t address, struct usdt_where *out)
{
	Dwarf_Die cu, *scopes = NULL;
	Dwarf_Die *outer_inline = NULL;
	Dwarf_Line *line;
	int n;

	if (!dwarf_addrdie(dwarf, address, &cu))
		return;
	if (dwarf_diename(&cu))
		snprintf(out->unit, sizeof(out->unit), "%s", dwarf_diename(&cu));
	/* Innermost first: the inlined calls, then the function that holds them. */
	n = dwarf_getscopes(&cu, address, &scopes);
	for (int i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_inlined_subroutine)
			outer_inline = &scopes[i];
		if (tag == DW_TAG_subprogram) {
			const char *name = dwarf_diename(&scopes[i]);

			if (name)
				snprintf(out->function, sizeof(out->function), "%s", name);
			break;
		}
	}
	/* A site in an inlined header function: the caller's line says more. */
	if (outer_inline) {
		Dwarf_Attribute a;
		Dwarf_Word file = 0, lineno = 0;

		if (dwarf_formudata(dwarf_attr(outer_inline, DW_AT_call_file, &a), &file) == 0 &&
		    dwarf_formudata(dwarf_attr(outer_inline, DW_AT_call_line, &a), &lineno) == 0) {
			source_of(&cu, file, out->file, sizeof(out->file));
			out->line = (unsigned int)lineno;
		}
	}
	if (!out->file[0] && (line = dwarf_getsrc_die(&cu, address))) {
		const char *name = dwarf_linesrc(line, NULL, NULL);
		int lineno = 0;

		if (name) {
			snprintf(out->file, sizeof(out->file), "%s", name);
			dwarf_lineno(line, &lineno);
			out->line = lineno > 0 ? (unsigned int)lineno : 0;
		}
	}
	free(scopes);
	if (!strcmp(out->unit, out->file))
		out->unit[0] = '\0';
}

void usdt_where__find(struct usdt_where_ctx *ctx, uint64_t address, struct usdt_where *out)
{
	memset(out, 0, sizeof(*out));
	if (ctx->dwarf)
		dwarf_where(ctx->dwarf, address, out);
	if (!out->function[0])
		symbol_of(ctx->elf, address, out->function, sizeof(out->function));
}
