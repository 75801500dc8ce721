#!/usr/bin/env bash
# How good khprof diff's verdicts are, beside the gate a user would script
# instead (docs/CI.md, "How good the verdicts are"): records a pool of
# alternated runs of each configuration with bench/verdict/record.sh, unless
# DIR already holds one, then draws TRIALS trials of SIDE runs a side from
# it with build/verdict_rates and prints their table (Markdown) on stdout.
#
#   bench/verdict/run.sh [DIR [ROUNDS]]     (as root when DIR must be recorded)
#
# TRIALS (default 1000) trials a row, SIDE (default 10) runs a side, ROUNDS
# (default 30) rounds recorded.  make bench runs it into build/bench/raw.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-build/verdict-runs}
make -s build/khprof build/kh-scan build/kh-corpus build/workloads/stagework \
	build/workloads/hog build/verdict_rates
[ -d "$dir" ] || bench/verdict/record.sh "$dir" "${2:-30}"
build/verdict_rates "$dir" "${TRIALS:-1000}" "${SIDE:-10}"
