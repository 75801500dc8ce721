/* SPDX-License-Identifier: MIT */
/*
 * Definitions shared by the BPF programs (bpf/khprof.bpf.c) and the loader
 * (userspace/).  Both sides include this header, so the map layouts and the
 * event records cannot disagree.  Enums that reach the wire are append-only
 * with explicit values.
 */
#ifndef KHPROF_SHARED_H
#define KHPROF_SHARED_H

#include "keyhog_profile.h"
#include "khprof_enums.h"

#ifndef __bpf__
#include <linux/types.h>
#endif

/* Session slots: slot 0 collects spans seen outside any session. */
#define KH_MAX_SLOTS 8
#define KH_OUTSIDE_SLOT 0
/*
 * khprof's own calibration spans (userspace/capture/clock/calibrate.c) count in
 * a slot past the session slots, so they never mix with the program's.
 */
#define KH_CALIBRATION_SLOT KH_MAX_SLOTS
#define KH_SLOT_MAP_ENTRIES (KH_MAX_SLOTS + 1)
/* Per-thread span stack kept in task storage for pair mode. */
#define KH_KERNEL_SPAN_DEPTH 32
#define KH_IDENTITY_KEY_MAX 32
#define KH_IDENTITY_VALUE_MAX 128
#define KH_RINGBUF_BYTES (256 * 1024)
/*
 * Events a process is stopped on until khprof answers (a fork to protect,
 * a library to attach before it runs) have a ring of their own, so that a
 * burst of other events cannot drop one and leave the process stopped or
 * its child unprotected.  16 pages hold 64 such events waiting at once.
 */
#define KH_CONTROL_RINGBUF_BYTES (16 * 4096)

enum kh_event_type {
	KH_EVENT_SESSION_START = 1,
	KH_EVENT_IDENTITY = 2,
	KH_EVENT_TRANSITION = 3,
	KH_EVENT_SESSION_FINISH = 4,
	KH_EVENT_LOADER_STATE = 5, /* the dynamic loader mapped or unmapped objects */
	KH_EVENT_PROCESS_EXIT = 6,   /* the last thread exited; arg0: its exit_code */
	KH_EVENT_EXEC = 7,           /* the process ran execve; the old image is gone */
	KH_EVENT_SESSION_REFUSED = 8, /* session_start while one was open; arg0: sequence */
	KH_EVENT_THREAD_BUFFER = 9,   /* struct kh_buffer_event, not struct kh_event */
	KH_EVENT_FORK = 10,           /* a new process, stopped; arg0: its pid (--follow-forks) */
	KH_EVENT_SELF_STOP = 11,      /* the traced process sent itself SIGSTOP (follow.bpf.h) */
	/*
	 * An identity event whose strings the BPF side could not read, the
	 * process stopped at the probe until khprof has read them itself and
	 * resumes it (the classic object, where khprof may stop it).
	 */
	KH_EVENT_IDENTITY_STOPPED = 12,
};

/* One ring-buffer record; identity events use key and value. */
struct kh_event {
	__u32 type;        /* enum kh_event_type */
	__u32 pid;
	__u32 tid;
	__u32 slot;        /* session slot the event belongs to */
	__u64 ts_ns;       /* CLOCK_MONOTONIC, bpf_ktime_get_ns() */
	__u64 arg0;        /* state, status or session sequence */
	__u64 arg1;        /* probe ABI version at session start */
	/*
	 * The process's memory and threads, read in the probe handler at the
	 * moment of the event (the values /proc/PID/status would show then).
	 */
	__u64 resident_pages;
	__u64 virtual_pages;
	__u64 threads;
	char key[KH_IDENTITY_KEY_MAX];
	char value[KH_IDENTITY_VALUE_MAX];
	/*
	 * Appended for exact samples (docs/SCHEMA.md, "How close to the
	 * transition").  cpu_ns: the process's CPU time at the event, threads
	 * that already exited included; the peaks: the most resident pages and
	 * threads since the previous sampled event of the process (threads 0:
	 * nothing sampled).  sampled_ns: bpf_ktime_get_ns() once the sample is
	 * read, so sampled_ns - ts_ns is how long after the probe it was taken.
	 */
	__u64 cpu_ns;
	__u64 peak_resident_pages;
	__u64 peak_threads;
	__u64 sampled_ns;
	/*
	 * Identity events: 0, or the -errno of reading the key or value from
	 * the program's memory (arg0 and arg1 hold their addresses).
	 */
	__s32 key_err;
	__s32 value_err;
};

struct kh_stage_stats {
	__u64 elapsed_ns;
	__u64 calls;
	__u64 attributed_ns;
	__u64 attributed_calls; /* for the start-up bias correction */
};

