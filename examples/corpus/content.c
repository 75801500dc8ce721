/* SPDX-License-Identifier: MIT */
/*
 * File contents.  Filler is built from a vocabulary that holds none of the
 * generic keywords (secret, token, passw*, api key) and no upper-case runs,
 * so the only things a scanner can find are the items planted here; each
 * planted secret is recorded with the line and column the scanner reports.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"

static _Noreturn void out_of_memory(void)
{
	fputs("kh-corpus: out of memory\n", stderr);
	exit(2);
}

void *must_reallocate(void *memory, size_t size)
{
	memory = realloc(memory, size);
	if (!memory)
		out_of_memory();
	return memory;
}

char *must_strdup(const char *text)
{
	char *copy = strdup(text);

	if (!copy)
		out_of_memory();
	return copy;
}

void writer_put_bytes(struct file_writer *writer, const char *bytes, size_t length)
{
	if (writer->length + length > writer->capacity) {
		size_t capacity = writer->capacity ? writer->capacity : 4096;

		while (capacity < writer->length + length)
			capacity *= 2;
		writer->data = must_reallocate(writer->data, capacity);
		writer->capacity = capacity;
	}
	memcpy(writer->data + writer->length, bytes, length);
	for (const char *newline = memchr(bytes, '\n', length); newline;
	     newline = memchr(newline + 1, '\n', length - (size_t)(newline + 1 - bytes))) {
		writer->line++;
		writer->line_start = writer->length + (size_t)(newline + 1 - bytes);
	}
	writer->length += length;
}

void writer_put(struct file_writer *writer, const char *text)
{
	writer_put_bytes(writer, text, strlen(text));
}

void writer_printf(struct file_writer *writer, const char *format, ...)
{
	char text[1024];
	va_list arguments;
	int length;

	va_start(arguments, format);
	length = vsnprintf(text, sizeof(text), format, arguments);
	va_end(arguments);
	if (length < 0)
		return;
	writer_put_bytes(writer, text, (size_t)length < sizeof(text) ? (size_t)length
								  : sizeof(text) - 1);
}

void writer_plant(struct file_writer *writer, enum rule_id rule, bool decoded,
		  const char *secret)
{
	struct corpus *corpus = writer->corpus;
	uint64_t fingerprint = fnv1a_update(FNV1A_OFFSET_BASIS, secret, strlen(secret));

	if (corpus->truth_count == corpus->truth_capacity) {
		corpus->truth_capacity = corpus->truth_capacity ? corpus->truth_capacity * 2 : 1024;
		corpus->truth = must_reallocate(corpus->truth,
						corpus->truth_capacity * sizeof(*corpus->truth));
	}
	corpus->truth[corpus->truth_count++] = (struct truth_entry){
		.path_index = writer->path_index,
		.column = (uint32_t)(writer->length - writer->line_start + 1),
		.line = writer->line,
		.match_fingerprint = fingerprint,
		.rule = rule,
		.decoded = decoded,
	};
}

const char *file_kind_extension(enum file_kind kind)
{
	static const char *const extensions[KIND_COUNT] = {
		[KIND_C] = "c",       [KIND_PYTHON] = "py", [KIND_GO] = "go",
		[KIND_JSON] = "json", [KIND_YAML] = "yaml", [KIND_ENV] = "env",
		[KIND_MINIFIED_JS] = "min.js", [KIND_LOG] = "log",
	};

	return extensions[kind];
}

/* No word contains, or can be joined into, a generic keyword. */
static const char *const words[] = {
	"alpha",   "beta",    "cache",   "index",   "item",    "order",   "user",
	"node",    "queue",   "worker",  "buffer",  "count",   "value",   "config",
	"handler", "request", "record",  "table",   "batch",   "stream",  "event",
	"metric",  "region",  "cluster", "shard",   "replica", "bucket",  "folder",
	"image",   "layer",   "frame",   "packet",  "socket",  "channel", "timer",
	"thread",  "task",    "job",     "stage",   "build",   "deploy",  "service",
	"client",  "server",  "router",  "filter",  "mapper",  "parser",  "loader",
	"writer",  "reader",  "logger",  "sample",  "window",  "vector",  "matrix",
	"graph",   "edge",    "vertex",  "route",   "query",   "result",  "status",
	"error",   "limit",   "offset",  "cursor",  "page",    "chunk",   "block",
	"range",   "delta",   "state",   "flag",    "option",  "module",  "bundle",
	"asset",   "style",   "theme",   "color",   "width",   "height",  "depth",
	"label",   "title",   "note",    "message", "header",  "footer",  "field",
	"entry",   "member",  "group",   "team",    "owner",   "guest",   "account",
	"invoice", "price",   "amount",  "total",   "balance", "ledger",  "journal",
	"policy",  "grant",   "scope",   "role",    "domain",  "host",    "port",
	"address", "email",   "city",    "country", "zone",    "locale",  "mirror",
};

