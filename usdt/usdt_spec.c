// SPDX-License-Identifier: MIT
/*
 * Argument specs: "SIZE@OPERAND ..." (usdt_spec.h).  The sizes and the
 * list are the same on every architecture; the operands are each
 * architecture's (usdt_arch.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "usdt_spec.h"

int usdt_spec__number(const char **p, uint64_t *out)
{
	const char *digits = **p == '-' ? *p + 1 : *p;
	char *end;

	/* strtoull alone would also take blanks, '+' and "-" before them. */
	if (*digits < '0' || *digits > '9')
		return -EINVAL;
	errno = 0;
	if (**p == '-') {
		long long v = strtoll(*p, &end, 0);

		*out = (uint64_t)v;
	} else {
		*out = strtoull(*p, &end, 0);
	}
	if (errno)
		return -EINVAL; /* out of range: no value would be the program's */
	*p = end;
	return 0;
}

/*
 * "SIZE@" at *p: 1, 2, 4 or 8 bytes, negative when signed.  Read by hand:
 * strtol and labs() of "-9223372036854775808" overflowed.
 */
static int parse_size(const char **p, struct kh_usdt_arg_spec *arg)
{
	const char *s = *p;
	bool is_signed = *s == '-';
	int size;

	s += is_signed;
	if (*s != '1' && *s != '2' && *s != '4' && *s != '8')
		return -EINVAL;
	size = *s - '0';
	if (s[1] != '@')
		return -EINVAL;
	arg->arg_signed = is_signed;
	arg->arg_bitshift = (char)(64 - size * 8);
	*p = s + 2;
	return 0;
}

int usdt_spec__parse(const struct usdt_arch *arch, const char *args, uint64_t cookie,
		     struct kh_usdt_spec *spec)
{
	const char *p = args;

	memset(spec, 0, sizeof(*spec));
	spec->usdt_cookie = cookie;
	if (!arch)
		return -EINVAL;
	for (;;) {
		struct kh_usdt_arg_spec *arg = &spec->args[spec->arg_cnt];

		while (*p == ' ')
			p++;
		if (!*p)
			return 0;
		if (spec->arg_cnt == KH_USDT_MAX_ARGS || parse_size(&p, arg) ||
		    arch->parse_operand(&p, arg))
			return -EINVAL;
		spec->arg_cnt++;
		if (*p && *p != ' ')
			return -EINVAL;
	}
}
