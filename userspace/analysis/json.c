// SPDX-License-Identifier: MIT
/*
 * json.c - keyhog-profile-v1 JSON, read with cJSON and written by hand.
 *
 * cJSON's printer cannot reproduce serde_json's pretty layout or its float
 * spelling, so the writer is our own.  cJSON keeps numbers only as double,
 * which loses u64 values above 2^53 and hides serde_json's own rounding, so
 * the reader re-reads every number from its source text: a pre-scan lists
 * the number tokens in document order, and a pre-order walk of the cJSON
 * tree (which keeps document order) tags each number node with its token.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "fileio.h"
#include "json.h"
#include "outbuf.h"

/* ------------------------------------------------------------------ */
/* f64 spelling: ryu's shortest digits in ryu's layout, as serde_json  */
/* ------------------------------------------------------------------ */

/* value = 0.d1d2...dn * 10^point */
struct decimal {
	char digits[24];
	int ndigits;
	int point;
};

static void decimal__from_sci(const char *sci, struct decimal *d)
{
	const char *c = sci;

	d->ndigits = 0;
	for (; *c && *c != 'e'; c++) {
		if (*c >= '0' && *c <= '9')
			d->digits[d->ndigits++] = *c;
	}
	d->point = atoi(c + 1) + 1;
}

static double decimal__value(const struct decimal *d)
{
	char sci[48];

	snprintf(sci, sizeof(sci), "%c.%.*se%d", d->digits[0], d->ndigits - 1, d->digits + 1,
		 d->point - 1);
	return strtod(sci, NULL);
}

/* Moves to the neighbouring n-digit decimal, up or down. */
static void decimal__step(struct decimal *d, bool up)
{
	int i = d->ndigits - 1;

	if (up) {
		while (i >= 0 && d->digits[i] == '9')
			d->digits[i--] = '0';
		if (i < 0) {
			d->digits[0] = '1';
			d->point++;
		} else {
			d->digits[i]++;
		}
		return;
	}
	while (d->digits[i] == '0')
		d->digits[i--] = '9';
	d->digits[i]--;
	/* 100..0 stepped down: the grid below a power of ten is finer. */
	if (d->digits[0] == '0') {
		d->digits[0] = '9';
		d->point--;
	}
}

/*
 * The shortest digits that read back as v, closest to v among those.  The
 * correctly rounded n-digit decimal is the closest one; when it does not
 * read back but another n-digit one does, the rounding interval is
 * lopsided (v is a power of two) and only its neighbour across v can be.
 */
static void decimal__shortest(double v, struct decimal *d)
{
	for (int n = 1; n <= 17; n++) {
		char sci[48];
		struct decimal next;
		double back;

		snprintf(sci, sizeof(sci), "%.*e", n - 1, v);
		decimal__from_sci(sci, d);
		back = strtod(sci, NULL);
		if (back == v)
			break;
		next = *d;
		decimal__step(&next, back < v);
		if (decimal__value(&next) == v) {
			*d = next;
			break;
		}
	}
	while (d->ndigits > 1 && d->digits[d->ndigits - 1] == '0')
		d->ndigits--;
}

/* ryu's pretty layout of digits and decimal point position. */
static void decimal__layout(const struct decimal *d, struct outbuf *b)
{
	int n = d->ndigits, kk = d->point, k = kk - n;

	if (k >= 0 && kk <= 16) {
		outbuf__put(b, d->digits, (size_t)n);
		for (int i = 0; i < k; i++)
			outbuf__putc(b, '0');
		outbuf__puts(b, ".0");
	} else if (kk > 0 && kk <= 16) {
		outbuf__put(b, d->digits, (size_t)kk);
		outbuf__putc(b, '.');
		outbuf__put(b, d->digits + kk, (size_t)(n - kk));
	} else if (kk > -5 && kk <= 0) {
		outbuf__puts(b, "0.");
		for (int i = 0; i < -kk; i++)
			outbuf__putc(b, '0');
		outbuf__put(b, d->digits, (size_t)n);
	} else {
		outbuf__putc(b, d->digits[0]);
		if (n > 1) {
			outbuf__putc(b, '.');
			outbuf__put(b, d->digits + 1, (size_t)(n - 1));
		}
		outbuf__printf(b, "e%d", kk - 1);
	}
}

static void json__put_f64(struct outbuf *b, double v)
{
	struct decimal d;

	if (!isfinite(v)) {
		outbuf__puts(b, "null");
		return;
	}
	if (signbit(v))
		outbuf__putc(b, '-');
	if (v == 0) {
		outbuf__puts(b, "0.0");
		return;
	}
	decimal__shortest(fabs(v), &d);
	decimal__layout(&d, b);
}

size_t json__format_f64(double value, char *buf, size_t len)
{
	struct outbuf b;
	size_t n;

	outbuf__init(&b);
	json__put_f64(&b, value);
	if (b.failed || len == 0) {
		free(b.data);
		return 0;
	}
	n = b.len < len - 1 ? b.len : len - 1;
	memcpy(buf, b.data, n);
	buf[n] = '\0';
	free(b.data);
	return n;
}

/* ------------------------------------------------------------------ */
/* Numbers as serde_json 1.0 reads them (without float_roundtrip)      */
/* ------------------------------------------------------------------ */

enum number_kind { NUMBER_U64, NUMBER_I64, NUMBER_F64 };

struct number {
	enum number_kind kind;
	uint64_t u;
	int64_t i;
	double f;
};

struct number_reader {
	const char *s;
	size_t len;
	size_t pos;
	bool positive;
};

static int reader__peek(const struct number_reader *r)
{
	return r->pos < r->len ? (unsigned char)r->s[r->pos] : -1;
}

static bool reader__peek_digit(const struct number_reader *r)
{
	int c = reader__peek(r);

	return c >= '0' && c <= '9';
}

static bool overflows_u64(uint64_t acc, unsigned digit)
{
	return acc >= UINT64_MAX / 10 && (acc > UINT64_MAX / 10 || digit > UINT64_MAX % 10);
}

static bool overflows_i32(int32_t acc, int digit)
{
	return acc >= INT32_MAX / 10 && (acc > INT32_MAX / 10 || digit > INT32_MAX % 10);
}

/* serde_json's POW10 entries are correctly rounded literals; so is strtod. */
static double pow10_literal(unsigned exponent)
{
	char text[8];

	snprintf(text, sizeof(text), "1e%u", exponent);
	return strtod(text, NULL);
}

static int number__from_parts(struct number_reader *r, uint64_t significand,
			      int32_t exponent, struct number *out)
{
	double f = (double)significand;

	for (;;) {
		/* wrapping_abs(): i32::MIN stays out of the table. */
		uint32_t index = exponent == INT32_MIN ? UINT32_MAX
			       : (uint32_t)(exponent < 0 ? -exponent : exponent);

		if (index <= 308) {
			if (exponent >= 0) {
				f *= pow10_literal(index);
				if (isinf(f))
					return -ERANGE;
			} else {
				f /= pow10_literal(index);
			}
			break;
		}
		if (f == 0.0)
			break;
		if (exponent >= 0)
			return -ERANGE;
		f /= 1e308;
		exponent += 308;
	}
	out->kind = NUMBER_F64;
	out->f = r->positive ? f : -f;
	return 0;
}

