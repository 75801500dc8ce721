/* SPDX-License-Identifier: MIT */
/*
 * misses.h - how often the kernel did not run one of khprof's programs.
 *
 * The kernel runs a tracing program at most once per CPU at a time: an
 * event that comes while the program is already running on that CPU (a
 * run preempted inside it: Linux 7.x runs tracepoints preemptible, with
 * preempt=full) is not handed to it, and only the program's
 * recursion_misses counter says so (Linux 5.12).
 */
#ifndef KHPROF_MISSES_H
#define KHPROF_MISSES_H

#include <stddef.h>
#include <stdint.h>

struct bpf_object;
struct bpf_program;

/* How often the kernel skipped prog, 0 when it cannot say (before 5.12, or not loaded). */
uint64_t program__misses(const struct bpf_program *prog);

/*
 * The misses of obj's loaded programs, summed, and "name N, ..." of those
 * with any in by_name.  kh_thread_exit and kh_thread_exit_again are left
 * out: each end they miss is taken by the next of the three
 * (bpf/thread_ends.bpf.h), and one all three miss is counted as a thread
 * that ended unseen (drain.c).  For tests,
 * KHPROF_TEST_PROGRAM_MISSES=N adds N misses to kh_rss_stat.
 */
uint64_t programs__misses(const struct bpf_object *obj, char *by_name, size_t len);

struct tracer;
/* New misses since the last call: a line of the records' kernel.degraded and a warning. */
void tracer__note_misses(struct tracer *t);

#endif
