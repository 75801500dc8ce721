/* SPDX-License-Identifier: MIT */
/*
 * Per-chunk scanning.  Every stage runs once per chunk over a list built
 * by the stage before it, so spans stay per chunk while the work inside
 * them is proportional to candidates, not bytes:
 *
 *   preprocess        line index of the chunk
 *   phase1-triggers   one pass of 4-byte literal windows -> candidates
 *   hot-patterns      anchored PCRE2 verification of the specific rules
 *   generic-detection anchored keyword = value rule -> value candidates
 *   entropy           Shannon entropy of those values
 *   decode            base64 blobs decoded and the text rescanned
 *   suppression       kh:allow lines dropped, locations resolved
 */
#include <stdlib.h>
#include <string.h>

#include "keyhog_profile.h"
#include "kh_scan.h"

/* Growable array of a plain type; fails the worker instead of the process. */
#define VECTOR(type)                                                           \
	struct {                                                               \
		type *items;                                                   \
		size_t count;                                                  \
		size_t capacity;                                               \
	}

bool vector_reserve(void **items, size_t *capacity, size_t needed, size_t item_size)
{
	size_t grown_capacity;
	void *grown;

	if (needed <= *capacity)
		return true;
	grown_capacity = *capacity ? *capacity : 64;
	while (grown_capacity < needed)
		grown_capacity *= 2;
	grown = realloc(*items, grown_capacity * item_size);
	if (!grown)
		return false;
	*items = grown;
	*capacity = grown_capacity;
	return true;
}

#define VECTOR_PUSH(worker, vector, value)                                     \
	do {                                                                   \
		if (vector_reserve((void **)&(vector).items, &(vector).capacity,       \
				   (vector).count + 1, sizeof(*(vector).items))) \
			(vector).items[(vector).count++] = (value);            \
		else                                                           \
			(worker)->out_of_memory = true;                        \
	} while (0)

struct candidate {
	size_t offset; /* where the rule's match must start */
	enum rule_id rule;
};

struct value_candidate {
	size_t offset; /* of the value, in the scanned text */
	size_t length;
};

/* A verified match before suppression; points into the scanned text. */
struct raw_finding {
	size_t chunk_offset; /* locates the line and column in the chunk */
	const char *match;
	size_t match_length;
	enum rule_id rule;
	bool decoded;
};

/* Where a decoded blob's text sits in the decoded buffer and in the chunk. */
struct decoded_segment {
	size_t decoded_offset;
	size_t chunk_offset;
};

struct scan_worker {
	const struct rule_set *rules;
	pcre2_match_data *match_data;
	VECTOR(size_t) line_starts;
	VECTOR(struct candidate) candidates;
	VECTOR(struct value_candidate) values;
	VECTOR(struct raw_finding) raw;
	VECTOR(char) decoded;
	VECTOR(struct decoded_segment) segments;
	struct finding_list findings;
	bool out_of_memory;
};

struct scan_worker *scan_worker_create(const struct rule_set *rules)
{
	struct scan_worker *worker = calloc(1, sizeof(*worker));

	if (!worker)
		return NULL;
	worker->rules = rules;
	/* Two pairs: the whole match and generic-secret's value group. */
	worker->match_data = pcre2_match_data_create(2, NULL);
	if (!worker->match_data) {
		free(worker);
		return NULL;
	}
	return worker;
}

void scan_worker_destroy(struct scan_worker *worker)
{
	if (!worker)
		return;
	pcre2_match_data_free(worker->match_data);
	free(worker->line_starts.items);
	free(worker->candidates.items);
	free(worker->values.items);
	free(worker->raw.items);
	free(worker->decoded.items);
	free(worker->segments.items);
	finding_list_free(&worker->findings);
	free(worker);
}

struct finding_list scan_worker_take_findings(struct scan_worker *worker)
{
	struct finding_list taken = worker->findings;

	memset(&worker->findings, 0, sizeof(worker->findings));
	return taken;
}

bool scan_worker_failed(const struct scan_worker *worker)
{
	return worker->out_of_memory;
}

