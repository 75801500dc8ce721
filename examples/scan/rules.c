/* SPDX-License-Identifier: MIT */
/* Detection rules, their literal triggers and the PCRE2 backend choice. */
#include <stdio.h>
#include <string.h>

#include "kh_scan.h"

/* The length threshold goes into the generic pattern as text, so the two cannot drift. */
#define STRINGIFY(x) #x
#define STRINGIFY_VALUE(x) STRINGIFY(x)

/*
 * Every pattern is compiled anchored: the prefilter hands a rule the
 * offset where its match must begin, so PCRE2 only verifies candidates and
 * never searches a chunk.  Anchoring is a compile option because
 * PCRE2_ANCHORED at match time would silently bypass the JIT.  Lookbehinds
 * may see text before the start offset, which gives the word boundaries.
 */
static const char *const rule_patterns[RULE_COUNT] = {
	[RULE_AWS_ACCESS_KEY_ID] =
		"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])",
	[RULE_GITHUB_PAT] =
		"(?<![A-Za-z0-9_])ghp_[A-Za-z0-9]{36}(?![A-Za-z0-9_])",
	[RULE_GITHUB_FINE_GRAINED_PAT] =
		"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{82}(?![A-Za-z0-9_])",
	[RULE_SLACK_TOKEN] =
		"(?<![A-Za-z0-9_-])xox[baprs]-[0-9]{10,13}-[A-Za-z0-9-]{10,64}(?![A-Za-z0-9_-])",
	[RULE_STRIPE_LIVE_SECRET] =
		"(?<![A-Za-z0-9_])sk_live_[A-Za-z0-9]{24,99}(?![A-Za-z0-9_])",
	[RULE_PRIVATE_KEY] =
		"-----BEGIN (?:RSA |EC |OPENSSH |)PRIVATE KEY-----",
	/*
	 * Starts at the keyword; group 1 is the value, which may not hold
	 * whitespace, quotes, ',' or ';' so it stops where the literal does.
	 */
	[RULE_GENERIC_SECRET] =
		"(?i)(?:secret|token|passw(?:or)?d|api[_-]?key)[a-z0-9_.-]*[\"']?[ \\t]*"
		"(?::=|=|:)[ \\t]*[\"']?([!#-&(-+\\--:<-~]"
		"{" STRINGIFY_VALUE(GENERIC_MIN_LENGTH) ",})",
};

/*
 * Literal triggers: a 4-byte window of each rule's fixed text and how far
 * that window sits from where the match starts.  Windows are chosen to be
 * rare in ordinary text (e.g. "b_pa" of github_pat_, "-BEG" of the PEM
 * header) so few candidates reach PCRE2.  Matching is case-insensitive
 * here; the anchored rule then applies the real case rules.
 */
struct trigger_definition {
	char window[5];
	uint8_t lead;
	uint8_t rule;
};

static const struct trigger_definition trigger_definitions[] = {
	{ "AKIA", 0, RULE_AWS_ACCESS_KEY_ID },
	{ "ASIA", 0, RULE_AWS_ACCESS_KEY_ID },
	{ "ghp_", 0, RULE_GITHUB_PAT },
	{ "b_pa", 5, RULE_GITHUB_FINE_GRAINED_PAT },
	{ "xoxb", 0, RULE_SLACK_TOKEN },
	{ "xoxa", 0, RULE_SLACK_TOKEN },
	{ "xoxp", 0, RULE_SLACK_TOKEN },
	{ "xoxr", 0, RULE_SLACK_TOKEN },
	{ "xoxs", 0, RULE_SLACK_TOKEN },
	{ "_liv", 2, RULE_STRIPE_LIVE_SECRET },
	{ "-BEG", 4, RULE_PRIVATE_KEY },
	{ "ecre", 1, RULE_GENERIC_SECRET },  /* secret */
	{ "oken", 1, RULE_GENERIC_SECRET },  /* token */
	{ "sswo", 2, RULE_GENERIC_SECRET },  /* password */
	{ "sswd", 2, RULE_GENERIC_SECRET },  /* passwd */
	{ "i_ke", 2, RULE_GENERIC_SECRET },  /* api_key */
	{ "i-ke", 2, RULE_GENERIC_SECRET },  /* api-key */
	{ "ikey", 2, RULE_GENERIC_SECRET },  /* apikey */
};

#define TRIGGER_COUNT (sizeof(trigger_definitions) / sizeof(trigger_definitions[0]))