static int number__exponent(struct number_reader *r, uint64_t significand,
			    int32_t start, struct number *out)
{
	bool positive_exp = true;
	int32_t exp, final;
	int c;

	r->pos++;
	c = reader__peek(r);
	if (c == '+' || c == '-') {
		positive_exp = c == '+';
		r->pos++;
	}
	if (!reader__peek_digit(r))
		return -EINVAL;
	exp = r->s[r->pos++] - '0';
	while (reader__peek_digit(r)) {
		int digit = r->s[r->pos++] - '0';

		if (overflows_i32(exp, digit)) {
			if (significand != 0 && positive_exp)
				return -ERANGE;
			while (reader__peek_digit(r))
				r->pos++;
			out->kind = NUMBER_F64;
			out->f = r->positive ? 0.0 : -0.0;
			return 0;
		}
		exp = exp * 10 + digit;
	}
	if (positive_exp)
		final = start > INT32_MAX - exp ? INT32_MAX : start + exp;
	else
		final = start < INT32_MIN + exp ? INT32_MIN : start - exp;
	return number__from_parts(r, significand, final, out);
}

static int number__decimal(struct number_reader *r, uint64_t significand,
			   int32_t exponent, struct number *out)
{
	r->pos++;
	while (reader__peek_digit(r)) {
		unsigned digit = (unsigned)(r->s[r->pos] - '0');

		if (overflows_u64(significand, digit)) {
			/* Further fraction digits are dropped, not rounded. */
			while (reader__peek_digit(r))
				r->pos++;
			goto tail;
		}
		r->pos++;
		significand = significand * 10 + digit;
		exponent--;
	}
	if (exponent == 0)
		return -EINVAL;
tail:
	if (reader__peek(r) == 'e' || reader__peek(r) == 'E')
		return number__exponent(r, significand, exponent, out);
	return number__from_parts(r, significand, exponent, out);
}

/* Integer digits past u64 only scale the kept significand. */
static int number__long_integer(struct number_reader *r, uint64_t significand,
				struct number *out)
{
	int32_t exponent = 0;

	while (reader__peek_digit(r)) {
		r->pos++;
		exponent++;
	}
	if (reader__peek(r) == '.')
		return number__decimal(r, significand, exponent, out);
	if (reader__peek(r) == 'e' || reader__peek(r) == 'E')
		return number__exponent(r, significand, exponent, out);
	return number__from_parts(r, significand, exponent, out);
}

static int number__integral(struct number_reader *r, uint64_t significand, struct number *out)
{
	int c = reader__peek(r);

	if (c == '.')
		return number__decimal(r, significand, 0, out);
	if (c == 'e' || c == 'E')
		return number__exponent(r, significand, 0, out);
	if (r->positive) {
		out->kind = NUMBER_U64;
		out->u = significand;
	} else if (significand == 0 || significand > (uint64_t)INT64_MAX + 1) {
		/* -0 and below i64::MIN become floats, as in serde_json. */
		out->kind = NUMBER_F64;
		out->f = -(double)significand;
	} else {
		out->kind = NUMBER_I64;
		out->i = (int64_t)(0 - significand);
	}
	return 0;
}

static int number__integer(struct number_reader *r, struct number *out)
{
	uint64_t significand;

	if (!reader__peek_digit(r))
		return -EINVAL;
	significand = (uint64_t)(r->s[r->pos++] - '0');
	if (significand == 0)
		return reader__peek_digit(r) ? -EINVAL : number__integral(r, 0, out);
	while (reader__peek_digit(r)) {
		unsigned digit = (unsigned)(r->s[r->pos] - '0');

		if (overflows_u64(significand, digit))
			return number__long_integer(r, significand, out);
		r->pos++;
		significand = significand * 10 + digit;
	}
	return number__integral(r, significand, out);
}

static int number__parse(const char *s, size_t len, struct number *out)
{
	struct number_reader r = { s, len, 0, true };
	int err;

	if (reader__peek(&r) == '-') {
		r.positive = false;
		r.pos++;
	}
	err = number__integer(&r, out);
	if (err)
		return err;
	return r.pos == len ? 0 : -EINVAL;
}

