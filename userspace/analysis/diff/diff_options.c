// SPDX-License-Identifier: MIT
/*
 * diff_options.c - the settings of a comparison: thresholds, the minimum
 * change, the confidence and the allowed mismatches, from the command line
 * or a config file (docs/CI.md), and the threshold that applies to an item.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "diff_internal.h"
#include "log.h"

/* --- options ------------------------------------------------------------ */

static void threshold__default(struct kh_diff_threshold *t, double pct)
{
	t->set = false;
	t->off = false;
	t->pct = pct;
}

/* The thresholds with a name of their own, in the order the JSON lists them. */
#define NAMED(member, pct) { #member, offsetof(struct kh_diff_options, member), pct }
static const struct {
	const char *name;
	size_t offset;
	double default_pct;
} named[DIFF_NAMED_THRESHOLDS] = {
	NAMED(wall, KH_DIFF_DEFAULT_WALL_PCT),
	NAMED(throughput, KH_DIFF_DEFAULT_THROUGHPUT_PCT),
	NAMED(peak_rss, KH_DIFF_DEFAULT_PEAK_RSS_PCT),
	NAMED(p50, KH_DIFF_DEFAULT_P50_PCT),
	NAMED(p99, KH_DIFF_DEFAULT_P99_PCT),
	NAMED(blocked, KH_DIFF_DEFAULT_BLOCKED_PCT),
	NAMED(decoded, KH_DIFF_DEFAULT_DECODED_PCT),
	NAMED(state_wall, KH_DIFF_DEFAULT_STATE_WALL_PCT),
	NAMED(state_cpu, KH_DIFF_DEFAULT_STATE_CPU_PCT),
};
#undef NAMED

const char *diff_threshold__name(size_t i)
{
	return named[i].name;
}

static struct kh_diff_threshold *named_threshold(struct kh_diff_options *opts, size_t i)
{
	return (struct kh_diff_threshold *)((char *)opts + named[i].offset);
}

const struct kh_diff_threshold *diff_options__named(const struct kh_diff_options *opts,
						    size_t i)
{
	return (const struct kh_diff_threshold *)((const char *)opts + named[i].offset);
}

void diff_options__init(struct kh_diff_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	threshold__default(&opts->stages, KH_DIFF_DEFAULT_STAGE_PCT);
	for (size_t i = 0; i < DIFF_NAMED_THRESHOLDS; i++)
		threshold__default(named_threshold(opts, i), named[i].default_pct);
	for (uint32_t s = 0; s < KH_STAGE_COUNT; s++)
		threshold__default(&opts->stage[s], KH_DIFF_DEFAULT_STAGE_PCT);
	opts->min_change_ns = KH_DIFF_DEFAULT_MIN_CHANGE_NS;
	opts->confidence = KH_DIFF_DEFAULT_CONFIDENCE;
}

/*
 * Waiting is not work: the queue-wait stages are timed only when a thread
 * really blocks, so they move with scheduling and with every other stage.
 * Shown, but gating only when named (--threshold scanner-queue-wait=5).
 */
static const struct kh_diff_threshold queue_wait_default = {
	.set = false,
	.off = true,
	.pct = KH_DIFF_DEFAULT_STAGE_PCT,
};

bool diff_stage__is_queue_wait(uint32_t stage)
{
	return stage == KH_STAGE_SOURCE_QUEUE_WAIT || stage == KH_STAGE_SCANNER_QUEUE_WAIT;
}

const struct kh_diff_threshold *diff_options__threshold(const struct kh_diff_options *opts,
							enum kh_diff_metric metric,
							uint32_t stage)
{
	switch (metric) {
	case KH_DIFF_M_WALL:
		return &opts->wall;
	case KH_DIFF_M_THROUGHPUT:
		return &opts->throughput;
	case KH_DIFF_M_PEAK_RSS:
		return &opts->peak_rss;
	case KH_DIFF_M_CALLS:
		return NULL;
	case KH_DIFF_M_ELAPSED:
	case KH_DIFF_M_PER_CALL:
	case KH_DIFF_M_ON_CPU:
	case KH_DIFF_M_ON_CPU_PER_CALL:
	case KH_DIFF_M_OWN:
		if (stage < KH_STAGE_COUNT && opts->stage[stage].set)
			return &opts->stage[stage];
		if (diff_stage__is_queue_wait(stage))
			return &queue_wait_default;
		return &opts->stages;
	case KH_DIFF_M_P50:
	case KH_DIFF_M_P99:
	case KH_DIFF_M_BLOCKED:
	case KH_DIFF_M_RUNNABLE:
		/* Waits move with scheduling in every figure, as for elapsed. */
		if (diff_stage__is_queue_wait(stage) && !(stage < KH_STAGE_COUNT && opts->stage[stage].set))
			return &queue_wait_default;
		return metric == KH_DIFF_M_P50 ? &opts->p50
		       : metric == KH_DIFF_M_P99 ? &opts->p99 : &opts->blocked;
	case KH_DIFF_M_DECODED:
		return &opts->decoded;
	case KH_DIFF_M_STATE_WALL:
		return &opts->state_wall;
	case KH_DIFF_M_STATE_CPU:
		return &opts->state_cpu;
	}
	return NULL;
}

