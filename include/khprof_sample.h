/* SPDX-License-Identifier: MIT */
/*
 * khprof_sample.h - what the stack sampler (bpf/sample.bpf.c, its own BPF
 * object, loaded only with --sample) hands to khprof
 * (userspace/capture/stacks/sampler.c): one ring-buffer record per sample.
 */
#ifndef KHPROF_SAMPLE_H
#define KHPROF_SAMPLE_H

#ifdef __bpf__
#include "vmlinux.h"
#else
#include <linux/types.h>
#endif

/*
 * User frames kept per sample.  64 x 8 bytes keeps a record at 560 bytes:
 * at 999 Hz on 8 threads that is 4.5 MB/s through the ring, and a
 * scanner's stacks are rarely deeper (kh-scan's deepest is 14); a stack cut
 * at the bound is counted (truncated) and keeps its innermost frames.
 */
#define KH_SAMPLE_MAX_FRAMES 64

/*
 * How a sample's stage was found.  Wire values: append only, never change
 * (the record names them through kh_sample_tag__name).
 */
enum kh_sample_tag {
	KH_SAMPLE_TAG_STAGE = 0,        /* the innermost open span's stage */
	KH_SAMPLE_TAG_NO_STAGE = 1,     /* the thread's span stack was empty */
	KH_SAMPLE_TAG_UNREGISTERED = 2, /* the thread had no traced span yet: no stage */
	KH_SAMPLE_TAG_UNREADABLE = 3,   /* its span stack could not be read */
	KH_SAMPLE_TAG_TOO_DEEP = 4,     /* deeper than the program's stack bound */
	KH_SAMPLE_TAG_COUNT
};

/*
 * Words of the user stack copied from the stack pointer up: a function that
 * has not pushed a frame pointer (a leaf; any function in its prologue)
 * keeps its return address within them (on aarch64, in its link register
 * until its prologue stores it there), where the frame-pointer walk skips
 * its caller.  khprof finds it with the function's CFI
 * (userspace/capture/stacks/stackstore.c); 8 words cover a leaf that saved up to
 * seven registers.
 */
#define KH_SAMPLE_STACK_WORDS 8

struct kh_sample_event {
	__u64 ts_ns;       /* bpf_ktime_get_ns at the sample */
	__u32 tid;
	__u32 tag;         /* enum kh_sample_tag */
	__u32 stage;       /* enum kh_stage with KH_SAMPLE_TAG_STAGE */
	__u32 attribution; /* the thread's attribution then */
	__s32 frames;      /* user frames in ips, innermost first; < 0: -errno of bpf_get_stack */
	__u32 in_kernel;   /* the sample interrupted a system call or fault */
	__u64 sp;          /* the user stack pointer; 0: words unread */
	__u64 lr;          /* aarch64: the user link register (x30), 0 unread; 0 elsewhere */
	__u64 words[KH_SAMPLE_STACK_WORDS]; /* the user stack at sp */
	__u64 ips[KH_SAMPLE_MAX_FRAMES];
};

/*
 * Where the sampler reads a thread's open spans in its struct
 * kh_thread_state (include/keyhog_profile.h; checked in sampler.c): depth
 * and attribution are one 8-byte read, the innermost stage one more.
 */
#define KH_TS_DEPTH_OFF 0
#define KH_TS_ATTRIBUTION_OFF 4
#define KH_TS_STAGE_OFF 16

#endif /* KHPROF_SAMPLE_H */
