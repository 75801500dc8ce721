/* SPDX-License-Identifier: MIT */
/*
 * kh-corpus: deterministic corpus of text files with planted secrets,
 * decoys and suppressed lines, plus the ground truth kh-scan must match.
 */
#ifndef KH_CORPUS_H
#define KH_CORPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "detection.h"
#include "entropy.h"

/* Planted generic values keep a margin above GENERIC_MIN_ENTROPY_BITS. */
#define PLANTED_MIN_ENTROPY_BITS 4.0

/* splitmix64: tiny, fast and fully determined by the seed. */
struct rng {
	uint64_t state;
};

uint64_t rng_next(struct rng *rng);
/* Uniform in [0, bound), bound > 0. */
uint32_t rng_below(struct rng *rng, uint32_t bound);
/* Uniform in [low, high]. */
uint32_t rng_range(struct rng *rng, uint32_t low, uint32_t high);
bool rng_percent(struct rng *rng, uint32_t percent);
const char *rng_pick(struct rng *rng, const char *const *choices, size_t count);
#define RNG_PICK(rng, array) rng_pick((rng), (array), sizeof(array) / sizeof((array)[0]))

/* Secrets and decoys are written into caller buffers of at least this size. */
#define SECRET_MAX 160

/* A secret that the named rule must report. */
void make_secret(struct rng *rng, enum rule_id rule, char out[SECRET_MAX]);
/* Text that looks like a secret of some rule but that no rule may report. */
void make_decoy(struct rng *rng, char out[SECRET_MAX]);
/* A generic-secret value too predictable to report. */
const char *pick_low_entropy_value(struct rng *rng);
/* Random text of the base64 alphabet (e.g. a PEM body line). */
void make_base64_noise(struct rng *rng, char *out, size_t length);
/* Standard base64 with padding; out needs 4 * ceil(length / 3) + 1 bytes. */
void base64_encode(const char *data, size_t length, char *out);
/* Aborts if a decoy value would cross the scanner's entropy threshold. */
void check_decoy_tables(void);

struct truth_entry {
	uint32_t path_index;
	uint32_t column;
	/* FNV-1a of the secret: kh-scan reports one secret once per line and rule. */
	uint64_t match_fingerprint;
	uint64_t line;
	enum rule_id rule;
	bool decoded;
};

struct corpus {
	struct rng rng;
	bool decoys_only;
	char **paths; /* relative to DIR */
	size_t path_count, path_capacity;
	struct truth_entry *truth;
	size_t truth_count, truth_capacity;
	uint64_t bytes_written;
	size_t files_written;
};

/* One file being built in memory, with the line and column of its end. */
struct file_writer {
	struct corpus *corpus;
	uint32_t path_index;
	char *data;
	size_t length, capacity;
	uint64_t line;     /* 1-based line of the end of data */
	size_t line_start; /* offset where that line starts */
};

enum file_kind {
	KIND_C,
	KIND_PYTHON,
	KIND_GO,
	KIND_JSON,
	KIND_YAML,
	KIND_ENV,
	KIND_MINIFIED_JS,
	KIND_LOG,
	KIND_COUNT
};

const char *file_kind_extension(enum file_kind kind);
/* Fills writer with about target bytes of the kind, planting as it goes. */
void generate_text_file(struct file_writer *writer, enum file_kind kind, size_t target);
/* A file the scanner must skip: a NUL early on, then a real-looking secret. */
void generate_binary_file(struct file_writer *writer, size_t target);

void writer_put(struct file_writer *writer, const char *text);
void writer_put_bytes(struct file_writer *writer, const char *bytes, size_t length);
void writer_printf(struct file_writer *writer, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
/* Records a finding of rule, matching secret, at the writer's current position. */
void writer_plant(struct file_writer *writer, enum rule_id rule, bool decoded,
		  const char *secret);

void *must_reallocate(void *memory, size_t size);
char *must_strdup(const char *text);

#endif /* KH_CORPUS_H */