/*
 * attach --all: an executable file as the kernel knows it (its superblock's
 * device, inode number and generation, which tells a new file from a
 * deleted one whose number was reused), the key of the files khprof found
 * without keyhog probes (bpf/watch.bpf.h's plain_files).  A start event of
 * the exec watcher carries it: arg0 = dev << 32 | generation, arg1 = ino.
 */
struct kh_file_key {
	__u64 ino;
	__u32 dev;
	__u32 generation;
};

/*
 * khprof in a PID namespace of its own: a task's id in the kernel's
 * (initial) namespace and in khprof's, as bpf/pidns.bpf.h's iterator
 * writes them.
 */
struct kh_pid_pair {
	__u32 kernel_tid;
	__u32 local_tid;
};

/* Per-CPU, per-session-slot aggregate; userspace sums the CPUs. */
struct kh_slot_stats {
	struct kh_stage_stats stages[KH_STAGE_COUNT];
	__u64 input_bytes;
	__u64 input_units;
	__u64 probe_hits;  /* kernel entries, for the tracer-cost estimate */
	__u64 drops[KH_DROP_COUNT];
	/*
	 * Spans that began before the session started and ended in it: not
	 * the session's, as the seed counts a span only for a session open
	 * at its start.  Set aside, not lost: no drop.
	 */
	__u64 begun_before_session;
};

/*
 * khprof attaches every probe site of one file with a single uprobe-multi
 * link to one program, kh_usdt, which dispatches on the site's kind.  (One
 * perf-event uprobe per site, as libbpf 1.1 attaches USDTs, costs an
 * RCU-tasks grace period per site on detach: seconds for a real scanner.)
 */
enum kh_probe_kind {
	KH_PROBE_SPAN = 1,
	KH_PROBE_SPAN_ENTER = 2,
	KH_PROBE_SPAN_EXIT = 3,
	KH_PROBE_BATCH = 4,
	KH_PROBE_INPUT_BYTES = 5,
	KH_PROBE_INPUT_UNITS = 6,
	KH_PROBE_SESSION_START = 7,
	KH_PROBE_IDENTITY = 8,
	KH_PROBE_TRANSITION = 9,
	KH_PROBE_SESSION_FINISH = 10,
	KH_PROBE_BATCH_REGISTER = 11, /* probe ABI 3 */
	/* probe ABI 4: never hit; attached for its semaphore (keyhog_profile.h) */
	KH_PROBE_CLOCK_MONOTONIC = 12,
};

/* Argument specs of all attached sites (libbpf's __bpf_usdt_specs map). */
#define KH_MAX_PROBE_SITES 4096
#define KH_USDT_MAX_ARGS 12

/* The layout of libbpf's struct __bpf_usdt_spec (bpf/usdt.bpf.h). */
struct kh_usdt_arg_spec {
	__u64 val_off;
	__u32 arg_type; /* 0 constant, 1 register, 2 register dereference */
	short reg_off;  /* offset of the register in struct pt_regs */
	char arg_signed;
	char arg_bitshift;
};

struct kh_usdt_spec {
	struct kh_usdt_arg_spec args[KH_USDT_MAX_ARGS];
	__u64 usdt_cookie; /* enum kh_probe_kind */
	short arg_cnt;
};

/* Pair-mode frame kept in task storage. */
struct kh_frame {
	__u64 start_ns;
	__u32 stage;
	__u32 pad;
};

struct kh_task_stack {
	__u32 depth;
	__u32 pad;
	struct kh_frame frames[KH_KERNEL_SPAN_DEPTH];
};

/*
 * Where the fields of the program's struct kh_thread_state
 * (include/keyhog_profile.h) lie, for the BPF side, which reads a thread's
 * buffer when the thread dies or execs, and the other threads' at a
 * session's start and end, and for khprof, which reads them after a
 * detach.  Checked against the header below.
 */
#define KH_TS_BATCH_COUNT_OFF 8
#define KH_TS_INPUT_OFF 400   /* input_bytes, then input_units */
#define KH_TS_BATCH_OFF 416
#define KH_TS_FLUSHES_OFF (KH_TS_BATCH_OFF + KH_BATCH_CAPACITY * 24)
/* Probe ABI 7: the sequence number of batch[0]. */
#define KH_TS_FLUSHED_SPANS_OFF (KH_TS_FLUSHES_OFF + 8)
/*
 * Programs of probe ABI 3 to 5 (the Rust crate's before ABI 7 too) buffer
 * 64 spans, so their `flushes` is nearer: the BPF side and khprof read
 * such a thread's state with this layout (KH_THREAD_ABI6 unset) and pass
 * it on as if it had the current one, entries past 64 unset.  ABI 6 has
 * the current layout up to `flushes`, and no `flushed_spans`.
 */
