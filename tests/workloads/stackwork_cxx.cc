// SPDX-License-Identifier: MIT
/*
 * Traced C++ workload for tests/integration/tracing/test_stacks.c: the
 * names --sample reports for a C++ program (Itanium-mangled symbols,
 * demangled by khprof at output), built with g++ against
 * include/keyhog_profile.h alone, with frame pointers.  stackwork.c's
 * shape with C++'s kinds of names:
 *
 *   phase1-triggers  kh::detail::Table<std::string, std::vector<int>>::probe
 *                    (a class template's const member) and
 *                    kh::operator<<(kh::Sink&, unsigned long), 3:1
 *   decode           (anonymous namespace)::Decoder::operator() alone
 *                    (a scoped span, attribution decoded)
 *   (no stage)       kh::idle<3>, a function template, between the spans
 *
 *   stackwork-cxx ROUNDS
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "keyhog_profile.h"
#include "spin.h"

#define UNIT 200000ull

namespace kh {

struct Sink {
	uint64_t seen;
};

namespace detail {

template <typename Key, typename Value> struct Table {
	__attribute__((noinline, noipa)) void probe(uint64_t n) const
	{
		SPIN(n, 6364136223846793005ull);
	}
};

} // namespace detail

__attribute__((noinline, noipa)) Sink &operator<<(Sink &s, uint64_t n)
{
	SPIN(n, 2862933555777941757ull);
	s.seen += n;
	return s;
}

template <int K> __attribute__((noinline, noipa)) void idle(uint64_t n)
{
	SPIN(n * K / 3, 1181783497276652981ull);
}

} // namespace kh

namespace {

struct Decoder {
	__attribute__((noinline, noipa)) void operator()(uint64_t n) const
	{
		SPIN(n, 3202034522624059733ull);
	}
};

} // namespace

int main(int argc, char **argv)
{
	const kh::detail::Table<std::string, std::vector<int>> table{};
	const Decoder decode{};
	kh::Sink sink_out{ 0 };
	unsigned rounds;

	if (argc < 2) {
		std::fprintf(stderr, "usage: stackwork-cxx ROUNDS\n");
		return 2;
	}
	rounds = (unsigned)std::strtoul(argv[1], nullptr, 10);
	KH_SESSION_START();
	KH_TRANSITION(KH_STATE_SCANNING);
	for (unsigned r = 0; r < rounds; r++) {
		enum kh_attribution prev;

		KH_SPAN_ENTER(KH_STAGE_PHASE1_TRIGGERS);
		table.probe(3 * UNIT);
		sink_out << UNIT;
		KH_SPAN_EXIT(KH_STAGE_PHASE1_TRIGGERS);
		/* Decoded around the whole span: every decode sample is decoded. */
		prev = kh_set_attribution(KH_ATTRIBUTION_DECODED);
		{
			KH_SPAN_SCOPE(KH_STAGE_DECODE);

			decode(2 * UNIT);
		}
		kh_set_attribution(prev);
		kh::idle<3>(UNIT);
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	std::printf("seen=%llu\n", (unsigned long long)sink_out.seen);
	return 0;
}
