/* SPDX-License-Identifier: MIT */
/* Turning a stapsdt argument string into the spec BPF's bpf_usdt_arg() reads. */
#ifndef KHPROF_USDT_SPEC_H
#define KHPROF_USDT_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "khprof_shared.h"
#include "usdt_arch.h"

/*
 * Parses "8@%rdi -4@$5 8@-24(%rbp)" (operands in arch's syntax) into
 * spec.  Returns 0, or -EINVAL naming nothing: the caller names the site.
 */
int usdt_spec__parse(const struct usdt_arch *arch, const char *args, uint64_t cookie,
		     struct kh_usdt_spec *spec);

/*
 * A decimal or 0x number, with an optional '-', at *p (for operands);
 * advances *p past it.  0, or -EINVAL for none or one out of 64 bits.
 */
int usdt_spec__number(const char **p, uint64_t *out);

#endif