#define KH_BATCH_CAPACITY_ABI5 64
#define KH_TS_FLUSHES_OFF_ABI5 (KH_TS_BATCH_OFF + KH_BATCH_CAPACITY_ABI5 * 24)
#define KH_TS_READ_BYTES_ABI5 (KH_TS_FLUSHES_OFF_ABI5 + 8)
#define KH_TS_READ_BYTES_ABI6 (KH_TS_FLUSHES_OFF + 8)
#ifndef __bpf__
#include <stddef.h>
_Static_assert(offsetof(struct kh_thread_state, batch_count) == KH_TS_BATCH_COUNT_OFF, "");
_Static_assert(offsetof(struct kh_thread_state, input_bytes) == KH_TS_INPUT_OFF, "");
_Static_assert(offsetof(struct kh_thread_state, input_units) == KH_TS_INPUT_OFF + 8, "");
_Static_assert(offsetof(struct kh_thread_state, batch) == KH_TS_BATCH_OFF, "");
_Static_assert(offsetof(struct kh_thread_state, flushes) == KH_TS_FLUSHES_OFF, "");
_Static_assert(offsetof(struct kh_thread_state, flushed_spans) == KH_TS_FLUSHED_SPANS_OFF, "");
_Static_assert(sizeof(struct kh_thread_state) == KH_TS_FLUSHED_SPANS_OFF + 8, "");
_Static_assert(sizeof(struct kh_batch_entry) == 24, "");
#endif

#define KH_THREAD_ABI3 1u   /* registered or flushed with probe ABI 3 */
#define KH_THREAD_ABI6 4u   /* registered or flushed with probe ABI 6: 256 entries */
#define KH_THREAD_ABI7 16u  /* probe ABI 7: flushed_spans numbers its spans */
#define KH_THREAD_LAYOUT (KH_THREAD_ABI3 | KH_THREAD_ABI6 | KH_THREAD_ABI7)
#define KH_MAX_THREADS 16384

/*
 * Where a thread's kh_thread_state is, in its task storage (thread_store),
 * for the stack sampler (bpf/sample.bpf.c), which reads its open stage.
 */
struct kh_thread_info {
	__u64 state_addr; /* &kh_thread_state in the program */
	__u32 flags;      /* KH_THREAD_LAYOUT's bits */
	__u32 pad;
};

/*
 * Claims on a thread's buffer, one word each for its entries, its input
 * bytes and its input units: (buffer generation << KH_CLAIM_SHIFT) | the
 * amount of that generation already counted, the generation being the
 * program's `flushes` (its low 20 bits).  Three parties count a buffer: the
 * thread's own batch, which takes its whole generation (an exchange to the
 * next one, amount 0); a session's start or end, which takes what other
 * threads still buffer (docs/PROBES.md, "When a session ends"); and the
 * thread's end, execve or khprof's detach.  The last two raise a claim by
 * compare-and-swap, so each span and byte is counted by exactly one of
 * them, whatever their order on the CPUs.  44 bits of amount: 16 TiB of
 * input between two batches.
 */
#define KH_CLAIM_SHIFT 44
#define KH_CLAIM_AMOUNT ((1ull << KH_CLAIM_SHIFT) - 1)
#define KH_CLAIM_HALF_GENS (1ull << (63 - KH_CLAIM_SHIFT))

static inline __u64 kh_claim(__u64 flushes, __u64 amount)
{
	return flushes << KH_CLAIM_SHIFT | (amount & KH_CLAIM_AMOUNT);
}

/*
 * Hides a value's relation to its inputs from the compiler, which would
 * turn the masks below back into compares and branches (BPF has no
 * conditional move); a barrier and nothing else.
 */
#define KH_OPAQUE(x) __asm__ __volatile__("" : "+r"(x))

/*
 * 1 when claim is of a later generation than flushes (the thread's batch
 * took it whole), else 0; without a branch, as kh_claim_counted.
 */
static inline __u64 kh_claim_ahead(__u64 claim, __u64 flushes)
{
	__u64 ahead = ((claim >> KH_CLAIM_SHIFT) - flushes) & ((KH_CLAIM_HALF_GENS << 1) - 1);
	__u64 beyond = (ahead - 1) >> (63 - KH_CLAIM_SHIFT), nonzero = beyond | (0 - beyond);

	KH_OPAQUE(nonzero);
	return 1 - (nonzero >> 63);
}

