/* SPDX-License-Identifier: GPL-2.0 */
/*
 * site.bpf.h - part of khprof.bpf.c, included before libbpf's usdt.bpf.h:
 * which probe site is running, on kernels without BPF cookies for uprobes
 * (Linux 5.15; Debian 11's 5.10 lacks them, and with them the BPF perf
 * link, so khprof attaches there with PERF_EVENT_IOC_SET_BPF).
 *
 * libbpf's own answer without cookies is a table of absolute addresses,
 * which needs the traced process's mappings before its first probe fires
 * (it refuses shared libraries without a PID).  The kernel knows the site
 * without them: the uprobe handler that runs the program (uprobe_dispatcher
 * in kernel/trace/trace_uprobe.c, 5.10 to 6.18) points the thread's
 * utask->vaddr at a uprobe_dispatch_data on its stack, whose trace_uprobe
 * has the file and the offset khprof attached to.  khprof keeps each
 * site's spec id by (device, inode, offset) in kh_sites (attach.c), so
 * any process of the file is resolved, libraries and forks included.
 *
 * A kernel internal read by layout: where the chain cannot be read or
 * names no site khprof attached, the hit is not counted and
 * KH_LAYOUT_UPROBE_SITE says so on stderr and in the record.  Cost there:
 * four bpf_probe_read_kernel and a hash lookup per probe hit.
 */
#ifndef KHPROF_SITE_BPF_H
#define KHPROF_SITE_BPF_H

#ifndef ESRCH
#define ESRCH 3 /* as usdt.bpf.h's */
#endif

/* Set by the loader before load (KH_FEAT_BPF_COOKIE, kfeatures.h). */
const volatile bool have_bpf_cookie = 0;

/* Also in layout.bpf.h: one variable (C's tentative definitions). */
__u32 layout_failed;

/* One entry a site; max_entries KH_MAX_PROBE_SITES where used (load.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, struct kh_site_key);
	__type(value, __u32);
} kh_sites SEC(".maps");

/*
 * The spec id of the site running now, from the kernel's uprobe; -ESRCH if
 * unknown.  Inline, not a call: a call inside bpf_usdt_arg spilled its
 * argument number across it, and Linux 6.1's verifier then lost the
 * number's bound ("math between map_value pointer and register with
 * unbounded min value"), though the branch is dead there.
 */
static __always_inline long kh_site_spec_id(void *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct uprobe_dispatch_data *udd;
	struct trace_uprobe *tu;
	struct kh_site_key key = {};
	struct inode *inode;
	__u32 *id;

	if (!ctx)
		return -ESRCH;
	udd = (struct uprobe_dispatch_data *)BPF_CORE_READ(task, utask, vaddr);
	tu = udd ? BPF_CORE_READ(udd, tu) : NULL;
	inode = tu ? BPF_CORE_READ(tu, path.dentry, d_inode) : NULL;
	if (inode) {
		key.offset = BPF_CORE_READ(tu, offset);
		key.ino = BPF_CORE_READ(inode, i_ino);
		key.dev = BPF_CORE_READ(inode, i_sb, s_dev);
		id = bpf_map_lookup_elem(&kh_sites, &key);
		if (id)
			return *id;
	}
	layout_failed |= 1u << KH_LAYOUT_UPROBE_SITE;
	return -ESRCH;
}

/*
 * usdt.bpf.h's cookie, on either kind of kernel; on one without cookies
 * usdt.bpf.h takes its address branch, whose PT_REGS_IP khprof.bpf.c
 * points here too (and its table maps each id to itself).
 */
static __always_inline long kh_attach_cookie(void *ctx)
{
	if (have_bpf_cookie)
		return bpf_get_attach_cookie(ctx);
	return kh_site_spec_id(ctx);
}

#endif /* KHPROF_SITE_BPF_H */
