/* SPDX-License-Identifier: MIT */
/*
 * output_formats.h - every --format of every command in one table: its
 * name, the command that accepts it, what it writes (the line the
 * command's --help shows) and its writer.  report, diff and export look a
 * format up here, list the accepted names in their usage lines and errors
 * from here, and print their format lists from here: a new format is one
 * row of output_formats.c.
 */
#ifndef KHPROF_OUTPUT_FORMATS_H
#define KHPROF_OUTPUT_FORMATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct kh_profile;
struct kh_diff;
struct kh_diff_side;

/* What a format is written from: which command (and input) accepts it. */
enum format_command {
	FORMAT_REPORT = 0,     /* report PATH: one record */
	FORMAT_REPORT_DIR = 1, /* report DIR: the runs of record --repeat */
	FORMAT_DIFF = 2,       /* diff BASE CANDIDATE */
	FORMAT_EXPORT = 3,     /* export RECORD...: metric families */
	FORMAT_COMMANDS = 4,
};

enum format_flags {
	FORMAT_DEFAULT = 1u << 0,       /* written without --format */
	FORMAT_BINARY = 1u << 1,        /* never onto a terminal, which it would garble */
	FORMAT_NEEDS_STACKS = 1u << 2,  /* a record made with --sample */
	FORMAT_NUMBERED_RUNS = 1u << 3, /* report DIR: DIR/run-NNN.json in run order */
};

/* The runs of a directory, for the report DIR writers. */
struct format_runs {
	const char *dir;
	const struct kh_profile *runs;
	const char *const *names; /* each run's path */
	size_t count;
};

struct output_format {
	enum format_command command;
	const char *name;
	/* What it writes, for --help: lines of at most 52 columns. */
	const char *writes;
	/* The writer, by command; malloc'd, *len bytes (NULL: ENOMEM or errno). */
	unsigned char *(*of_record)(const struct kh_profile *p, size_t *len);
	char *(*of_runs)(const struct format_runs *r);
	char *(*of_diff)(const struct kh_diff *d, const struct kh_diff_side *base,
			 const struct kh_diff_side *cand);
	int metrics; /* export: its enum om_format */
	unsigned flags;
	const char *what; /* FORMAT_NEEDS_STACKS: what it is called in an error */
};

/* The command's format called name, or NULL. */
const struct output_format *output_format__find(enum format_command c, const char *name);
/* The command's default format (the row with FORMAT_DEFAULT). */
const struct output_format *output_format__default(enum format_command c);

/*
 * The command's format called name; NULL after one error line naming
 * those it has and the command's --help, as every bad command line ends
 * ("unknown format 'xml' (text, markdown, json or html) (see 'khprof diff
 * --help')").
 */
const struct output_format *output_format__pick(enum format_command c, const char *name);

/*
 * The command's format names in table order, joined by sep and, before the
 * last, by last: ("|", "|") for a usage line, (", ", " or ") for prose.
 * Cut short to fit len.
 */
void output_format__names(enum format_command c, const char *sep, const char *last, char *out,
			  size_t len);

/*
 * The command's formats as --help lists options: "   --format NAME" and
 * what it writes from column, its further lines indented to column.
 */
void output_format__print_help(FILE *out, enum format_command c, int column);

#endif /* KHPROF_OUTPUT_FORMATS_H */
