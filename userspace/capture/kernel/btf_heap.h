/* SPDX-License-Identifier: MIT */
/*
 * btf_heap.h - the kernel's BTF parsed on transparent huge pages.
 *
 * libbpf parses a raw BTF file into two heap copies; where a first touch of
 * a page is costly (a VM that shadows page tables) their faults were most of
 * a start-up.  btf_heap__begin lays the heap out so that those copies land
 * on memory advised MADV_HUGEPAGE, btf_heap__end undoes it; calls that
 * parse a BTF file go between the two (the BPF load, the features scan).
 */
#ifndef KHPROF_BTF_HEAP_H
#define KHPROF_BTF_HEAP_H

/* For the BTF file at path; returns what btf_heap__end takes (NULL: nothing done). */
void *btf_heap__begin(const char *path);
void btf_heap__end(void *cookie);

#endif
