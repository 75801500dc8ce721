/* SPDX-License-Identifier: MIT */
/*
 * keyhog_profile.h - zero-cost USDT probes for KeyHog-style scanners.
 *
 * Include this one header, place spans around scanner stages and mark the
 * run's macro states; `khprof record -- ./program` then measures them from
 * outside the process with BPF.  No build flag is needed: untraced, a span
 * costs one load of a USDT semaphore word and a not-taken branch per edge.
 *
 * The probe ABI (provider "keyhog", probe names, argument order and types,
 * semaphores) is documented in docs/PROBES.md so that programs in other
 * languages can emit compatible probes.  Probes never carry scanned content:
 * only stage and state numbers, counts, timestamps and identity strings.
 *
 * Probe sites exist on x86-64 and aarch64 (what differs, the probed
 * instruction and the counter, is in keyhog_profile_x86_64.h and
 * keyhog_profile_arm64.h beside this file, which it includes); elsewhere
 * every macro compiles to nothing (define KH_PROBES_DISABLED to force
 * that anywhere).
 */
#ifndef KEYHOG_PROFILE_H
#define KEYHOG_PROFILE_H

#ifndef __bpf__
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Wire order of the seed's Stage enum: append-only, values never change. */
enum kh_stage {
	KH_STAGE_SOURCE_ACQUIRE = 0,
	KH_STAGE_SOURCE_WALK = 1,
	KH_STAGE_SOURCE_READ = 2,
	KH_STAGE_PREPROCESS = 3,
	KH_STAGE_PHASE1_TRIGGERS = 4,
	KH_STAGE_BACKEND_DISPATCH = 5,
	KH_STAGE_HOT_PATTERNS = 6,
	KH_STAGE_CONFIRMED_PATTERNS = 7,
	KH_STAGE_PHASE2_PREFILTER = 8,
	KH_STAGE_PHASE2_KEYWORD_AC = 9,
	KH_STAGE_PHASE2_SHARED_AC = 10,
	KH_STAGE_PHASE2_ANCHORED_VERIFY = 11,
	KH_STAGE_PHASE2_WHOLE_CHUNK = 12,
	KH_STAGE_GENERIC_DETECTION = 13,
	KH_STAGE_ENTROPY = 14,
	KH_STAGE_MACHINE_LEARNING = 15,
	KH_STAGE_DECODE = 16,
	KH_STAGE_SUPPRESSION = 17,
	KH_STAGE_LIVE_VERIFICATION = 18,
	KH_STAGE_REPORTING = 19,
	KH_STAGE_SOURCE_QUEUE_WAIT = 20,
	KH_STAGE_INCREMENTAL_LOOKUP = 21,
	KH_STAGE_BACKEND_SELECT = 22,
	KH_STAGE_RESULT_MERGE = 23,
	KH_STAGE_SCANNER_QUEUE_WAIT = 24,
	KH_STAGE_COUNT
};

/* The seed's RunState, in its order. */
enum kh_run_state {
	KH_STATE_CREATED = 0,
	KH_STATE_ACQUIRING = 1,
	KH_STATE_SCANNING = 2,
	KH_STATE_RESOLVING = 3,
	KH_STATE_VERIFYING = 4,
	KH_STATE_REPORTING = 5,
	KH_STATE_COMPLETED = 6,
	KH_STATE_FAILED = 7,
	KH_STATE_COUNT
};

/* Attribution of work done inside a derived (decoded) input. */
enum kh_attribution {
	KH_ATTRIBUTION_ROOT = 0,
	KH_ATTRIBUTION_DECODED = 1,
};

/* Version of the probe ABI described in docs/PROBES.md. */
#define KH_PROBE_ABI_VERSION 7
/* Depth of the per-thread span stack kept in the traced program. */
#define KH_USER_SPAN_DEPTH 32
/*
 * Completed spans buffered per thread in batch mode before one probe hands
 * them over (probe ABI 6; 64 before).  The kernel entry costs ~1.9 us per
 * batch here against ~6 ns of BPF work per span, so 64 spans a batch paid
 * ~29 ns a span for the entry and 256 pay ~7 (docs/PROBES.md); 6 KiB of
 * thread-local storage per thread.
 */
#define KH_BATCH_CAPACITY 256

/*
 * Batched times are CLOCK_MONOTONIC nanoseconds, or TSC ticks with this bit
 * set: a batched span needs only its length, and reading the TSC costs a
 * third of clock_gettime's vDSO path, the bulk of a batched span's cost.
 * The batch probe passes the TSC at the flush so that the tracer can place
 * ticks on its own clock (docs/PROBES.md).
 */
