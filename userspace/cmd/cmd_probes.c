// SPDX-License-Identifier: MIT
/* khprof probes PATH: lists the USDT probes of any ELF file. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "log.h"
#include "usdt_notes.h"

static const char probes_usage[] =
	"usage: khprof probes PATH\n"
	"\n"
	"Lists every USDT probe (any provider) in the ELF file PATH: provider,\n"
	"name, address, semaphore address (- if none) and argument spec.  Programs\n"
	"and libraries built with probes (<sys/sdt.h>, keyhog_profile.h) carry\n"
	"them in .note.stapsdt; many distributions' Python, libstdc++ or\n"
	"PostgreSQL builds do, other files have none.  Needs no privileges.\n"
	"\n"
	"examples:\n"
	"   khprof probes build/kh-scan\n"
	"   khprof probes \"$(gcc -print-file-name=libstdc++.so.6)\"\n"
	"   khprof probes \"$(readlink -f \"$(command -v python3)\")\"\n";

/* The widest of a column's entries, never narrower than min. */
static int column_width(const struct usdt_note_list *notes, size_t field, size_t min)
{
	size_t width = min;

	for (size_t i = 0; i < notes->count; i++) {
		const struct usdt_note *n = &notes->notes[i];
		size_t len = strlen(field ? n->name : n->provider);

		width = len > width ? len : width;
	}
	return (int)width;
}

int cmd_probes(int argc, char **argv)
{
	struct usdt_note_list notes;
	int provider_width, name_width, err;

	if (wants_help(argc, argv)) {
		fputs(probes_usage, stdout);
		return KHPROF_EXIT_OK;
	}
	if (argc < 2)
		return usage_error("probes", "probes needs the path of an ELF file");
	if (argv[1][0] == '-')
		return usage_error("probes", "unknown option '%s'", argv[1]);
	if (argc > 2)
		return usage_error("probes", "unexpected argument '%s'", argv[2]);
	err = usdt_notes__read(argv[1], &notes);
	if (err == -ENOEXEC) {
		log__error("cannot read probes of '%s': not an ELF file", argv[1]);
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (err == -EINVAL) {
		log__error("cannot read probes of '%s': malformed stapsdt note", argv[1]);
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (notes.outside_code)
		log__note("skipped %zu probe note(s) of '%s' outside executable code "
			  "(sites the linker discarded); they are never attached",
			  notes.outside_code, argv[1]);
	if (err) {
		log__error("cannot read probes of '%s': %s", argv[1], strerror(-err));
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (notes.count == 0) {
		log__note("'%s' has no USDT probes", argv[1]);
		usdt_notes__free(&notes);
		return KHPROF_EXIT_OK;
	}
	/* Python's import__find__load__start is 25 characters long. */
	provider_width = column_width(&notes, 0, 10);
	name_width = column_width(&notes, 1, 16);
	printf("%-*s %-*s %-18s %-18s %s\n", provider_width, "PROVIDER", name_width, "NAME",
	       "ADDRESS", "SEMAPHORE", "ARGS");
	for (size_t i = 0; i < notes.count; i++) {
		const struct usdt_note *n = &notes.notes[i];
		char sema[24] = "-";

		if (n->semaphore)
			snprintf(sema, sizeof(sema), "0x%" PRIx64, n->semaphore);
		printf("%-*s %-*s 0x%-16" PRIx64 " %-18s %s\n", provider_width, n->provider,
		       name_width, n->name, n->address, sema, n->args);
	}
	usdt_notes__free(&notes);
	return KHPROF_EXIT_OK;
}
