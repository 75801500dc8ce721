#!/bin/sh
# The false-alarm and detection rates of docs/CI.md ("The archived kh-scan
# series"): records RUNS runs of kh-scan on the demo corpus (or takes an
# existing directory of them) and resamples them with build/diff_rates.
#   bench/diff-rates/run.sh [DIR [RUNS]]     (as root when DIR must be recorded)
# DRAWS (default 400) comparisons a cell, for each count of runs a side in
# SIDES (default "5 8 10").
set -eu
cd "$(dirname "$0")/../.."
dir=${1:-build/diff-rates-runs}
runs=${2:-60}
make -s build/khprof build/kh-scan build/kh-corpus build/diff_rates
if [ ! -d "$dir" ]; then
	[ -f build/demo-corpus/truth.jsonl ] || build/kh-corpus --seed 1 --size 32 build/demo-corpus
	# kh-scan exits 1 when it reports findings, and record with the command's status.
	status=0
	build/khprof record --repeat "$runs" --warmup 1 -o "$dir" -- \
		build/kh-scan --threads 2 --workload-class corpus build/demo-corpus/tree >/dev/null ||
		status=$?
	[ "$status" -le 1 ] || exit "$status"
fi
for side in ${SIDES:-5 8 10}; do
	build/diff_rates "$dir" "${DRAWS:-400}" "$side"
done
