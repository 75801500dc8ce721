/* SPDX-License-Identifier: MIT */
/*
 * stackstore.h - the samples of `--sample` while khprof traces, and their
 * symbolization after the run (elfutils' libdwfl).
 *
 * Plain logic, no libbpf: sampler.c hands each ring-buffer sample over,
 * the store keeps every distinct stack once (raw addresses) and each
 * sample as its time and stack (16 bytes: 475,000 samples, 10 minutes at
 * 99 Hz on 8 threads, are 7.6 MB), and learns the process's mappings from
 * /proc/PID/maps while it runs: after it exits they are gone.  A session's
 * record gets the samples of its time span, symbolized then.
 */
#ifndef KHPROF_STACKSTORE_H
#define KHPROF_STACKSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "khprof_sample.h"
#include "stacks.h"

struct stack_entry;
struct mapping;
struct symbol_cache;

struct stack_store {
	pid_t pid;
	uint64_t rate_hz;
	struct stack_entry *stacks;     /* distinct stacks */
	size_t stack_count, stack_cap;
	uint32_t *buckets;              /* hash of stacks: index + 1, 0 empty */
	size_t bucket_count;
	struct store_sample {
		uint64_t ts_ns;
		uint32_t stack;
		uint32_t tid;
	} *samples;
	size_t sample_count, sample_cap;
	struct mapping *maps;           /* every mapping seen, sorted by start */
	size_t map_count, map_cap;
	struct symbol_cache *symbols;
	uint64_t dropped_nomem;         /* samples not kept for want of memory */
	uint64_t ring_full_seen;        /* ring_full at the last record, for the next one's share */
	uint64_t threads_missed;
	struct cfa_entry {
		uint64_t ip;
		int64_t offset;
	} *cfa_cache;                   /* ra_location's answers by address */
	size_t cfa_count, cfa_used;
};

void stack_store__init(struct stack_store *s, pid_t pid, uint64_t rate_hz);
void stack_store__free(struct stack_store *s);
/* One sample from the ring buffer. */
void stack_store__add(struct stack_store *s, const struct kh_sample_event *e);
/* Rereads /proc/PID/maps (new libraries, JIT code); mappings seen before are kept. */
void stack_store__read_maps(struct stack_store *s);
/*
 * Fills out with the samples taken in [start_ns, end_ns], symbolized;
 * ring_full: the sampler's lost count so far (the share since the last
 * record is this one's).
 */
void stack_store__fill(struct stack_store *s, uint64_t start_ns, uint64_t end_ns,
		       uint64_t ring_full, struct kh_stacks *out);

/* A mapping known without /proc (tests, the benchmark): [start, end) of path at pgoff. */
int stack_store__add_mapping(struct stack_store *s, uint64_t start, uint64_t end, uint64_t pgoff,
			     bool exec, const char *path);

#endif /* KHPROF_STACKSTORE_H */
