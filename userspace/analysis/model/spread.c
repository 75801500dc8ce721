// SPDX-License-Identifier: MIT
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "outbuf.h"
#include "spread.h"
#include "stats.h"

enum unit { UNIT_MS, UNIT_MIB_S, UNIT_MIB };

static const char *const unit_suffix[] = {
	[UNIT_MS] = "ms",
	[UNIT_MIB_S] = "MiB/s",
	[UNIT_MIB] = "MiB",
};

static const double unit_scale[] = {
	[UNIT_MS] = 1e-6,
	[UNIT_MIB_S] = 1.0 / (1024 * 1024),
	[UNIT_MIB] = 1.0 / (1024 * 1024),
};

static void add_row(struct outbuf *out, const char *name, const double *values, size_t n,
		    enum unit unit)
{
	struct kh_spread s;
	double k = unit_scale[unit], mad;

	if (stats__spread(values, n, &s)) {
		out->failed = true;
		return;
	}
	mad = spread__mad_pct(&s);

	outbuf__printf(out, "%-28s %12.3f %12.3f %12.3f", name, s.median * k, s.min * k,
		       s.max * k);
	/* A stage at zero in every run has no relative spread. */
	if (isnan(mad))
		outbuf__printf(out, " %8s  %s\n", "-", unit_suffix[unit]);
	else
		outbuf__printf(out, " %7.1f%%  %s\n", mad, unit_suffix[unit]);
}

char *runs__render_spread(const struct kh_profile *runs, size_t n)
{
	struct outbuf out;
	double *values = calloc(n ? n : 1, sizeof(*values));
	bool any_input = false, any_rss = true;
	char name[64];

	outbuf__init(&out);
	if (!values)
		return NULL;
	outbuf__printf(&out, "%-28s %12s %12s %12s %8s\n", "", "median", "min", "max", "MAD");

	for (size_t i = 0; i < n; i++)
		values[i] = (double)runs[i].wall_time_ns;
	add_row(&out, "wall", values, n, UNIT_MS);

	for (size_t i = 0; i < n; i++) {
		double seconds = runs[i].wall_time_ns / 1e9;

		any_input |= runs[i].input_bytes > 0;
		values[i] = seconds > 0 ? runs[i].input_bytes / seconds : 0;
	}
	if (any_input)
		add_row(&out, "throughput", values, n, UNIT_MIB_S);

	for (size_t i = 0; i < n; i++) {
		any_rss &= runs[i].resources.max_observed_resident_bytes.present;
		values[i] = (double)runs[i].resources.max_observed_resident_bytes.value;
	}
	if (n && any_rss)
		add_row(&out, "peak_rss", values, n, UNIT_MIB);

	for (uint32_t stage = 0; stage < KH_STAGE_COUNT; stage++) {
		bool present = false;

		for (size_t i = 0; i < n; i++) {
			const struct kh_stage_measurement *m = profile__find_stage(&runs[i], stage);

			present |= m != NULL;
			values[i] = m ? (double)m->elapsed_ns : 0;
		}
		if (!present)
			continue;
		snprintf(name, sizeof(name), "stage %s", kh_stage__name(stage));
		add_row(&out, name, values, n, UNIT_MS);
	}
	free(values);
	return outbuf__finish(&out);
}