int json__parse_f64(const char *token, size_t len, double *out)
{
	struct number n;
	int err = number__parse(token, len, &n);

	if (err)
		return err;
	*out = n.kind == NUMBER_U64 ? (double)n.u : n.kind == NUMBER_I64 ? (double)n.i : n.f;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Writer: serde_json's PrettyFormatter                                */
/* ------------------------------------------------------------------ */

#define WRITER_MAX_DEPTH 8

struct writer {
	struct outbuf out;
	int depth;
	size_t items[WRITER_MAX_DEPTH];
};

static void writer__newline(struct writer *w)
{
	outbuf__putc(&w->out, '\n');
	for (int i = 0; i < w->depth; i++)
		outbuf__puts(&w->out, "  ");
}

static void writer__open(struct writer *w, char bracket)
{
	outbuf__putc(&w->out, bracket);
	w->items[++w->depth] = 0;
}

static void writer__close(struct writer *w, char bracket)
{
	bool empty = w->items[w->depth] == 0;

	w->depth--;
	if (!empty)
		writer__newline(w);
	outbuf__putc(&w->out, bracket);
}

/* Separator and indentation before the next element or member. */
static void writer__next(struct writer *w)
{
	if (w->items[w->depth]++)
		outbuf__putc(&w->out, ',');
	writer__newline(w);
}

/* serde_json escapes quote, backslash and C0 controls, nothing else. */
static void writer__string(struct writer *w, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(s);

	outbuf__putc(&w->out, '"');
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		bool valid;
		size_t step;

		if (c == '"' || c == '\\') {
			outbuf__putc(&w->out, '\\');
			outbuf__putc(&w->out, (char)c);
			i++;
			continue;
		}
		if (c < 0x20) {
			const char *short_form = c == '\b' ? "\\b" : c == '\t' ? "\\t" : c == '\n' ? "\\n"
					       : c == '\f' ? "\\f" : c == '\r' ? "\\r" : NULL;
			if (short_form)
				outbuf__puts(&w->out, short_form);
			else
				outbuf__printf(&w->out, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
			i++;
			continue;
		}
		/* A Rust String is UTF-8; repair rather than emit unreadable JSON. */
		step = utf8__scan((const unsigned char *)s + i, n - i, &valid);
		if (valid)
			outbuf__put(&w->out, s + i, step);
		else
			outbuf__puts(&w->out, "\xEF\xBF\xBD");
		i += step;
	}
	outbuf__putc(&w->out, '"');
}

static void writer__key(struct writer *w, const char *key)
{
	writer__next(w);
	writer__string(w, key);
	outbuf__puts(&w->out, ": ");
}

static void writer__u64(struct writer *w, const char *key, uint64_t value)
{
	writer__key(w, key);
	outbuf__printf(&w->out, "%" PRIu64, value);
}

static void writer__opt_u64(struct writer *w, const char *key, struct kh_opt_u64 value)
{
	if (value.present) {
		writer__u64(w, key, value.value);
		return;
	}
	writer__key(w, key);
	outbuf__puts(&w->out, "null");
}

static void writer__opt_f64(struct writer *w, const char *key, struct kh_opt_f64 value)
{
	writer__key(w, key);
	if (value.present)
		json__put_f64(&w->out, value.value);
	else
		outbuf__puts(&w->out, "null");
}

static void writer__str(struct writer *w, const char *key, const char *value)
{
	writer__key(w, key);
	if (value)
		writer__string(w, value);
	else
		outbuf__puts(&w->out, "null");
}

static void writer__bool(struct writer *w, const char *key, bool value)
{
	writer__key(w, key);
	outbuf__puts(&w->out, value ? "true" : "false");
}

static void writer__open_member(struct writer *w, const char *key, char bracket)
{
	writer__key(w, key);
	writer__open(w, bracket);
}

static void writer__snapshot(struct writer *w, const char *key,
			     const struct kh_resource_snapshot *s)
{
	writer__open_member(w, key, '{');
	writer__opt_u64(w, "cpu_time_ms", s->cpu_time_ms);
	writer__opt_u64(w, "resident_bytes", s->resident_bytes);
	writer__opt_u64(w, "virtual_bytes", s->virtual_bytes);
	writer__opt_u64(w, "thread_count", s->thread_count);
	writer__close(w, '}');
}

static void writer__identity(struct writer *w, const struct kh_identity *id)
{
	writer__open_member(w, "identity", '{');
	writer__str(w, "run_id", id->run_id);
	writer__str(w, "binary_version", id->binary_version);
	writer__str(w, "detector_digest", id->detector_digest);
	writer__str(w, "config_digest", id->config_digest);
	writer__str(w, "source_kind", id->source_kind);
	writer__str(w, "workload_class", id->workload_class);
	writer__str(w, "backend_requested", id->backend_requested);
	writer__str(w, "backend_selected", id->backend_selected);
	writer__str(w, "cache_state", kh_cache_state__name(id->cache_state));
	writer__str(w, "daemon_state", kh_daemon_state__name(id->daemon_state));
	writer__u64(w, "scanner_threads", id->scanner_threads);
	writer__opt_u64(w, "reader_threads", id->reader_threads);
	writer__u64(w, "logical_cpus", id->logical_cpus);
	writer__close(w, '}');
}

static void writer__stages(struct writer *w, const struct kh_profile *p)
{
	writer__open_member(w, "stages", '[');
	for (size_t i = 0; i < p->stage_count; i++) {
		const struct kh_stage_measurement *s = &p->stages[i];

		writer__next(w);
		writer__open(w, '{');
		writer__str(w, "stage", kh_stage__name(s->stage));
		writer__u64(w, "elapsed_ns", s->elapsed_ns);
		writer__u64(w, "calls", s->calls);
		writer__u64(w, "attributed_ns", s->attributed_ns);
		writer__close(w, '}');
	}
	writer__close(w, ']');
}

static void writer__transitions(struct writer *w, const struct kh_profile *p)
{
	writer__open_member(w, "transitions", '[');
	for (size_t i = 0; i < p->transition_count; i++) {
		writer__next(w);
		writer__open(w, '{');
		writer__str(w, "state", kh_run_state__name(p->transitions[i].state));
		writer__u64(w, "elapsed_ns", p->transitions[i].elapsed_ns);
		writer__close(w, '}');
	}
	writer__close(w, ']');
}

static void writer__states(struct writer *w, const struct kh_profile *p)
{
	writer__open_member(w, "states", '[');
	for (size_t i = 0; i < p->state_count; i++) {
		const struct kh_state_measurement *s = &p->states[i];

		writer__next(w);
		writer__open(w, '{');
		writer__str(w, "state", kh_run_state__name(s->state));
		writer__u64(w, "elapsed_ns", s->elapsed_ns);
		writer__opt_u64(w, "cpu_time_ms", s->cpu_time_ms);
		writer__opt_u64(w, "aggregate_cpu_milli_percent", s->aggregate_cpu_milli_percent);
		writer__opt_u64(w, "resident_start_bytes", s->resident_start_bytes);
		writer__opt_u64(w, "resident_end_bytes", s->resident_end_bytes);
		writer__opt_u64(w, "threads_start", s->threads_start);
		writer__opt_u64(w, "threads_end", s->threads_end);
		writer__close(w, '}');
	}
	writer__close(w, ']');
}

static void writer__samples(struct writer *w, const struct kh_profile *p)
{
	writer__open_member(w, "resource_samples", '[');
	for (size_t i = 0; i < p->resource_sample_count; i++) {
		const struct kh_resource_sample *s = &p->resource_samples[i];

		writer__next(w);
		writer__open(w, '{');
		writer__str(w, "state", kh_run_state__name(s->state));
		writer__u64(w, "elapsed_ns", s->elapsed_ns);
		writer__snapshot(w, "snapshot", &s->snapshot);
		writer__close(w, '}');
	}
	writer__close(w, ']');
}

static void writer__resources(struct writer *w, const struct kh_resource_usage *r)
{
	writer__open_member(w, "resources", '{');
	writer__snapshot(w, "start", &r->start);
	writer__snapshot(w, "finish", &r->finish);
	writer__opt_u64(w, "max_observed_resident_bytes", r->max_observed_resident_bytes);
	writer__opt_u64(w, "max_observed_threads", r->max_observed_threads);
	writer__opt_f64(w, "aggregate_cpu_percent", r->aggregate_cpu_percent);
	writer__close(w, '}');
}

/* khprof.latency (docs/SCHEMA.md): derived figures first, buckets last. */
static void writer__latency_off_cpu(struct writer *w, const struct kh_profile *p,
				    const struct kh_stage_dist *d, uint32_t stage)
{
	const struct kh_stage_measurement *m = profile__find_stage(p, stage);
	uint64_t elapsed = m ? m->elapsed_ns : 0;
	uint64_t off = d->off_cpu_ns, runnable = d->runnable_ns;
	struct kh_opt_u64 none = { false, 0 };
	bool known = p->ext.latency.off_cpu;

	writer__opt_u64(w, "on_cpu_ns", known ? (struct kh_opt_u64){ true, elapsed > off ? elapsed - off : 0 } : none);
	writer__opt_u64(w, "off_cpu_ns", known ? (struct kh_opt_u64){ true, off } : none);
	writer__opt_u64(w, "runnable_ns", known ? (struct kh_opt_u64){ true, runnable } : none);
	writer__opt_u64(w, "blocked_ns",
			known ? (struct kh_opt_u64){ true, off > runnable ? off - runnable : 0 } : none);
	writer__u64(w, "offcpu_truncated", d->offcpu_truncated);
}

static void writer__latency(struct writer *w, const struct kh_profile *p)
{
	const struct kh_latency *l = &p->ext.latency;

	writer__open_member(w, "latency", '{');
	writer__u64(w, "bucket_count", KH_HIST_BUCKETS);
	writer__u64(w, "linear_below_ns", KH_HIST_LINEAR);
	writer__u64(w, "buckets_per_octave", KH_HIST_SUB);
	writer__bool(w, "off_cpu", l->off_cpu);
	writer__open_member(w, "stages", '[');
	for (uint32_t st = 0; st < KH_STAGE_COUNT; st++) {
		const struct kh_stage_dist *d = &l->stages[st];
		bool first = true;

		if (!d->present)
			continue;
		writer__next(w);
		writer__open(w, '{');
		writer__str(w, "stage", kh_stage__name(st));
		writer__u64(w, "spans", d->spans);
		writer__u64(w, "min_ns", d->min_ns);
		for (int q = 0; q < KH_DIST_PERCENTILES; q++) {
			char key[16];

			snprintf(key, sizeof(key), "%s_ns", kh_dist_percentile_name[q]);
			writer__u64(w, key, kh_dist__percentile(d, kh_dist_permille[q],
								 p->ext.span_bias_ns));
		}
		writer__u64(w, "max_ns", d->max_ns);
		writer__latency_off_cpu(w, p, d, st);
		/* [index, count] pairs of the non-empty buckets, on one line. */
		writer__key(w, "buckets");
		outbuf__putc(&w->out, '[');
		for (uint32_t i = 0; d->counts && i < KH_HIST_BUCKETS; i++) {
			if (!d->counts[i])
				continue;
			outbuf__printf(&w->out, "%s[%" PRIu32 ", %" PRIu64 "]", first ? "" : ", ", i,
				       d->counts[i]);
			first = false;
		}
		outbuf__putc(&w->out, ']');
		writer__close(w, '}');
	}
	writer__close(w, ']');
	writer__close(w, '}');
}

static void writer__ext(struct writer *w, const struct kh_profile *p)
{
	const struct kh_profile_ext *ext = &p->ext;

	writer__open_member(w, "khprof", '{');
	writer__str(w, "mode", ext->mode);
	writer__bool(w, "started_mid_session", ext->started_mid_session);
	writer__bool(w, "ended_mid_session", ext->ended_mid_session);
	writer__open_member(w, "drops", '{');
	for (uint32_t i = 0; i < KH_DROP_COUNT; i++)
		writer__u64(w, kh_drop__name(i), ext->drops[i]);
	writer__close(w, '}');
	writer__u64(w, "probe_hits", ext->probe_hits);
	writer__u64(w, "probe_cost_ns", ext->probe_cost_ns);
	writer__u64(w, "tracer_cost_ns", ext->tracer_cost_ns);
	writer__u64(w, "span_bias_ns", ext->span_bias_ns);
	writer__u64(w, "traced_pid", ext->traced_pid);
	writer__u64(w, "session_sequence", ext->session_sequence);
	writer__u64(w, "sample_latency_ns_max", ext->sample_latency_ns_max);
	if (ext->latency.present)
		writer__latency(w, p);
	writer__close(w, '}');
}

/* Only names from the tables can be written: the seed could not read others. */
static bool profile__enums_valid(const struct kh_profile *p)
{
	bool ok = p->status < KH_STATE_COUNT && p->identity.cache_state < KH_CACHE_COUNT &&
		  p->identity.daemon_state < KH_DAEMON_COUNT && p->stage_count <= KH_STAGE_COUNT;

	for (size_t i = 0; ok && i < p->stage_count; i++)
		ok = p->stages[i].stage < KH_STAGE_COUNT;
	for (size_t i = 0; ok && i < p->transition_count; i++)
		ok = p->transitions[i].state < KH_STATE_COUNT;
	for (size_t i = 0; ok && i < p->state_count; i++)
		ok = p->states[i].state < KH_STATE_COUNT;
	for (size_t i = 0; ok && i < p->resource_sample_count; i++)
		ok = p->resource_samples[i].state < KH_STATE_COUNT;
	return ok;
}

static bool identity__complete(const struct kh_identity *id)
{
	return id->run_id && id->binary_version && id->detector_digest && id->config_digest &&
	       id->source_kind && id->workload_class && id->backend_requested;
}

char *profile__to_json(const struct kh_profile *p)
{
	struct writer w = { .depth = 0 };
	char *text;

	if (!p->schema || !identity__complete(&p->identity) || !profile__enums_valid(p)) {
		errno = EINVAL;
		return NULL;
	}
	outbuf__init(&w.out);
	writer__open(&w, '{');
	writer__str(&w, "schema", p->schema);
	writer__identity(&w, &p->identity);
	writer__str(&w, "status", kh_run_state__name(p->status));
	writer__u64(&w, "wall_time_ns", p->wall_time_ns);
	writer__u64(&w, "input_bytes", p->input_bytes);
	writer__u64(&w, "input_units", p->input_units);
	writer__stages(&w, p);
	writer__transitions(&w, p);
	writer__states(&w, p);
	writer__samples(&w, p);
	writer__resources(&w, &p->resources);
	if (p->ext.present)
		writer__ext(&w, p);
	writer__close(&w, '}');
	outbuf__putc(&w.out, '\n');
	text = outbuf__finish(&w.out);
	if (!text)
		errno = ENOMEM;
	return text;
}

/* ------------------------------------------------------------------ */
/* Reader                                                              */
/* ------------------------------------------------------------------ */

struct token {
	size_t start;
	size_t len;
};

struct parse {
	const char *text;
	struct token *tokens;
	size_t token_count;
	size_t token_cap;
	char *err;
	size_t errlen;
	char path[192];
	bool failed;
	bool nomem;
};

__attribute__((format(printf, 2, 3)))
static int parse__fail(struct parse *ps, const char *fmt, ...)
{
	va_list ap;

	if (!ps->failed && ps->errlen) {
		va_start(ap, fmt);
		vsnprintf(ps->err, ps->errlen, fmt, ap);
		va_end(ap);
	}
	ps->failed = true;
	return -EINVAL;
}

static int parse__nomem(struct parse *ps)
{
	parse__fail(ps, "out of memory");
	ps->nomem = true;
	return -ENOMEM;
}

/* serde_json-style position of a byte offset. */
static int parse__fail_at(struct parse *ps, size_t offset, const char *what)
{
	size_t line = 1, column = 1;

	for (size_t i = 0; i < offset && ps->text[i]; i++) {
		if (ps->text[i] == '\n') {
			line++;
			column = 1;
		} else {
			column++;
		}
	}
	return parse__fail(ps, "%s at line %zu column %zu", what, line, column);
}

/*
 * Length of the escape at s[i], or 0 after an error.  cJSON reads a bad
 * \\u escape as U+0000 and truncates the string there; serde rejects it.
 */
static size_t prescan__escape(struct parse *ps, size_t i)
{
	const char *s = ps->text;
	unsigned value = 0;

	if (!s[i + 1] || !strchr("\"\\/bfnrtu", s[i + 1])) {
		parse__fail_at(ps, i, "invalid escape");
		return 0;
	}
	if (s[i + 1] != 'u')
		return 2;
	for (size_t k = 2; k < 6; k++) {
		char c = s[i + k];
		unsigned digit = c >= '0' && c <= '9' ? (unsigned)(c - '0')
			       : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
			       : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16;

		if (digit == 16) {
			parse__fail_at(ps, i, "invalid escape");
			return 0;
		}
		value = value * 16 + digit;
	}
	/* C strings end at NUL, so U+0000 cannot be kept. */
	if (value == 0) {
		parse__fail_at(ps, i, "unsupported \\u0000 in string");
		return 0;
	}
	return 6;
}

/* Offset just past the string that opens at start, or 0 after an error. */
static size_t prescan__string(struct parse *ps, size_t start)
{
	const unsigned char *s = (const unsigned char *)ps->text;
	size_t i = start + 1;

	for (;;) {
		bool valid;

		if (s[i] == '\0') {
			parse__fail_at(ps, i, "EOF while parsing a string");
			return 0;
		}
		if (s[i] == '"')
			return i + 1;
		if (s[i] == '\\') {
			size_t len = prescan__escape(ps, i);

			if (!len)
				return 0;
			i += len;
			continue;
		}
		if (s[i] < 0x20) {
			parse__fail_at(ps, i, "control character (\\u0000-\\u001F) found while parsing a string");
			return 0;
		}
		/* The terminating NUL stops a truncated sequence, so 4 is safe. */
		i += utf8__scan(s + i, 4, &valid);
		if (!valid) {
			parse__fail_at(ps, i, "invalid UTF-8");
			return 0;
		}
	}
}

static int prescan__number(struct parse *ps, size_t *pos)
{
	const char *s = ps->text;
	size_t start = *pos, i = start;
	struct number n;

	while (s[i] && strchr("0123456789+-eE.", s[i]))
		i++;
	*pos = i;
	/* Range errors only matter for fields we read, as in serde_json. */
	if (number__parse(s + start, i - start, &n) == -EINVAL)
		return parse__fail_at(ps, start, "invalid number");
	if (array__reserve((void **)&ps->tokens, &ps->token_cap, ps->token_count + 1,
			   sizeof(*ps->tokens)))
		return parse__nomem(ps);
	ps->tokens[ps->token_count++] = (struct token){ start, i - start };
	return 0;
}

/*
 * Lists number tokens and rejects what serde_json rejects but cJSON lets
 * through: raw control characters, invalid UTF-8 and a byte order mark.
 * Nesting is left to cJSON (1000 levels); serde_json skips unknown members
 * without any depth limit, so only absurd records differ.
 */
static int prescan(struct parse *ps)
{
	const unsigned char *s = (const unsigned char *)ps->text;
	size_t i = 0;

	while (s[i]) {
		unsigned char c = s[i];

		if (c == '"') {
			i = prescan__string(ps, i);
			if (!i)
				return -EINVAL;
			continue;
		}
		if (c == '-' || (c >= '0' && c <= '9')) {
			int err = prescan__number(ps, &i);

			if (err)
				return err;
			continue;
		}
		if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c >= 0x80)
			return parse__fail_at(ps, i, "expected value");
		i++;
	}
	return 0;
}

