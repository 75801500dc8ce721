// SPDX-License-Identifier: MIT
/*
 * duration.c - the one syntax of every duration on khprof's command line
 * (--duration, --interval): a text helper, so in common beside the other
 * helpers every layer may use.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

int kh_parse_duration_ns(const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
	static const struct { const char *unit; double ns; } units[] = {
		/* "": a bare number is seconds, as sleep(1) and timeout(1) read it. */
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "", 1e9 },
		{ "m", 60e9 }, { "h", 3600e9 },
	};
	char *end;
	double v;

	size_t digits = 0, dots = 0;
	const char *c;

	if (!text)
		return -EINVAL;
	/* Plain decimals only: strtod would also take hex, exponents and "inf". */
	for (c = text; (*c >= '0' && *c <= '9') || *c == '.'; c++) {
		digits += *c != '.';
		dots += *c == '.';
	}
	if (!digits || dots > 1 || *text == '.')
		return -EINVAL;
	errno = 0;
	v = strtod(text, &end);
	if (errno || end != c)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		double ns;

		if (strcmp(end, units[i].unit))
			continue;
		ns = v * units[i].ns;
		if (!(ns >= (double)min && ns <= (double)max))
			return -EINVAL;
		*out = (uint64_t)llround(ns);
		return 0;
	}
	return -EINVAL;
}
