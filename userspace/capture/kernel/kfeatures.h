/* SPDX-License-Identifier: MIT */
/*
 * kfeatures.h - what the running kernel offers khprof's BPF side, probed at
 * run time (as bpftrace's bpffeature.cpp and libbpf's own probes do), and
 * what khprof does where a feature is missing.
 *
 * Kfuncs, tracepoints and layouts are looked up in the kernel's BTF (one
 * pass over its types, kept with the CO-RE target cache: btf_cache.h);
 * link types are tried.  The loader turns the result into .rodata flags
 * (bpf/compat.bpf.h) and program autoload before the load, so one object
 * serves every kernel from Linux 6.1 on.
 */
#ifndef KHPROF_KFEATURES_H
#define KHPROF_KFEATURES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Where the running kernel gives its BTF (CONFIG_DEBUG_INFO_BTF). */
#define VMLINUX_BTF "/sys/kernel/btf/vmlinux"

/* Append only, explicit values: the bits are kept in the CO-RE target cache. */
enum kh_kernel_feature {
	KH_FEAT_UPROBE_MULTI = 0,       /* uprobe-multi links filtering by process */
	KH_FEAT_PREEMPT_KFUNCS = 1,     /* bpf_preempt_disable / bpf_preempt_enable */
	KH_FEAT_RDONLY_CAST = 2,        /* bpf_rdonly_cast */
	KH_FEAT_COPY_FROM_USER_STR = 3, /* bpf_copy_from_user_str */
	KH_FEAT_SEND_SIGNAL_TASK = 4,   /* bpf_send_signal_task */
	KH_FEAT_PREPARE_EXEC = 5,       /* the sched_prepare_exec tracepoint */
	KH_FEAT_UPROBE_FUNC_IP = 6,     /* bpf_get_func_ip in uprobe programs */
	KH_FEAT_PERCPU_RSS = 7,         /* mm_struct's RSS counters are per-CPU counters */
	KH_FEAT_OPTIMIZED_UPROBES = 8,  /* probe sites rewritten into calls (x86-64) */
	KH_FEAT_EXIT_BEFORE_MM = 9,     /* sched_process_exit before exit_mm(), with group_dead */
	KH_FEAT_FENTRY = 10,            /* fentry programs (BPF trampolines on ftrace) */
	/* Without bpf_loop (Linux 5.17), the classic object (bpf/classic.bpf.h). */
	KH_FEAT_BPF_LOOP = 11,          /* the bpf_loop helper */
	KH_FEAT_TASK_STORAGE = 12,      /* BPF task-local storage (else hash maps by thread id) */
	KH_FEAT_BPF_COOKIE = 13,        /* BPF cookies for uprobes (else sites by file and offset) */
	KH_FEAT_SWITCH_PREV_STATE = 14, /* sched_switch's prev_state argument */
	KH_FEAT_RINGBUF = 15,           /* BPF ring buffers, through which every event comes */
	KH_FEAT_PREEMPT_OFF_CALLS = 16, /* global subprograms callable with preemption off */
	KH_FEAT_COUNT
};

/* The features that come from the kernel's BTF (cached per kernel build). */
#define KH_FEAT_BTF_MASK                                                                     \
	((1u << KH_FEAT_PREEMPT_KFUNCS) | (1u << KH_FEAT_RDONLY_CAST) |                        \
	 (1u << KH_FEAT_COPY_FROM_USER_STR) | (1u << KH_FEAT_SEND_SIGNAL_TASK) |               \
	 (1u << KH_FEAT_PREPARE_EXEC) | (1u << KH_FEAT_UPROBE_FUNC_IP) |                       \
	 (1u << KH_FEAT_PERCPU_RSS) | (1u << KH_FEAT_OPTIMIZED_UPROBES) |                     \
	 (1u << KH_FEAT_EXIT_BEFORE_MM) | (1u << KH_FEAT_FENTRY) | (1u << KH_FEAT_BPF_LOOP) |  \
	 (1u << KH_FEAT_TASK_STORAGE) | (1u << KH_FEAT_BPF_COOKIE) |                           \
	 (1u << KH_FEAT_SWITCH_PREV_STATE) | (1u << KH_FEAT_RINGBUF) |                         \
	 (1u << KH_FEAT_PREEMPT_OFF_CALLS))
/*
 * What khprof cannot do without: a kernel older than its oldest (5.10)
 * fails at the first, ring buffers (5.8), in one line instead of a
 * verifier's log.
 */
#define KH_FEAT_FLOOR_MASK (1u << KH_FEAT_RINGBUF)
/*
 * What the object for kernels without bpf_loop (bpf/classic.bpf.h) does
 * not use, should a kernel have it: kfuncs, task storage (its programs'
 * task is no BTF pointer) and fentry programs.
 */
#define KH_FEAT_CLASSIC_UNUSED                                                               \
	((1u << KH_FEAT_PREEMPT_KFUNCS) | (1u << KH_FEAT_RDONLY_CAST) |                        \
	 (1u << KH_FEAT_COPY_FROM_USER_STR) | (1u << KH_FEAT_SEND_SIGNAL_TASK) |               \
	 (1u << KH_FEAT_TASK_STORAGE) | (1u << KH_FEAT_FENTRY) |                              \
	 (1u << KH_FEAT_PREEMPT_OFF_CALLS))

/* How the kernel preempts kernel code (its preempt= mode). */
enum kh_preempt_mode { KH_PREEMPT_UNKNOWN, KH_PREEMPT_NONE, KH_PREEMPT_VOLUNTARY, KH_PREEMPT_FULL };

struct kh_features {
	uint32_t have;                 /* 1u << enum kh_kernel_feature */
	uint32_t btf_bits;             /* what the kernel's BTF says, before any is disabled */
	bool btf_read;                 /* btf_bits come from the BTF (or its cache), not a failure */
	uint32_t disabled;             /* turned off by KHPROF_DISABLE_FEATURES */
	uint32_t unused;               /* the kernel has them, the classic object does without */
	enum kh_preempt_mode preempt;
	char release[65];              /* uname -r */
};

static inline bool features__has(const struct kh_features *f, enum kh_kernel_feature feat)
{
	return f->have & (1u << feat);
}

/*
 * The feature bits found in the kernel's BTF at path; -errno when it
 * cannot be read.  One pass over its types.
 */
int features__scan_btf(const char *path, uint32_t *bits);
/*
 * Probes the running kernel: btf_bits from the CO-RE target cache when
 * known (btf_bits_known), else from the kernel's BTF; links by trying
 * them.  KHPROF_DISABLE_FEATURES=name,... (names as features__name gives
 * them; for tests and make bench) makes khprof behave as on a kernel
 * without them.  Never fails: an unreadable source counts as missing.
 */
void features__probe(struct kh_features *f, bool btf_bits_known, uint32_t btf_bits);
/* The feature's name as khprof prints it; NULL when out of range. */
const char *features__name(enum kh_kernel_feature feat);
/* The kernel release that brought it ("Linux 6.10"). */
const char *features__since(enum kh_kernel_feature feat);
/*
 * What a kernel without it costs the record, or NULL when its absence
 * costs nothing (khprof reads the same some other way).
 */
const char *features__cost(const struct kh_features *f, enum kh_kernel_feature feat);
/*
 * The first feature of khprof's floor that the kernel lacks, as "name
 * (since)" in buf, or NULL when it has them all.
 */
const char *features__floor_missing(const struct kh_features *f, char *buf, size_t len);
/* The table `khprof features` prints: every feature, found or not. */
void features__print(const struct kh_features *f, FILE *out);

#endif
