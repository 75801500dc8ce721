/* SPDX-License-Identifier: MIT */
/*
 * btf_cache.h - the CO-RE targets of khprof's BPF object for the running
 * kernel, kept between runs.
 *
 * libbpf 1.1 resolves each CO-RE relocation by scanning the whole kernel
 * BTF (126,000 types here) once for every kernel struct the object names:
 * about 1 ms per struct, 7 structs, at every start.  `bpftool gen
 * min_core_btf` writes a BTF of just the types the object uses, with the
 * kernel's layouts; given as libbpf's btf_custom_path, the same relocations
 * resolve in microseconds.  Measured: launch to probes live 38.5 -> 31.8 ms
 * (medians of 5 alternating runs, first_probe).  The kernel's own BTF is
 * still parsed (tp_btf programs and kfuncs need its ids); the type ids
 * bpf_rdonly_cast needs are kept beside the small BTF, whose ids differ.
 *
 * One file pair per kernel build (its GNU build id, /sys/kernel/notes) and
 * BPF object (a hash taken at build time), in KHPROF_CACHE_DIR or
 * /var/cache/khprof, used and written only when khprof runs as uid 0 and the
 * directory and files are root's and writable by no one else.  The first
 * run on a kernel loads without it and, when it closes, leaves a background
 * process to write it (bpftool; ~50 ms of CPU at nice 19).
 */
#ifndef KHPROF_BTF_CACHE_H
#define KHPROF_BTF_CACHE_H

#include <limits.h>
#include <stdbool.h>
#include <linux/types.h>

/* The kernel structs whose ids the BPF side casts to (KERNEL_TYPE_ID). */
enum btf_cache_id { BTF_ID_TASK_STRUCT, BTF_ID_MM_STRUCT, BTF_ID_SIGNAL_STRUCT, BTF_ID_COUNT };

struct btf_cache {
	char btf_path[PATH_MAX]; /* the small BTF; "" when there is no cache to use */
	char ids_path[PATH_MAX];
	__u32 ids[BTF_ID_COUNT]; /* the kernel's ids of those structs */
	__u32 features;          /* the kernel's features found in its BTF (kfeatures.h) */
	bool features_known;     /* features were read (from the cache, or by this run) */
	bool usable;             /* both files are there and trusted: load with them */
	bool fillable;           /* no cache yet, but one may be written */
};

/* Looks for this kernel's and object's cache; never fails (usable or not). */
void btf_cache__find(struct btf_cache *c);
/* After a load that failed with it: removes it, so the next run rebuilds it. */
void btf_cache__forget(struct btf_cache *c);
/*
 * When c->fillable: forks a background process that writes the cache from
 * the object's ELF bytes; once per khprof process.
 */
void btf_cache__fill(struct btf_cache *c, const void *object, size_t object_len);

#endif