#define KH_TIME_TSC (1ull << 63)

/*
 * One completed span as handed over by the `batch` probe (docs/PROBES.md).
 * Plain C types so the BPF side can share it; 24 bytes on every Linux ABI.
 */
struct kh_batch_entry {
	unsigned long long start_ns; /* time at enter (below), 0 if tracing began mid-span */
	unsigned long long end_ns;   /* time at exit, in the same clock as start_ns */
	unsigned int stage;          /* enum kh_stage */
	unsigned int attribution;    /* enum kh_attribution at exit */
};

#ifndef __bpf__
/*
 * Per-thread state kept by the probe sites.  It is touched only while a
 * tracer has set a semaphore.  Weak with default visibility so that the
 * executable and every shared library share one copy per thread: spans may
 * nest across modules and attribution is a property of the thread.
 */
struct kh_thread_state {
	uint32_t depth;
	uint32_t attribution;
	uint32_t batch_count;
	uint32_t batch_registered;
	uint32_t stage[KH_USER_SPAN_DEPTH];
	uint64_t start_ns[KH_USER_SPAN_DEPTH];
	uint64_t input_bytes; /* batch mode: counted since the thread's last batch */
	uint64_t input_units;
	struct kh_batch_entry batch[KH_BATCH_CAPACITY];
	/*
	 * Probe ABI 3: batches handed over so far.  The tracer reads the
	 * buffer of a thread that dies or execs, and this tells it whether
	 * the buffer is one it has already counted (docs/PROBES.md).
	 */
	uint64_t flushes;
	/*
	 * Probe ABI 7: spans this thread handed over in batches before the
	 * buffer's entries, the sequence number of batch[0].  The tracer checks
	 * every batch, and what a thread leaves at its end, against the spans
	 * it took: a difference is spans it never saw, counted and named.
	 */
	uint64_t flushed_spans;
};

/*
 * The open session's identity, kept where a tracer that attaches in the
 * middle of the session finds it (the symbol kh_identity_table, read with
 * process_vm_readv; docs/PROBES.md): the identity probes fired before it
 * was there.  KH_IDENTITY copies each string into it, KH_SESSION_START
 * empties it.  generation is odd while an entry is written, so that a
 * reader retries instead of taking half a string.  Identity is set from
 * one thread at a time, as the seed's Session::start(identity) sets it.
 */
#define KH_IDENTITY_TABLE_VERSION 1
#define KH_IDENTITY_TABLE_SLOTS 16
#define KH_IDENTITY_TABLE_KEY 32    /* bytes, the NUL included: as the probe's key */
#define KH_IDENTITY_TABLE_VALUE 128 /* likewise for the value */

struct kh_identity_table {
	uint32_t version; /* KH_IDENTITY_TABLE_VERSION once written */
	uint32_t count;   /* entries in use, the latest value of a key in its entry */
	uint64_t generation;
	struct {
		char key[KH_IDENTITY_TABLE_KEY];
		char value[KH_IDENTITY_TABLE_VALUE];
	} entries[KH_IDENTITY_TABLE_SLOTS];
};

#if !defined(KH_PROBES_DISABLED) && defined(__x86_64__)
#include "keyhog_profile_x86_64.h"
#elif !defined(KH_PROBES_DISABLED) && defined(__aarch64__)
#include "keyhog_profile_arm64.h"
#endif

#if defined(KH__ARCH_SITES)
#define KH_PROBES_ENABLED 1

/*
 * USDT semaphores.  The kernel increments `span` for each attached
 * span-mode or pair-mode probe and `batch` for the batch probe.  They share
 * one aligned 32-bit word so that a span edge tests both with one load.
 * Probe ABI 4: `monotonic`, after that word, is the semaphore of the
 * `clock_monotonic` site, which khprof attaches when it does not trust the
 * TSC: batched spans are then timed with CLOCK_MONOTONIC.  Only the traced
 * path reads it.  Hidden: the kernel counts per mapped file, so every
 * module must read its own copy.
 */
union kh_semaphores {
	struct {
		volatile uint16_t span;
		volatile uint16_t batch;
		volatile uint16_t monotonic;
		volatile uint16_t reserved;
	} s;
	volatile uint32_t any;
};
__attribute__((weak, visibility("hidden"), section(".probes"), aligned(8)))
union kh_semaphores keyhog_semaphores;

