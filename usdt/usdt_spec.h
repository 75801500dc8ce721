/* SPDX-License-Identifier: MIT */
/* Turning a stapsdt argument string into the spec BPF's bpf_usdt_arg() reads. */
#ifndef KHPROF_USDT_SPEC_H
#define KHPROF_USDT_SPEC_H

#include <stdint.h>

#include "khprof_shared.h"

/*
 * Parses "8@%rdi -4@$5 8@-24(%rbp)" (x86-64 operand syntax) into spec.
 * Returns 0, or -EINVAL naming nothing: the caller names the site.
 */
int usdt_spec__parse(const char *args, uint64_t cookie, struct kh_usdt_spec *spec);

#endif
