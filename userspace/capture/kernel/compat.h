/* SPDX-License-Identifier: MIT */
/*
 * compat.h - what khprof needs from kernels newer than Debian's libbpf 1.1.
 *
 * uprobe-multi links (Linux 6.6) attach every probe site of a file with one
 * link; libbpf 1.1 knows neither the attach type nor its link_create
 * fields, so they are created with the raw bpf(2) command here (as
 * libbpf-tools' compat.c bridges what older libbpfs lack); on kernels
 * without them, one perf-event uprobe per site.
 */
#ifndef KHPROF_COMPAT_H
#define KHPROF_COMPAT_H

#include <stdbool.h>
#include <sys/types.h>

#include <linux/bpf.h>
#include <linux/types.h>

#include "khprof_shared.h"

/* BPF_TRACE_UPROBE_MULTI, newer than libbpf 1.1 and its headers. */
#define KH_BPF_TRACE_UPROBE_MULTI 48

/*
 * One uprobe-multi link of prog_fd to count sites of path in process pid.
 * Returns the link's fd or -errno.  The kernel opens path itself (both
 * here and below, following symlinks and magic links): khprof hands it a
 * held file's /proc/self/fd/N, the file it checked (capture/attach.c).
 */
int compat__uprobe_multi_link(int prog_fd, const char *path, const __u64 *offsets,
			      const __u64 *ref_ctr_offsets, const __u64 *cookies, __u32 count,
			      pid_t pid);

/*
 * Kernels without uprobe-multi links (before Linux 6.6, or with their
 * first, per-thread PID filter): one perf-event uprobe at offset of path,
 * linked to prog_fd with cookie (BPF cookies, Linux 5.15), in process pid
 * (0: every process).  Returns the link's fd or -errno.  Written here, not
 * with libbpf's bpf_program__attach_uprobe_opts, because khprof keeps bare
 * link descriptors for every traced file, as for the multi links.
 */
int compat__uprobe_perf_link(int prog_fd, const char *path, __u64 offset, __u64 ref_ctr_offset,
			     __u64 cookie, pid_t pid, bool bpf_link);

/*
 * Kernels without BPF cookies (before Linux 5.15): bpf_link false above
 * (PERF_EVENT_IOC_SET_BPF instead of a BPF perf link, the cookie unused),
 * and each site's spec id kept by the file's device and inode (of the
 * file attached, fstat(2)'s) and the site's offset in sites_fd
 * (bpf/site.bpf.h's kh_sites), and by itself in ip_fd (usdt.bpf.h's
 * address table, which khprof keys by spec id).  0 or -errno.
 */
int compat__store_site_ids(int sites_fd, int ip_fd, dev_t dev, ino_t ino, const __u64 *offsets,
			   const __u64 *ids, __u32 count);

/*
 * A program that returns 0, of type with expected attach_type (and the
 * kernel function attach_btf_id for tracing ones): what the feature probes
 * and the uprobe warmer attach, never to run anything.  Its fd or -errno.
 */
int compat__empty_prog(enum bpf_prog_type type, int attach_type, __u32 attach_btf_id,
		       const char *name);

#endif
