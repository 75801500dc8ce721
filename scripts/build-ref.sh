#!/bin/sh
# Builds an earlier khprof from this repository's history, for make bench's
# "same run" reference rows (bench/run.sh): a figure in docs/PERFORMANCE.md
# from another day had another load, so a claim of "no regression since
# commit X" is only honest when X's khprof runs alternated with this one.
#
#   scripts/build-ref.sh COMMIT OUTDIR
#
# Writes OUTDIR/khprof, OUTDIR/span_cost and OUTDIR/first_probe, each built
# from COMMIT's own sources (its probe header too: an older khprof reads
# only its own probe ABI). Exits 1 with one line when COMMIT is not in the
# history (a shallow clone) or does not build; the bench then says n/a.
set -eu
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: scripts/build-ref.sh COMMIT OUTDIR" >&2; exit 2; }
commit=$1
out=$2
git rev-parse -q --verify "$commit^{commit}" >/dev/null 2>&1 ||
	{ echo "build-ref: commit '$commit' is not in this clone's history (a shallow clone?)" >&2; exit 1; }
src=build/ref/$(git rev-parse --short=12 "$commit")
if [ ! -x "$src/build/khprof" ]; then
	rm -rf "$src"
	mkdir -p "$src"
	git archive "$commit" | tar -x -C "$src"
	# Its own Makefile, its own build/: nothing of this tree's is reused.
	make -C "$src" -s build/khprof >"$src.log" 2>&1 ||
		{ echo "build-ref: '$commit' does not build here (see $src.log)" >&2; exit 1; }
fi
mkdir -p "$out"
cp "$src/build/khprof" "$out/khprof"
gcc -O2 -I"$src/include" -pthread -o "$out/span_cost" "$src/bench/span_cost.c"
gcc -O2 -I"$src/include" -pthread -o "$out/first_probe" "$src/bench/first_probe.c"
