// SPDX-License-Identifier: MIT
/*
 * The kernel's BTF parsed on transparent huge pages (btf_heap.h).
 *
 * libbpf 1.1 reads a raw BTF file (the kernel's: 5.5 MB here) into one
 * malloc'd buffer and copies it into a second (btf__parse): about 2,500
 * first touches of a 4 KiB page, each a page fault.  On this project's
 * reference VM, which shadows page tables, a fault costs ~24 us (6 MiB
 * touched: 37 ms on 4 KiB pages, 1.1 ms on 2 MiB ones), so a start-up spent
 * ~60 ms of its ~130 there; on bare metal they cost ~1 ms.  glibc has no
 * run-time switch for huge pages (only the glibc.malloc.hugetlb tunable,
 * read at exec, which would also reach the traced command), and libbpf
 * takes no buffer of ours, so around the parse:
 *
 *  - large blocks come from the heap, not from mmap, and no free trims it
 *    (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD);
 *  - the heap is grown once by what the two copies take and freed again,
 *    which leaves that memory as the heap's top;
 *  - the copies' span of it, from a 2 MiB boundary, is advised huge, and a
 *    pad block puts the first copy just before that boundary (libbpf's small
 *    blocks before it take the few KiB between).
 *
 * The span is rounded down to whole huge pages, so the copies touch no more
 * memory than before (peak RSS unchanged; the last partial 2 MiB stays on
 * small pages, ~250 faults).  Where THP is off or glibc lays the heap out
 * another way, the advice does nothing and the parse runs as before: only
 * its speed depends on this, never what it reads.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "btf_heap.h"

#define HUGE_PAGE_BYTES ((size_t)2 << 20)
/* libbpf's small blocks (the FILE and its buffer) before the first copy. */
#define HEAD_BYTES ((size_t)64 << 10)
/* glibc's default for both thresholds (mallopt(3)). */
#define DEFAULT_THRESHOLD (128 * 1024)

/* What begin returns when the pad could not be allocated: end still restores. */
static char no_pad;

void *btf_heap__begin(const char *path)
{
	size_t span, grow_len, pad;
	uintptr_t top, start;
	struct stat st;
	char *grow;

	if (stat(path, &st) != 0 || st.st_size <= 0 || st.st_size > (64 << 20))
		return NULL;
	span = 2 * (size_t)st.st_size;
	grow_len = span + 2 * HUGE_PAGE_BYTES + HEAD_BYTES;
	if (mallopt(M_MMAP_THRESHOLD, (int)(grow_len * 2)) != 1 ||
	    mallopt(M_TRIM_THRESHOLD, (int)(grow_len * 2)) != 1) {
		btf_heap__end(NULL);
		return NULL;
	}
	grow = malloc(grow_len);
	if (!grow) {
		btf_heap__end(NULL);
		return NULL;
	}
	top = (uintptr_t)grow;
	free(grow);
	start = (top + HEAD_BYTES + HUGE_PAGE_BYTES - 1) & ~(uintptr_t)(HUGE_PAGE_BYTES - 1);
	pad = start - HEAD_BYTES - top;
	madvise((void *)start, span & ~(HUGE_PAGE_BYTES - 1), MADV_HUGEPAGE);
	/* Never NULL where the heap was laid out: end must restore the thresholds. */
	grow = malloc(pad ? pad : 1);
	return grow ? grow : &no_pad;
}

void btf_heap__end(void *cookie)
{
	if (cookie != &no_pad)
		free(cookie);
	mallopt(M_TRIM_THRESHOLD, DEFAULT_THRESHOLD);
	mallopt(M_MMAP_THRESHOLD, DEFAULT_THRESHOLD);
	/* The copies are freed by now: their memory goes back to the kernel. */
	malloc_trim(0);
}
