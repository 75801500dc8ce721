// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "compat.h"

/* union bpf_attr's link_create as Linux 6.6 lays it out for uprobe-multi. */
struct uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
	__u8 rest[64]; /* the rest of union bpf_attr stays zero */
};

int compat__uprobe_multi_link(int prog_fd, const char *path, const __u64 *offsets,
			      const __u64 *ref_ctr_offsets, const __u64 *cookies, __u32 count,
			      pid_t pid)
{
	struct uprobe_multi_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = prog_fd;
	attr.attach_type = KH_BPF_TRACE_UPROBE_MULTI;
	attr.path = (__u64)(unsigned long)path;
	attr.offsets = (__u64)(unsigned long)offsets;
	attr.ref_ctr_offsets = (__u64)(unsigned long)ref_ctr_offsets;
	attr.cookies = (__u64)(unsigned long)cookies;
	attr.cnt = count;
	attr.pid = (__u32)pid;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}
