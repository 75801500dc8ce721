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

# The latency and state items of khprof diff, on a second run of the same
# build (one run a side: plain thresholds; CI uses --repeat, docs/CI.md).
set +e
build/khprof record -q -o build/demo-profile-2.json -- \
	build/kh-scan --threads 2 --workload-class corpus "$corpus/tree" >/dev/null 2>>build/demo-record.log
set -e
echo
echo "demo: build/khprof diff build/demo-profile.json build/demo-profile-2.json (rows of two stages and the states)"
build/khprof diff build/demo-profile.json build/demo-profile-2.json 2>/dev/null |
	grep -E '^(item|wall|source-read\.|decode\.|[a-z]+\.(wall|cpu) )|^diff:' || true