/*
 * Named for probe ABI 7, whose state ends with flushed_spans
 * (kh_thread_state6 in ABI 6, kh_thread_state before, with 64 entries):
 * modules built with headers of other layouts in one process must not bind
 * to one variable, where one writes past the other's size.  Each layout
 * then keeps its own state per thread.
 */
__attribute__((weak)) __thread struct kh_thread_state kh_thread_state7;
/* Sessions started by this process so far; part of the run id. */
__attribute__((weak)) uint64_t kh_session_sequence;
/*
 * Probe ABI 3: the macro state of the process's session, KH_STATE_COUNT
 * when none is open, so that a tracer attaching mid-session knows the
 * state it joins (it reads this word; docs/PROBES.md).  Written only at
 * session events.
 */
__attribute__((weak)) volatile uint32_t kh_current_state = KH_STATE_COUNT;
/* Weak: one per process, as kh_current_state.  2.5 KiB of .bss. */
__attribute__((weak)) struct kh_identity_table kh_identity_table;

#define KH__STR_(x) #x
#define KH__STR(x) KH__STR_(x)

/*
 * One probe site: the architecture's probed instruction at local label
 * 990 (KH__SITE_INSN), then its stapsdt note, the layout libbpf, bpftrace
 * and perf read.  Operands are registers or immediates only (KH__ARG).
 */
#define KH__SITE_BEGIN(nop)                                                    \
	KH__SITE_INSN(nop)                                                     \
	".pushsection .note.stapsdt, \"?\", \"note\"\n\t"                      \
	".balign 4\n\t"                                                        \
	".4byte 992f-991f, 994f-993f, 3\n"                                     \
	"991: .asciz \"stapsdt\"\n"                                            \
	"992: .balign 4\n"                                                     \
	"993: .8byte 990b\n\t"                                                 \
	".8byte _.stapsdt.base\n\t"
#define KH__SITE_END(name, args)                                               \
	".asciz \"keyhog\"\n\t"                                                \
	".asciz \"" name "\"\n\t"                                              \
	".asciz \"" args "\"\n"                                                \
	"994: .balign 4\n\t"                                                   \
	".popsection\n\t"                                                      \
	".ifndef _.stapsdt.base\n\t"                                           \
	".pushsection .stapsdt.base, \"aG\", \"progbits\", .stapsdt.base, comdat\n\t" \
	".weak _.stapsdt.base\n\t"                                             \
	".hidden _.stapsdt.base\n"                                             \
	"_.stapsdt.base: .space 1\n\t"                                         \
	".size _.stapsdt.base, 1\n\t"                                          \
	".popsection\n\t"                                                      \
	".endif\n"

#define KH__SEMA_NONE ".8byte 0\n\t"
#define KH__SEMA_SPAN ".8byte keyhog_semaphores\n\t"
#define KH__SEMA_BATCH ".8byte keyhog_semaphores+2\n\t"
#define KH__SEMA_MONOTONIC ".8byte keyhog_semaphores+4\n\t"

/*
 * Probe ABI 4: the `clock_monotonic` site is jumped over, never hit.  It
 * exists for its semaphore: attaching it is how khprof asks this module
 * for CLOCK_MONOTONIC times, the kernel setting and clearing the word as
 * it does every semaphore (so a tracer that dies leaves nothing behind).
 * It lives in kh__batch_register, run once per thread, so that the
 * linker keeps it wherever batch mode can run.
 */
#define KH__CLOCK_SITE()                                                       \
	__asm__ __volatile__(KH__JUMP_OVER                                      \
			     "990: nop\n"                                       \
			     "995:\n\t"                                         \
			     ".pushsection .note.stapsdt, \"?\", \"note\"\n\t"    \
			     ".balign 4\n\t"                                     \
			     ".4byte 992f-991f, 994f-993f, 3\n"                  \
			     "991: .asciz \"stapsdt\"\n"                          \
			     "992: .balign 4\n"                                   \
			     "993: .8byte 990b\n\t"                               \
			     ".8byte _.stapsdt.base\n\t"                          \
			     KH__SEMA_MONOTONIC KH__SITE_END("clock_monotonic", "") \
			     ::: "memory")

#define KH__PROBE1(nop, name, sema, a1)                                        \
	__asm__ __volatile__(KH__SITE_BEGIN(nop) sema KH__SITE_END(name, "8@%0") \
			     :: KH__ARG((uint64_t)(a1)) : "memory")