/*
 * Of generation flushes of a buffer, holding amount, how much claim has
 * counted: all of it when claim is of a later generation (the thread's
 * batch took it whole), none when of an earlier one.  Without branches:
 * in the BPF side's retry loop (bpf/buffers.bpf.h, claim_raise) each
 * branch here was one more path for the verifier at every retry, 640
 * instructions walked by each thread-end program before the claims and
 * 7,600 with them.
 */
static inline __u64 kh_claim_counted(__u64 claim, __u64 flushes, __u64 amount)
{
	__u64 ahead = ((claim >> KH_CLAIM_SHIFT) - flushes) & ((KH_CLAIM_HALF_GENS << 1) - 1);
	__u64 have = claim & KH_CLAIM_AMOUNT, d, later, same;

	amount &= KH_CLAIM_AMOUNT;
	/* All ones when ahead is 0, the same generation: the lesser of have and amount. */
	same = ahead | (0 - ahead);
	KH_OPAQUE(same);
	same = (same >> 63) - 1;
	d = amount - have;
	d = (__u64)((__s64)d >> 63);
	KH_OPAQUE(d);
	have += (amount - have) & d;
	/* All ones when ahead is 1 to KH_CLAIM_HALF_GENS - 1, a later generation. */
	later = (ahead - 1) >> (63 - KH_CLAIM_SHIFT);
	later = later | (0 - later);
	KH_OPAQUE(later);
	later = (later >> 63) - 1;
	return (have & same) | (amount & later);
}

/*
 * What khprof knows of one thread of the traced process that registered a
 * batch buffer (thread_list, by thread id): where it is, what of it was
 * counted, and for probe ABI 7 the sequence number of the spans it expects
 * next.  A hash map, so that a session's start or end reaches every
 * thread's entry (bpf_for_each_map_elem) and a detach reads them by id.
 */
struct kh_thread_entry {
	__u64 state_addr; /* &kh_thread_state in the program */
	__u32 flags;      /* KH_THREAD_LAYOUT's bits */
	__u32 stored;     /* thread_store has the address too (for the sampler) */
	__u64 claim_spans;
	__u64 claim_bytes;
	__u64 claim_units;
	/* ABI 7: the flushed_spans of the thread's next batch, as far as khprof knows */
	__u64 next_flushed;
	/* The thread's last batch: its TSC and the kernel time then (a clock anchor). */
	__u64 anchor_ticks;
	__u64 anchor_ns;
};

/* Bytes of a thread's state khprof reads: up to and including `flushed_spans`. */
#define KH_TS_READ_BYTES (KH_TS_FLUSHED_SPANS_OFF + 8)

/*
 * What a thread that died or execed still held in its buffer, as the BPF
 * side read it; khprof counts it (userspace/capture/session/buffers.c).
 */
struct kh_buffer_event {
	__u32 type;             /* KH_EVENT_THREAD_BUFFER, where kh_event has its type */
	__u32 slot;             /* the session slot active then */
	__u32 tid;
	__u32 first;            /* the entries before this one were counted already */
	__u64 ts_ns;            /* when it was read: every span in it ended before */
	__u64 session_start_ns; /* slot_start_ns of the slot */
	/* A TSC reading of this CPU (its last flush) and the kernel time then; anchor_ns 0: none. */
	__u64 anchor_ticks;
	__u64 anchor_ns;
	/* The input in it not counted yet. */
	__u64 input_bytes;
	__u64 input_units;
	/*
	 * The first KH_TS_BATCH_OFF bytes of its kh_thread_state and its
	 * entries, `flushes` where the current layout has it; entries past
	 * batch_count unset.
	 */
	unsigned char state[KH_TS_READ_BYTES];
};

/*
 * Kernel internals bpf/layout.bpf.h reads by their layout, a bit each in
 * its layout_failed when a check of one fails (append only).
 */
enum kh_layout {
	KH_LAYOUT_ARRAY_VALUE = 0, /* where a bpf_array's elements start */
	KH_LAYOUT_CPU_OFFSETS = 1, /* each CPU's per-CPU offset */
	KH_LAYOUT_SCHED_CLOCK = 2, /* the scheduler's clock in a cpu-clock perf_event */
	KH_LAYOUT_UPROBE_SITE = 3, /* the running uprobe's file and offset (bpf/site.bpf.h) */
	KH_LAYOUT_COUNT
};

/*
 * A probe site as the kernel's uprobe names it, on kernels without BPF
 * cookies (bpf/site.bpf.h): the file's device (the kernel's dev_t,
 * major << 20 | minor) and inode, and the site's offset in the file.
 */
struct kh_site_key {
	__u64 ino;
	__u64 offset;
	__u32 dev;
	__u32 pad;
};

#endif /* KHPROF_SHARED_H */