static void build_line_index(struct scan_worker *worker, const char *data, size_t length)
{
	const char *cursor = data;
	const char *end = data + length;

	worker->line_starts.count = 0;
	VECTOR_PUSH(worker, worker->line_starts, 0);
	while ((cursor = memchr(cursor, '\n', (size_t)(end - cursor))) != NULL) {
		cursor++;
		VECTOR_PUSH(worker, worker->line_starts, (size_t)(cursor - data));
	}
}

/* Index of the line holding offset: the last line start <= offset. */
static size_t line_of(const struct scan_worker *worker, size_t offset)
{
	size_t low = 0, high = worker->line_starts.count;

	while (high - low > 1) {
		size_t middle = low + (high - low) / 2;

		if (worker->line_starts.items[middle] <= offset)
			low = middle;
		else
			high = middle;
	}
	return low;
}

/*
 * One pass over every 4-byte window, case-folded, looked up in the perfect
 * hash of trigger windows.  The common case is a load, a multiply and one
 * well-predicted compare per byte.
 */
static void find_triggers(struct scan_worker *worker, const char *text, size_t length)
{
	const struct rule_set *rules = worker->rules;
	const uint32_t multiplier = rules->trigger_multiplier;

	worker->candidates.count = 0;
	for (size_t i = 0; i + 4 <= length; i++) {
		uint32_t window = fold_window(text + i);
		uint32_t slot = trigger_slot(window, multiplier);

		if (__builtin_expect(rules->trigger_window[slot] == window, 0)) {
			size_t lead = rules->trigger_lead[slot];

			if (i >= lead) {
				struct candidate candidate = {
					i - lead, (enum rule_id)rules->trigger_rule[slot]
				};

				VECTOR_PUSH(worker, worker->candidates, candidate);
			}
		}
	}
}

static void add_raw_finding(struct scan_worker *worker, const char *text, size_t start,
			    size_t end, enum rule_id rule)
{
	struct raw_finding raw = {
		.chunk_offset = start,
		.match = text + start,
		.match_length = end - start,
		.rule = rule,
		.decoded = false,
	};

	VECTOR_PUSH(worker, worker->raw, raw);
}

static void verify_hot_patterns(struct scan_worker *worker, const char *text, size_t length)
{
	PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(worker->match_data);

	for (size_t i = 0; i < worker->candidates.count; i++) {
		const struct candidate *candidate = &worker->candidates.items[i];

		if (candidate->rule == RULE_GENERIC_SECRET)
			continue;
		if (rule_match(worker->rules, candidate->rule, text, length, candidate->offset,
			       worker->match_data) > 0)
			add_raw_finding(worker, text, ovector[0], ovector[1], candidate->rule);
	}
}

static void detect_generic_assignments(struct scan_worker *worker, const char *text,
				       size_t length)
{
	PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(worker->match_data);
	size_t previous_value = SIZE_MAX;

	worker->values.count = 0;
	for (size_t i = 0; i < worker->candidates.count; i++) {
		const struct candidate *candidate = &worker->candidates.items[i];

		if (candidate->rule != RULE_GENERIC_SECRET)
			continue;
		if (rule_match(worker->rules, RULE_GENERIC_SECRET, text, length, candidate->offset,
			       worker->match_data) <= 1)
			continue;
		/* "secret_token = v" wakes two keywords that name one value. */
		if (ovector[2] == previous_value)
			continue;
		previous_value = ovector[2];
		struct value_candidate value = { ovector[2], ovector[3] - ovector[2] };

		VECTOR_PUSH(worker, worker->values, value);
	}
}

static void keep_high_entropy_values(struct scan_worker *worker, const char *text)
{
	for (size_t i = 0; i < worker->values.count; i++) {
		const struct value_candidate *value = &worker->values.items[i];

		if (value->length < GENERIC_MIN_LENGTH)
			continue;
		if (shannon_entropy_bits(text + value->offset, value->length) <
		    GENERIC_MIN_ENTROPY_BITS)
			continue;
		add_raw_finding(worker, text, value->offset, value->offset + value->length,
				RULE_GENERIC_SECRET);
	}
}