#define KH__PROBE2(nop, name, sema, a1, a2)                                    \
	__asm__ __volatile__(KH__SITE_BEGIN(nop) sema                         \
			     KH__SITE_END(name, "8@%0 8@%1")                   \
			     :: KH__ARG((uint64_t)(a1)), KH__ARG((uint64_t)(a2)) : "memory")
#define KH__PROBE5(nop, name, sema, a1, a2, a3, a4, a5)                        \
	__asm__ __volatile__(KH__SITE_BEGIN(nop) sema                         \
			     KH__SITE_END(name, "8@%0 8@%1 8@%2 8@%3 8@%4")    \
			     :: KH__ARG((uint64_t)(a1)), KH__ARG((uint64_t)(a2)),    \
				KH__ARG((uint64_t)(a3)), KH__ARG((uint64_t)(a4)),    \
				KH__ARG((uint64_t)(a5)) : "memory")
/*
 * The batch probe: its seventh argument (probe ABI 6), the capacity, is a
 * constant ("8@$256" on x86-64, "8@256" on aarch64); the eighth (ABI 7) is
 * flushed_spans.
 */
#define KH__PROBE8(nop, name, sema, a1, a2, a3, a4, a5, a6, a7, a8)            \
	__asm__ __volatile__(KH__SITE_BEGIN(nop) sema                         \
			     KH__SITE_END(name, "8@%0 8@%1 8@%2 8@%3 8@%4 8@%5 8@%6 8@%7") \
			     :: KH__ARG((uint64_t)(a1)), KH__ARG((uint64_t)(a2)),    \
				KH__ARG((uint64_t)(a3)), KH__ARG((uint64_t)(a4)),    \
				KH__ARG((uint64_t)(a5)), KH__ARG((uint64_t)(a6)),    \
				"n"((uint64_t)(a7)), KH__ARG((uint64_t)(a8)) : "memory")
#define KH__PROBE3(nop, name, sema, a1, a2, a3)                                \
	__asm__ __volatile__(KH__SITE_BEGIN(nop) sema                         \
			     KH__SITE_END(name, "8@%0 8@%1 8@%2")              \
			     :: KH__ARG((uint64_t)(a1)), KH__ARG((uint64_t)(a2)),    \
				KH__ARG((uint64_t)(a3)) : "memory")

#define KH__UNLIKELY(x) __builtin_expect(!!(x), 0)

/*
 * Out-of-line probe functions exist once per module (executable or
 * library), not once per source file: the first hit of each probe site
 * costs the traced program ~30 us while the kernel rewrites it into a call
 * (docs/PERFORMANCE.md), so every call should reach the same few sites.
 * Hidden, like the semaphores, because a site must test its own module's
 * semaphore.
 *
 * A weak function alone leaves every source file's copy in the binary, and
 * with it a copy of each of its probe sites: kh-scan had each probe four
 * times, four uprobes to register and four first hits to pay where one is
 * hit.  GCC puts each such function in a COMDAT group of its own, so the
 * linker keeps one copy, and the site's note (".note.stapsdt" pushed with
 * "?", the function's group) goes with it.  GCC has no attribute for a
 * group: the section name carries the group's flags, and the "#" makes
 * the flags GCC appends after the name a comment to the assembler.  Clang
 * would take the whole string for a name, so it keeps a copy per file.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define KH__GROUP(name)                                                        \
	__attribute__((section(".text." #name ",\"axG\",@progbits," #name      \
			       ",comdat" KH__ASM_COMMENT)))
#else
#define KH__GROUP(name)
#endif
#define KH__ONE_PER_MODULE(name)                                               \
	__attribute__((weak, visibility("hidden"), noinline, unused)) KH__GROUP(name)
/* True while any tracer has span or batch probes attached to this module. */
#define KH_TRACING() KH__UNLIKELY(keyhog_semaphores.any != 0)

