/* SPDX-License-Identifier: MIT */
/*
 * sampler.h - `--sample[=HZ]`: CPU-clock samples of the traced process's
 * threads, each with its user stack and the stage its thread has open
 * (bpf/sample.bpf.c, a BPF object of its own loaded only with --sample).
 */
#ifndef KHPROF_SAMPLER_H
#define KHPROF_SAMPLER_H

#include <stdint.h>
#include <sys/types.h>

#include "stackstore.h"

struct sampler;
struct khprof_bpf;
struct ring_buffer;

/*
 * 99 Hz, the rate of the flame-graph recipes (`perf record -F 99`,
 * bpftrace's profile:hz:99) rather than perf's 4000: off the 100 Hz of
 * timers so samples do not move in lockstep with periodic work, and cheap
 * enough to leave on for a whole scan (docs/SAMPLING.md).
 */
#define KH_SAMPLE_DEFAULT_HZ 99
#define KH_SAMPLE_MAX_HZ 10000

/* open -> configure -> load, sharing thread_store with the tracer's object. */
int sampler__load(struct sampler **out, struct khprof_bpf *skel, uint64_t hz);
/*
 * One CPU-clock event per thread of pid, with inherit, so that every
 * thread they start later is sampled too (threads found in a rescan of
 * /proc/PID/task until it shows no new one).
 */
int sampler__attach(struct sampler *s, pid_t pid, pid_t kernel_pid);
/* Adds the sample ring to the tracer's poll set. */
int sampler__add_ring(struct sampler *s, struct ring_buffer *rb);
/* Takes every sample waiting in the ring (before a record is written). */
void sampler__drain(struct sampler *s);
struct stack_store *sampler__store(struct sampler *s);
uint64_t sampler__ring_full(const struct sampler *s);
struct kh_profile;
/*
 * session_config.fill_stacks with the sampler as ctx: a record's stacks
 * from start_ns to end_ns, read from the ring first.
 */
void sampler__fill_stacks(struct kh_profile *p, uint64_t start_ns, uint64_t end_ns, void *ctx);
/* Stops sampling (detach): the samples taken stay for the records. */
void sampler__detach(struct sampler *s);
void sampler__close(struct sampler *s);

#endif /* KHPROF_SAMPLER_H */
