/* SPDX-License-Identifier: MIT */
/*
 * compat.h - what khprof needs from kernels newer than Debian's libbpf 1.1.
 *
 * uprobe-multi links (Linux 6.6) attach every probe site of a file with one
 * link; libbpf 1.1 knows neither the attach type nor its link_create
 * fields, so they are created with the raw bpf(2) command here (as
 * libbpf-tools' compat.c bridges what older libbpfs lack).
 */
#ifndef KHPROF_COMPAT_H
#define KHPROF_COMPAT_H

#include <sys/types.h>

#include <linux/types.h>

/* BPF_TRACE_UPROBE_MULTI, newer than libbpf 1.1 and its headers. */
#define KH_BPF_TRACE_UPROBE_MULTI 48

/*
 * One uprobe-multi link of prog_fd to count sites of path in process pid.
 * Returns the link's fd or -errno.
 */
int compat__uprobe_multi_link(int prog_fd, const char *path, const __u64 *offsets,
			      const __u64 *ref_ctr_offsets, const __u64 *cookies, __u32 count,
			      pid_t pid);

#endif
