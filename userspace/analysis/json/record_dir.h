/* SPDX-License-Identifier: MIT */
/*
 * record_dir.h - the records of a directory: the runs `khprof record
 * --repeat` wrote (record's closing table, report DIR), or every record in
 * it (report DIR --format html, diff's sides).  One reader, for every
 * command that takes a directory of records.
 */
#ifndef KHPROF_RECORD_DIR_H
#define KHPROF_RECORD_DIR_H

#include <stddef.h>

struct kh_profile;

/*
 * The regular *.json files directly in dir, as the shell's "*.json" (no
 * hidden files: atomic writes' temporaries), sorted by name, each as
 * dir/NAME.  0 with *paths malloc'd (free each and the array), or -errno.
 */
int record_dir__list(const char *dir, char ***paths, size_t *count);

/*
 * The records `khprof record --repeat` wrote in dir (DIR/run-NNN.json, not
 * a second session's run-NNN.2.json), read in run order.  0 with *runs
 * malloc'd (free each with profile__free), or -errno; -ENOENT when dir has
 * none.  *unreadable counts run files that could not be read, each named
 * in a warning.
 */
int record_dir__read_runs(const char *dir, struct kh_profile **runs, size_t *count,
			  size_t *unreadable);

/* The run number of a record --repeat wrote, from its path: 0 for anything else. */
unsigned record_dir__run_number(const char *path);

/*
 * How many DIR/run-*.json dir holds (a second session's included) and the
 * highest run number among them (0: none); 0, or -EIO when it cannot list.
 */
int record_dir__count_runs(const char *dir, size_t *files, unsigned *last);

#endif /* KHPROF_RECORD_DIR_H */