/*
 * A non-negative decimal such as "10" or "2.5", with a trailing '%' when
 * percent: strtod alone would also take blanks, signs, hex, "inf" and
 * "nan", none of which a CI configuration means.
 */
static int parse_amount(const char *text, bool percent, double *out)
{
	char *end;

	if (!isdigit((unsigned char)text[0]) && text[0] != '.')
		return -EINVAL;
	if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
		return -EINVAL;
	errno = 0;
	*out = strtod(text, &end);
	if (percent && *end == '%')
		end++;
	if (end == text || *end || errno || !isfinite(*out))
		return -EINVAL;
	return 0;
}

static int set_threshold(struct kh_diff_threshold *t, const char *value, char *err,
			 size_t errlen)
{
	double pct;

	if (strcmp(value, "off") == 0) {
		t->set = t->off = true;
		return 0;
	}
	if (parse_amount(value, true, &pct)) {
		snprintf(err, errlen, "bad threshold '%s' (a percentage of 0 or more, or off)",
			 value);
		return -EINVAL;
	}
	t->set = true;
	t->off = false;
	t->pct = pct;
	return 0;
}

static struct kh_diff_threshold *threshold_by_name(struct kh_diff_options *opts,
						   const char *name)
{
	uint32_t stage;

	/*
	 * Before the verdicts judged stages on their time on CPU, the threshold
	 * of waiting was off_cpu, waiting for a CPU included; that part is now
	 * the machine's (docs/CI.md), and the rest is blocked.  A config that
	 * gated CI keeps working, told once.
	 */
	if (strcmp(name, "off_cpu") == 0) {
		static bool told;

		if (!told)
			log__note("threshold 'off_cpu' is now 'blocked': waiting for a CPU is the "
				  "machine's, not the code's (docs/CI.md); read as 'blocked'");
		told = true;
		name = "blocked";
	}
	for (size_t i = 0; i < DIFF_NAMED_THRESHOLDS; i++)
		if (strcmp(name, named[i].name) == 0)
			return named_threshold(opts, i);
	if (kh_stage__parse(name, &stage) == 0)
		return &opts->stage[stage];
	return NULL;
}

/* Names that stand for several fields. */
static const struct {
	const char *name;
	uint32_t bits;
} field_groups[] = {
	{ "backends",
	  DIFF_BIT(KH_DIFF_F_BACKEND_REQUESTED) | DIFF_BIT(KH_DIFF_F_BACKEND_SELECTED) },
	{ "threads", DIFF_BIT(KH_DIFF_F_SCANNER_THREADS) | DIFF_BIT(KH_DIFF_F_READER_THREADS) },
	{ "all", DIFF_ALL_FIELDS },
};

static void field_list(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < KH_DIFF_F_COUNT && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s, ", diff_field__name((enum kh_diff_field)i));
	for (size_t i = 0; i < sizeof(field_groups) / sizeof(field_groups[0]) && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", field_groups[i].name,
					 i + 1 < sizeof(field_groups) / sizeof(field_groups[0])
						 ? ", " : "");
}

static int allow_one(struct kh_diff_options *opts, const char *name, size_t len, char *err,
		     size_t errlen)
{
	char known[512];

	for (size_t i = 0; i < KH_DIFF_F_COUNT; i++) {
		const char *field = diff_field__name((enum kh_diff_field)i);

		if (strlen(field) == len && !strncmp(field, name, len)) {
			opts->allow |= DIFF_BIT(i);
			return 0;
		}
	}
	for (size_t i = 0; i < sizeof(field_groups) / sizeof(field_groups[0]); i++) {
		const char *group = field_groups[i].name;

		if (strlen(group) == len && !strncmp(group, name, len)) {
			opts->allow |= field_groups[i].bits;
			return 0;
		}
	}
	field_list(known, sizeof(known));
	snprintf(err, errlen, "unknown field '%.*s' (one of %s)", (int)len, name, known);
	return -EINVAL;
}

/* A comma list; blanks around the names are allowed, empty names are not. */
static int allow_list(struct kh_diff_options *opts, const char *list, char *err, size_t errlen)
{
	const char *p = list;

	for (;;) {
		const char *end = strchr(p, ','), *stop;
		int rc;

		if (!end)
			end = p + strlen(p);
		while (p < end && isspace((unsigned char)*p))
			p++;
		stop = end;
		while (stop > p && isspace((unsigned char)stop[-1]))
			stop--;
		if (stop == p) {
			snprintf(err, errlen, "empty field name in '%s'", list);
			return -EINVAL;
		}
		rc = allow_one(opts, p, (size_t)(stop - p), err, errlen);
		if (rc || !*end)
			return rc;
		p = end + 1;
	}
}