/* Tags each number node with its token index, in document order. */
static int parse__tag_numbers(struct parse *ps, cJSON *node, size_t *next)
{
	for (; node; node = node->next) {
		if (cJSON_IsNumber(node)) {
			if (*next >= ps->token_count)
				return parse__fail(ps, "number tokens out of step with the parser");
			node->valueint = (int)(*next)++;
		}
		if (node->child && parse__tag_numbers(ps, node->child, next))
			return -EINVAL;
	}
	return 0;
}

static const char *json_type_name(const cJSON *node)
{
	if (cJSON_IsNull(node))
		return "null";
	if (cJSON_IsBool(node))
		return "a boolean";
	if (cJSON_IsNumber(node))
		return "a number";
	if (cJSON_IsString(node))
		return "a string";
	if (cJSON_IsArray(node))
		return "an array";
	return "an object";
}

/* Appends ".name" or "[index]" to the error path; returns the old length. */
__attribute__((format(printf, 2, 3)))
static size_t path__push(struct parse *ps, const char *fmt, ...)
{
	size_t len = strlen(ps->path);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ps->path + len, sizeof(ps->path) - len, fmt, ap);
	va_end(ap);
	return len;
}

static void path__pop(struct parse *ps, size_t len)
{
	ps->path[len] = '\0';
}

