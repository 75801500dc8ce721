// SPDX-License-Identifier: MIT
/*
 * make bench row 11: what keeping and symbolizing --sample's stacks costs
 * khprof.  100,000 samples over 2,000 distinct 12-frame stacks of this
 * binary's and libc's functions go through the stack store
 * (userspace/capture/stacks/stackstore.c) as the sampler hands them over, then
 * one record takes them all, symbolized with libdwfl.  Prints
 * "add_ns_per_sample=N fill_ms=N names=N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "stackstore.h"

#define SAMPLES 100000
#define STACKS 2000
#define DEPTH 12

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(void)
{
	/* Code addresses to build stacks of: functions of libc and of this program. */
	const uintptr_t fns[] = {
		(uintptr_t)&printf, (uintptr_t)&malloc, (uintptr_t)&free, (uintptr_t)&memcpy,
		(uintptr_t)&strcmp, (uintptr_t)&qsort, (uintptr_t)&fopen, (uintptr_t)&fgets,
		(uintptr_t)&strtoul, (uintptr_t)&snprintf, (uintptr_t)&getpid, (uintptr_t)&main,
		(uintptr_t)&now_ns, (uintptr_t)&stack_store__add, (uintptr_t)&stack_store__fill,
		(uintptr_t)&stack_store__read_maps, (uintptr_t)&kh_stacks__add,
		(uintptr_t)&kh_stacks__free,
	};
	const size_t nfns = sizeof(fns) / sizeof(fns[0]);
	struct kh_stacks out = { 0 };
	struct stack_store store;
	struct kh_sample_event e;
	uint64_t t0, t1, t2;

	stack_store__init(&store, getpid(), 99);
	stack_store__read_maps(&store);
	memset(&e, 0, sizeof(e));
	e.tag = KH_SAMPLE_TAG_STAGE;
	e.frames = DEPTH;
	t0 = now_ns();
	for (uint32_t i = 0; i < SAMPLES; i++) {
		uint32_t s = (i * 7919u) % STACKS;

		e.ts_ns = i + 1;
		e.stage = s % KH_STAGE_COUNT;
		for (uint32_t d = 0; d < DEPTH; d++)
			e.ips[d] = fns[(s / (d + 1) + d) % nfns] + 1 + (s * 17 + d * 5) % 64;
		stack_store__add(&store, &e);
	}
	t1 = now_ns();
	stack_store__fill(&store, 0, UINT64_MAX, 0, &out);
	t2 = now_ns();
	printf("add_ns_per_sample=%.0f fill_ms=%.1f names=%zu stacks=%zu samples=%llu\n",
	       (double)(t1 - t0) / SAMPLES, (double)(t2 - t1) / 1e6, out.name_count,
	       out.stack_count, (unsigned long long)out.samples);
	kh_stacks__free(&out);
	stack_store__free(&store);
	return 0;
}
