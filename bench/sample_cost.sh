#!/usr/bin/env bash
# bench/sample_cost.sh KHPROF STACKWORK SYMBOLIZE OUTDIR: what --sample costs.
# Records tests/workloads/stackwork (one thread, all CPU, spans of two
# stages) ROUNDS times each without sampling and at 99 and 999 Hz,
# alternated, and prints the medians of
#   wall0_ms= wall99_ms= wall999_ms=   the program's own wall (its clock)
#   ratio99= ratio999=                 median per-round ratio to no sampling
#   cpu_ratio99= cpu_ratio999=         the same of the program's own CPU time
#                                      (the sample program runs on its time)
#   cpu_per_sample_us=                 khprof's CPU (its own and its
#                                      children's but the program's) per
#                                      sample: 999 against 99 Hz, per
#                                      sample more
#   cpu_fixed_ms=                      what sampling adds to khprof's CPU
#                                      besides (loading the sampler,
#                                      reading symbol tables): 99 Hz against
#                                      none, less the samples' share
#   samples999=                        samples in a 999 Hz record
#   fill_ms= add_ns=                   bench/symbolize.c: 100,000 samples
# Run by bench/run.sh (row 11); usable alone, as root.
set -euo pipefail
KHPROF=$1 SW=$2 SYMBOLIZE=$3 out=$4
ROUNDS=${ROUNDS:-7}
WORK=${WORK:-600}
mkdir -p "$out"
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# run HZ: one record; appends "wall_ns khprof_cpu_ns samples program_cpu_ns" to $out/HZ.
run() {
	local hz=$1 opt=()
	[ "$hz" = 0 ] || opt=(--sample="$hz")
	python3 - "$out/r.json" "$KHPROF" record -q "${opt[@]}" -o "$out/r.json" -- "$SW" "$WORK" <<'PY' >>"$out/$hz"
import json, re, resource, subprocess, sys
r = subprocess.run(sys.argv[2:], capture_output=True, text=True, check=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
m = re.search(r"own_wall_ns=(\d+) cpu_ns=(\d+)", r.stdout)
stacks = json.load(open(sys.argv[1])).get("khprof", {}).get("stacks", {})
total = int((u.ru_utime + u.ru_stime) * 1e9)
print(m.group(1), total - int(m.group(2)), stacks.get("samples", 0), m.group(2))
PY
}
rm -f "$out/0" "$out/99" "$out/999"
for _ in $(seq "$ROUNDS"); do
	run 0
	run 99
	run 999
done
col() { awk -v c="$2" '{ print $c }' "$out/$1"; }
ratio() { paste "$out/$1" "$out/0" | awk '{ print $1 / $5 }' | median; }
cpu_ratio() { paste "$out/$1" "$out/0" | awk '{ print $4 / $8 }' | median; }
echo "wall0_ms=$(col 0 1 | median | awk '{ printf "%.1f", $1 / 1e6 }')" \
     "wall99_ms=$(col 99 1 | median | awk '{ printf "%.1f", $1 / 1e6 }')" \
     "wall999_ms=$(col 999 1 | median | awk '{ printf "%.1f", $1 / 1e6 }')" \
     "ratio99=$(ratio 99)" "ratio999=$(ratio 999)" \
     "cpu_ratio99=$(cpu_ratio 99)" "cpu_ratio999=$(cpu_ratio 999)" \
     "samples999=$(col 999 3 | median)" \
     "samples99=$(col 99 3 | median)"
per=$(paste "$out/999" "$out/99" | awk '{ if ($3 > $7) print ($2 - $6) / ($3 - $7) / 1000 }' | median)
echo "cpu_per_sample_us=$per" \
     "cpu_fixed_ms=$(paste "$out/99" "$out/0" | awk -v per="$per" '{ print ($2 - $6 - per * 1000 * $3) / 1e6 }' | median)"
for _ in 1 2 3 4 5; do "$SYMBOLIZE"; done >"$out/sym"
echo "fill_ms=$(sed -n 's/.*fill_ms=\([0-9.]*\).*/\1/p' "$out/sym" | median)" \
     "add_ns=$(sed -n 's/.*add_ns_per_sample=\([0-9.]*\).*/\1/p' "$out/sym" | median)"