static const char *word(struct rng *rng)
{
	return RNG_PICK(rng, words);
}

/* snake_case, camelCase or UPPER_CASE spelling of a snake_case name. */
enum name_style { STYLE_SNAKE, STYLE_CAMEL, STYLE_UPPER };

static void style_name(enum name_style style, const char *snake, char *out, size_t size)
{
	size_t used = 0;
	bool capitalize = false;

	for (const char *p = snake; *p && used + 1 < size; p++) {
		if (style == STYLE_CAMEL && *p == '_') {
			capitalize = true;
			continue;
		}
		char c = *p;

		if (style == STYLE_UPPER || capitalize)
			c = (char)(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
		capitalize = false;
		out[used++] = c;
	}
	out[used] = '\0';
}

static enum name_style kind_style(enum file_kind kind)
{
	switch (kind) {
	case KIND_ENV:
		return STYLE_UPPER;
	case KIND_GO:
	case KIND_MINIFIED_JS:
		return STYLE_CAMEL;
	default:
		return STYLE_SNAKE;
	}
}

struct generation {
	struct file_writer *writer;
	enum file_kind kind;
	struct rng *rng;
	uint64_t clock_ms;     /* log timestamps */
	uint32_t next_id;      /* JSON ids */
	size_t line_target;    /* minified JS line length */
};

static void put_log_prefix(struct generation *g, const char *level)
{
	static const char *const services[] = { "gateway", "billing", "indexer", "scheduler" };
	uint64_t ms = g->clock_ms;

	g->clock_ms += rng_range(g->rng, 1, 900);
	writer_printf(g->writer, "2024-03-%02u %02u:%02u:%02u.%03u %s %s-%u ",
		      (unsigned)(1 + (ms / 86400000u) % 28), (unsigned)(ms / 3600000u % 24),
		      (unsigned)(ms / 60000u % 60), (unsigned)(ms / 1000u % 60),
		      (unsigned)(ms % 1000), level, RNG_PICK(g->rng, services),
		      rng_below(g->rng, 16));
}

/*
 * "name = value" in the syntax of the file kind.  The value's first byte is
 * where a finding is reported, so that is where it is planted.
 */
static void emit_assignment(struct generation *g, const char *snake_name, const char *value,
			    int rule, const char *secret, bool decoded, bool suppressed)
{
	struct file_writer *w = g->writer;
	char name[96];

	style_name(kind_style(g->kind), snake_name, name, sizeof(name));
	switch (g->kind) {
	case KIND_C:
		writer_printf(w, "static const char *%s = \"", name);
		break;
	case KIND_PYTHON:
		writer_printf(w, "%s = \"", name);
		break;
	case KIND_GO:
		writer_printf(w, "var %s = \"", name);
		break;
	case KIND_JSON:
		writer_printf(w, "    {\"id\": %u, \"%s\": \"", g->next_id++, name);
		break;
	case KIND_YAML:
		writer_printf(w, "  %s: \"", name);
		break;
	case KIND_ENV:
		writer_printf(w, "%s=", name);
		break;
	case KIND_MINIFIED_JS:
		writer_printf(w, "var %s=\"", name);
		break;
	case KIND_LOG:
		put_log_prefix(g, "INFO");
		writer_printf(w, "loaded setting %s=", name);
		break;
	case KIND_COUNT:
		break;
	}
	if (rule >= 0 && !suppressed)
		writer_plant(w, (enum rule_id)rule, decoded, secret);
	writer_put(w, value);
	switch (g->kind) {
	case KIND_C:
		writer_put(w, suppressed ? "\"; /* kh:allow */\n" : "\";\n");
		break;
	case KIND_PYTHON:
		writer_put(w, suppressed ? "\"  # kh:allow\n" : "\"\n");
		break;
	case KIND_GO:
		writer_put(w, suppressed ? "\" // kh:allow\n" : "\"\n");
		break;
	case KIND_JSON:
		writer_put(w, suppressed ? "\", \"note\": \"kh:allow\"},\n" : "\"},\n");
		break;
	case KIND_YAML:
		writer_put(w, suppressed ? "\" # kh:allow\n" : "\"\n");
		break;
	case KIND_ENV:
		writer_put(w, suppressed ? " # kh:allow\n" : "\n");
		break;
	case KIND_MINIFIED_JS:
		/* Suppression is per line: minified lines never carry kh:allow. */
		writer_put(w, "\";");
		break;
	case KIND_LOG:
		writer_put(w, suppressed ? " kh:allow\n" : "\n");
		break;
	case KIND_COUNT:
		break;
	}
}

/* A PEM block laid out as the file kind would hold one; the header is the finding. */
static void emit_private_key(struct generation *g, const char *header, bool planted)
{
	struct file_writer *w = g->writer;
	int body_lines = (int)rng_range(g->rng, 2, 5);
	char footer[SECRET_MAX + 8];
	char body[65];
	const char *begin = strstr(header, "BEGIN ");

	snprintf(footer, sizeof(footer), "-----END %s", begin ? begin + 6 : "KEY-----");
	/* Line-oriented kinds put each PEM line on its own line. */
	const char *open = "", *line_prefix = "", *line_suffix = "\n", *close = "";

	switch (g->kind) {
	case KIND_C:
		open = "static const char *signing_pem =\n\t\"";
		line_prefix = "\t\"";
		line_suffix = "\\n\"\n";
		close = "\t\"\";\n";
		break;
	case KIND_PYTHON:
		open = "SIGNING_PEM = \"\"\"";
		close = "\"\"\"\n";
		break;
	case KIND_GO:
		open = "var signingPem = `";
		close = "`\n";
		break;
	case KIND_YAML:
		open = "  signing_pem: |\n    ";
		line_prefix = "    ";
		break;
	case KIND_JSON:
		writer_printf(w, "    {\"id\": %u, \"signing_pem\": \"", g->next_id++);
		line_suffix = "\\n";
		close = "\"},\n";
		break;
	case KIND_ENV:
		open = "SIGNING_PEM=\"";
		line_suffix = "\\n";
		close = "\"\n";
		break;
	case KIND_MINIFIED_JS:
		open = "var signingPem=\"";
		line_suffix = "\\n";
		close = "\";";
		break;
	case KIND_LOG:
		put_log_prefix(g, "WARN");
		writer_put(w, "key material in request body ");
		if (planted)
			writer_plant(w, RULE_PRIVATE_KEY, false, header);
		writer_put(w, header);
		writer_put(w, "\n");
		return;
	case KIND_COUNT:
		return;
	}
	writer_put(w, open);
	if (planted)
		writer_plant(w, RULE_PRIVATE_KEY, false, header);
	writer_put(w, header);
	writer_put(w, line_suffix);
	for (int i = 0; i < body_lines; i++) {
		make_base64_noise(g->rng, body, 64);
		writer_put(w, line_prefix);
		writer_put(w, body);
		writer_put(w, line_suffix);
	}
	writer_put(w, line_prefix);
	writer_put(w, footer);
	writer_put(w, line_suffix);
	writer_put(w, close);
}

static const char *secret_name(struct rng *rng, enum rule_id rule)
{
	static const char *const aws[] = { "aws_access_key_id", "access_key_id", "aws_key_id" };
	static const char *const github[] = { "gh_auth", "github_auth", "ci_github" };
	static const char *const fine_grained[] = { "gh_fine_grained", "github_fine" };
	static const char *const slack[] = { "slack_bot", "slack_hook_auth" };
	static const char *const stripe[] = { "stripe_live", "billing_stripe" };
	static const char *const generic[] = {
		"db_password", "client_secret", "auth_token",    "api_key",       "secret_key",
		"access_token", "passwd",       "smtp_password", "webhook_secret", "apikey",
	};

	switch (rule) {
	case RULE_AWS_ACCESS_KEY_ID:
		return RNG_PICK(rng, aws);
	case RULE_GITHUB_PAT:
		return RNG_PICK(rng, github);
	case RULE_GITHUB_FINE_GRAINED_PAT:
		return RNG_PICK(rng, fine_grained);
	case RULE_SLACK_TOKEN:
		return RNG_PICK(rng, slack);
	case RULE_STRIPE_LIVE_SECRET:
		return RNG_PICK(rng, stripe);
	default:
		return RNG_PICK(rng, generic);
	}
}

/* Text that decodes to "name=secret", as a config dump or a header would carry it. */
static void make_encoded_secret(struct rng *rng, enum rule_id rule, char *out,
				char secret[SECRET_MAX])
{
	char payload[SECRET_MAX * 2];
	char body[65];

	make_secret(rng, rule, secret);
	if (rule == RULE_PRIVATE_KEY) {
		make_base64_noise(rng, body, 64);
		snprintf(payload, sizeof(payload), "%s\n%s\n", secret, body);
	} else {
		snprintf(payload, sizeof(payload), "%s=%s", secret_name(rng, rule), secret);
	}
	base64_encode(payload, strlen(payload), out);
}

static void make_encoded_decoy(struct rng *rng, char *out)
{
	static const char *const sentences[] = {
		"the build cache was warmed for the release branch",
		"hello from the corpus generator, nothing to see here",
		"{\"region\": \"eu-west\", \"replicas\": 3, \"enabled\": true}",
		"retry budget exhausted; falling back to the mirror",
	};
	char payload[SECRET_MAX * 2];
	char decoy[SECRET_MAX];

	if (rng_percent(rng, 50)) {
		snprintf(payload, sizeof(payload), "%s", RNG_PICK(rng, sentences));
	} else {
		make_decoy(rng, decoy);
		snprintf(payload, sizeof(payload), "sample=%s", decoy);
	}
	base64_encode(payload, strlen(payload), out);
}

enum special_kind {
	SPECIAL_SECRET,
	SPECIAL_ENCODED_SECRET,
	SPECIAL_SUPPRESSED,
	SPECIAL_DECOY,
	SPECIAL_LOW_ENTROPY,
	SPECIAL_ENCODED_DECOY,
};

static enum special_kind pick_special(struct generation *g)
{
	uint32_t roll = rng_below(g->rng, 100);

	if (g->writer->corpus->decoys_only) {
		if (roll < 15 && g->kind != KIND_MINIFIED_JS)
			return SPECIAL_SUPPRESSED;
		return roll < 60 ? SPECIAL_DECOY : roll < 85 ? SPECIAL_LOW_ENTROPY
							      : SPECIAL_ENCODED_DECOY;
	}
	if (roll < 35)
		return SPECIAL_SECRET;
	if (roll < 47)
		return SPECIAL_ENCODED_SECRET;
	if (roll < 57 && g->kind != KIND_MINIFIED_JS)
		return SPECIAL_SUPPRESSED;
	return roll < 80 ? SPECIAL_DECOY : roll < 92 ? SPECIAL_LOW_ENTROPY : SPECIAL_ENCODED_DECOY;
}

static void emit_special(struct generation *g)
{
	static const char *const blob_names[] = { "payload", "config_blob", "encoded_settings" };
	static const char *const decoy_names[] = { "example_value", "sample_id", "fixture" };
	static const char *const generic_names[] = { "db_password", "client_secret", "auth_token",
						     "api_key", "passwd" };
	char value[SECRET_MAX * 3];
	char secret[SECRET_MAX];
	enum rule_id rule = (enum rule_id)rng_below(g->rng, RULE_COUNT);

	switch (pick_special(g)) {
	case SPECIAL_SECRET:
		make_secret(g->rng, rule, value);
		if (rule == RULE_PRIVATE_KEY)
			emit_private_key(g, value, true);
		else
			emit_assignment(g, secret_name(g->rng, rule), value, (int)rule, value, false,
					false);
		break;
	case SPECIAL_ENCODED_SECRET:
		make_encoded_secret(g->rng, rule, value, secret);
		emit_assignment(g, RNG_PICK(g->rng, blob_names), value, (int)rule, secret, true, false);
		break;
	case SPECIAL_SUPPRESSED:
		/* PEM blocks are multi-line, so only single-line secrets get the marker. */
		if (rule == RULE_PRIVATE_KEY)
			rule = RULE_GENERIC_SECRET;
		if (rng_percent(g->rng, 25)) {
			make_encoded_secret(g->rng, rule, value, secret);
			emit_assignment(g, RNG_PICK(g->rng, blob_names), value, (int)rule, secret, true,
					true);
		} else {
			make_secret(g->rng, rule, value);
			emit_assignment(g, secret_name(g->rng, rule), value, (int)rule, value, false, true);
		}
		break;
	case SPECIAL_DECOY:
		make_decoy(g->rng, value);
		emit_assignment(g, RNG_PICK(g->rng, decoy_names), value, -1, NULL, false, false);
		break;
	case SPECIAL_LOW_ENTROPY:
		emit_assignment(g, RNG_PICK(g->rng, generic_names), pick_low_entropy_value(g->rng), -1,
				NULL, false, false);
		break;
	case SPECIAL_ENCODED_DECOY:
		make_encoded_decoy(g->rng, value);
		emit_assignment(g, RNG_PICK(g->rng, blob_names), value, -1, NULL, false, false);
		break;
	}
}

static void emit_c_filler(struct generation *g)
{
	struct file_writer *w = g->writer;
	struct rng *r = g->rng;

	switch (rng_below(r, 4)) {
	case 0:
		writer_printf(w, "/* %s the %s before the %s is %s. */\n", word(r), word(r), word(r),
			      word(r));
		break;
	case 1:
		writer_printf(w,
			      "static int %s_%s(int %s, int %s)\n{\n\tint %s_%s = %s * %u + %s;\n\n"
			      "\tif (%s_%s > %u)\n\t\treturn %s_%s - %u;\n\treturn %s_%s;\n}\n\n",
			      word(r), word(r), "left", "right", "next", word(r), "left",
			      rng_below(r, 1000), "right", "next", "value", rng_below(r, 5000),
			      "next", "value", rng_below(r, 100), "next", "value");
		break;
	case 2:
		writer_printf(w, "#define %s_LIMIT %u\n", word(r), rng_below(r, 65536));
		break;
	default:
		writer_printf(w, "struct %s_%s {\n\tint %s;\n\tchar %s[%u];\n};\n\n", word(r), word(r),
			      word(r), word(r), rng_range(r, 8, 256));
		break;
	}
}

static void emit_python_filler(struct generation *g)
{
	struct file_writer *w = g->writer;
	struct rng *r = g->rng;

	switch (rng_below(r, 3)) {
	case 0:
		writer_printf(w, "# %s %s of the %s %s\n", word(r), word(r), word(r), word(r));
		break;
	case 1:
		writer_printf(w,
			      "def %s_%s(%s, %s):\n    total = %s + %u\n    return total * %s\n\n\n",
			      word(r), word(r), word(r), "scale", "scale", rng_below(r, 1000), "scale");
		break;
	default:
		writer_printf(w, "%s_%s = %u\n", word(r), word(r), rng_below(r, 100000));
		break;
	}
}

static void emit_go_filler(struct generation *g)
{
	struct file_writer *w = g->writer;
	struct rng *r = g->rng;

	switch (rng_below(r, 3)) {
	case 0:
		writer_printf(w, "// %s keeps the %s %s in %s order.\n", word(r), word(r), word(r),
			      word(r));
		break;
	case 1:
		writer_printf(w, "func %sFor(%s int) int {\n\tscaled := %s * %u\n\treturn scaled + %u\n}\n\n",
			      word(r), "input", "input", rng_below(r, 100), rng_below(r, 100));
		break;
	default:
		writer_printf(w, "const %sLimit = %u\n", word(r), rng_below(r, 100000));
		break;
	}
}

static void emit_json_filler(struct generation *g)
{
	struct rng *r = g->rng;

	writer_printf(g->writer,
		      "    {\"id\": %u, \"name\": \"%s-%s\", \"region\": \"%s\", \"enabled\": %s, "
		      "\"weight\": %u.%02u},\n",
		      g->next_id++, word(r), word(r), word(r), rng_percent(r, 50) ? "true" : "false",
		      rng_below(r, 100), rng_below(r, 100));
}

static void emit_yaml_filler(struct generation *g)
{
	struct rng *r = g->rng;

	writer_printf(g->writer, "%s_%s:\n  %s: %s-%s\n  replicas: %u\n  enabled: %s\n", word(r),
		      word(r), word(r), word(r), word(r), rng_range(r, 1, 9),
		      rng_percent(r, 50) ? "true" : "false");
}

static void emit_env_filler(struct generation *g)
{
	struct file_writer *w = g->writer;
	struct rng *r = g->rng;
	char name[64], upper[64];

	snprintf(name, sizeof(name), "%s_%s", word(r), word(r));
	style_name(STYLE_UPPER, name, upper, sizeof(upper));
	switch (rng_below(r, 3)) {
	case 0:
		writer_printf(w, "# %s %s\n", word(r), word(r));
		break;
	case 1:
		writer_printf(w, "%s=%u\n", upper, rng_below(r, 65536));
		break;
	default:
		writer_printf(w, "%s=%s-%u.internal\n", upper, word(r), rng_below(r, 64));
		break;
	}
}

static void emit_minified_filler(struct generation *g)
{
	struct file_writer *w = g->writer;
	struct rng *r = g->rng;

	switch (rng_below(r, 4)) {
	case 0:
		writer_printf(w, "function %sOf(a,b){return a*%u+b}", word(r), rng_below(r, 100));
		break;
	case 1:
		writer_printf(w, "var %sList=[%u,%u,%u];", word(r), rng_below(r, 1000),
			      rng_below(r, 1000), rng_below(r, 1000));
		break;
	case 2:
		writer_printf(w, "if(%s>%u){%s=%u}", word(r), rng_below(r, 100), word(r),
			      rng_below(r, 100));
		break;
	default:
		writer_printf(w, "%s.%s(\"%s-%s\");", word(r), word(r), word(r), word(r));
		break;
	}
}

static void emit_log_filler(struct generation *g)
{
	static const char *const levels[] = { "INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR" };
	struct file_writer *w = g->writer;
	struct rng *r = g->rng;

	put_log_prefix(g, RNG_PICK(r, levels));
	writer_printf(w, "%s %s for %s request_id=%08x%08x%08x%08x duration_ms=%u\n", word(r),
		      word(r), word(r), (unsigned)rng_next(r), (unsigned)rng_next(r),
		      (unsigned)rng_next(r), (unsigned)rng_next(r), rng_below(r, 5000));
}

/* Specials per hundred filler units: dense enough to matter, sparse enough to be real. */
static uint32_t special_percent(enum file_kind kind)
{
	switch (kind) {
	case KIND_ENV:
	case KIND_YAML:
		return 6;
	case KIND_LOG:
	case KIND_MINIFIED_JS:
		return 1;
	default:
		return 3;
	}
}

void generate_text_file(struct file_writer *writer, enum file_kind kind, size_t target)
{
	struct generation g = {
		.writer = writer,
		.kind = kind,
		.rng = &writer->corpus->rng,
		.clock_ms = rng_below(&writer->corpus->rng, 86400000u),
		.next_id = 1,
	};
	uint32_t percent = special_percent(kind);

	switch (kind) {
	case KIND_C:
		writer_put(writer, "#include <stdio.h>\n#include <stdlib.h>\n\n");
		break;
	case KIND_PYTHON:
		writer_put(writer, "import os\nimport sys\n\n\n");
		break;
	case KIND_GO:
		writer_printf(writer, "package %s\n\n", word(g.rng));
		break;
	case KIND_JSON:
		writer_put(writer, "{\n  \"items\": [\n");
		break;
	case KIND_MINIFIED_JS:
		g.line_target = rng_range(g.rng, 4096, 65536);
		break;
	default:
		break;
	}
	while (writer->length < target) {
		if (rng_percent(g.rng, percent)) {
			emit_special(&g);
		} else {
			switch (kind) {
			case KIND_C:
				emit_c_filler(&g);
				break;
			case KIND_PYTHON:
				emit_python_filler(&g);
				break;
			case KIND_GO:
				emit_go_filler(&g);
				break;
			case KIND_JSON:
				emit_json_filler(&g);
				break;
			case KIND_YAML:
				emit_yaml_filler(&g);
				break;
			case KIND_ENV:
				emit_env_filler(&g);
				break;
			case KIND_MINIFIED_JS:
				emit_minified_filler(&g);
				break;
			case KIND_LOG:
			case KIND_COUNT:
				emit_log_filler(&g);
				break;
			}
		}
		if (kind == KIND_MINIFIED_JS && writer->length - writer->line_start >= g.line_target)
			writer_put(writer, "\n");
	}
	if (kind == KIND_JSON)
		writer_printf(writer, "    {\"id\": %u, \"end\": true}\n  ]\n}\n", g.next_id);
	else if (kind == KIND_MINIFIED_JS && writer->length > writer->line_start)
		writer_put(writer, "\n");
}

void generate_binary_file(struct file_writer *writer, size_t target)
{
	static const char magic[] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0 };
	struct rng *rng = &writer->corpus->rng;
	char secret[SECRET_MAX];
	char noise[256];
	size_t half = target / 2;

	writer_put_bytes(writer, magic, sizeof(magic));
	while (writer->length < target) {
		for (size_t i = 0; i < sizeof(noise); i++)
			noise[i] = (char)rng_next(rng);
		writer_put_bytes(writer, noise, sizeof(noise));
		if (half && writer->length >= half) {
			/* Real-looking secrets a scanner must not report: the file is binary. */
			make_secret(rng, RULE_AWS_ACCESS_KEY_ID, secret);
			writer_printf(writer, "\naws_access_key_id=%s\n", secret);
			make_secret(rng, RULE_GITHUB_PAT, secret);
			writer_printf(writer, "gh_auth=%s\n", secret);
			half = 0;
		}
	}
}
