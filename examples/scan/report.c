/* SPDX-License-Identifier: MIT */
/*
 * Merge and report.  Scanner threads finish chunks in any order; sorting
 * here is what makes the output independent of the thread count.
 */
#include <stdlib.h>
#include <string.h>

#include "kh_scan.h"

int finding_list_append(struct finding_list *list, const struct finding *finding)
{
	if (!vector_reserve((void **)&list->items, &list->capacity, list->count + 1,
			    sizeof(*list->items)))
		return -1;
	list->items[list->count++] = *finding;
	return 0;
}

void finding_list_free(struct finding_list *list)
{
	free(list->items);
	memset(list, 0, sizeof(*list));
}

/* qsort has no context argument; the merge runs on one thread only. */
static const struct file_table *sort_files;

#define COMPARE_FIELD(left, right, field)                                      \
	do {                                                                   \
		if ((left)->field != (right)->field)                           \
			return (left)->field < (right)->field ? -1 : 1;        \
	} while (0)

/* Path, line and rule: the identity of a reported location. */
static int compare_location(const struct finding *left, const struct finding *right)
{
	if (left->file_id != right->file_id) {
		int order = strcmp(sort_files->paths[left->file_id],
				   sort_files->paths[right->file_id]);

		if (order != 0)
			return order;
	}
	COMPARE_FIELD(left, right, line);
	return strcmp(rule_name((enum rule_id)left->rule), rule_name((enum rule_id)right->rule));
}

/* Groups repeats of one secret together, earliest column (and raw before decoded) first. */
static int compare_for_dedup(const void *a, const void *b)
{
	const struct finding *left = a, *right = b;
	int order = compare_location(left, right);

	if (order != 0)
		return order;
	COMPARE_FIELD(left, right, match_fingerprint);
	COMPARE_FIELD(left, right, match_length);
	COMPARE_FIELD(left, right, column);
	COMPARE_FIELD(left, right, decoded);
	return 0;
}

static int compare_for_output(const void *a, const void *b)
{
	const struct finding *left = a, *right = b;
	int order = compare_location(left, right);

	if (order != 0)
		return order;
	COMPARE_FIELD(left, right, column);
	COMPARE_FIELD(left, right, decoded);
	COMPARE_FIELD(left, right, match_fingerprint);
	COMPARE_FIELD(left, right, match_length);
	return 0;
}

static bool same_secret_same_place(const struct finding *left, const struct finding *right)
{
	return compare_location(left, right) == 0 &&
	       left->match_fingerprint == right->match_fingerprint &&
	       left->match_length == right->match_length;
}

void findings_merge(struct finding_list *findings, const struct file_table *files)
{
	size_t kept = 0;

	/* qsort's array may not be NULL even when empty, and a clean scan has none. */
	if (findings->count == 0)
		return;
	sort_files = files;
	qsort(findings->items, findings->count, sizeof(*findings->items), compare_for_dedup);
	for (size_t i = 0; i < findings->count; i++) {
		if (kept > 0 && same_secret_same_place(&findings->items[kept - 1], &findings->items[i]))
			continue;
		findings->items[kept++] = findings->items[i];
	}
	findings->count = kept;
	qsort(findings->items, findings->count, sizeof(*findings->items), compare_for_output);
	sort_files = NULL;
}

/* JSON string body; bytes >= 0x80 pass through so UTF-8 paths stay readable. */
static void write_json_string(FILE *out, const char *text)
{
	putc('"', out);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		case '\r':
			fputs("\\r", out);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(out, "\\u%04x", *p);
			else
				putc(*p, out);
		}
	}
	putc('"', out);
}

int findings_report(const struct finding_list *findings, const struct file_table *files,
		    FILE *out)
{
	for (size_t i = 0; i < findings->count; i++) {
		const struct finding *finding = &findings->items[i];
		char redacted[REDACTED_PREFIX_BYTES + 32];

		/* Prefix, an ellipsis and the length: enough to find it, too little to use it. */
		snprintf(redacted, sizeof(redacted), "%s\u2026(%u)", finding->prefix,
			 (unsigned)finding->match_length);
		fputs("{\"path\":", out);
		write_json_string(out, files->paths[finding->file_id]);
		fprintf(out, ",\"line\":%llu,\"column\":%llu,\"rule\":\"%s\",\"redacted\":",
			(unsigned long long)finding->line, (unsigned long long)finding->column,
			rule_name((enum rule_id)finding->rule));
		write_json_string(out, redacted);
		fprintf(out, ",\"decoded\":%s}\n", finding->decoded ? "true" : "false");
	}
	if (fflush(out) != 0 || ferror(out))
		return -1;
	return 0;
}