static inline uint64_t kh__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The start of a batched span: the TSC (~11 ns here; CNTVCT_EL0 on
 * aarch64: kh__tsc, the architecture's file), unless khprof asked for
 * CLOCK_MONOTONIC (vDSO, ~26 ns) because it does not trust the counter on
 * this machine.  The exit reads the clock its start did.
 */
#define KH__BATCH_START() (keyhog_semaphores.s.monotonic ? kh__now_ns() : kh__tsc())

/*
 * Hands this thread's buffered spans to the tracer.  The probe fires even
 * with no tracer left so that a detaching tracer loses nothing it saw.
 * Probe ABI 7: at a session event it fires whenever batch mode is
 * attached, even with nothing buffered: the tracer takes the other
 * threads' buffers at a session's start and end (docs/PROBES.md, "When a
 * session ends"), and places their TSC times by this flush's.  The eighth
 * argument is flushed_spans, the sequence number of the batch's first span.
 */
KH__ONE_PER_MODULE(kh__batch_flush) void kh__batch_flush(int session_event)
{
	struct kh_thread_state *t = &kh_thread_state7;

	if (t->batch_count == 0 && t->input_bytes == 0 && t->input_units == 0 &&
	    !(session_event && keyhog_semaphores.s.batch))
		return;
	KH__PROBE8(KH__NOP_HOT, "batch", KH__SEMA_BATCH, t->batch, t->batch_count,
		   t->input_bytes, t->input_units, kh__tsc(), t->flushes, KH_BATCH_CAPACITY,
		   t->flushed_spans);
	t->flushed_spans += t->batch_count;
	t->batch_count = 0;
	t->input_bytes = 0;
	t->input_units = 0;
	/* Last: until here the tracer takes the buffer as the one it was handed. */
	__asm__ __volatile__("" ::: "memory");
	t->flushes++;
}

/*
 * Flushes at thread exit and process exit, so batch mode loses no span of a
 * thread that has finished.
 */
__attribute__((weak)) pthread_key_t kh_batch_key7;
__attribute__((weak)) pthread_once_t kh_batch_key_once7 = PTHREAD_ONCE_INIT;

__attribute__((unused)) static void kh__batch_thread_exit(void *unused)
{
	(void)unused;
	kh__batch_flush(0);
}

/* exit() runs no thread-key destructor, so the exiting thread flushes here. */
__attribute__((unused)) static void kh__batch_process_exit(void)
{
	kh__batch_flush(0);
}

__attribute__((unused)) static void kh__batch_key_create(void)
{
	pthread_key_create(&kh_batch_key7, kh__batch_thread_exit);
	atexit(kh__batch_process_exit);
}

/*
 * Once per thread, at its first traced span (ABI 5): the `batch_register`
 * probe tells the tracer where the buffer is, so that it can read what is
 * left in it when the thread dies, execs or the tracer detaches.
 */
KH__ONE_PER_MODULE(kh__batch_register) __attribute__((cold))
void kh__batch_register(struct kh_thread_state *t)
{
	KH__PROBE2(KH__NOP_RARE, "batch_register", KH__SEMA_NONE, t, KH_PROBE_ABI_VERSION);
	KH__CLOCK_SITE();
	t->batch_registered = 1;
	pthread_once(&kh_batch_key_once7, kh__batch_key_create);
	pthread_setspecific(kh_batch_key7, t);
}

/* Called on a span's exit edge with tracing on; start_ns 0 means unknown. */
KH__ONE_PER_MODULE(kh__span_complete) __attribute__((cold))
void kh__span_complete(uint32_t stage, uint64_t start_ns)
{
	struct kh_thread_state *t = &kh_thread_state7;

	if (keyhog_semaphores.s.batch) {
		struct kh_batch_entry *e;

		if (KH__UNLIKELY(!t->batch_registered))
			kh__batch_register(t);
		e = &t->batch[t->batch_count];
		e->start_ns = start_ns;
		e->end_ns = start_ns & KH_TIME_TSC ? kh__tsc() : kh__now_ns();
		e->stage = stage;
		e->attribution = t->attribution;
		/*
		 * Probe ABI 7: the entry before the count that covers it, so
		 * that a tracer reading this buffer from another thread at a
		 * session's end never takes a half-written entry.
		 */
		__asm__ __volatile__("" ::: "memory");
		if (++t->batch_count == KH_BATCH_CAPACITY)
			kh__batch_flush(0);
	}
	if (keyhog_semaphores.s.span) {
		KH__PROBE3(KH__NOP_HOT, "span", KH__SEMA_SPAN, stage, start_ns, t->attribution);
		KH__PROBE2(KH__NOP_HOT, "span_exit", KH__SEMA_SPAN, stage, t->attribution);
	}
}

/*
 * A span's enter edge with tracing on: the pair-mode probe and its start.
 * Span mode compares the start with the kernel's clock, so it gets
 * CLOCK_MONOTONIC; batch mode alone only needs lengths, so it gets the TSC
 * where khprof trusts it (KH__BATCH_START).
 *
 * Probe ABI 5: every traced span, scoped or not, is on the thread's stack
 * from its enter to its exit, and a thread registers its state at its first
 * traced span in every mode, so that a sampler reading the stack (`khprof
 * --sample`) finds the innermost open stage without a kernel entry.  Only
 * traced paths changed: the untraced site is the same load and branch.
 */
KH__ONE_PER_MODULE(kh__span_start) __attribute__((cold)) uint64_t kh__span_start(uint32_t stage)
{
	struct kh_thread_state *t = &kh_thread_state7;
	uint64_t start_ns;

	if (KH__UNLIKELY(!t->batch_registered))
		kh__batch_register(t);
	if (keyhog_semaphores.s.span) {
		KH__PROBE1(KH__NOP_HOT, "span_enter", KH__SEMA_SPAN, stage);
		start_ns = kh__now_ns();
	} else {
		start_ns = KH__BATCH_START();
	}
	if (t->depth < KH_USER_SPAN_DEPTH) {
		t->stage[t->depth] = stage;
		t->start_ns[t->depth] = start_ns;
	}
	/* A sample taken in between sees the frame whole or not at all. */
	__asm__ __volatile__("" ::: "memory");
	t->depth++;
	return start_ns;
}

/*
 * Takes the innermost frame off the stack if it is stage's; returns its
 * start, 0 if it is not.  A span entered before the tracer attached has no
 * frame: its exit leaves the stack alone and reports start 0, which the
 * tracer counts as unmatched instead of pairing it with an outer frame.
 */
__attribute__((unused)) static inline uint64_t kh__span_pop(uint32_t stage)
{
	struct kh_thread_state *t = &kh_thread_state7;
	uint64_t start_ns = 0;

	if (t->depth > 0) {
		uint32_t top = t->depth - 1;

		if (top >= KH_USER_SPAN_DEPTH) {
			t->depth--;
		} else if (t->stage[top] == stage) {
			start_ns = t->start_ns[top];
			t->depth--;
		}
	}
	return start_ns;
}

KH__ONE_PER_MODULE(kh__span_enter_slow) __attribute__((cold))
void kh__span_enter_slow(uint32_t stage)
{
	kh__span_start(stage);
}

KH__ONE_PER_MODULE(kh__span_exit_slow) __attribute__((cold)) void kh__span_exit_slow(uint32_t stage)
{
	kh__span_complete(stage, kh__span_pop(stage));
}

/* Scoped spans keep their start in a local as well as on the stack. */
struct kh__scope {
	uint32_t stage;
	uint64_t start_ns;
};

/* By value, so the scope never has to live in memory on the fast path. */
KH__ONE_PER_MODULE(kh__scope_exit_slow) __attribute__((cold))
void kh__scope_exit_slow(uint32_t stage, uint64_t start_ns)
{
	kh__span_pop(stage);
	kh__span_complete(stage, start_ns);
}

__attribute__((always_inline, unused)) static inline struct kh__scope kh__scope_enter(uint32_t stage)
{
	struct kh__scope scope = { stage, 0 };

	if (KH_TRACING())
		scope.start_ns = kh__span_start(stage);
	return scope;
}

/*
 * The exit tests the start in a register rather than reloading the
 * semaphore: a scope that was not timed at its enter is not counted, as in
 * the seed, and the untraced span pays one load instead of two.
 */
__attribute__((always_inline, unused)) static inline void kh__scope_exit(struct kh__scope *scope)
{
	if (KH__UNLIKELY(scope->start_ns != 0))
		kh__scope_exit_slow(scope->stage, scope->start_ns);
}

#define KH_SPAN_ENTER(stage)                                                   \
	do {                                                                   \
		if (KH_TRACING())                                              \
			kh__span_enter_slow((uint32_t)(stage));                \
	} while (0)
#define KH_SPAN_EXIT(stage)                                                    \
	do {                                                                   \
		if (KH_TRACING())                                              \
			kh__span_exit_slow((uint32_t)(stage));                 \
	} while (0)

#define KH__CAT_(a, b) a##b
#define KH__CAT(a, b) KH__CAT_(a, b)
/* Opens a span that closes when the enclosing block ends. */
#define KH_SPAN_SCOPE(stage)                                                   \
	struct kh__scope KH__CAT(kh__scope_, __COUNTER__)                      \
		__attribute__((cleanup(kh__scope_exit), unused)) =             \
			kh__scope_enter((uint32_t)(stage))

/*
 * Counters fire per chunk or file, never per byte.  In batch mode, a thread
 * whose batch is already flushed at its exit adds them to its next batch
 * instead of entering the kernel.  Otherwise they are plain sites, live for
 * any tracer, including one that attaches only them.  No function call on
 * either path: a leaf function that counts input stays a leaf, and its
 * red zone stays safe (on x86-64 the site moves %rsp below it).
 */
#define KH__INPUT(field, probe, n)                                             \
	do {                                                                   \
		struct kh_thread_state *kh__t = &kh_thread_state7;              \
		/* Semaphores count attached sites: test, don't mask. */     \
		if (KH__UNLIKELY((kh__t->batch_registered != 0) &              \
				 (keyhog_semaphores.s.batch != 0)))            \
			kh__t->field += (uint64_t)(n);                         \
		else                                                           \
			KH__PROBE1(KH__NOP_HOT, probe, KH__SEMA_NONE, (n));     \
	} while (0)
#define KH_INPUT_BYTES(n) KH__INPUT(input_bytes, "input_bytes", n)
#define KH_INPUT_UNITS(n) KH__INPUT(input_units, "input_units", n)

/*
 * Session probes are plain sites: they fire a handful of times per run and
 * carry only registers, so they need no semaphore.  Buffered spans are
 * flushed first so the tracer sees every span before the boundary.
 */
KH__ONE_PER_MODULE(kh__session_start) void kh__session_start(void)
{
	uint64_t sequence = kh_session_sequence++;

	kh__batch_flush(1);
	/* As the seed: a start while a session is open is refused, the state stays. */
	if (kh_current_state == KH_STATE_COUNT) {
		kh_current_state = KH_STATE_CREATED;
		/* A new session's identity starts empty. */
		__atomic_store_n(&kh_identity_table.generation, kh_identity_table.generation + 1,
				 __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		kh_identity_table.count = 0;
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(&kh_identity_table.generation, kh_identity_table.generation + 1,
				 __ATOMIC_RELAXED);
	}
	KH__PROBE2(KH__NOP_RARE, "session_start", KH__SEMA_NONE, sequence,
		   KH_PROBE_ABI_VERSION);
}

KH__ONE_PER_MODULE(kh__transition) void kh__transition(uint32_t state)
{
	kh__batch_flush(1);
	kh_current_state = state;
	KH__PROBE1(KH__NOP_RARE, "transition", KH__SEMA_NONE, state);
}

KH__ONE_PER_MODULE(kh__session_finish) void kh__session_finish(uint32_t status)
{
	kh__batch_flush(1);
	kh_current_state = KH_STATE_COUNT;
	KH__PROBE1(KH__NOP_RARE, "session_finish", KH__SEMA_NONE, status);
}

/* The bytes from p to the end of its page, at most max. */
static inline size_t kh__in_page(const char *p, size_t max)
{
	size_t left = 4096 - ((uintptr_t)p & 4095);

	return left < max ? left : max;
}

/* Whether a string that begins in part one and goes on in part two ends in them. */
static inline int kh__join_string(char *to, size_t size, const char *one, size_t one_len,
				  const char *two, size_t two_len)
{
	__builtin_memcpy(to, one, one_len);
	__builtin_memcpy(to + one_len, two, two_len);
	return one_len + two_len <= size && __builtin_memchr(to, '\0', one_len + two_len) != 0;
}

/*
 * Copies key and value into k and v through the kernel, with one
 * process_vm_readv of this process, so that a bad pointer the program
 * passes (which the identity probe has always tolerated) fails the copy
 * instead of crashing the program.  The string parts on their first page
 * are read before those on the next, and the read stops at the first page
 * it cannot read, so short strings at the end of a mapping are whole.
 * Raw syscalls (kh__syscall6, the architecture's file): syscall(2) and
 * getpid(2) are not declared for a program compiled as strict ISO C,
 * which this header allows.  Measured here (a
 * VM whose syscalls cost 4 us): 8-18 us per KH_IDENTITY, against 60 ns
 * for a plain copy that a bad pointer would crash; a session sets a few
 * keys.  1 when both are whole strings.
 */
static inline int kh__copy_identity(const char *key, const char *value,
				    char k[KH_IDENTITY_TABLE_KEY], char v[KH_IDENTITY_TABLE_VALUE])
{
	char scratch[KH_IDENTITY_TABLE_KEY + KH_IDENTITY_TABLE_VALUE];
	size_t kf, vf;
	struct iovec local = { scratch, sizeof(scratch) };
	struct iovec remote[4];
	long pid, got;

	if (!key || !value)
		return 0;
	kf = kh__in_page(key, KH_IDENTITY_TABLE_KEY);
	vf = kh__in_page(value, KH_IDENTITY_TABLE_VALUE);
	remote[0] = (struct iovec){ (void *)key, kf };
	remote[1] = (struct iovec){ (void *)value, vf };
	remote[2] = (struct iovec){ (void *)(key + kf), KH_IDENTITY_TABLE_KEY - kf };
	remote[3] = (struct iovec){ (void *)(value + vf), KH_IDENTITY_TABLE_VALUE - vf };
	pid = kh__syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	got = kh__syscall6(SYS_process_vm_readv, pid, (long)&local, 1, (long)remote, 4, 0);
	if (got < (long)(kf + vf))
		return 0;
	got -= (long)(kf + vf);
	{
		size_t k_rest = (size_t)got < KH_IDENTITY_TABLE_KEY - kf ? (size_t)got
									 : KH_IDENTITY_TABLE_KEY - kf;
		size_t v_rest = (size_t)got - k_rest;

		return kh__join_string(k, KH_IDENTITY_TABLE_KEY, scratch, kf, scratch + kf + vf,
				       k_rest) &&
		       kh__join_string(v, KH_IDENTITY_TABLE_VALUE, scratch + kf, vf,
				       scratch + kf + vf + (KH_IDENTITY_TABLE_KEY - kf), v_rest);
	}
}

/*
 * Kept in kh_identity_table whether traced or not (an attach may come
 * later), after the probe fired (kh__copy_identity says what it costs).
 */
KH__ONE_PER_MODULE(kh__identity) void kh__identity(const char *key, const char *value)
{
	struct kh_identity_table *t = &kh_identity_table;
	char k[KH_IDENTITY_TABLE_KEY] = { 0 }, v[KH_IDENTITY_TABLE_VALUE] = { 0 };
	uint32_t i = 0;

	KH__PROBE2(KH__NOP_RARE, "identity", KH__SEMA_NONE, key, value);
	if (!kh__copy_identity(key, value, k, v))
		return; /* unreadable, or too long for the tracer to read either */
	while (i < t->count && __builtin_strcmp(t->entries[i].key, k) != 0)
		i++;
	if (i >= KH_IDENTITY_TABLE_SLOTS)
		return;
	__atomic_store_n(&t->generation, t->generation + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__builtin_memcpy(t->entries[i].key, k, sizeof(k));
	__builtin_memcpy(t->entries[i].value, v, sizeof(v));
	if (i == t->count)
		t->count = i + 1;
	t->version = KH_IDENTITY_TABLE_VERSION;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&t->generation, t->generation + 1, __ATOMIC_RELAXED);
}

#define KH_SESSION_START() kh__session_start()
#define KH_IDENTITY(key, value) kh__identity((key), (value))
#define KH_TRANSITION(state) kh__transition((uint32_t)(state))
#define KH_SESSION_FINISH(status) kh__session_finish((uint32_t)(status))

/* Sets this thread's attribution and returns the previous one. */
__attribute__((unused)) static inline enum kh_attribution kh_set_attribution(enum kh_attribution attribution)
{
	enum kh_attribution previous = (enum kh_attribution)kh_thread_state7.attribution;

	kh_thread_state7.attribution = (uint32_t)attribution;
	return previous;
}

#else /* no probe sites on this target */
#define KH_PROBES_ENABLED 0
#define KH_TRACING() 0
#define KH_SPAN_ENTER(stage) ((void)(stage))
#define KH_SPAN_EXIT(stage) ((void)(stage))
#define KH_SPAN_SCOPE(stage) ((void)(stage))
#define KH_INPUT_BYTES(n) ((void)(n))
#define KH_INPUT_UNITS(n) ((void)(n))
#define KH_SESSION_START() ((void)0)
#define KH_IDENTITY(key, value) ((void)(key), (void)(value))
#define KH_TRANSITION(state) ((void)(state))
#define KH_SESSION_FINISH(status) ((void)(status))
static inline enum kh_attribution kh_set_attribution(enum kh_attribution attribution)
{
	static __thread enum kh_attribution current;
	enum kh_attribution previous = current;

	current = attribution;
	return previous;
}
#endif

#endif /* !__bpf__ */

#ifdef __cplusplus
}
#endif
#endif /* KEYHOG_PROFILE_H */
