#!/bin/sh
# Fuzzes the note reader and the argument-spec parser (fuzz_notes.c,
# fuzz_spec.c: libFuzzer, ASan and UBSan), SECONDS each:
#
#   tests/fuzz/run.sh SECONDS          make test: seed 1 and a fresh corpus
#                                      from the seeds below, so every run
#                                      tries the same inputs in the same
#                                      order (how many fit in the time is
#                                      the machine's); nothing is kept
#   tests/fuzz/run.sh SECONDS --keep   make fuzz: a random seed (printed),
#                                      the corpus kept in build/fuzz/ and
#                                      grown run after run
#
# An input that crashes, trips a sanitizer or breaks a promise the target
# checks is written to build/fuzz/crash-* (rerun it: build/fuzz/fuzz_notes
# FILE).  Closes with "fuzz: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
seconds=${1:?usage: tests/fuzz/run.sh SECONDS [--keep]}
keep=${2:-}
passed=0 failed=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Seeds: programs built against the header (and <sys/sdt.h>), one
# stripped, and the hand-made notes of the unit tests' fixtures; specs as
# the header, <sys/sdt.h> and libraries write them.
seed_notes() {
	mkdir -p "$1"
	for f in build/workloads/target build/workloads/sdt build/fixtures/usdt_note \
		build/fixtures/usdt_note_in_data; do
		[ -f "$f" ] && cp "$f" "$1/"
	done
	strip -o "$1/target-stripped" build/workloads/target 2>/dev/null || true
}
seed_spec() {
	mkdir -p "$1"
	i=0
	for s in '8@%rdi 8@$6' '8@%rdx 8@%rcx 8@%rsi 8@%rdi 8@%rax 8@%r8 8@$256' \
		'-4@-1204(%rbp) 8@(%r12)' '-4@$-5 1@%al 2@%r8w' '8@-80(%rbx) 4@%eax' \
		'-9223372036854775808@%rax' '8@$18446744073709551615' '8@0x10(%rsp)' \
		'8@x0 8@x1 8@x2 8@x3 8@x4 8@x5 8@256' '-4@[x1, -12] 8@[sp, 16] 8@[x29]' '-4@w7 8@sp 8@-5'; do
		printf '%s' "$s" >"$1/seed-$i"
		i=$((i + 1))
	done
}

# fuzz NAME MAX_LEN [libFuzzer options...]
fuzz() {
	name=$1
	max_len=$2
	shift 2
	bin=build/fuzz/fuzz_$name
	if [ "$keep" = --keep ]; then
		corpus=build/fuzz/corpus-$name
		seed=0
	else
		corpus=$work/corpus-$name
		seed=1
	fi
	[ -d "$corpus" ] || "seed_$name" "$corpus"
	echo "== $bin ($seconds s)"
	if "$bin" -seed=$seed -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
		-print_final_stats=1 -artifact_prefix=build/fuzz/crash- "$@" "$corpus" \
		>"$work/log" 2>&1; then
		passed=$((passed + 1))
		grep -E '^(INFO: Seed|Done|stat::number_of_executed_units)' "$work/log"
	else
		failed=$((failed + 1))
		tail -n 40 "$work/log"
	fi
}

mkdir -p build/fuzz
fuzz notes 65536
fuzz spec 256 -dict=tests/fuzz/spec.dict
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
