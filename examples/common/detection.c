// SPDX-License-Identifier: MIT
#include "detection.h"

static const char *const rule_names[RULE_COUNT] = {
	[RULE_AWS_ACCESS_KEY_ID] = "aws-access-key-id",
	[RULE_GITHUB_PAT] = "github-pat",
	[RULE_GITHUB_FINE_GRAINED_PAT] = "github-fine-grained-pat",
	[RULE_SLACK_TOKEN] = "slack-token",
	[RULE_STRIPE_LIVE_SECRET] = "stripe-live-secret",
	[RULE_PRIVATE_KEY] = "private-key",
	[RULE_GENERIC_SECRET] = "generic-secret",
};

const char *rule_name(enum rule_id rule)
{
	return rule < RULE_COUNT ? rule_names[rule] : "unknown";
}
