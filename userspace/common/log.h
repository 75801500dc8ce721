/* SPDX-License-Identifier: MIT */
/* Messages in git's manner: "khprof: <failure> '<subject>': <reason> (<hint>)". */
#ifndef KHPROF_LOG_H
#define KHPROF_LOG_H

#include <stdbool.h>

extern bool khprof_verbose;

void log__error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log__note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log__debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
