// SPDX-License-Identifier: MIT
/*
 * json_number.c - the two halves of serde_json's number handling that
 * khprof must match exactly: the f64 spelling its writer prints (ryu's
 * shortest round-trip digits in ryu's layout) and the way its reader turns
 * a number token into u64, i64 or f64, rounding included.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "json_number.h"
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

void json__put_f64(struct outbuf *b, double v)
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

int number__parse(const char *s, size_t len, struct number *out)
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
