/* SPDX-License-Identifier: MIT */
/*
 * stacks.h - sampled stacks tagged with the open stage (`--sample`), as a
 * record keeps them (the `stacks` member of the khprof extension,
 * docs/SCHEMA.md): identical stacks of one stage and attribution merged,
 * with a count, their frames symbolized after the run (names, not
 * addresses: the record is read where the binaries are not).  Aggregated,
 * 10 minutes at 99 Hz on 8 threads (475,000 samples) are as many entries
 * as there are distinct stacks, not samples, so the record keeps them.
 */
#ifndef KHPROF_STACKS_H
#define KHPROF_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "khprof_sample.h"
#include "outbuf.h"

/* The stage of a sample outside every span. */
#define KH_NO_STAGE UINT32_MAX

/* How a stack was unwound.  Wire values: append only (kh_unwind__name). */
enum kh_unwind {
	KH_UNWIND_FP = 0,     /* "frame-pointer": the frame-pointer walk */
	KH_UNWIND_FP_CFI = 1, /* "frame-pointer+cfi": and the innermost caller from CFI */
	KH_UNWIND_COUNT
};

struct kh_stack {
	uint32_t stage;       /* enum kh_stage, or KH_NO_STAGE */
	uint32_t attribution; /* enum kh_attribution */
	uint32_t unwind;      /* enum kh_unwind */
	bool incomplete;      /* does not reach a thread's entry (_start, start_thread, clone3) */
	uint32_t *frames;     /* indices into names, outermost first */
	uint32_t frame_count;
	uint64_t count;
};

/* One sample on its thread's timeline (the Perfetto export). */
struct kh_stack_sample {
	uint64_t at_ns; /* from the record's start */
	uint32_t tid;
	uint32_t stack; /* index into stacks */
};

/*
 * Samples kept on the timeline per record: 50,000 x ~25 bytes of JSON is
 * 1.2 MB; a longer record keeps one sample in timeline_every, evenly.
 */
#define KH_STACK_TIMELINE_MAX 50000

struct kh_stacks {
	bool present;
	uint64_t rate_hz;
	char *unwinding;      /* "frame-pointer" */
	uint64_t samples;     /* in this record, every stack's count summed */
	uint64_t tags[KH_SAMPLE_TAG_COUNT];  /* how each sample's stage was found */
	uint64_t in_kernel;   /* taken in a system call or fault: the user stack is the caller's */
	uint64_t truncated;   /* cut at KH_SAMPLE_MAX_FRAMES, innermost frames kept */
	uint64_t unwind_failed; /* no user frame at all (counted under [unknown]) */
	uint64_t leaf_restored; /* a caller the frame-pointer walk skipped, put back from CFI */
	uint64_t incomplete;  /* stacks that stop short of a thread's entry function */
	uint64_t ring_full;   /* lost for want of ring-buffer room */
	uint64_t threads_missed; /* threads no sampling event could be opened for */
	char **names;
	size_t name_count, name_cap;
	struct kh_stack *stacks;
	size_t stack_count, stack_cap;
	struct kh_stack_sample *timeline; /* in time order */
	size_t timeline_count;
	uint64_t timeline_every; /* 1: every sample; 0: no timeline */
};

/* Wire names of enum kh_sample_tag ("stage", "no_stage", ...). */
const char *kh_sample_tag__name(uint32_t tag);
/* Wire names of enum kh_unwind; name to value, 0 or -EINVAL. */
const char *kh_unwind__name(uint32_t unwind);
int kh_unwind__parse(const char *name, uint32_t *out);

/* The index of name in s->names, added if new; UINT32_MAX without memory. */
uint32_t kh_stacks__name(struct kh_stacks *s, const char *name);
/*
 * Appends count samples of one stack (frames: name indices, outermost
 * first); the caller merges identical stacks (the outputs merge what is
 * left).  0 or -ENOMEM.
 */
int kh_stacks__add(struct kh_stacks *s, uint32_t stage, uint32_t attribution,
		   const uint32_t *frames, uint32_t frame_count, uint64_t count);
void kh_stacks__free(struct kh_stacks *s);

/*
 * How an output names frames.  The record keeps each symbol as its file
 * has it (mangled, for Rust and C++: records of any khprof read alike);
 * the outputs show it demangled (formats/demangle.h).  A symbol is the
 * traced file's, which anyone may have written: where it is printed as
 * text it is escaped (utf8__escape: `\x1b`, `\n`, `\u202e`), here at
 * output, so records written before are as safe to print.
 */
enum kh_name_form {
	KH_NAMES_DEMANGLED, /* whole, as it is: pprof, data for other tools */
	KH_NAMES_PRINTED,   /* whole, escaped: the HTML flame graphs */
	KH_NAMES_SHORT,     /* generic arguments and parameters cut, escaped: the text tables */
	/*
	 * Whole, escaped, and a name's own ';' (Rust's array types, `<[u8; 4]
	 * as Debug>::fmt`) written ':' as perf's stackcollapse does: a frame of
	 * a ';'-joined stack, folded and Perfetto's.
	 */
	KH_NAMES_STACKED,
};

/*
 * s with its frames named as form shows them, the names that come out
 * alike merged into one (one Rust function under two hashes, or, short,
 * `Vec<…>::push` of two element types); the stacks and the timeline keep
 * their order and indices.  map, when not NULL, gets out's name index of
 * each of s's names (malloc'd).  0, or -ENOMEM with out empty.
 */
int kh_stacks__shown(const struct kh_stacks *s, enum kh_name_form form, struct kh_stacks *out,
		     uint32_t **map);

/*
 * Folded stacks, one line per distinct stack: "STAGE;outermost;...;innermost
 * COUNT", "(no stage)" as the root outside spans, sorted, attributions
 * merged, names demangled and escaped (KH_NAMES_STACKED); what
 * flamegraph.pl, inferno and speedscope read.
 */
void kh_stacks__folded(const struct kh_stacks *s, struct outbuf *out);
/*
 * The text report's table: per stage with samples, its share and the
 * functions it spends most samples in itself (innermost frame), short.
 */
void kh_stacks__top_table(const struct kh_stacks *s, struct outbuf *out);

/* Self counts of one stage's functions, most first (diff, html). */
struct kh_stack_fn {
	uint32_t name;
	uint64_t self;
	uint64_t total; /* samples with the function anywhere on the stack */
};
/* The functions of stage's samples, sorted by self count; caller frees. */
size_t kh_stacks__functions(const struct kh_stacks *s, uint32_t stage, struct kh_stack_fn **out);
/* Samples of stage (KH_NO_STAGE: outside spans). */
uint64_t kh_stacks__stage_samples(const struct kh_stacks *s, uint32_t stage);

#endif /* KHPROF_STACKS_H */
