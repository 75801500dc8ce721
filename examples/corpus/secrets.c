/* SPDX-License-Identifier: MIT */
/* Random generation of planted secrets and of decoys that must not match. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"

uint64_t rng_next(struct rng *rng)
{
	uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint32_t rng_below(struct rng *rng, uint32_t bound)
{
	/* Multiply-shift: the bias is far below anything a corpus could show. */
	return (uint32_t)(((rng_next(rng) >> 32) * (uint64_t)bound) >> 32);
}

uint32_t rng_range(struct rng *rng, uint32_t low, uint32_t high)
{
	return low + rng_below(rng, high - low + 1);
}

bool rng_percent(struct rng *rng, uint32_t percent)
{
	return rng_below(rng, 100) < percent;
}

const char *rng_pick(struct rng *rng, const char *const *choices, size_t count)
{
	return choices[rng_below(rng, (uint32_t)count)];
}

static const char upper_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
static const char alphanumerics[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
static const char lower_letters[] = "abcdefghijklmnopqrstuvwxyz";
static const char digits[] = "0123456789";
static const char base64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Appends count characters drawn from alphabet at out; returns the new end. */
static char *append_random(struct rng *rng, char *out, const char *alphabet, size_t count)
{
	size_t size = strlen(alphabet);

	for (size_t i = 0; i < count; i++)
		*out++ = alphabet[rng_below(rng, (uint32_t)size)];
	*out = '\0';
	return out;
}

static char *append_text(char *out, const char *text)
{
	size_t length = strlen(text);

	memcpy(out, text, length + 1);
	return out + length;
}

void make_base64_noise(struct rng *rng, char *out, size_t length)
{
	append_random(rng, out, base64_alphabet, length);
}

static void make_generic_value(struct rng *rng, char out[SECRET_MAX])
{
	size_t length;

	do {
		length = rng_range(rng, 20, 40);
		append_random(rng, out, alphanumerics, length);
	} while (shannon_entropy_bits(out, length) < PLANTED_MIN_ENTROPY_BITS);
}

void make_secret(struct rng *rng, enum rule_id rule, char out[SECRET_MAX])
{
	static const char *const aws_prefixes[] = { "AKIA", "ASIA" };
	static const char *const slack_kinds[] = { "xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-" };
	static const char *const key_kinds[] = { "RSA ", "EC ", "OPENSSH ", "" };
	char *end = out;

	switch (rule) {
	case RULE_AWS_ACCESS_KEY_ID:
		end = append_text(end, RNG_PICK(rng, aws_prefixes));
		append_random(rng, end, upper_digits, 16);
		break;
	case RULE_GITHUB_PAT:
		end = append_text(end, "ghp_");
		append_random(rng, end, alphanumerics, 36);
		break;
	case RULE_GITHUB_FINE_GRAINED_PAT:
		/* GitHub's own layout: 22 characters, '_', 59 characters. */
		end = append_text(end, "github_pat_");
		end = append_random(rng, end, alphanumerics, 22);
		end = append_text(end, "_");
		append_random(rng, end, alphanumerics, 59);
		break;
	case RULE_SLACK_TOKEN:
		end = append_text(end, RNG_PICK(rng, slack_kinds));
		end = append_random(rng, end, digits, rng_range(rng, 10, 13));
		end = append_text(end, "-");
		end = append_random(rng, end, digits, 12);
		end = append_text(end, "-");
		append_random(rng, end, alphanumerics, 24);
		break;
	case RULE_STRIPE_LIVE_SECRET:
		end = append_text(end, "sk_live_");
		append_random(rng, end, alphanumerics, rng_range(rng, 24, 34));
		break;
	case RULE_PRIVATE_KEY:
		end = append_text(end, "-----BEGIN ");
		end = append_text(end, RNG_PICK(rng, key_kinds));
		append_text(end, "PRIVATE KEY-----");
		break;
	case RULE_GENERIC_SECRET:
	case RULE_COUNT:
		make_generic_value(rng, out);
		break;
	}
}

enum decoy_kind {
	DECOY_AWS_LOWER_SUFFIX,
	DECOY_AWS_SHORT,
	DECOY_AWS_LONG,
	DECOY_AWS_LOWER_PREFIX,
	DECOY_GITHUB_SHORT,
	DECOY_GITHUB_LONG,
	DECOY_FINE_GRAINED_SHORT,
	DECOY_STRIPE_TEST,
	DECOY_STRIPE_SHORT,
	DECOY_SLACK_BAD_KIND,
	DECOY_SLACK_SHORT,
	DECOY_PEM_NOT_PRIVATE,
	DECOY_KIND_COUNT
};

void make_decoy(struct rng *rng, char out[SECRET_MAX])
{
	static const char *const public_headers[] = {
		"-----BEGIN PUBLIC KEY-----",
		"-----BEGIN CERTIFICATE-----",
		"-----BEGIN ENCRYPTED PRIVATE KEY-----",
		"-----BEGIN RSA PUBLIC KEY-----",
	};
	char *end = out;

	switch ((enum decoy_kind)rng_below(rng, DECOY_KIND_COUNT)) {
	case DECOY_AWS_LOWER_SUFFIX:
		/* One lower-case letter is enough to leave [A-Z0-9]{16}. */
		end = append_text(end, "AKIA");
		end = append_random(rng, end, upper_digits, 7);
		end = append_random(rng, end, lower_letters, 1);
		append_random(rng, end, upper_digits, 8);
		break;
	case DECOY_AWS_SHORT:
		end = append_text(end, "AKIA");
		append_random(rng, end, upper_digits, 15);
		break;
	case DECOY_AWS_LONG:
		end = append_text(end, "ASIA");
		append_random(rng, end, upper_digits, 17);
		break;
	case DECOY_AWS_LOWER_PREFIX:
		end = append_text(end, "akia");
		append_random(rng, end, upper_digits, 16);
		break;
	case DECOY_GITHUB_SHORT:
		end = append_text(end, "ghp_");
		append_random(rng, end, alphanumerics, 35);
		break;
	case DECOY_GITHUB_LONG:
		end = append_text(end, "ghp_");
		append_random(rng, end, alphanumerics, 37);
		break;
	case DECOY_FINE_GRAINED_SHORT:
		end = append_text(end, "github_pat_");
		append_random(rng, end, alphanumerics, 81);
		break;
	case DECOY_STRIPE_TEST:
		end = append_text(end, "sk_test_");
		append_random(rng, end, alphanumerics, rng_range(rng, 24, 34));
		break;
	case DECOY_STRIPE_SHORT:
		end = append_text(end, "sk_live_");
		append_random(rng, end, alphanumerics, rng_range(rng, 8, 23));
		break;
	case DECOY_SLACK_BAD_KIND:
		end = append_text(end, "xoxq-");
		end = append_random(rng, end, digits, 12);
		end = append_text(end, "-");
		append_random(rng, end, alphanumerics, 24);
		break;
	case DECOY_SLACK_SHORT:
		end = append_text(end, "xoxb-");
		append_random(rng, end, digits, rng_range(rng, 3, 9));
		break;
	case DECOY_PEM_NOT_PRIVATE:
	case DECOY_KIND_COUNT:
		append_text(end, RNG_PICK(rng, public_headers));
		break;
	}
}

/* Short, or long but repetitive: below the scanner's entropy bar either way. */
static const char *const low_entropy_values[] = {
	"changeme",
	"password123",
	"hunter2",
	"xxxxxxxxxxxxxxxxxxxx",
	"changeme-changeme-changeme",
	"aaaaaaaabbbbbbbbcccccccc",
	"0000000000000000",
	"abababababababababab",
	"example-example-example",
	"${DB_PASSWORD}",
};

const char *pick_low_entropy_value(struct rng *rng)
{
	return RNG_PICK(rng, low_entropy_values);
}

void check_decoy_tables(void)
{
	for (size_t i = 0; i < sizeof(low_entropy_values) / sizeof(low_entropy_values[0]); i++) {
		const char *value = low_entropy_values[i];
		size_t length = strlen(value);

		if (length >= GENERIC_MIN_LENGTH &&
		    shannon_entropy_bits(value, length) >= GENERIC_MIN_ENTROPY_BITS) {
			fprintf(stderr, "kh-corpus: decoy '%s' would be reported\n", value);
			abort();
		}
	}
}

void base64_encode(const char *data, size_t length, char *out)
{
	const unsigned char *bytes = (const unsigned char *)data;
	size_t i = 0;

	for (; i + 3 <= length; i += 3) {
		uint32_t group = (uint32_t)bytes[i] << 16 | (uint32_t)bytes[i + 1] << 8 | bytes[i + 2];

		*out++ = base64_alphabet[group >> 18];
		*out++ = base64_alphabet[(group >> 12) & 63];
		*out++ = base64_alphabet[(group >> 6) & 63];
		*out++ = base64_alphabet[group & 63];
	}
	if (length - i == 1) {
		uint32_t group = (uint32_t)bytes[i] << 16;

		*out++ = base64_alphabet[group >> 18];
		*out++ = base64_alphabet[(group >> 12) & 63];
		*out++ = '=';
		*out++ = '=';
	} else if (length - i == 2) {
		uint32_t group = (uint32_t)bytes[i] << 16 | (uint32_t)bytes[i + 1] << 8;

		*out++ = base64_alphabet[group >> 18];
		*out++ = base64_alphabet[(group >> 12) & 63];
		*out++ = base64_alphabet[(group >> 6) & 63];
		*out++ = '=';
	}
	*out = '\0';
}

