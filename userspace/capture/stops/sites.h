/* SPDX-License-Identifier: MIT */
/*
 * sites.h - a forked child made safe to run the probe sites it inherited.
 *
 * A uprobe changes a probe site in the memory of every process it is
 * registered for: an int3 over the site's first byte, and on kernels with
 * optimized uprobes (Linux 6.18), once the process has hit a 5-byte nop
 * site, a call into a [uprobes-trampoline] page of that process.  fork
 * copies the changed text into the child but not the trampoline page:
 * the child jumps to an unmapped page at such a site (SIGSEGV), and once
 * a breakpoint registered for the child is laid over the inherited call
 * and lifted again (its tracer detached, khprof killed), the nop's first
 * byte is put back in front of the call's four (SIGILL).  Measured on this
 * kernel: khprof killed while a child ran, batch mode, the child died of
 * SIGILL, with and without --follow-forks.
 *
 * So a child the traced process forks gets the original bytes of every
 * probe site back before it runs a user instruction, read from the file
 * and written into its memory through /proc/PID/mem while it is stopped
 * at the fork (a private copy-on-write page, as the uprobe's own).  Its
 * text is then its parent's, untouched: no uprobe needs to be registered
 * for it, none ever needs lifting, and a tracer of its own
 * (--follow-forks) lays its breakpoints over the original bytes, which
 * the kernel puts back exactly when it detaches or khprof dies.
 *
 * The sites khprof links are kept in a table in shared memory (a memfd)
 * that the stop keeper maps too (stops.h), so that a child the keeper lets
 * go while khprof is stuck or gone is made safe the same way.  Plain logic
 * on /proc: no BPF.
 */
#ifndef KHPROF_SITES_H
#define KHPROF_SITES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/types.h>

struct site_table;

/* A fresh, empty table in a close-on-exec memfd (*fd), for khprof; 0 or -errno. */
int sites__create(struct site_table **out, int *fd);
/* The table another process created in fd (the keeper's); 0 or -errno. */
int sites__map(struct site_table **out, int fd);
void sites__unmap(struct site_table *t);

/*
 * Keeps path's probe sites (offsets in the file) with their original
 * bytes, read from the file, before they are linked: a site a uprobe has
 * changed must be in the table first.  A file already kept is not read
 * again.  0, or -errno (-ENOSPC: the table is full).
 */
int sites__publish(struct site_table *t, const char *path, const __u64 *offsets,
		   size_t count);

/*
 * Puts back in process pid the original bytes of every kept site it maps
 * where a uprobe left an int3 or a call; bytes of any other form are left
 * alone.  pid must not run meanwhile (stopped).  The number of sites
 * restored, or -errno (-ESRCH: pid is gone).
 */
int sites__restore(const struct site_table *t, pid_t pid);

#endif
