// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>

#include "compat.h"
#include "log.h"

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

/* An integer from a sysfs file of the uprobe PMU, or -1. */
static int uprobe_pmu_value(const char *file, const char *format)
{
	char path[128];
	int value = -1, hi;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/event_source/devices/uprobe/%s", file);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, format, &value, &hi) < 1)
		value = -1;
	fclose(f);
	return value;
}

int compat__uprobe_perf_link(int prog_fd, const char *path, __u64 offset, __u64 ref_ctr_offset,
			     __u64 cookie, pid_t pid, bool bpf_link)
{
	static int type = -2, ref_ctr_shift = -2;
	struct perf_event_attr attr;
	LIBBPF_OPTS(bpf_link_create_opts, opts, .perf_event.bpf_cookie = cookie);
	int pfd, fd, err;

	if (type == -2) {
		type = uprobe_pmu_value("type", "%d");
		/* "config:32-63": where the semaphore's offset goes in config */
		ref_ctr_shift = uprobe_pmu_value("format/ref_ctr_offset", "config:%d-%d");
	}
	if (type < 0 || (ref_ctr_offset && ref_ctr_shift < 0))
		return -EOPNOTSUPP;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = (__u32)type;
	if (ref_ctr_offset)
		attr.config = ref_ctr_offset << ref_ctr_shift;
	attr.config1 = (__u64)(unsigned long)path; /* uprobe_path */
	attr.config2 = offset;                      /* probe_offset */
	/* pid 0 is every process here, as for uprobe-multi links: perf's -1 on one CPU. */
	pfd = (int)syscall(__NR_perf_event_open, &attr, pid > 0 ? pid : -1, pid > 0 ? -1 : 0, -1,
			   PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0) {
		err = -errno;
		log__debug("cannot open a uprobe at 0x%llx of '%s': %s", (unsigned long long)offset,
			   path, strerror(-err));
		return err;
	}
	if (!bpf_link) {
		/*
		 * Before Linux 5.15 (no BPF perf link, no cookie): the program
		 * is set on the event itself, which holds it until the event's
		 * descriptor is closed; that descriptor is the link.
		 */
		if (ioctl(pfd, PERF_EVENT_IOC_SET_BPF, prog_fd) == 0)
			return pfd;
		err = -errno;
		log__debug("cannot set the program on the uprobe at 0x%llx of '%s': %s",
			   (unsigned long long)offset, path, strerror(-err));
		close(pfd);
		return err;
	}
	fd = bpf_link_create(prog_fd, pfd, BPF_PERF_EVENT, &opts);
	err = fd < 0 ? -errno : 0;
	if (err)
		log__debug("cannot link the uprobe at 0x%llx of '%s': %s",
			   (unsigned long long)offset, path, strerror(-err));
	/* The link holds the event: its descriptor is not needed any more. */
	close(pfd);
	return err ? err : fd;
}

int compat__empty_prog(enum bpf_prog_type type, int attach_type, __u32 attach_btf_id,
		       const char *name)
{
	/* r0 = 0; exit */
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = (enum bpf_attach_type)attach_type,
		    .attach_btf_id = attach_btf_id);
	int fd = bpf_prog_load(type, name, "GPL", insns, sizeof(insns) / sizeof(insns[0]), &opts);

	return fd < 0 ? -errno : fd;
}

int compat__store_site_ids(int sites_fd, int ip_fd, dev_t dev, ino_t ino, const __u64 *offsets,
			   const __u64 *ids, __u32 count)
{
	for (__u32 i = 0; i < count; i++) {
		/* The kernel's dev_t (MKDEV), not the one stat(2) encodes. */
		struct kh_site_key key = {
			.ino = (__u64)ino,
			.offset = offsets[i],
			.dev = (__u32)((major(dev) << 20) | minor(dev)),
		};
		__u32 id = (__u32)ids[i];
		long ip_key = (long)id;

		if (bpf_map_update_elem(sites_fd, &key, &id, BPF_ANY) ||
		    bpf_map_update_elem(ip_fd, &ip_key, &id, BPF_ANY))
			return -errno;
	}
	return 0;
}