int diff_options__set(struct kh_diff_options *opts, const char *key, const char *value,
		      char *err, size_t errlen)
{
	double amount;

	if (strcmp(key, "threshold") == 0)
		return set_threshold(&opts->stages, value, err, errlen);
	if (strncmp(key, "threshold.", 10) == 0) {
		struct kh_diff_threshold *t = threshold_by_name(opts, key + 10);

		if (!t) {
			snprintf(err, errlen,
				 "unknown item '%s' (a stage as the seed spells it, such as "
				 "'hot-patterns', or wall, throughput, peak_rss, p50, p99, blocked, "
				 "decoded, state_wall, state_cpu)", key + 10);
			return -EINVAL;
		}
		return set_threshold(t, value, err, errlen);
	}
	if (strcmp(key, "min_change_ms") == 0) {
		/* The bound keeps the nanosecond count inside 64 bits. */
		if (parse_amount(value, false, &amount) || amount > 1e12) {
			snprintf(err, errlen, "bad minimum change '%s' (milliseconds, 0 or more)",
				 value);
			return -EINVAL;
		}
		opts->min_change_set = true;
		opts->min_change_ns = (uint64_t)llround(amount * 1e6);
		return 0;
	}
	if (strcmp(key, "confidence") == 0) {
		if (parse_amount(value, true, &amount) || amount < KH_DIFF_MIN_CONFIDENCE ||
		    amount > KH_DIFF_MAX_CONFIDENCE) {
			snprintf(err, errlen, "bad confidence '%s' (a percentage from %g to %g)",
				 value, KH_DIFF_MIN_CONFIDENCE, KH_DIFF_MAX_CONFIDENCE);
			return -EINVAL;
		}
		opts->confidence_set = true;
		opts->confidence = amount;
		return 0;
	}
	if (strcmp(key, "allow_mismatch") == 0)
		return allow_list(opts, value, err, errlen);
	snprintf(err, errlen, "unknown setting '%s' (threshold, threshold.NAME, min_change_ms, "
		 "confidence or allow_mismatch)", key);
	return -EINVAL;
}

int diff_config__parse(const char *text, struct kh_diff_options *opts, size_t *line_no,
		       char *err, size_t errlen)
{
	const char *line = text;

	*line_no = 0;
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char *buf = strndup(line, len), *key, *value, *p;
		int rc = 0;

		++*line_no;
		line = nl ? nl + 1 : NULL;
		if (!buf)
			return -ENOMEM;
		if ((p = strchr(buf, '#')))
			*p = '\0';
		for (key = buf; isspace((unsigned char)*key); key++)
			;
		for (p = key + strlen(key); p > key && isspace((unsigned char)p[-1]);)
			*--p = '\0';
		if (*key) {
			value = key + strcspn(key, " \t\r\v\f=");
			p = value;
			/* "key value", and "key = value" as people write it anyway. */
			while (isspace((unsigned char)*value))
				value++;
			if (*value == '=')
				for (value++; isspace((unsigned char)*value); value++)
					;
			*p = '\0';
			if (!*value) {
				snprintf(err, errlen, "'%s' needs a value", key);
				rc = -EINVAL;
			} else {
				rc = diff_options__set(opts, key, value, err, errlen);
			}
		}
		free(buf);
		if (rc)
			return rc;
	}
	return 0;
}

static void threshold__merge(struct kh_diff_threshold *t, const struct kh_diff_threshold *over)
{
	if (over->set)
		*t = *over;
}

void diff_options__merge(struct kh_diff_options *opts, const struct kh_diff_options *over)
{
	threshold__merge(&opts->stages, &over->stages);
	for (size_t i = 0; i < DIFF_NAMED_THRESHOLDS; i++)
		threshold__merge(named_threshold(opts, i), diff_options__named(over, i));
	for (uint32_t s = 0; s < KH_STAGE_COUNT; s++)
		threshold__merge(&opts->stage[s], &over->stage[s]);
	if (over->min_change_set) {
		opts->min_change_set = true;
		opts->min_change_ns = over->min_change_ns;
	}
	if (over->confidence_set) {
		opts->confidence_set = true;
		opts->confidence = over->confidence;
	}
	opts->allow |= over->allow;
	opts->all |= over->all;
}

static bool threshold_valid(const struct kh_diff_threshold *t)
{
	return t->off || (isfinite(t->pct) && t->pct >= 0);
}

bool diff_options__valid(const struct kh_diff_options *o)
{
	bool ok = threshold_valid(&o->stages);

	for (size_t i = 0; i < DIFF_NAMED_THRESHOLDS; i++)
		ok = ok && threshold_valid(diff_options__named(o, i));
	for (uint32_t s = 0; s < KH_STAGE_COUNT; s++)
		ok = ok && threshold_valid(&o->stage[s]);
	return ok && o->confidence >= KH_DIFF_MIN_CONFIDENCE &&
	       o->confidence <= KH_DIFF_MAX_CONFIDENCE;
}
