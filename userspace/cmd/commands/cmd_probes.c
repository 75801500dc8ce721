// SPDX-License-Identifier: MIT
/*
 * khprof probes PATH: lists the USDT probes of any ELF file, where each
 * site is (function, and file:line when the file has DWARF) and in which
 * modes record and attach attach it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "demangle.h"
#include "exit_codes.h"
#include "log.h"
#include "record.h"
#include "trace.h"
#include "usdt_notes.h"
#include "usdt_where.h"
#include "utf8.h"

static const char probes_usage[] =
	"usage: khprof probes PATH\n"
	"\n"
	"Lists every USDT probe site (any provider) in the ELF file PATH, one row\n"
	"per site: provider, name, address, semaphore address (- if none),\n"
	"argument spec, the modes in which 'record' and 'attach' attach it (batch,\n"
	"span, pair, all, or - for probes khprof never attaches), the function that\n"
	"holds the site and its file:line (from DWARF, so when PATH was built with\n"
	"-g; a site inside an inlined header function such as KH_SPAN_SCOPE's shows\n"
	"the line that called it).  A probe used in several\n"
	"places has a site, and a row, for each; a note on stderr counts the sites\n"
	"'attach' reports in each mode.  Programs and libraries built with probes\n"
	"(<sys/sdt.h>, keyhog_profile.h) carry them in .note.stapsdt; many\n"
	"distributions' Python, libstdc++ or PostgreSQL builds do, other files\n"
	"have none.  Sites khprof refuses are not listed: those the linker\n"
	"discarded are counted on stderr, any other is named with why (a\n"
	"semaphore in read-only data, a site not on a no-op...: docs/PROBES.md).\n"
	"A file of another architecture, or whose headers do not hold together,\n"
	"is exit 2.  Needs no privileges.\n"
	"\n"
	"examples:\n"
	"   khprof probes build/kh-scan\n"
	"   khprof probes \"$(gcc -print-file-name=libstdc++.so.6)\"\n"
	"   khprof probes \"$(readlink -f \"$(command -v python3)\")\"\n";

#define MODE_BIT(m) (1u << (m))
#define ALL_MODES (MODE_BIT(KH_MODE_SPAN) | MODE_BIT(KH_MODE_PAIR) | MODE_BIT(KH_MODE_BATCH))

/*
 * One site's columns, every string escaped (utf8__escape): a note's and
 * DWARF's strings are the file's, and a crafted one must not write
 * khprof's output (a newline, a terminal's escape sequence).
 */
struct row {
	struct usdt_where where;
	char provider[96];
	char name[160];
	char args[320];
	char function[512];
	char source[700];
	char modes[24];
};

static void modes_text(unsigned int modes, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	if (!modes) {
		snprintf(buf, len, "-");
		return;
	}
	if (modes == ALL_MODES) {
		snprintf(buf, len, "all");
		return;
	}
	for (uint32_t m = 0; m < KH_MODE_COUNT; m++)
		if (modes & MODE_BIT(m))
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? "," : "",
					      kh_trace_mode__name(m));
}

static int width_of(const char *s, int width)
{
	int len = (int)strlen(s);

	return len > width ? len : width;
}

/*
 * The sites the parser refused (usdt_notes.h), which are not listed:
 * those the linker discarded counted in one line (they can never fire,
 * and a large library may have many), any other named with its reason.
 */
static void name_refused(const char *file, const struct usdt_note_list *notes)
{
	if (notes->outside_code)
		log__note("skipped %zu probe note(s) of '%s' outside executable code "
			  "(sites the linker discarded); they are never attached",
			  notes->outside_code, file);
	for (size_t i = 0; i < notes->refused_count; i++) {
		const struct usdt_note *n = &notes->refused[i];
		char provider[64], name[96], reason[192];

		if (n->refusal == USDT_SITE_OUTSIDE_CODE)
			continue;
		log__warn("refused probe site '%s:%s' at 0x%" PRIx64 " of '%s': %s; it is never "
			  "attached", utf8__escape(n->provider, provider, sizeof(provider)),
			  utf8__escape(n->name, name, sizeof(name)), n->address, file,
			  usdt_note__refusal_text(n, reason, sizeof(reason)));
	}
}