/* Everything but decode: shared by chunks and by decoded text. */
static void scan_text(struct scan_worker *worker, const char *text, size_t length)
{
	{
		KH_SPAN_SCOPE(KH_STAGE_PHASE1_TRIGGERS);
		find_triggers(worker, text, length);
	}
	{
		KH_SPAN_SCOPE(KH_STAGE_HOT_PATTERNS);
		verify_hot_patterns(worker, text, length);
	}
	{
		KH_SPAN_SCOPE(KH_STAGE_GENERIC_DETECTION);
		detect_generic_assignments(worker, text, length);
	}
	{
		KH_SPAN_SCOPE(KH_STAGE_ENTROPY);
		keep_high_entropy_values(worker, text);
	}
}

/*
 * Standard alphabet value of each byte plus one, so that the zero every
 * other byte gets by default means "not base64" and one table serves both
 * the run search and the decoder.
 */
static const unsigned char base64_digits[256] = {
	['A'] = 1, ['B'] = 2, ['C'] = 3, ['D'] = 4, ['E'] = 5, ['F'] = 6, ['G'] = 7,
	['H'] = 8, ['I'] = 9, ['J'] = 10, ['K'] = 11, ['L'] = 12, ['M'] = 13, ['N'] = 14,
	['O'] = 15, ['P'] = 16, ['Q'] = 17, ['R'] = 18, ['S'] = 19, ['T'] = 20,
	['U'] = 21, ['V'] = 22, ['W'] = 23, ['X'] = 24, ['Y'] = 25, ['Z'] = 26,
	['a'] = 27, ['b'] = 28, ['c'] = 29, ['d'] = 30, ['e'] = 31, ['f'] = 32,
	['g'] = 33, ['h'] = 34, ['i'] = 35, ['j'] = 36, ['k'] = 37, ['l'] = 38,
	['m'] = 39, ['n'] = 40, ['o'] = 41, ['p'] = 42, ['q'] = 43, ['r'] = 44,
	['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48, ['w'] = 49, ['x'] = 50,
	['y'] = 51, ['z'] = 52,
	['0'] = 53, ['1'] = 54, ['2'] = 55, ['3'] = 56, ['4'] = 57, ['5'] = 58,
	['6'] = 59, ['7'] = 60, ['8'] = 61, ['9'] = 62, ['+'] = 63, ['/'] = 64,
};

static bool is_base64_byte(unsigned char byte)
{
	return base64_digits[byte] != 0;
}

/*
 * Decodes one run of alphabet bytes (padding is outside the run) onto the
 * end of the decoded buffer; keeps it only if it reads as text.  Runs are
 * at least BASE64_MIN_BLOB bytes, so a kept run is never empty.
 */
static void decode_blob(struct scan_worker *worker, const char *blob, size_t length,
			size_t chunk_offset)
{
	size_t start = worker->decoded.count;
	uint32_t bits = 0;
	int bit_count = 0;

	if (!vector_reserve((void **)&worker->decoded.items, &worker->decoded.capacity,
			    start + length / 4 * 3 + 4, 1)) {
		worker->out_of_memory = true;
		return;
	}
	size_t expected = length * 6 / 8;
	/* Hashes and identifiers fail within a few bytes; stop as soon as they must. */
	size_t unprintable_allowed = expected - (expected * DECODED_MIN_PRINTABLE_PERCENT + 99) / 100;
	size_t unprintable = 0;

	for (size_t i = 0; i < length; i++) {
		bits = (bits << 6) | (uint32_t)(base64_digits[(unsigned char)blob[i]] - 1);
		bit_count += 6;
		if (bit_count >= 8) {
			bit_count -= 8;
			unsigned char byte = (unsigned char)(bits >> bit_count);

			worker->decoded.items[worker->decoded.count++] = (char)byte;
			if ((byte < 0x20 || byte >= 0x7f) && byte != '\t' && byte != '\n' &&
			    byte != '\r' && ++unprintable > unprintable_allowed) {
				worker->decoded.count = start;
				return;
			}
		}
	}
	/* The newline keeps rule matches from running from one blob into the next. */
	worker->decoded.items[worker->decoded.count++] = '\n';
	struct decoded_segment segment = { start, chunk_offset };

	VECTOR_PUSH(worker, worker->segments, segment);
}

static size_t segment_chunk_offset(const struct scan_worker *worker, size_t decoded_offset)
{
	size_t low = 0, high = worker->segments.count;

	while (high - low > 1) {
		size_t middle = low + (high - low) / 2;

		if (worker->segments.items[middle].decoded_offset <= decoded_offset)
			low = middle;
		else
			high = middle;
	}
	return worker->segments.items[low].chunk_offset;
}

/*
 * Collects every printable base64 blob of the chunk into one buffer and
 * scans it once, so the decoded pass costs one set of spans per chunk
 * rather than one per blob.  Decoding does not recurse.
 */
static void decode_through(struct scan_worker *worker, const char *data, size_t length)
{
	size_t first_decoded_finding;
	size_t i = 0;

	worker->decoded.count = 0;
	worker->segments.count = 0;
	/*
	 * Invariant: i is 0 or data[i - 1] is outside the alphabet.  A run of
	 * BASE64_MIN_BLOB bytes starting at or after i must then cover
	 * data[i + BASE64_MIN_BLOB - 1]; if that byte is outside the alphabet
	 * the next BASE64_MIN_BLOB bytes can be skipped unread.  In ordinary
	 * text this reads a few bytes per probe instead of every byte.
	 */
	while (i + BASE64_MIN_BLOB <= length) {
		size_t probe = i + BASE64_MIN_BLOB - 1;

		if (!is_base64_byte((unsigned char)data[probe])) {
			i = probe + 1;
			continue;
		}
		size_t start = probe, end = probe + 1;

		while (start > i && is_base64_byte((unsigned char)data[start - 1]))
			start--;
		while (end < length && is_base64_byte((unsigned char)data[end]))
			end++;
		if (end - start >= BASE64_MIN_BLOB)
			decode_blob(worker, data + start, end - start, start);
		i = end + 1;
	}
	if (worker->segments.count == 0)
		return;

	first_decoded_finding = worker->raw.count;
	enum kh_attribution previous = kh_set_attribution(KH_ATTRIBUTION_DECODED);

	scan_text(worker, worker->decoded.items, worker->decoded.count);
	kh_set_attribution(previous);
	for (size_t f = first_decoded_finding; f < worker->raw.count; f++) {
		struct raw_finding *raw = &worker->raw.items[f];

		raw->chunk_offset = segment_chunk_offset(worker, raw->chunk_offset);
		raw->decoded = true;
	}
}

static const char suppression_marker[] = "kh:allow";

static void resolve_findings(struct scan_worker *worker, const struct chunk *chunk)
{
	for (size_t i = 0; i < worker->raw.count; i++) {
		const struct raw_finding *raw = &worker->raw.items[i];
		size_t line = line_of(worker, raw->chunk_offset);
		size_t line_start = worker->line_starts.items[line];
		size_t line_end = line + 1 < worker->line_starts.count
					  ? worker->line_starts.items[line + 1]
					  : chunk->length;

		if (memmem(chunk->data + line_start, line_end - line_start, suppression_marker,
			   sizeof(suppression_marker) - 1))
			continue;

		struct finding finding = {
			.line = chunk->first_line + line,
			.column = raw->chunk_offset - line_start + 1,
			.match_fingerprint = fnv1a_update(FNV1A_OFFSET_BASIS, raw->match,
							  raw->match_length),
			.file_id = chunk->file_id,
			.match_length = (uint32_t)raw->match_length,
			.rule = (uint8_t)raw->rule,
			.decoded = raw->decoded,
		};
		size_t prefix = raw->match_length < REDACTED_PREFIX_BYTES ? raw->match_length
									  : REDACTED_PREFIX_BYTES;

		memcpy(finding.prefix, raw->match, prefix);
		finding.prefix[prefix] = '\0';
		if (finding_list_append(&worker->findings, &finding) != 0)
			worker->out_of_memory = true;
	}
}

void scan_chunk(struct scan_worker *worker, const struct chunk *chunk)
{
	worker->raw.count = 0;
	{
		KH_SPAN_SCOPE(KH_STAGE_PREPROCESS);
		build_line_index(worker, chunk->data, chunk->length);
	}
	scan_text(worker, chunk->data, chunk->length);
	{
		KH_SPAN_SCOPE(KH_STAGE_DECODE);
		decode_through(worker, chunk->data, chunk->length);
	}
	{
		KH_SPAN_SCOPE(KH_STAGE_SUPPRESSION);
		resolve_findings(worker, chunk);
	}
}
