#!/bin/sh
# make demo: profile the reference scanner (build/kh-scan) on the bundled
# default corpus with khprof, write its HTML report beside the record, and
# end with the text report.
set -eu
cd "$(dirname "$0")/.."
corpus=build/demo-corpus
if [ ! -f "$corpus/truth.jsonl" ]; then
	# truth.jsonl is written last: without it the tree may be partial.
	rm -rf "$corpus"
	echo "demo: generating the default corpus in $corpus"
	build/kh-corpus --seed 1 --size 32 "$corpus"
fi
# --interval 10ms: the scan takes well under a second; the HTML report then
# shows its stages over time too.
echo "demo: build/khprof record --interval 10ms -o build/demo-profile.json -- build/kh-scan --threads 2 --workload-class corpus $corpus/tree"
set +e
build/khprof record --interval 10ms -o build/demo-profile.json -- \
	build/kh-scan --threads 2 --workload-class corpus "$corpus/tree" >build/demo-findings.jsonl 2>build/demo-record.log
status=$?
set -e
# kh-scan exits 1 when it reports findings, which the corpus plants.
if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
	cat build/demo-record.log >&2
	echo "demo: khprof record failed with exit code $status" >&2
	exit 1
fi
# Notes and warnings; the per-interval lines stay in the log.
grep '^khprof:' build/demo-record.log | grep -v '^khprof: [0-9.]*s ' >&2 || true
echo "demo: $(wc -l <build/demo-findings.jsonl) findings in build/demo-findings.jsonl," \
	"$(wc -l <"$corpus/truth.jsonl") planted; record in build/demo-profile.json"
build/khprof report --format html build/demo-profile.json >build/demo-report.html
echo "demo: HTML report in build/demo-report.html (open it in a browser)"
echo
build/khprof report build/demo-profile.json

# khprof diff as docs/CI.md recommends it: 10 runs a side, the two sides
# alternated (here both are the same build; a CI job alternates its two
# builds the same way), after one run left out to warm the caches. One run
# a side would judge noise: two single runs of the same build differ by
# 10-20 % per stage on this kind of machine.
rm -rf build/demo-runs-base build/demo-runs-candidate
mkdir -p build/demo-runs-base build/demo-runs-candidate
set +e
build/kh-scan --threads 2 --workload-class corpus "$corpus/tree" >/dev/null 2>&1
for run in 01 02 03 04 05 06 07 08 09 10; do
	for side in base candidate; do
		build/khprof record -q -o "build/demo-runs-$side/run-0$run.json" -- \
			build/kh-scan --threads 2 --workload-class corpus "$corpus/tree" >/dev/null 2>>build/demo-record.log
	done
done
set -e
echo
echo "demo: build/khprof diff build/demo-runs-base build/demo-runs-candidate (10 alternated runs of the same build a side; rows of two stages and the states)"
build/khprof diff --all build/demo-runs-base build/demo-runs-candidate 2>/dev/null |
	grep -E '^(item|wall|(source-read|decode)\.(elapsed|on_cpu|own|runnable)|[a-z]+\.(wall|cpu))†? |^diff:' || true
