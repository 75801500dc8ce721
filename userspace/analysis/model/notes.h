/* SPDX-License-Identifier: MIT */
/*
 * notes.h - what khprof says beside the seed's text report, on stderr: a
 * session seen only in part, and what it could not count (the record's
 * khprof extension).  `record`, `attach` and `report` print the same.
 */
#ifndef KHPROF_NOTES_H
#define KHPROF_NOTES_H

#include <stdbool.h>
#include <stdint.h>

#include "record.h"

/* What a count of enum kh_drop means, for a warning; NULL when out of range. */
const char *kh_drop__description(uint32_t drop);

/*
 * The notes and drop warnings of p, one line each, through log.h; quiet
 * (record and attach -q): the warnings alone.
 */
void profile__print_notes(const struct kh_profile *p, bool quiet);

#endif /* KHPROF_NOTES_H */
