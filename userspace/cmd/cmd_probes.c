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
	"name, address, semaphore address (- if none) and argument spec.\n"
	"Needs no privileges.\n"
	"\n"
	"examples:\n"
	"   khprof probes build/kh-scan\n"
	"   khprof probes /usr/lib/x86_64-linux-gnu/libc.so.6\n";

int cmd_probes(int argc, char **argv)
{
	struct usdt_note_list notes;
	int err;

	if (wants_help(argc, argv)) {
		fputs(probes_usage, stdout);
		return KHPROF_EXIT_OK;
	}
	if (argc != 2 || argv[1][0] == '-') {
		fputs(probes_usage, stderr);
		return KHPROF_EXIT_USAGE;
	}
	err = usdt_notes__read(argv[1], &notes);
	if (err == -ENOEXEC) {
		log__error("cannot read probes of '%s': not an ELF file", argv[1]);
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (err == -EINVAL) {
		log__error("cannot read probes of '%s': malformed stapsdt note (truncated, "
			   "or a probe outside executable code)", argv[1]);
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (err) {
		log__error("cannot read probes of '%s': %s", argv[1], strerror(-err));
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (notes.count == 0) {
		log__note("'%s' has no USDT probes", argv[1]);
		return KHPROF_EXIT_OK;
	}
	printf("%-10s %-16s %-18s %-18s %s\n", "PROVIDER", "NAME", "ADDRESS", "SEMAPHORE", "ARGS");
	for (size_t i = 0; i < notes.count; i++) {
		const struct usdt_note *n = &notes.notes[i];
		char sema[24] = "-";

		if (n->semaphore)
			snprintf(sema, sizeof(sema), "0x%" PRIx64, n->semaphore);
		printf("%-10s %-16s 0x%-16" PRIx64 " %-18s %s\n", n->provider, n->name, n->address,
		       sema, n->args);
	}
	usdt_notes__free(&notes);
	return KHPROF_EXIT_OK;
}
