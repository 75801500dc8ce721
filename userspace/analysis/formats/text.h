/* SPDX-License-Identifier: MIT */
/*
 * text.h - the seed's operator report (RunProfile::render_text).
 */
#ifndef KHPROF_TEXT_H
#define KHPROF_TEXT_H

#include "record.h"

/*
 * Byte for byte what the seed's render_text() prints for the same record
 * (the khprof extension is not part of it).  malloc'd; NULL with errno
 * ENOMEM.  Needs the "C" LC_NUMERIC locale, like every printf of a float.
 */
char *profile__render_text(const struct kh_profile *p);

#endif /* KHPROF_TEXT_H */
