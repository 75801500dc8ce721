/* SPDX-License-Identifier: MIT */
/*
 * procfs.h - the seed's process_resources(), for another process.
 *
 * The seed samples /proc/self; khprof samples the traced pid the same way:
 * cpu_time_ms from utime+stime in /proc/PID/stat, resident and virtual
 * bytes and the thread count from /proc/PID/status.
 */
#ifndef KHPROF_PROCFS_H
#define KHPROF_PROCFS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "record.h"

/*
 * Fills *out; fields that cannot be read are left absent.  Returns 0 when
 * both files were read, else the -errno of the first that was not (the
 * process may have exited), with *out holding whatever was read.
 */
int procfs__sample(pid_t pid, struct kh_resource_snapshot *out);

/*
 * cpu_time_ms from the text of a stat file: utime and stime, the 12th and
 * 13th fields after the last ')', in ticks_per_sec ticks.  0 when present,
 * -EINVAL when the text or tick rate does not allow it (cpu_ms absent).
 */
int procfs__parse_stat(const char *stat, long ticks_per_sec, struct kh_opt_u64 *cpu_ms);

/*
 * As procfs__sample, with the CPU time from the process's CPU clock
 * (clock_getcpuclockid: the kernel's ns, exited threads included) instead
 * of stat's 10 ms ticks, so that khprof's own samples and the --interval
 * series are as exact as the probe handler's; *cpu_ns is left absent (and
 * the ticks kept) when the clock cannot be read.
 */
int procfs__sample_ns(pid_t pid, struct kh_resource_snapshot *out, struct kh_opt_u64 *cpu_ns);

/* VmRSS and VmSize (kB, scaled to bytes) and Threads of a status file. */
void procfs__parse_status(const char *status, struct kh_resource_snapshot *out);

/*
 * A NUL-terminated string of at most len - 1 bytes at addr in process pid,
 * read with process_vm_readv (faulting its pages in, as the process would).
 * 0 (a longer string cut to len - 1 bytes, as the BPF side cuts it), or -errno.
 */
int procfs__read_string(pid_t pid, uint64_t addr, char *buf, size_t len);

/* One line of /proc/PID/maps (proc(5)). */
struct procfs_mapping {
	uint64_t start, end;  /* the addresses it covers, end excluded */
	uint64_t offset;      /* of start in the mapped file */
	unsigned int dev_major, dev_minor; /* the file's device, as the kernel maps it */
	uint64_t inode;       /* 0: not a file */
	char perms[8];        /* "r-xp" */
	char path[PATH_MAX];  /* "" for an anonymous mapping; may end in " (deleted)" */
};

/* Parses one line of a maps file; 0, or -EINVAL for text that is not a mapping. */
int procfs__parse_mapping(const char *line, struct procfs_mapping *m);

/*
 * Calls fn with each mapping of process pid, in the file's order, until fn
 * returns non-zero: the one reader of /proc/PID/maps.  Returns 0, fn's
 * non-zero value, or -errno when the file cannot be opened (ENOENT: the
 * process is gone; EACCES: khprof may not read it).  fn NULL only checks
 * that the file opens.
 */
typedef int (*procfs_mapping_fn)(const struct procfs_mapping *m, void *ctx);
int procfs__for_each_mapping(pid_t pid, procfs_mapping_fn fn, void *ctx);

/*
 * What deciding whether to end a stop needs of a process (stops.h): its
 * state letter, with with_start its start time from /proc/PID/stat, and,
 * when it is stopped ('T'), whether a stop signal (SIGSTOP, SIGTSTP,
 * SIGTTIN, SIGTTOU) is still pending for it, from /proc/PID/status:
 * someone asked it to stop after it had.  Each file costs 20-35 us here.
 */
struct procfs_stop_view {
	char state;
	uint64_t start_ticks; /* starttime: clock ticks since boot (with_start) */
	bool stop_pending;
};
int procfs__stop_view(pid_t pid, bool with_start, struct procfs_stop_view *out);
/* Its parts, for tests: the stat line, the status file. */
int procfs__parse_stop_stat(const char *stat, struct procfs_stop_view *out);
int procfs__parse_stop_status(const char *status, struct procfs_stop_view *out);

#endif /* KHPROF_PROCFS_H */
