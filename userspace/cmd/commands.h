/* SPDX-License-Identifier: MIT */
/* Subcommands; dispatched from the table in main.c. */
#ifndef KHPROF_COMMANDS_H
#define KHPROF_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

int cmd_record(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_probes(int argc, char **argv);
int cmd_export(int argc, char **argv);

struct kh_profile;
struct live_metrics;
/* Notes and drop warnings that go beside the seed's text report, on stderr. */
void print_profile_notes(const struct kh_profile *p);

/* Where record and attach put each session's record. */
struct output_state {
	const char *path;   /* -o PATH, or NULL: not written */
	bool quiet;         /* no text report on stderr */
	size_t records;
	bool write_failed;
	struct live_metrics *metrics; /* --serve: finished records join its totals */
};
/* A tracer_profile_fn for ctx an output_state: report, notes, record file. */
void output__on_profile(const struct kh_profile *p, void *ctx);
/* PATH for the first record, PATH with ".N" before the extension after. */
void record_path(const char *path, size_t n, char *out, size_t len);
/* PATH with tag (".4242") before its extension, or at its end. */
void path_with_tag(const char *path, const char *tag, char *out, size_t len);

/* Whether argv holds -h or --help before any "--". */
int wants_help(int argc, char **argv);

#endif