static size_t path__push_field(struct parse *ps, const char *name)
{
	return path__push(ps, ps->path[0] ? ".%s" : "%s", name);
}

static int parse__fail_field(struct parse *ps, const char *name, const char *problem,
			     const cJSON *found)
{
	size_t len = path__push_field(ps, name);

	if (found)
		parse__fail(ps, "'%s': %s, found %s", ps->path, problem, json_type_name(found));
	else
		parse__fail(ps, "'%s': %s", ps->path, problem);
	path__pop(ps, len);
	return -EINVAL;
}

/* The member called name, NULL when absent; a repeated member is an error. */
static int parse__member(struct parse *ps, const cJSON *obj, const char *name, bool required,
			 const cJSON **out)
{
	const cJSON *child;
	size_t len;

	*out = NULL;
	cJSON_ArrayForEach(child, obj) {
		if (!child->string || strcmp(child->string, name))
			continue;
		if (*out) {
			len = path__push_field(ps, name);
			parse__fail(ps, "duplicate field '%s'", ps->path);
			path__pop(ps, len);
			return -EINVAL;
		}
		*out = child;
	}
	if (!*out && required) {
		len = path__push_field(ps, name);
		parse__fail(ps, "missing field '%s'", ps->path);
		path__pop(ps, len);
		return -EINVAL;
	}
	return 0;
}

static int parse__number(struct parse *ps, const cJSON *node, const char *name,
			 struct number *out)
{
	const struct token *t = &ps->tokens[node->valueint];
	int err = number__parse(ps->text + t->start, t->len, out);

	if (err == -ERANGE)
		return parse__fail_field(ps, name, "number out of range", NULL);
	return err ? parse__fail_field(ps, name, "invalid number", NULL) : 0;
}

static int parse__value_u64(struct parse *ps, const cJSON *node, const char *name,
			    uint64_t *out)
{
	static const char expected[] = "expected an unsigned 64-bit integer";
	struct number n;

	if (!cJSON_IsNumber(node))
		return parse__fail_field(ps, name, expected, node);
	if (parse__number(ps, node, name, &n))
		return -EINVAL;
	if (n.kind != NUMBER_U64) {
		const struct token *t = &ps->tokens[node->valueint];
		size_t len = path__push_field(ps, name);

		parse__fail(ps, "'%s': %s, found %.*s", ps->path, expected, (int)t->len,
			    ps->text + t->start);
		path__pop(ps, len);
		return -EINVAL;
	}
	*out = n.u;
	return 0;
}

