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
 *  - a large block is allocated and freed untouched, which raises glibc's
 *    dynamic mmap and trim thresholds above what the parse takes (as
 *    libbpf's own free of its first copy would, after the parse): large
 *    blocks then come from the heap, and no free trims it;
 *  - the heap is grown once by what the two copies take and freed again,
 *    which leaves that memory as the heap's top;
 *  - the copies' span of it, from a 2 MiB boundary, is advised huge, and a
 *    pad block puts the first copy just before that boundary (libbpf's small
 *    blocks before it take the few KiB between);
 *  - after the parse malloc_trim gives the freed copies back.
 *
 * The span is rounded down to whole huge pages, so the copies touch no more
 * memory than before (peak RSS unchanged; the last partial 2 MiB stays on
 * small pages, ~250 faults).  No mallopt: it would fix glibc's thresholds
 * for the rest of the run.  Where THP is off or glibc lays the heap out
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
/* glibc raises its thresholds dynamically up to 32 MiB on 64-bit (mallopt(3)). */
#define MAX_DYNAMIC_THRESHOLD ((size_t)32 << 20)

/* What begin returns when the pad could not be allocated. */
static char no_pad;

void *btf_heap__begin(const char *path)
{
	size_t span, grow_len, pad;
	uintptr_t top, start;
	char *volatile prime;
	struct stat st;
	char *grow;

	if (stat(path, &st) != 0 || st.st_size <= 0)
		return NULL;
	span = 2 * (size_t)st.st_size;
	grow_len = span + 2 * HUGE_PAGE_BYTES + HEAD_BYTES;
	if (grow_len + HEAD_BYTES > MAX_DYNAMIC_THRESHOLD)
		return NULL;
	/*
	 * Mapped and unmapped, never touched: the thresholds rise above
	 * grow_len.  Volatile, or the compiler drops the pair.
	 */
	prime = malloc(grow_len + HEAD_BYTES);
	free(prime);
	grow = malloc(grow_len);
	if (!grow)
		return NULL;
	top = (uintptr_t)grow;
	free(grow);
	start = (top + HEAD_BYTES + HUGE_PAGE_BYTES - 1) & ~(uintptr_t)(HUGE_PAGE_BYTES - 1);
	pad = start - HEAD_BYTES - top;
	madvise((void *)start, span & ~(HUGE_PAGE_BYTES - 1), MADV_HUGEPAGE);
	grow = malloc(pad ? pad : 1);
	return grow ? grow : &no_pad;
}

void btf_heap__end(void *cookie)
{
	if (!cookie)
		return;
	if (cookie != &no_pad)
		free(cookie);
	/* The parse's copies, freed by now, go back to the kernel. */
	malloc_trim(0);
}
