/* SPDX-License-Identifier: MIT */
/*
 * attach --all: which processes of a host map an ELF file that carries
 * keyhog probes, in any container.  Each file is read once (its notes, and
 * for a new program the libraries it names) and remembered by device and
 * inode, so that a host's thousands of processes cost one read per
 * distinct file.
 */
#ifndef KHPROF_HOST_SCAN_H
#define KHPROF_HOST_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct host_scan;

struct host_scan *host_scan__new(void);
void host_scan__free(struct host_scan *s);

/*
 * A process running when the watch starts: whether any file it has mapped
 * executable (its program, its libraries) carries keyhog probes.
 */
bool host_scan__running(struct host_scan *s, pid_t pid);

/*
 * A process stopped just after its execve: whether the program carries
 * keyhog probes, or a library it names (DT_NEEDED) does, found where its
 * loader looks in its own root (RUNPATH or RPATH with $ORIGIN, then the
 * system's library folders; not LD_LIBRARY_PATH or ld.so.cache): 1 or 0,
 * -1 when the program cannot be looked at (the process is gone), which
 * says nothing of the file.
 */
int host_scan__execed(struct host_scan *s, pid_t pid);

/* Distinct files whose notes were read so far (the cost of a scan). */
size_t host_scan__files_read(const struct host_scan *s);

#endif /* KHPROF_HOST_SCAN_H */