static int parse__u64(struct parse *ps, const cJSON *obj, const char *name, uint64_t *out)
{
	const cJSON *node;

	if (parse__member(ps, obj, name, true, &node))
		return -EINVAL;
	return parse__value_u64(ps, node, name, out);
}

/* Option<u64>: serde reads an absent member as None, like null. */
static int parse__opt_u64(struct parse *ps, const cJSON *obj, const char *name,
			  struct kh_opt_u64 *out)
{
	const cJSON *node;

	*out = (struct kh_opt_u64){ false, 0 };
	if (parse__member(ps, obj, name, false, &node))
		return -EINVAL;
	if (!node || cJSON_IsNull(node))
		return 0;
	out->present = true;
	return parse__value_u64(ps, node, name, &out->value);
}

static int parse__opt_f64(struct parse *ps, const cJSON *obj, const char *name,
			  struct kh_opt_f64 *out)
{
	const cJSON *node;
	struct number n;

	*out = (struct kh_opt_f64){ false, 0.0 };
	if (parse__member(ps, obj, name, false, &node))
		return -EINVAL;
	if (!node || cJSON_IsNull(node))
		return 0;
	if (!cJSON_IsNumber(node))
		return parse__fail_field(ps, name, "expected a number", node);
	if (parse__number(ps, node, name, &n))
		return -EINVAL;
	out->present = true;
	out->value = n.kind == NUMBER_U64 ? (double)n.u : n.kind == NUMBER_I64 ? (double)n.i : n.f;
	return 0;
}

static int parse__string_value(struct parse *ps, const cJSON *node, const char *name,
			       char **out)
{
	if (!cJSON_IsString(node))
		return parse__fail_field(ps, name, "expected a string", node);
	*out = strdup(node->valuestring);
	return *out ? 0 : parse__nomem(ps);
}

static int parse__string(struct parse *ps, const cJSON *obj, const char *name, char **out)
{
	const cJSON *node;

	if (parse__member(ps, obj, name, true, &node))
		return -EINVAL;
	return parse__string_value(ps, node, name, out);
}

static int parse__opt_string(struct parse *ps, const cJSON *obj, const char *name,
			     char **out)
{
	const cJSON *node;

	*out = NULL;
	if (parse__member(ps, obj, name, false, &node))
		return -EINVAL;
	if (!node || cJSON_IsNull(node))
		return 0;
	return parse__string_value(ps, node, name, out);
}

static int parse__enum(struct parse *ps, const cJSON *obj, const char *name,
		       int (*parse)(const char *, uint32_t *), uint32_t *out)
{
	const cJSON *node;
	size_t len;

	if (parse__member(ps, obj, name, true, &node))
		return -EINVAL;
	if (!cJSON_IsString(node))
		return parse__fail_field(ps, name, "expected a string", node);
	if (!parse(node->valuestring, out))
		return 0;
	len = path__push_field(ps, name);
	parse__fail(ps, "'%s': unknown value '%s'", ps->path, node->valuestring);
	path__pop(ps, len);
	return -EINVAL;
}

static int parse__container(struct parse *ps, const cJSON *obj, const char *name,
			    bool required, bool array, const cJSON **out)
{
	if (parse__member(ps, obj, name, required, out))
		return -EINVAL;
	if (!*out || (array ? cJSON_IsArray(*out) : cJSON_IsObject(*out)))
		return 0;
	return parse__fail_field(ps, name, array ? "expected an array" : "expected an object",
				 *out);
}

/* Element i of an array of structs, with its path pushed. */
static int parse__element(struct parse *ps, const cJSON *node, size_t i, size_t *saved)
{
	*saved = path__push(ps, "[%zu]", i);
	if (cJSON_IsObject(node))
		return 0;
	parse__fail(ps, "'%s': expected an object, found %s", ps->path, json_type_name(node));
	path__pop(ps, *saved);
	return -EINVAL;
}

/* Allocates room for the elements of array (at least one slot). */
static int parse__alloc(struct parse *ps, const cJSON *array, size_t elem, void **items,
			size_t *cap)
{
	size_t n = (size_t)cJSON_GetArraySize(array);

	*items = calloc(n ? n : 1, elem);
	if (!*items)
		return parse__nomem(ps);
	*cap = n ? n : 1;
	return 0;
}

static int parse__snapshot(struct parse *ps, const cJSON *obj, const char *name,
			   struct kh_resource_snapshot *out)
{
	const cJSON *node;
	size_t saved;
	int err;

