/* SPDX-License-Identifier: MIT */
/*
 * warmer.h - takes the kernel's wait for the first uprobe registration of a
 * start-up off khprof's path, by having it happen while the BPF programs load.
 *
 * Registering a uprobe takes a system-wide percpu rw-semaphore for writing
 * (dup_mmap_sem, in register_for_each_vma).  When nobody has taken it for
 * writing within the last RCU grace period, the writer waits for a grace
 * period first (rcu_sync_enter); a writer within a grace period of the
 * previous one goes straight through.  So the first probe link of a
 * start-up waited 4-28 ms here (median ~11 ms) and the next ones ~0.03 ms.
 *
 * The warmer is a helper process that registers a uprobe every 2 ms on a
 * memfd of its own, a file no process maps (no code is patched and no
 * process can hit it), from before the load until khprof has attached:
 * its first registration waits for the grace period while the programs
 * load, and khprof's links find the semaphore warm.  It holds its links
 * and exits when told to (or after ~0.26 s), leaving the kernel's
 * slow unregistration (an RCU-tasks grace period per link) to its exit,
 * not khprof's.  Best effort: without it, start-up only takes longer.
 */
#ifndef KHPROF_WARMER_H
#define KHPROF_WARMER_H

#include <sys/types.h>

struct warmer {
	int stop_fd; /* the helper runs until this is closed; -1: not running */
	int quiet_fd; /* EOF once the helper holds none of khprof's descriptors */
	pid_t pid;   /* the helper's parent, reaped by warmer__stop; -1: none */
};

/* Starts the helper; leaves w->stop_fd at -1 (debug message) if it cannot. */
void warmer__start(struct warmer *w);
/* Tells the helper to exit; idempotent, and harmless if it never started. */
void warmer__stop(struct warmer *w);

#endif
