/* SPDX-License-Identifier: MIT */
/*
 * kh-scan: the reference secret scanner that khprof traces.
 *
 * Pipeline: one reader thread walks the sources and cuts files into chunks
 * at line boundaries; N scanner threads take chunks from a bounded queue,
 * find literal triggers, verify them with anchored PCRE2 rules, decode
 * base64 blobs and rescan them; the main thread merges, deduplicates and
 * prints the findings in a fixed order.
 */
#ifndef KH_SCAN_H
#define KH_SCAN_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "detection.h"
#include "entropy.h"

#define KH_SCAN_VERSION "kh-scan 0.1.0"

/* Exit statuses follow gitleaks and trufflehog so CI wrappers work unchanged. */
enum scan_exit_status {
	SCAN_EXIT_CLEAN = 0,
	SCAN_EXIT_FINDINGS = 1,
	SCAN_EXIT_ERROR = 2,
};

/* Chunks are cut near this size so memory stays bounded on large files. */
#define CHUNK_TARGET_BYTES (1u << 20)
/* A NUL byte this early marks a file as binary, as git and ripgrep do. */
#define BINARY_SNIFF_BYTES 8192
/* Shorter base64 runs are mostly identifiers and hashes, not payloads. */
#define BASE64_MIN_BLOB 24
/* Decoded bytes must be this printable to be worth rescanning as text. */
#define DECODED_MIN_PRINTABLE_PERCENT 90
/* A prefix this long identifies a secret to its owner without leaking it. */
#define REDACTED_PREFIX_BYTES 4
#define MAX_SCANNER_THREADS 256

enum regex_backend {
	BACKEND_AUTO,
	BACKEND_PCRE2_JIT,
	BACKEND_PCRE2_INTERP,
};

/* log2 of the trigger hash table size; sparse enough for a perfect hash. */
#define TRIGGER_TABLE_BITS 12
#define TRIGGER_TABLE_SLOTS (1u << TRIGGER_TABLE_BITS)

/*
 * The table is built from the trigger definitions and probed with chunk
 * text; both sides go through these two so they cannot hash differently.
 */
static inline uint32_t fold_window(const char window[4])
{
	uint32_t word;

	memcpy(&word, window, sizeof(word));
	/* Sets bit 5 of every byte: A-Z become a-z, and no byte can be 0. */
	return word | 0x20202020u;
}

static inline uint32_t trigger_slot(uint32_t folded, uint32_t multiplier)
{
	return (folded * multiplier) >> (32 - TRIGGER_TABLE_BITS);
}

/* Compiled rules plus the literal prefilter that feeds them. */
struct rule_set {
	pcre2_code *code[RULE_COUNT];
	bool use_jit;
	/*
	 * Perfect hash of case-folded 4-byte trigger windows.  A slot holds
	 * the folded window (0 = empty: folded text never has a zero byte),
	 * the rule it wakes and how far before the window that rule's match
	 * starts.
	 */
	uint32_t trigger_multiplier;
	uint32_t trigger_window[TRIGGER_TABLE_SLOTS];
	uint8_t trigger_rule[TRIGGER_TABLE_SLOTS];
	uint8_t trigger_lead[TRIGGER_TABLE_SLOTS];
};

const char *backend_name(enum regex_backend backend);
/* Returns 0, or -1 with a message in error (e.g. JIT requested but absent). */
int rule_set_build(struct rule_set *rules, enum regex_backend requested,
		   char *error, size_t error_size);
void rule_set_free(struct rule_set *rules);
/* FNV-1a of every rule name, pattern and threshold: changes when detection does. */
uint64_t rule_set_digest(void);
/* Anchored match of one rule at start; returns pcre2's rc (>0 on match). */
int rule_match(const struct rule_set *rules, enum rule_id rule,
	       const char *text, size_t length, size_t start,
	       pcre2_match_data *match_data);

/* One piece of one file, always ending at a line boundary (or EOF). */
struct chunk {
	uint32_t file_id;
	uint64_t first_line; /* 1-based line number of data[0] */
	char *data;
	size_t length;
};

/* Bounded FIFO between the reader and the scanners. */
struct chunk_queue {
	pthread_mutex_t lock;
	pthread_cond_t not_empty;
	pthread_cond_t not_full;
	struct chunk **slots;
	size_t capacity;
	size_t head;
	size_t count;
	bool closed;
};

int chunk_queue_init(struct chunk_queue *queue, size_t capacity);
void chunk_queue_destroy(struct chunk_queue *queue);
void chunk_queue_push(struct chunk_queue *queue, struct chunk *chunk);
/* Blocks until a chunk arrives; NULL once the queue is closed and drained. */
struct chunk *chunk_queue_pop(struct chunk_queue *queue);
void chunk_queue_close(struct chunk_queue *queue);

/*
 * A reported finding.  The secret itself is not kept: only its length, a
 * fingerprint for deduplication and the short prefix that is printed.
 */
struct finding {
	uint64_t line;
	uint64_t column; /* 1-based byte column of the match (or of its blob) */
	uint64_t match_fingerprint;
	uint32_t file_id;
	uint32_t match_length;
	uint8_t rule;
	bool decoded;
	char prefix[REDACTED_PREFIX_BYTES + 1];
};

struct finding_list {
	struct finding *items;
	size_t count;
	size_t capacity;
};

/* Paths of every file handed to the scanners, indexed by chunk.file_id. */
struct file_table {
	char **paths;
	size_t count;
	size_t capacity;
};

struct allowlist {
	char **globs;
	size_t count;
};

int allowlist_load(struct allowlist *allowlist, const char *file, char *error, size_t error_size);
bool allowlist_matches(const struct allowlist *allowlist, const char *path);
void allowlist_free(struct allowlist *allowlist);

struct source_root {
	const char *path;
	bool is_directory;
};

struct reader {
	struct chunk_queue *queue;
	const struct allowlist *allowlist;
	const struct source_root *roots;
	size_t root_count;
	struct file_table files;
	unsigned long errors; /* read by the main thread only after join */
};

void *reader_main(void *reader);
void file_table_free(struct file_table *files);

struct scan_worker;
struct scan_worker *scan_worker_create(const struct rule_set *rules);
void scan_worker_destroy(struct scan_worker *worker);
void scan_chunk(struct scan_worker *worker, const struct chunk *chunk);
/* Moves the worker's findings to the caller. */
struct finding_list scan_worker_take_findings(struct scan_worker *worker);
bool scan_worker_failed(const struct scan_worker *worker);

/* Sorts by path, line, rule, column and drops repeats of one secret on one line. */
void findings_merge(struct finding_list *findings, const struct file_table *files);
/* Writes one JSON object per finding; returns 0 or -1 on an output error. */
int findings_report(const struct finding_list *findings, const struct file_table *files,
		    FILE *out);
int finding_list_append(struct finding_list *list, const struct finding *finding);
void finding_list_free(struct finding_list *list);
/*
 * Grows *items (of *capacity elements of item_size bytes) to hold needed
 * elements, doubling from 64; false, with *items untouched, if out of memory.
 */
bool vector_reserve(void **items, size_t *capacity, size_t needed, size_t item_size);

/* Prints "kh-scan: ..." to stderr; one line per problem. */
void scan_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif /* KH_SCAN_H */