const char *backend_name(enum regex_backend backend)
{
	switch (backend) {
	case BACKEND_AUTO:
		return "auto";
	case BACKEND_PCRE2_JIT:
		return "pcre2-jit";
	case BACKEND_PCRE2_INTERP:
		return "pcre2-interp";
	}
	return "unknown";
}

/* Multiplicative hashing with the first multiplier that is collision-free. */
static int build_trigger_table(struct rule_set *rules)
{
	uint32_t multiplier = 0x9e3779b1u;

	for (int attempt = 0; attempt < 1000; attempt++) {
		bool collided = false;

		memset(rules->trigger_window, 0, sizeof(rules->trigger_window));
		for (size_t i = 0; i < TRIGGER_COUNT; i++) {
			uint32_t folded = fold_window(trigger_definitions[i].window);
			uint32_t slot = trigger_slot(folded, multiplier);

			if (rules->trigger_window[slot] != 0) {
				collided = true;
				break;
			}
			rules->trigger_window[slot] = folded;
			rules->trigger_rule[slot] = trigger_definitions[i].rule;
			rules->trigger_lead[slot] = trigger_definitions[i].lead;
		}
		if (!collided) {
			rules->trigger_multiplier = multiplier;
			return 0;
		}
		multiplier = multiplier * 0x2c1b3c6du + 0x297a2d38u;
		multiplier |= 1;
	}
	return -1;
}

int rule_set_build(struct rule_set *rules, enum regex_backend requested,
		   char *error, size_t error_size)
{
	uint32_t jit_available = 0;

	memset(rules, 0, sizeof(*rules));
	if (build_trigger_table(rules) != 0) {
		snprintf(error, error_size, "no collision-free trigger hash found");
		return -1;
	}
	for (int rule = 0; rule < RULE_COUNT; rule++) {
		int code;
		PCRE2_SIZE offset;

		rules->code[rule] = pcre2_compile((PCRE2_SPTR)rule_patterns[rule],
						  PCRE2_ZERO_TERMINATED, PCRE2_ANCHORED,
						  &code, &offset, NULL);
		if (!rules->code[rule]) {
			PCRE2_UCHAR message[160];

			pcre2_get_error_message(code, message, sizeof(message));
			snprintf(error, error_size, "rule %s: %s at offset %zu",
				 rule_name(rule), (const char *)message, (size_t)offset);
			rule_set_free(rules);
			return -1;
		}
	}
	if (requested == BACKEND_PCRE2_INTERP)
		return 0;

	pcre2_config(PCRE2_CONFIG_JIT, &jit_available);
	rules->use_jit = jit_available != 0;
	for (int rule = 0; rule < RULE_COUNT && rules->use_jit; rule++)
		if (pcre2_jit_compile(rules->code[rule], PCRE2_JIT_COMPLETE) != 0)
			rules->use_jit = false;
	if (!rules->use_jit && requested == BACKEND_PCRE2_JIT) {
		snprintf(error, error_size, "PCRE2 JIT is not available on this system");
		rule_set_free(rules);
		return -1;
	}
	return 0;
}

void rule_set_free(struct rule_set *rules)
{
	for (int rule = 0; rule < RULE_COUNT; rule++) {
		pcre2_code_free(rules->code[rule]);
		rules->code[rule] = NULL;
	}
}

uint64_t rule_set_digest(void)
{
	uint64_t hash = FNV1A_OFFSET_BASIS;
	char thresholds[128];
	int length;

	for (int rule = 0; rule < RULE_COUNT; rule++) {
		hash = fnv1a_update(hash, rule_name(rule), strlen(rule_name(rule)) + 1);
		hash = fnv1a_update(hash, rule_patterns[rule], strlen(rule_patterns[rule]) + 1);
	}
	for (size_t i = 0; i < TRIGGER_COUNT; i++)
		hash = fnv1a_update(hash, &trigger_definitions[i], sizeof(trigger_definitions[i]));
	length = snprintf(thresholds, sizeof(thresholds), "%d %.3f %d %d", GENERIC_MIN_LENGTH,
			  GENERIC_MIN_ENTROPY_BITS, BASE64_MIN_BLOB, DECODED_MIN_PRINTABLE_PERCENT);
	return fnv1a_update(hash, thresholds, (size_t)length);
}

int rule_match(const struct rule_set *rules, enum rule_id rule,
	       const char *text, size_t length, size_t start,
	       pcre2_match_data *match_data)
{
	if (rules->use_jit)
		return pcre2_jit_match(rules->code[rule], (PCRE2_SPTR)text, length, start, 0,
				       match_data, NULL);
	return pcre2_match(rules->code[rule], (PCRE2_SPTR)text, length, start, 0,
			   match_data, NULL);
}