int cmd_probes(int argc, char **argv)
{
	struct usdt_note_list notes;
	struct usdt_where_ctx *where = NULL;
	struct row *rows;
	int provider_width = 10, name_width = 16, function_width = 8, args_width = 4, err;
	char file[512];
	size_t counts[KH_MODE_COUNT] = { 0 }, clock_sites = 0;
	char clock_note[160] = "";
	uint32_t def;

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
	utf8__escape(argv[1], file, sizeof(file));
	err = usdt_notes__read(argv[1], &notes);
	if (err == -ENOEXEC) {
		log__error("cannot read probes of '%s': not an ELF file", file);
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (err == -EINVAL || err == -ENOTSUP) {
		log__error("cannot read probes of '%s': %s ELF file: %s", file,
			   err == -EINVAL ? "malformed" : "unsupported", notes.problem);
		return KHPROF_EXIT_BAD_INPUT;
	}
	if (err) {
		log__error("cannot read probes of '%s': %s", file, strerror(-err));
		return KHPROF_EXIT_BAD_INPUT;
	}
	name_refused(file, &notes);
	if (notes.count == 0) {
		log__note("'%s' has no USDT probes", file);
		usdt_notes__free(&notes);
		return KHPROF_EXIT_OK;
	}
	rows = calloc(notes.count, sizeof(*rows));
	if (!rows) {
		log__error("cannot read probes of '%s': out of memory", file);
		usdt_notes__free(&notes);
		return KHPROF_EXIT_FAILURE;
	}
	/* Without it the rows just lack function and line: the probes are still listed. */
	if (usdt_where__open(argv[1], &where))
		where = NULL;
	for (size_t i = 0; i < notes.count; i++) {
		const struct usdt_note *n = &notes.notes[i];
		struct row *r = &rows[i];
		unsigned int modes = tracer__probe_modes(n->provider, n->name);

		if (where)
			usdt_where__find(where, n->address, &r->where);
		/* A header function's copy says whose it is: "keyhog_profile.h:361 (scan.c)". */
		if (r->where.file[0] && r->where.line) {
			char source[sizeof(r->where.file) + sizeof(r->where.unit) + 16];

			snprintf(source, sizeof(source), "%s:%u%s%s%s", r->where.file,
				 r->where.line, r->where.unit[0] ? " (" : "", r->where.unit,
				 r->where.unit[0] ? ")" : "");
			utf8__escape(source, r->source, sizeof(r->source));
		} else {
			utf8__escape(r->where.file[0] ? r->where.file : "-", r->source,
				     sizeof(r->source));
		}
		if (!r->where.function[0])
			snprintf(r->where.function, sizeof(r->where.function), "-");
		/* A Rust or C++ function demangled, as the reports name it (demangle.h). */
		{
			char *shown = kh_name__demangle(r->where.function);

			utf8__escape(shown ? shown : r->where.function, r->function,
				     sizeof(r->function));
			free(shown);
		}
		utf8__escape(n->provider, r->provider, sizeof(r->provider));
		utf8__escape(n->name, r->name, sizeof(r->name));
		utf8__escape(n->args, r->args, sizeof(r->args));
		/* As attach counts: a site it can map, in each mode that wants it. */
		if (!n->file_offset)
			modes = 0;
		modes_text(modes, r->modes, sizeof(r->modes));
		/* Attached only when batched spans are to use CLOCK_MONOTONIC: counted apart. */
		if (modes && !strcmp(n->provider, "keyhog") && !strcmp(n->name, "clock_monotonic"))
			clock_sites++;
		else
			for (uint32_t m = 0; m < KH_MODE_COUNT; m++)
				counts[m] += (modes & MODE_BIT(m)) != 0;
		provider_width = width_of(r->provider, provider_width);
		name_width = width_of(r->name, name_width);
		function_width = width_of(r->function, function_width);
		args_width = width_of(r->args, args_width);
	}
	/* The first five columns as before, for scripts that read them; the new ones after. */
	printf("%-*s %-*s %-18s %-18s %-*s %-11s %-*s %s\n", provider_width, "PROVIDER",
	       name_width, "NAME", "ADDRESS", "SEMAPHORE", args_width, "ARGS", "ATTACH",
	       function_width, "FUNCTION", "SOURCE");
	for (size_t i = 0; i < notes.count; i++) {
		const struct usdt_note *n = &notes.notes[i];
		const struct row *r = &rows[i];
		char sema[24] = "-";

		if (n->semaphore)
			snprintf(sema, sizeof(sema), "0x%" PRIx64, n->semaphore);
		printf("%-*s %-*s 0x%-16" PRIx64 " %-18s %-*s %-11s %-*s %s\n", provider_width,
		       r->provider, name_width, r->name, n->address, sema, args_width, r->args,
		       r->modes, function_width, r->function, r->source);
	}
	/* Batch is the default mode on every machine (the span clock adapts, span_clock.h). */
	def = KH_MODE_BATCH;
	/*
	 * attach -p says how many sites it attached: in batch mode the
	 * clock_monotonic sites too where khprof does not trust the TSC (their
	 * semaphore asks for CLOCK_MONOTONIC), a choice made per machine.
	 */
	if (clock_sites)
		snprintf(clock_note, sizeof(clock_note), " (%zu with clock_monotonic, attached "
			 "where khprof times batched spans with CLOCK_MONOTONIC)",
			 counts[def] + clock_sites);
	log__note("%zu site%s; attach counts %zu in %s mode, the default%s, %zu in span, "
		  "%zu in pair mode", notes.count, notes.count == 1 ? "" : "s", counts[def],
		  kh_trace_mode__name(def), clock_note, counts[KH_MODE_SPAN],
		  counts[KH_MODE_PAIR]);
	if (where && !usdt_where__has_dwarf(where))
		log__note("'%s' has no DWARF (built without -g, or stripped): functions from its "
			  "symbols, no file:line", file);
	usdt_where__close(where);
	free(rows);
	usdt_notes__free(&notes);
	return KHPROF_EXIT_OK;
}
