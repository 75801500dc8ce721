/* SPDX-License-Identifier: MIT */
/*
 * draws.h - the fixed-seed draws of the diff benches (bench/diff-rates,
 * bench/verdict): xorshift64, so that the same records give the same
 * trials and the same figures, run after run.
 */
#ifndef KHPROF_BENCH_DRAWS_H
#define KHPROF_BENCH_DRAWS_H

static unsigned long long draws_state = 0x9e3779b97f4a7c15ull;

static inline unsigned long long next_random(void)
{
	draws_state ^= draws_state << 13;
	draws_state ^= draws_state >> 7;
	draws_state ^= draws_state << 17;
	return draws_state;
}

#endif /* KHPROF_BENCH_DRAWS_H */