	if (parse__container(ps, obj, name, true, false, &node))
		return -EINVAL;
	saved = path__push_field(ps, name);
	err = parse__opt_u64(ps, node, "cpu_time_ms", &out->cpu_time_ms) ||
	      parse__opt_u64(ps, node, "resident_bytes", &out->resident_bytes) ||
	      parse__opt_u64(ps, node, "virtual_bytes", &out->virtual_bytes) ||
	      parse__opt_u64(ps, node, "thread_count", &out->thread_count);
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

static int parse__identity(struct parse *ps, const cJSON *root, struct kh_identity *id)
{
	const cJSON *node;
	uint32_t cache, daemon;
	size_t saved;
	int err;

	if (parse__container(ps, root, "identity", true, false, &node))
		return -EINVAL;
	saved = path__push_field(ps, "identity");
	err = parse__string(ps, node, "run_id", &id->run_id) ||
	      parse__string(ps, node, "binary_version", &id->binary_version) ||
	      parse__string(ps, node, "detector_digest", &id->detector_digest) ||
	      parse__string(ps, node, "config_digest", &id->config_digest) ||
	      parse__string(ps, node, "source_kind", &id->source_kind) ||
	      parse__string(ps, node, "workload_class", &id->workload_class) ||
	      parse__string(ps, node, "backend_requested", &id->backend_requested) ||
	      parse__opt_string(ps, node, "backend_selected", &id->backend_selected) ||
	      parse__enum(ps, node, "cache_state", kh_cache_state__parse, &cache) ||
	      parse__enum(ps, node, "daemon_state", kh_daemon_state__parse, &daemon) ||
	      parse__u64(ps, node, "scanner_threads", &id->scanner_threads) ||
	      parse__opt_u64(ps, node, "reader_threads", &id->reader_threads) ||
	      parse__u64(ps, node, "logical_cpus", &id->logical_cpus);
	path__pop(ps, saved);
	if (err)
		return -EINVAL;
	id->cache_state = (enum kh_cache_state)cache;
	id->daemon_state = (enum kh_daemon_state)daemon;
	return 0;
}

static int parse__stages(struct parse *ps, const cJSON *root, struct kh_profile *p)
{
	const cJSON *array, *node;
	size_t outer, saved, i = 0;

	if (parse__container(ps, root, "stages", true, true, &array))
		return -EINVAL;
	if (cJSON_GetArraySize(array) > KH_STAGE_COUNT)
		return parse__fail(ps, "'stages': more than %d entries", KH_STAGE_COUNT);
	outer = path__push_field(ps, "stages");
	cJSON_ArrayForEach(node, array) {
		struct kh_stage_measurement *s = &p->stages[i];

		if (parse__element(ps, node, i++, &saved))
			break;
		if (parse__enum(ps, node, "stage", kh_stage__parse, &s->stage) ||
		    parse__u64(ps, node, "elapsed_ns", &s->elapsed_ns) ||
		    parse__u64(ps, node, "calls", &s->calls) ||
		    parse__u64(ps, node, "attributed_ns", &s->attributed_ns))
			break;
		path__pop(ps, saved);
		p->stage_count++;
	}
	path__pop(ps, outer);
	return ps->failed ? -EINVAL : 0;
}

static int parse__transitions(struct parse *ps, const cJSON *root, struct kh_profile *p)
{
	const cJSON *array, *node;
	size_t outer, saved, i = 0;

	if (parse__container(ps, root, "transitions", true, true, &array) ||
	    parse__alloc(ps, array, sizeof(*p->transitions), (void **)&p->transitions,
			 &p->transition_cap))
		return -EINVAL;
	outer = path__push_field(ps, "transitions");
	cJSON_ArrayForEach(node, array) {
		struct kh_transition *t = &p->transitions[i];

		if (parse__element(ps, node, i++, &saved))
			break;
		if (parse__enum(ps, node, "state", kh_run_state__parse, &t->state) ||
		    parse__u64(ps, node, "elapsed_ns", &t->elapsed_ns))
			break;
		path__pop(ps, saved);
		p->transition_count++;
	}
	path__pop(ps, outer);
	return ps->failed ? -EINVAL : 0;
}

static int parse__state(struct parse *ps, const cJSON *node, struct kh_state_measurement *s)
{
	return parse__enum(ps, node, "state", kh_run_state__parse, &s->state) ||
	       parse__u64(ps, node, "elapsed_ns", &s->elapsed_ns) ||
	       parse__opt_u64(ps, node, "cpu_time_ms", &s->cpu_time_ms) ||
	       parse__opt_u64(ps, node, "aggregate_cpu_milli_percent",
			      &s->aggregate_cpu_milli_percent) ||
	       parse__opt_u64(ps, node, "resident_start_bytes", &s->resident_start_bytes) ||
	       parse__opt_u64(ps, node, "resident_end_bytes", &s->resident_end_bytes) ||
	       parse__opt_u64(ps, node, "threads_start", &s->threads_start) ||
	       parse__opt_u64(ps, node, "threads_end", &s->threads_end);
}

/* #[serde(default)]: an absent "states" is an empty list. */
static int parse__states(struct parse *ps, const cJSON *root, struct kh_profile *p)
{
	const cJSON *array, *node;
	size_t outer, saved, i = 0;

	if (parse__container(ps, root, "states", false, true, &array))
		return -EINVAL;
	if (!array)
		return 0;
	if (parse__alloc(ps, array, sizeof(*p->states), (void **)&p->states, &p->state_cap))
		return -EINVAL;
	outer = path__push_field(ps, "states");
	cJSON_ArrayForEach(node, array) {
		if (parse__element(ps, node, i, &saved) || parse__state(ps, node, &p->states[i]))
			break;
		i++;
		path__pop(ps, saved);
		p->state_count++;
	}
	path__pop(ps, outer);
	return ps->failed ? -EINVAL : 0;
}

static int parse__samples(struct parse *ps, const cJSON *root, struct kh_profile *p)
{
	const cJSON *array, *node;
	size_t outer, saved, i = 0;

	if (parse__container(ps, root, "resource_samples", true, true, &array) ||
	    parse__alloc(ps, array, sizeof(*p->resource_samples), (void **)&p->resource_samples,
			 &p->resource_sample_cap))
		return -EINVAL;
	outer = path__push_field(ps, "resource_samples");
	cJSON_ArrayForEach(node, array) {
		struct kh_resource_sample *s = &p->resource_samples[i];

		if (parse__element(ps, node, i++, &saved))
			break;
		if (parse__enum(ps, node, "state", kh_run_state__parse, &s->state) ||
		    parse__u64(ps, node, "elapsed_ns", &s->elapsed_ns) ||
		    parse__snapshot(ps, node, "snapshot", &s->snapshot))
			break;
		path__pop(ps, saved);
		p->resource_sample_count++;
	}
	path__pop(ps, outer);
	return ps->failed ? -EINVAL : 0;
}

static int parse__resources(struct parse *ps, const cJSON *root, struct kh_resource_usage *r)
{
	const cJSON *node;
	size_t saved;
	int err;

	if (parse__container(ps, root, "resources", true, false, &node))
		return -EINVAL;
	saved = path__push_field(ps, "resources");
	err = parse__snapshot(ps, node, "start", &r->start) ||
	      parse__snapshot(ps, node, "finish", &r->finish) ||
	      parse__opt_u64(ps, node, "max_observed_resident_bytes",
			     &r->max_observed_resident_bytes) ||
	      parse__opt_u64(ps, node, "max_observed_threads", &r->max_observed_threads) ||
	      parse__opt_f64(ps, node, "aggregate_cpu_percent", &r->aggregate_cpu_percent);
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

/* Extension members are all optional so that the extension can grow. */
static int parse__ext_u64(struct parse *ps, const cJSON *obj, const char *name, uint64_t *out)
{
	struct kh_opt_u64 value;

	if (parse__opt_u64(ps, obj, name, &value))
		return -EINVAL;
	*out = value.value;
	return 0;
}

static int parse__ext_bool(struct parse *ps, const cJSON *obj, const char *name, bool *out)
{
	const cJSON *node;

	if (parse__member(ps, obj, name, false, &node))
		return -EINVAL;
	if (!node || cJSON_IsNull(node))
		return 0;
	if (!cJSON_IsBool(node))
		return parse__fail_field(ps, name, "expected a boolean", node);
	*out = cJSON_IsTrue(node);
	return 0;
}

static int parse__ext_drops(struct parse *ps, const cJSON *ext, uint64_t *drops)
{
	const cJSON *node;
	size_t saved;
	int err = 0;

	if (parse__container(ps, ext, "drops", false, false, &node))
		return -EINVAL;
	if (!node)
		return 0;
	saved = path__push_field(ps, "drops");
	for (uint32_t i = 0; !err && i < KH_DROP_COUNT; i++)
		err = parse__ext_u64(ps, node, kh_drop__name(i), &drops[i]);
	path__pop(ps, saved);
	return err;
}

/* One [index, count] pair of khprof.latency.stages[].buckets. */
static int parse__bucket(struct parse *ps, const cJSON *pair, size_t i, struct kh_stage_dist *d)
{
	size_t saved = path__push(ps, "[%zu]", i);
	uint64_t index, count;
	int err = -EINVAL;

	if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2)
		parse__fail(ps, "'%s': expected [index, count], found %s", ps->path,
			    json_type_name(pair));
	else if (!parse__value_u64(ps, pair->child, "0", &index) &&
		 !parse__value_u64(ps, pair->child->next, "1", &count)) {
		if (index >= KH_HIST_BUCKETS)
			parse__fail(ps, "'%s': bucket %" PRIu64 " out of range (0 to %u)", ps->path,
				    index, KH_HIST_BUCKETS - 1);
		else
			err = 0;
	}
	if (!err) {
		d->counts[index] += count;
		d->spans += count;
	}
	path__pop(ps, saved);
	return err;
}

/* Percentiles and on_cpu_ns are derived again from what is read here. */
static int parse__dist(struct parse *ps, const cJSON *node, struct kh_latency *l)
{
	const cJSON *buckets, *pair;
	uint32_t stage;
	struct kh_stage_dist *d;
	struct kh_opt_u64 off, runnable;
	size_t i = 0, saved;
	int err;

	if (parse__enum(ps, node, "stage", kh_stage__parse, &stage))
		return -EINVAL;
	d = &l->stages[stage];
	if (d->present)
		return parse__fail_field(ps, "stage", "stage listed twice", NULL);
	if (parse__container(ps, node, "buckets", true, true, &buckets))
		return -EINVAL;
	if (kh_dist__alloc(d))
		return parse__nomem(ps);
	d->present = true;
	err = parse__ext_u64(ps, node, "min_ns", &d->min_ns) ||
	      parse__ext_u64(ps, node, "max_ns", &d->max_ns) ||
	      parse__opt_u64(ps, node, "off_cpu_ns", &off) ||
	      parse__opt_u64(ps, node, "runnable_ns", &runnable) ||
	      parse__ext_u64(ps, node, "offcpu_truncated", &d->offcpu_truncated);
	d->off_cpu_ns = off.value;
	d->runnable_ns = runnable.value;
	saved = path__push_field(ps, "buckets");
	cJSON_ArrayForEach(pair, buckets) {
		if (err)
			break;
		err = parse__bucket(ps, pair, i++, d);
	}
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

static int parse__latency(struct parse *ps, const cJSON *ext, struct kh_latency *l)
{
	const cJSON *node, *stages, *item;
	size_t i = 0, saved, elem;
	int err;

	if (parse__container(ps, ext, "latency", false, false, &node))
		return -EINVAL;
	if (!node)
		return 0;
	l->present = true;
	saved = path__push_field(ps, "latency");
	err = parse__ext_bool(ps, node, "off_cpu", &l->off_cpu) ||
	      parse__container(ps, node, "stages", true, true, &stages);
	if (!err) {
		size_t stages_saved = path__push_field(ps, "stages");

		cJSON_ArrayForEach(item, stages) {
			err = parse__element(ps, item, i++, &elem);
			if (!err) {
				err = parse__dist(ps, item, l);
				path__pop(ps, elem);
			}
			if (err)
				break;
		}
		path__pop(ps, stages_saved);
	}
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

static int parse__ext(struct parse *ps, const cJSON *root, struct kh_profile_ext *ext)
{
	const cJSON *node;
	size_t saved;
	int err;

	if (parse__member(ps, root, "khprof", false, &node))
		return -EINVAL;
	if (!node || cJSON_IsNull(node))
		return 0;
	if (!cJSON_IsObject(node))
		return parse__fail_field(ps, "khprof", "expected an object", node);
	ext->present = true;
	saved = path__push_field(ps, "khprof");
	err = parse__opt_string(ps, node, "mode", &ext->mode) ||
	      parse__ext_bool(ps, node, "started_mid_session", &ext->started_mid_session) ||
	      parse__ext_bool(ps, node, "ended_mid_session", &ext->ended_mid_session) ||
	      parse__ext_drops(ps, node, ext->drops) ||
	      parse__ext_u64(ps, node, "probe_hits", &ext->probe_hits) ||
	      parse__ext_u64(ps, node, "probe_cost_ns", &ext->probe_cost_ns) ||
	      parse__ext_u64(ps, node, "tracer_cost_ns", &ext->tracer_cost_ns) ||
	      parse__ext_u64(ps, node, "span_bias_ns", &ext->span_bias_ns) ||
	      parse__ext_u64(ps, node, "traced_pid", &ext->traced_pid) ||
	      parse__ext_u64(ps, node, "session_sequence", &ext->session_sequence) ||
	      parse__ext_u64(ps, node, "sample_latency_ns_max", &ext->sample_latency_ns_max) ||
	      parse__latency(ps, node, &ext->latency);
	path__pop(ps, saved);
	return err ? -EINVAL : 0;
}

static int parse__profile(struct parse *ps, const cJSON *root, struct kh_profile *p)
{
	if (!cJSON_IsObject(root))
		return parse__fail(ps, "expected a JSON object, found %s", json_type_name(root));
	if (parse__string(ps, root, "schema", &p->schema) ||
	    parse__identity(ps, root, &p->identity) ||
	    parse__enum(ps, root, "status", kh_run_state__parse, &p->status) ||
	    parse__u64(ps, root, "wall_time_ns", &p->wall_time_ns) ||
	    parse__u64(ps, root, "input_bytes", &p->input_bytes) ||
	    parse__u64(ps, root, "input_units", &p->input_units) ||
	    parse__stages(ps, root, p) || parse__transitions(ps, root, p) ||
	    parse__states(ps, root, p) || parse__samples(ps, root, p) ||
	    parse__resources(ps, root, &p->resources) || parse__ext(ps, root, &p->ext))
		return -EINVAL;
	return 0;
}

static cJSON *parse__document(struct parse *ps)
{
	const char *end = NULL;
	cJSON *root;
	size_t next = 0;

	if (prescan(ps))
		return NULL;
	if (ps->token_count > INT32_MAX) {
		parse__fail(ps, "too many numbers in one document");
		return NULL;
	}
	root = cJSON_ParseWithOpts(ps->text, &end, true);
	if (!root) {
		parse__fail_at(ps, end ? (size_t)(end - ps->text) : 0, "invalid JSON");
		return NULL;
	}
	if (parse__tag_numbers(ps, root, &next) || next != ps->token_count) {
		parse__fail(ps, "number tokens out of step with the parser");
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

int profile__from_json(const char *text, struct kh_profile *out, char *err, size_t errlen)
{
	struct parse ps = { .text = text, .err = err, .errlen = errlen };
	struct kh_profile p;
	cJSON *root;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	if (errlen)
		err[0] = '\0';
	if (!text)
		return parse__fail(&ps, "no input");
	root = parse__document(&ps);
	if (root) {
		parse__profile(&ps, root, &p);
		cJSON_Delete(root);
	}
	free(ps.tokens);
	if (ps.failed)
		rc = ps.nomem ? -ENOMEM : -EINVAL;
	if (rc) {
		profile__free(&p);
		return rc;
	}
	*out = p;
	return 0;
}

int profile__read_file(const char *path, struct kh_profile *out, char *err, size_t errlen)
{
	char *text;
	size_t len;
	int rc = file__read_all(path, &text, &len);

	memset(out, 0, sizeof(*out));
	if (rc) {
		snprintf(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	rc = profile__from_json(text, out, err, errlen);
	free(text);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return rc;
}
