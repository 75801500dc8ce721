#!/usr/bin/env bash
# make bench: every overhead figure of khprof measured side by side with its
# reference in one run, printed as one table on stdout and written, with the
# machine it ran on, to docs/PERFORMANCE.md.
#
#   bench/run.sh            (as root, after `make`; `make bench` does both)
#
# Every figure is a median over runs that alternate the measured command with
# its reference, so drift on a noisy machine hits both alike.  Progress goes
# to stderr; the table alone goes to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

B=build/bench
DOC=docs/PERFORMANCE.md
KHPROF=$root/$B/khprof
SC=$root/$B/span_cost
FP=$root/$B/first_probe
LAUNCH=$root/$B/launch
LIBWALL=$root/$B/libwall.so
WORKLOAD=$root/build/workloads/workload
KHSCAN=$root/build/kh-scan

die() { echo "bench: $*" >&2; exit 1; }
say() { echo "bench: [${SECONDS}s] $*" >&2; }

# --- prerequisites ----------------------------------------------------------
[ "$(id -u)" -eq 0 ] || die "must run as root (khprof and bpftrace load BPF programs)"
for tool in gcc bpftrace python3 awk uname git; do
	command -v "$tool" >/dev/null || die "'$tool' is missing (make bench installs bpftrace; install the rest with apt-get)"
done
for f in build/khprof "$WORKLOAD" "$KHSCAN" build/kh-corpus; do
	[ -x "$f" ] || die "$f is missing: run 'make' first"
done
have_valgrind=0
command -v valgrind >/dev/null && have_valgrind=1

# Raw data of the last run stays in build/bench/raw for inspection.
tmp=$root/$B/raw
rm -rf "$tmp"
mkdir -p "$tmp"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
# A private copy, so a rebuild of build/khprof during the run cannot mix two
# versions into one table.
cp build/khprof "$KHPROF.tmp"
mv "$KHPROF.tmp" "$KHPROF"

# --- helpers, built here so the Makefile needs no bench rules --------------
CFLAGS_BENCH=(-O2 -Iinclude -pthread)
say "building helpers in $B"
gcc "${CFLAGS_BENCH[@]}" -o "$B/span_cost" bench/span_cost.c
# The same source with loops aligned to 32 bytes: shows how much of a
# sub-nanosecond figure is code layout rather than the span itself.
gcc "${CFLAGS_BENCH[@]}" -falign-loops=32 -o "$B/span_cost-a32" bench/span_cost.c
gcc "${CFLAGS_BENCH[@]}" -o "$B/first_probe" bench/first_probe.c
gcc "${CFLAGS_BENCH[@]}" -o "$B/launch" bench/launch.c
gcc "${CFLAGS_BENCH[@]}" -fPIC -shared -o "$B/libwall.so" bench/libwall.c
gcc "${CFLAGS_BENCH[@]}" -o "$B/site_cost" bench/site_cost.c
# interval_cost runs khprof's own sampling code: link the built objects of
# the current sources (not stale ones of removed files).
objs_of() { find "$@" -name '*.c' | while read -r f; do echo "build/${f%.c}.o"; done; }
incs_of() { find "$@" -type d | sed 's/^/-I/'; }
# shellcheck disable=SC2046
gcc "${CFLAGS_BENCH[@]}" $(incs_of userspace/common userspace/analysis userspace/capture) -Ibuild \
	-o "$B/interval_cost" bench/interval_cost.c build/userspace/capture/session/slots.o \
	build/userspace/capture/procfs.o build/userspace/capture/session/session.o \
	$(objs_of userspace/analysis userspace/common) build/proto/profile.pb-c.o \
	-lbpf -lelf -lprotobuf-c -lz -lcjson -liberty -lm
# symbolize keeps and symbolizes synthetic --sample stacks (row 11).
# shellcheck disable=SC2046
gcc "${CFLAGS_BENCH[@]}" $(incs_of userspace/common userspace/analysis userspace/capture) -Ibuild \
	-o "$B/symbolize" bench/symbolize.c build/userspace/capture/stacks/stackstore.o \
	build/userspace/capture/procfs.o build/userspace/capture/ns/ns.o \
	$(objs_of userspace/analysis userspace/common) build/proto/profile.pb-c.o \
	-ldw -lelf -lprotobuf-c -lz -lcjson -liberty -lm
# dwarf_unwind measures a DWARF unwind of copied stacks, the option --sample did not take (row 11).
gcc "${CFLAGS_BENCH[@]}" -o "$B/dwarf_unwind" bench/dwarf_unwind.c -ldw -lelf
gcc "${CFLAGS_BENCH[@]}" -o "$B/page_fault" bench/page_fault.c
gcc "${CFLAGS_BENCH[@]}" -o "$B/scrape" bench/scrape.c
gcc "${CFLAGS_BENCH[@]}" -o "$B/switch_cost" bench/switch_cost.c
# exec_loop and host_scan measure what attach --all costs the host (row 14).
gcc "${CFLAGS_BENCH[@]}" -o "$B/exec_loop" bench/all-cost/exec_loop.c
# shellcheck disable=SC2046
gcc "${CFLAGS_BENCH[@]}" $(incs_of usdt userspace/common userspace/analysis userspace/capture \
	userspace/cmd/tracing) -Ibuild -o "$B/host_scan" bench/all-cost/host_scan.c \
	build/userspace/cmd/tracing/host_scan.o build/userspace/capture/ns/ns.o \
	build/userspace/capture/procfs.o $(objs_of usdt userspace/common) -ldw -lelf -lz -lm

# The seed's own seed-overhead, built with seed-render by the same script,
# in the same cargo target directory, so the seed compiles once.  Removed
# first: without ../shared/seed the script builds nothing.
SEED=""
rm -f build/seed-overhead
say "building the seed's seed-overhead (scripts/build-seed-render.sh)"
SEED_BINS="seed-render seed-overhead" ./scripts/build-seed-render.sh build >"$tmp/seed-build.log" 2>&1 || true
if [ -x build/seed-overhead ]; then
	SEED=$root/build/seed-overhead
else
	say "seed-overhead did not build (no ../shared/seed, or a Rust older than the seed needs); seed rows are n/a"
	sed 's/^/  /' "$tmp/seed-build.log" >&2
fi

# The Rust probe crate's twin of span_cost (rust/keyhog-probes/examples),
# built with the machine's cargo by the script make uses for the crate.
SCRS=""
say "building the Rust crate's span_cost (scripts/build-rust.sh)"
if ./scripts/build-rust.sh build current "$tmp/workload-rs" "$B" >"$tmp/rust-build.log" 2>&1; then
	SCRS=$root/$B/span_cost_rs
else
	say "span_cost_rs did not build; Rust rows are n/a"
	sed 's/^/  /' "$tmp/rust-build.log" >&2
fi

# The khprof of an earlier commit, run alternated with this one in rows 2
# and 3 (scripts/build-ref.sh): KH_BENCH_REF, by default the last commit
# before the trust wave (issue #10's "no regression" is against it).
REF=${KH_BENCH_REF:-1598a32}
REFD=$root/$B/ref
REFK="" REFSC="" REFFP=""
say "building the reference khprof of $REF (scripts/build-ref.sh)"
if ./scripts/build-ref.sh "$REF" "$REFD" >"$tmp/ref-build.log" 2>&1; then
	REFK=$REFD/khprof REFSC=$REFD/span_cost REFFP=$REFD/first_probe
else
	say "the reference did not build; its rows are n/a"
	sed 's/^/  /' "$tmp/ref-build.log" >&2
fi

# --- statistics -------------------------------------------------------------
median() { # numbers on stdin, one per line
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "nan"; exit }
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
minimum() { sort -g | head -n 1; }
# calc FORMAT EXPR: awk arithmetic; "n/a" when an operand is n/a or nan.
calc() {
	case "$2" in *n/a* | *nan*) echo "n/a"; return ;; esac
	awk "BEGIN { printf \"$1\", $2 }"
}
# ok EXPR: yes/no, "n/a" when an operand is unavailable.
ok() {
	case "$1" in *n/a* | *nan*) echo "n/a"; return ;; esac
	awk "BEGIN { print (($1) ? \"yes\" : \"**no**\") }"
}
# span_ns LABEL CMD...: runs a span_cost command, prints its ns_per_span.
span_ns() {
	local label=$1 out
	shift
	out=$("$@" 2>"$tmp/stderr") || true
	out=$(printf '%s\n' "$out" | sed -n 's/^ns_per_span=//p' | tail -n 1)
	if [ -z "$out" ]; then
		sed 's/^/  /' "$tmp/stderr" >&2
		die "$label: no ns_per_span from: $*"
	fi
	echo "$out"
}
# field FILE KEY: the values of KEY=V in FILE, one per line.
field() { sed -n "s/.*\\b$2=\\([-+0-9.e]*\\).*/\\1/p" "$1"; }

# A uprobe's teardown finishes in the kernel after the tracer has exited and
# is paid by the next registration: a tracer started less than about a
# second after the previous one waits up to ~0.8 s per probe.  Start-up and
# end-to-end runs therefore pause first (row 3 also shows back-to-back runs).
settle() { sleep "${BENCH_SETTLE:-1}"; }

ROWS=$tmp/rows
: >"$ROWS"
row() { # row N MEASUREMENT KHPROF REFERENCE RATIO TARGET MET
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$@" >>"$ROWS"
}

# --- 1. untraced cost per span ----------------------------------------------
say "1/15 untraced span cost"
N1=20000000
for r in 1 2 3 4 5; do
	span_ns bare "$SC" bare $N1 >>"$tmp/r1.bare"
	span_ns probes "$SC" probes $N1 >>"$tmp/r1.probes"
	span_ns inproc-off "$SC" inproc-off $N1 >>"$tmp/r1.inproc"
	span_ns bare-a32 "$B/span_cost-a32" bare $N1 >>"$tmp/r1.bare32"
	span_ns probes-a32 "$B/span_cost-a32" probes $N1 >>"$tmp/r1.probes32"
	if [ -n "$SEED" ]; then "$SEED" >>"$tmp/r1.seed"; fi
	if [ -n "$SCRS" ]; then
		span_ns rs-probes "$SCRS" probes $N1 >>"$tmp/r1.rs-probes"
		span_ns rs-seed-loop "$SCRS" seed-loop $N1 >>"$tmp/r1.rs-seed-loop"
	fi
done
rs_probes=n/a rs_seed_loop=n/a
if [ -n "$SCRS" ]; then
	rs_probes=$(median <"$tmp/r1.rs-probes")
	rs_seed_loop=$(median <"$tmp/r1.rs-seed-loop")
fi
bare=$(median <"$tmp/r1.bare")
probes=$(median <"$tmp/r1.probes")
inproc_off=$(median <"$tmp/r1.inproc")
bare32=$(median <"$tmp/r1.bare32")
probes32=$(median <"$tmp/r1.probes32")
seed_off=n/a
if [ -n "$SEED" ]; then seed_off=$(field "$tmp/r1.seed" disabled_ns_per_span | median); fi

# Instructions per span: callgrind counts are exact, so a difference of one
# instruction shows where timers show only the loop floor.
ir() { # ir VARIANT FUNCTION: instructions per loop iteration
	local n=100000 out=$tmp/cg.$1
	valgrind --tool=callgrind --collect-atstart=no --toggle-collect="$2" \
		--callgrind-out-file="$out" "$SC" "$1" $n 1 >/dev/null 2>&1 || { echo n/a; return; }
	# span_cost runs 5 rounds of n spans.
	awk -v n=$n '/^totals:/ { printf "%.2f", $2 / (5 * n); found = 1 } END { if (!found) print "n/a" }' "$out"
}
ir_rs() { # ir_rs VARIANT FUNCTION: the same for the Rust crate's span_cost
	local n=100000 out=$tmp/cg.rs.$1
	valgrind --tool=callgrind --collect-atstart=no --toggle-collect="$2" \
		--callgrind-out-file="$out" "$SCRS" "$1" $n 5 >/dev/null 2>&1 || { echo n/a; return; }
	awk -v n=$n '/^totals:/ { printf "%.2f", $2 / (5 * n); found = 1 } END { if (!found) print "n/a" }' "$out"
}
ir_bare=n/a ir_probes=n/a ir_inproc=n/a ir_seed=n/a ir_rs_probes=n/a ir_rs_seed=n/a
ir_seed_en=n/a ir_rs_en=n/a ir_rs_tsim=n/a ir_rs_bsim=n/a
if [ "$have_valgrind" = 1 ]; then
	ir_bare=$(ir bare spans_bare)
	ir_probes=$(ir probes spans_probes)
	ir_inproc=$(ir inproc-off spans_inproc)
	if [ -n "$SEED" ]; then
		# seed-overhead times N disabled spans, then N/11 enabled ones, each in
		# one call of per_span; the dump after the first call is the disabled loop.
		if valgrind --tool=callgrind --collect-atstart=no --toggle-collect='seed_overhead::per_span' \
			--dump-after='seed_overhead::per_span' --callgrind-out-file="$tmp/cg.seed" \
			"$SEED" 100000 >/dev/null 2>&1 && [ -f "$tmp/cg.seed.1" ]; then
			ir_seed=$(awk '/^totals:/ { printf "%.2f", $2 / 100000 }' "$tmp/cg.seed.1")
		fi
		# The second call: N/10 spans enabled (row 2's Rust lines).
		if [ -f "$tmp/cg.seed.2" ]; then
			ir_seed_en=$(awk '/^totals:/ { printf "%.2f", $2 / 10000 }' "$tmp/cg.seed.2")
		fi
	fi
	if [ -n "$SCRS" ]; then
		ir_rs_probes=$(ir_rs probes kh_rs_spans_probes)
		ir_rs_seed=$(ir_rs seed-loop kh_rs_spans_seed_loop)
		# Row 2's: the in-process span, and a traced batch span's user
		# space (the program sets the batch semaphore itself, its sites nops).
		ir_rs_en=$(ir_rs enabled kh_rs_spans_seed_loop)
		ir_rs_tsim=$(ir_rs traced-sim kh_rs_spans_seed_loop)
		ir_rs_bsim=$(ir_rs both-sim kh_rs_spans_seed_loop)
	fi
else
	say "valgrind not found: instruction counts are n/a"
fi
m_probes=$(calc %+.3f "$probes - $bare")
m_inproc=$(calc %+.3f "$inproc_off - $bare")
im_probes=$(calc %+.0f "$ir_probes - $ir_bare")
im_inproc=$(calc %+.0f "$ir_inproc - $ir_bare")
row 1 "untraced span, ns/span (gcc -O2; bare loop $bare)" \
	"probes $probes ($m_probes)" "C port of the seed, disabled: $inproc_off ($m_inproc)" \
	"—" "≤0.5 ns marginal" "$(ok "$m_probes <= 0.5")"
row 1 "untraced span, instructions/span (callgrind; bare loop $ir_bare)" \
	"probes $ir_probes ($im_probes)" "C port, disabled: $ir_inproc ($im_inproc)" \
	"$(calc %.2f× "$im_probes / $im_inproc")" "≤0.6×" "$(ok "$im_probes <= 0.6 * $im_inproc")"
row 1 "untraced span vs the seed's own Rust loop (whole iteration)" \
	"probes $probes ns, $ir_probes instr" "seed disabled $seed_off ns, $ir_seed instr" \
	"$(calc %.2f× "$probes / $seed_off") ns, $(calc %.2f× "$ir_probes / $ir_seed") instr" "≤0.6×" \
	"$(ok "$probes <= 0.6 * $seed_off")"
rustc_version=$( ([ -n "$SCRS" ] && rustc --version 2>/dev/null | cut -d' ' -f2) || echo n/a)
row 1 "untraced span, Rust crate keyhog-probes (rustc $rustc_version), whole iteration of span_cost.c's loop" \
	"crate $rs_probes ns, $ir_rs_probes instr" "C header $probes ns, $ir_probes instr" \
	"$(calc %.2f× "$rs_probes / $probes") ns, $(calc %.2f× "$ir_rs_probes / $ir_probes") instr" \
	"= the C header's instructions" "$(ok "$ir_rs_probes <= $ir_probes")"
row 1 "untraced span, Rust crate in the seed's own seed-overhead loop" \
	"crate $rs_seed_loop ns, $ir_rs_seed instr" "seed disabled $seed_off ns, $ir_seed instr" \
	"$(calc %.2f× "$rs_seed_loop / $seed_off") ns, $(calc %.2f× "$ir_rs_seed / $ir_seed") instr" \
	"≤ the seed's instructions" "$(ok "$ir_rs_seed <= $ir_seed")"
row 1 "layout check: same loops built with -falign-loops=32" \
	"probes $probes32" "bare $bare32" "$(calc %.2f× "$probes32 / $bare32")" "—" "—"

# --- 2. traced cost per span ------------------------------------------------
say "2/15 traced span cost (khprof batch/span/pair, bpftrace, in-process enabled)"
# bt_pair BINARY OUT: bpftrace's per-stage aggregation with @start[tid],
# on the same two probes khprof's pair mode uses (rows 2 and 3).
bt_pair() {
	cat >"$2" <<EOF
usdt:$1:keyhog:span_enter { @s[tid] = nsecs; }
usdt:$1:keyhog:span_exit /@s[tid]/ { @ns[arg0] = sum(nsecs - @s[tid]); @n[arg0] = count(); delete(@s[tid]); }
EOF
}
BT2=$tmp/pair.bt
bt_pair "$SC" "$BT2"
declare -A N2=([batch]=2000000 [span]=200000 [pair]=100000)
for r in 1 2 3 4 5; do
	span_ns probes "$SC" probes $N1 >>"$tmp/r2.untraced"
	# The reference's batch run sits before or after this one's, by turns.
	if [ -n "$REFK" ] && [ $((r % 2)) -eq 0 ]; then
		span_ns "ref batch" "$REFK" record -- "$REFSC" probes "${N2[batch]}" >>"$tmp/r2.ref"
	fi
	for mode in batch span pair; do
		span_ns "khprof $mode" "$KHPROF" record --mode $mode -- "$SC" probes "${N2[$mode]}" >>"$tmp/r2.$mode"
	done
	# The default as khprof chooses it on this machine (its record says the
	# mode and clock), and batch mode with CLOCK_MONOTONIC forced, as where
	# the TSC is not trusted (KHPROF_TEST_TSC, docs/PROBES.md).
	span_ns "khprof default" "$KHPROF" record -o "$tmp/r2.default.json" -- "$SC" probes "${N2[batch]}" >>"$tmp/r2.default"
	span_ns "khprof batch monotonic" env KHPROF_TEST_TSC=untrusted "$KHPROF" record -q --mode batch -- \
		"$SC" probes "${N2[batch]}" >>"$tmp/r2.monotonic"
	if [ -n "$REFK" ]; then
		[ $((r % 2)) -eq 1 ] &&
			span_ns "ref batch" "$REFK" record -- "$REFSC" probes "${N2[batch]}" >>"$tmp/r2.ref"
		span_ns "ref probes" "$REFSC" probes $N1 >>"$tmp/r2.ref-untraced"
	fi
	span_ns bpftrace bpftrace -c "$SC probes 100000" "$BT2" >>"$tmp/r2.bpftrace"
	span_ns inproc-off "$SC" inproc-off $N1 >>"$tmp/r2.inproc-off"
	span_ns inproc-on "$SC" inproc-on 2000000 >>"$tmp/r2.inproc-on"
	span_ns clocks "$SC" clocks 2000000 >>"$tmp/r2.clocks"
	if [ -n "$SCRS" ]; then
		# The Rust crate: in process (the seed's enabled switch), traced by
		# khprof alone, and both at once (docs/PERFORMANCE.md, row 2).
		span_ns rs-untraced "$SCRS" seed-loop $N1 >>"$tmp/r2.rs-untraced"
		span_ns rs-enabled "$SCRS" enabled 2000000 >>"$tmp/r2.rs-enabled"
		span_ns "rs traced" "$KHPROF" record -q --mode batch -- "$SCRS" seed-loop "${N2[batch]}" \
			>>"$tmp/r2.rs-traced"
		span_ns "rs traced, in process too" "$KHPROF" record -q --mode batch -- "$SCRS" enabled \
			"${N2[batch]}" >>"$tmp/r2.rs-both"
	fi
	if [ -n "$SEED" ]; then "$SEED" >>"$tmp/r2.seed"; fi
done
untraced=$(median <"$tmp/r2.untraced")
declare -A cost
for m in batch span pair bpftrace default monotonic; do
	cost[$m]=$(calc %.1f "$(median <"$tmp/r2.$m") - $untraced")
done
# "MODE, CLOCK clock" of a record (khprof.mode, khprof.span_clock).
chosen() {
	python3 -c 'import json, sys
x = json.load(open(sys.argv[1])).get("khprof", {})
print("%s, %s clock" % (x.get("mode"), x.get("span_clock")))' "$1" 2>/dev/null || echo "n/a"
}
default2=$(chosen "$tmp/r2.default.json")
inproc_on=$(calc %.1f "$(median <"$tmp/r2.inproc-on") - $(median <"$tmp/r2.inproc-off")")
seed_on=n/a
if [ -n "$SEED" ]; then
	seed_en=$(field "$tmp/r2.seed" enabled_ns_per_span | median)
	seed_dis=$(field "$tmp/r2.seed" disabled_ns_per_span | median)
	seed_on=$(calc %.1f "$seed_en - $seed_dis")
fi
ref_cost=n/a
if [ -n "$REFK" ]; then
	ref_cost=$(calc %.1f "$(median <"$tmp/r2.ref") - $(median <"$tmp/r2.ref-untraced")")
fi
lowest="batch"
for m in span pair; do
	awk "BEGIN { exit !(${cost[$m]} < ${cost[$lowest]}) }" && lowest=$m
done
row 2 "traced cost, ns/span over untraced ($untraced): batch (default)" "${cost[batch]}" \
	"bpftrace @start[tid] pair: ${cost[bpftrace]}" "$(calc %.2f× "${cost[batch]} / ${cost[bpftrace]}")" \
	"≤300 ns; ≤0.6×" "$(ok "${cost[batch]} <= 300 && ${cost[batch]} <= 0.6 * ${cost[bpftrace]}")"
row 2 "traced cost, ns/span: batch vs the khprof of $REF (its own span_cost and header), alternated" \
	"${cost[batch]}" "$REF: $ref_cost" "$(calc %.2f× "${cost[batch]} / $ref_cost")" "≤1.05×" \
	"$(ok "${cost[batch]} <= 1.05 * $ref_cost")"
row 2 "traced cost, ns/span: the default as chosen here ($default2) vs in-process enabled" \
	"${cost[default]}" "C port enabled $inproc_on; seed enabled $seed_on" \
	"$(calc %.2f× "${cost[default]} / $inproc_on"); $(calc %.2f× "${cost[default]} / $seed_on")" \
	"≤40 ns; ≤0.65×" "$(ok "${cost[default]} <= 40 && ${cost[default]} <= 0.65 * $inproc_on")"
row 2 "traced cost, ns/span: batch with CLOCK_MONOTONIC forced (KHPROF_TEST_TSC=untrusted) vs in-process enabled" \
	"${cost[monotonic]}" "C port enabled $inproc_on; seed enabled $seed_on" \
	"$(calc %.2f× "${cost[monotonic]} / $inproc_on"); $(calc %.2f× "${cost[monotonic]} / $seed_on")" \
	"≤0.9×" "$(ok "${cost[monotonic]} <= 0.9 * $inproc_on")"
# What any design that times each span with CLOCK_MONOTONIC pays for its
# two reads alone (inproc-off is the loop without them): what the row above
# can gain over the in-process design is what is left of the latter.
clocks=$(calc %.1f "$(median <"$tmp/r2.clocks") - $(median <"$tmp/r2.inproc-off")")
row 2 "floor of CLOCK_MONOTONIC timing, ns/span: two clock_gettime reads a span, nothing else" \
	"$clocks" "C port enabled $inproc_on" "$(calc %.2f× "$clocks / $inproc_on")" \
	"— (≤0.9× leaves $(calc %.1f "0.9 * $inproc_on - $clocks") ns for the rest)" "—"
row 2 "traced cost, ns/span: span mode" "${cost[span]}" "bpftrace ${cost[bpftrace]}" \
	"$(calc %.2f× "${cost[span]} / ${cost[bpftrace]}")" "—" "—"
row 2 "traced cost, ns/span: pair mode (same probes as bpftrace)" "${cost[pair]}" "bpftrace ${cost[bpftrace]}" \
	"$(calc %.2f× "${cost[pair]} / ${cost[bpftrace]}")" "—" "—"
row 2 "lowest-overhead mode ($lowest) vs in-process enabled" "${cost[$lowest]}" \
	"C port enabled $inproc_on; seed enabled $seed_on" \
	"$(calc %.2f× "${cost[$lowest]} / $inproc_on"); $(calc %.2f× "${cost[$lowest]} / $seed_on")" \
	"≤1.3×" "$(ok "${cost[$lowest]} <= 1.3 * $inproc_on")"

rs_en=n/a rs_traced=n/a rs_both=n/a rs_untraced=n/a seed_en_ns=n/a
if [ -n "$SCRS" ]; then
	rs_untraced=$(median <"$tmp/r2.rs-untraced")
	rs_en=$(median <"$tmp/r2.rs-enabled")
	rs_traced=$(calc %.1f "$(median <"$tmp/r2.rs-traced") - $rs_untraced")
	rs_both=$(calc %.1f "$(median <"$tmp/r2.rs-both") - $rs_untraced")
fi
[ -n "$SEED" ] && seed_en_ns=$seed_en
row 2 "Rust crate in process (set_enabled: the seed's API), the seed's own loop: ns/span, instructions/span" \
	"crate $rs_en ns, $ir_rs_en instr" "seed enabled $seed_en_ns ns, $ir_seed_en instr" \
	"$(calc %.2f× "$rs_en / $seed_en_ns") ns, $(calc %.2f× "$ir_rs_en / $ir_seed_en") instr" \
	"≤ the seed's instructions" "$(ok "$ir_rs_en <= $ir_seed_en")"
row 2 "Rust crate traced by khprof (batch), ns/span over untraced ($rs_untraced): counting in process too vs not" \
	"$rs_both" "traced alone $rs_traced" "$(calc %.2f× "$rs_both / $rs_traced")" "—" "—"
row 2 "Rust crate, a traced batch span's user space, instructions/span (batch semaphore set by the program, sites nops)" \
	"traced $ir_rs_tsim; counting in process too $ir_rs_bsim" "untraced $ir_rs_seed" "—" "—" "—"

# --- 3. attach latency and peak RSS -----------------------------------------
say "3/15 attach latency and peak RSS (khprof record vs bpftrace -c)"
BT3=$tmp/first.bt
bt_pair "$FP" "$BT3"
R3=15
for r in $(seq $R3); do
	settle
	"$LAUNCH" -o "$tmp/r3.khprof.launch" -- "$KHPROF" record -- "$FP" >>"$tmp/r3.khprof" 2>/dev/null
	settle
	"$LAUNCH" -o "$tmp/r3.bpftrace.launch" -- bpftrace -c "$FP" "$BT3" >>"$tmp/r3.bpftrace" 2>/dev/null
	if [ -n "$REFK" ]; then
		settle
		"$LAUNCH" -o "$tmp/r3.ref.launch" -- "$REFK" record -- "$REFFP" >>"$tmp/r3.ref" 2>/dev/null
	fi
	# A first start on this kernel: an empty CO-RE target cache of its own.
	settle
	KHPROF_CACHE_DIR=$tmp/cold-cache.$r "$LAUNCH" -o "$tmp/r3.cold.launch" -- \
		"$KHPROF" record -- "$FP" >>"$tmp/r3.cold" 2>/dev/null
done
# Back to back: each tracer started as soon as the previous one has exited.
settle
for r in 1 2 3 4 5 6 7; do
	"$LAUNCH" -o "$tmp/r3.khprof-b2b.launch" -- "$KHPROF" record -- "$FP" >>"$tmp/r3.khprof-b2b" 2>/dev/null
done
settle
for r in 1 2 3 4 5 6 7; do
	"$LAUNCH" -o "$tmp/r3.bpftrace-b2b.launch" -- bpftrace -c "$FP" "$BT3" >>"$tmp/r3.bpftrace-b2b" 2>/dev/null
done
for t in khprof bpftrace khprof-b2b bpftrace-b2b; do
	[ "$(field "$tmp/r3.$t" attach_ns | wc -l)" -ge 7 ] || die "first_probe did not report under $t"
	if grep -q 'live=0' "$tmp/r3.$t"; then die "first_probe ran with its probes off under $t"; fi
	if grep -qv 'status=0' "$tmp/r3.$t.launch"; then
		die "$t run of first_probe failed: $(grep -v 'status=0' "$tmp/r3.$t.launch" | head -n 1)"
	fi
done
att_k=$(calc %.1f "$(field "$tmp/r3.khprof" attach_ns | median) / 1e6")
att_b=$(calc %.1f "$(field "$tmp/r3.bpftrace" attach_ns | median) / 1e6")
min_k=$(calc %.1f "$(field "$tmp/r3.khprof" attach_ns | minimum) / 1e6")
min_b=$(calc %.1f "$(field "$tmp/r3.bpftrace" attach_ns | minimum) / 1e6")
rss_k=$(calc %.1f "$(field "$tmp/r3.khprof.launch" maxrss_kib | median) / 1024")
rss_b=$(calc %.1f "$(field "$tmp/r3.bpftrace.launch" maxrss_kib | median) / 1024")
row 3 "attach latency, ms (launch → traced main, probes live; fastest run in brackets)" \
	"$att_k ($min_k)" "bpftrace -c $att_b ($min_b)" \
	"$(calc %.2f× "$att_k / $att_b")" "≤50 ms" "$(ok "$att_k <= 50")"
att_r=n/a min_r=n/a
if [ -n "$REFK" ]; then
	if grep -q 'live=0' "$tmp/r3.ref"; then die "first_probe ran with its probes off under the reference"; fi
	att_r=$(calc %.1f "$(field "$tmp/r3.ref" attach_ns | median) / 1e6")
	min_r=$(calc %.1f "$(field "$tmp/r3.ref" attach_ns | minimum) / 1e6")
fi
row 3 "attach latency, ms, vs the khprof of $REF (same rounds; fastest in brackets)" \
	"$att_k ($min_k)" "$REF: $att_r ($min_r)" "$(calc %.2f× "$att_k / $att_r")" "≤1.05×" \
	"$(ok "$att_k <= 1.05 * $att_r")"
if grep -q 'live=0' "$tmp/r3.cold"; then die "first_probe ran with its probes off under a cold khprof"; fi
att_c=$(calc %.1f "$(field "$tmp/r3.cold" attach_ns | median) / 1e6")
min_c=$(calc %.1f "$(field "$tmp/r3.cold" attach_ns | minimum) / 1e6")
row 3 "attach latency, ms, first start on a kernel (no CO-RE target cache yet; same rounds)" \
	"$att_c ($min_c)" "$REF: $att_r ($min_r)" "$(calc %.2f× "$att_c / $att_r")" "—" "—"
b2b_k=$(calc %.1f "$(field "$tmp/r3.khprof-b2b" attach_ns | median) / 1e6")
b2b_b=$(calc %.1f "$(field "$tmp/r3.bpftrace-b2b" attach_ns | median) / 1e6")
row 3 "attach latency, ms, back to back (no pause after the previous tracer exits)" \
	"$b2b_k" "bpftrace -c $b2b_b" "$(calc %.2f× "$b2b_k / $b2b_b")" "—" "—"
row 3 "peak RSS, MiB (wait4 ru_maxrss, tiny traced program)" "$rss_k" "bpftrace $rss_b" \
	"$(calc %.2f× "$rss_k / $rss_b")" "≤16 MiB" "$(ok "$rss_k <= 16")"

# --- 4. end to end: kh-scan on the default corpus ---------------------------
say "4/15 kh-scan --threads 2 on the default corpus, untraced vs traced"
corpus=build/demo-corpus
if [ ! -f "$corpus/truth.jsonl" ]; then
	corpus=$B/corpus
	if [ ! -f "$corpus/truth.jsonl" ]; then
		rm -rf "$corpus"
		say "generating the default corpus (seed 1, 32 MiB) in $corpus"
		build/kh-corpus --seed 1 --size 32 "$corpus" >/dev/null
	fi
fi
tree=$root/$corpus/tree
scan() { # scan CONFIG: one run, wall to r4.CONFIG.launch, own wall to r4.CONFIG.own
	local cfg=$1 cmd
	case $cfg in
	untraced) cmd=("$KHSCAN" --threads 2 "$tree") ;;
	*) cmd=("$KHPROF" record --mode "$cfg" -- "$KHSCAN" --threads 2 "$tree") ;;
	esac
	settle
	env LD_PRELOAD="$LIBWALL" KH_WALL_PROG=kh-scan KH_WALL_OUT="$tmp/r4.$cfg.own" \
		"$LAUNCH" -o "$tmp/r4.$cfg.launch" -- "${cmd[@]}" >/dev/null 2>"$tmp/stderr"
	# kh-scan exits 1 when it reports findings, which the corpus plants.
	tail -n 1 "$tmp/r4.$cfg.launch" | grep -Eq 'status=[01]$' ||
		{ cat "$tmp/stderr" >&2; die "kh-scan ($cfg) failed: $(tail -n 1 "$tmp/r4.$cfg.launch")"; }
}
scan untraced # warm the page cache
rm -f "$tmp"/r4.*
R4=31
configs=(untraced batch span)
for r in $(seq $R4); do
	for k in 0 1 2; do # rotate the order every round
		scan "${configs[$(((r + k) % 3))]}"
	done
done
for cfg in "${configs[@]}"; do
	[ "$(wc -l <"$tmp/r4.$cfg.own")" -eq $R4 ] || die "kh-scan ($cfg): own wall time missing (libwall.so not preloaded?)"
done
# How many spans one scan has, to set the own-wall ratio against what
# row 2's per-span cost predicts.
settle
"$KHPROF" record -o "$tmp/r4.record.json" -- "$KHSCAN" --threads 2 "$tree" >/dev/null 2>&1 || true
[ -s "$tmp/r4.record.json" ] || die "khprof wrote no record of kh-scan"
# "SPANS OTHER": spans, and kernel entries that are not span hand-overs
# (counters per file and chunk, session events, loader), from probe_hits.
# "SPANS OTHER WOKEN": WOKEN counts the events that wake khprof (session
# start and every transition, the session's finish included).
read -r scan_spans scan_other scan_woken < <(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
spans = sum(s["calls"] for s in r["stages"])
hits = r.get("khprof", {}).get("probe_hits")
print(spans, "n/a" if hits is None else max(0, hits - (spans + 63) // 64),
      1 + len(r["transitions"]))' "$tmp/r4.record.json")
# paired KIND CFG KEY: median over rounds of CFG / untraced, paired round by
# round, and a bootstrap 95% interval of that median (fixed seed): "M LO HI".
paired() {
	python3 - "$tmp/r4.$2.$1" "$tmp/r4.untraced.$1" "$3" <<'EOF'
import random, re, sys
def values(path):
    return [float(m.group(1)) for m in re.finditer(sys.argv[3] + r"=([0-9.]+)", open(path).read())]
ratios = [t / u for t, u in zip(values(sys.argv[1]), values(sys.argv[2]))]
def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
random.seed(1)
boot = sorted(median(random.choices(ratios, k=len(ratios))) for _ in range(2000))
print("%.4f %.4f %.4f" % (median(ratios), boot[49], boot[1949]))
EOF
}
# Met only when the whole 95% interval is within the target, missed only
# when all of it is above; otherwise this machine cannot tell.
verdict() { # verdict LO HI LIMIT
	awk -v lo="$1" -v hi="$2" -v t="$3" 'BEGIN {
		print (hi <= t) ? "yes" : (lo > t) ? "**no**" : "unresolved" }'
}
declare -A wall own
for cfg in "${configs[@]}"; do
	wall[$cfg]=$(calc %.1f "$(field "$tmp/r4.$cfg.launch" wall_ns | median) / 1e6")
	own[$cfg]=$(calc %.2f "$(field "$tmp/r4.$cfg.own" own_wall_ns | median) / 1e6")
done
# The scanner's own throughput target (examples/README.md): untraced, whole
# command, 2 threads, bytes the record counted over the median wall.
scan_bytes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["input_bytes"])' \
	"$tmp/r4.record.json")
mibps=$(calc %.0f "$scan_bytes / 1048576 / (${wall[untraced]} / 1000)")
row 4 "kh-scan untraced throughput, MiB/s (whole command, 2 threads, $(calc %.1f "$scan_bytes / 1048576") MiB)" \
	"$mibps" "target 100 MiB/s" "$(calc %.1f× "$mibps / 100")" "≥100 MiB/s" \
	"$([ "$(calc %.0f "$mibps")" -ge 100 ] && echo yes || echo '**no**')"
# The same comparison with the noise taken out: one scanner thread pinned to
# CPU 1 (libwall.so pins the scanner alone), khprof on CPU 0, 61 rounds in
# alternating order.  `record --repeat 1` returns only after the kernel has
# detached its uprobes, so no pause is needed between runs.
say "4/15 kh-scan --threads 1 pinned, untraced vs batch, 61 rounds"
pinned() { # pinned CONFIG: one run, own wall to r4p.CONFIG.own
	local cfg=$1 cmd
	case $cfg in
	untraced) cmd=("$KHSCAN" --threads 1 "$tree") ;;
	*)
		rm -rf "$tmp/r4p.runs"
		cmd=(taskset -c 0 "$KHPROF" record --repeat 1 -o "$tmp/r4p.runs" -- "$KHSCAN" --threads 1 "$tree")
		;;
	esac
	env LD_PRELOAD="$LIBWALL" KH_WALL_PROG=kh-scan KH_WALL_CPU=1 KH_WALL_OUT="$tmp/r4p.$cfg.own" \
		"${cmd[@]}" >/dev/null 2>"$tmp/stderr" || [ $? -eq 1 ] ||
		{ cat "$tmp/stderr" >&2; die "kh-scan pinned ($cfg) failed"; }
}
pinned untraced # warm
rm -rf "$tmp"/r4p.*
R4P=61
for r in $(seq $R4P); do
	if [ $((r % 2)) -eq 0 ]; then pinned untraced; pinned batch; else pinned batch; pinned untraced; fi
done
for cfg in untraced batch; do
	[ "$(wc -l <"$tmp/r4p.$cfg.own")" -eq $R4P ] || die "kh-scan pinned ($cfg): own wall time missing"
done
# paired reads r4.CFG.KIND; the pinned files follow the same naming.
cp "$tmp/r4p.untraced.own" "$tmp/r4.untraced.pinned"
cp "$tmp/r4p.batch.own" "$tmp/r4.batch.pinned"
read -r prr plo phi < <(paired pinned batch own_wall_ns)
p_un=$(calc %.2f "$(field "$tmp/r4p.untraced.own" own_wall_ns | median) / 1e6")
p_ba=$(calc %.2f "$(field "$tmp/r4p.batch.own" own_wall_ns | median) / 1e6")

# Fixed costs of a traced run besides its spans (bench/site_cost.c).
for r in 1 2 3 4 5; do
	"$KHPROF" record -q -- "$B/site_cost" >>"$tmp/r4.sites" 2>/dev/null ||
		die "site_cost failed under khprof"
done
first_hit=$(calc %.1f "$(field "$tmp/r4.sites" first_hit_ns | median) / 1000")
second_hit=$(calc %.2f "$(field "$tmp/r4.sites" second_hit_ns | median) / 1000")
steady_hit=$(calc %.2f "$(field "$tmp/r4.sites" steady_hit_ns | median) / 1000")
woken_event=$(calc %.1f "$(field "$tmp/r4.sites" woken_event_ns | median) / 1000")
lazy_event=$(calc %.1f "$(field "$tmp/r4.sites" lazy_event_ns | median) / 1000")
# Hot (5-byte nop) sites one scan hits, each rewritten at its first hit:
# the batch probe (kh-scan counts input after a span, so its counters ride
# the batch), or in span mode the two input counters and the span sites.
# Session, identity and transition sites trap instead.
span_sites=$("$KHPROF" probes "$KHSCAN" | awk '$2 == "span"' | wc -l)
declare -A sites=([batch]=1 [span]=$((2 + span_sites)))
default4=$(chosen "$tmp/r4.record.json")
for m in batch span; do
	label=$m
	[ $m = batch ] && label="batch (the default here: $default4)"
	read -r wr wlo whi < <(paired launch $m wall_ns)
	read -r orr olo ohi < <(paired own $m own_wall_ns)
	# Spans at row 2's cost, other kernel entries at a later hit's cost, the
	# first hit of each hot site the scan reaches and each woken event.
	predicted=$(calc %.2f "($scan_spans * ${cost[$m]} + $scan_other * $steady_hit * 1000 + ${sites[$m]} * $first_hit * 1000 + $scan_woken * $woken_event * 1000) / 1e6")
	row 4 "kh-scan wall, ms, whole command: $label" "${wall[$m]}" "untraced ${wall[untraced]}" \
		"$(calc %.2f× "$wr") [$(calc %.2f "$wlo")–$(calc %.2f "$whi")]" "≤1.01×" \
		"$(verdict "$wlo" "$whi" 1.01)"
	row 4 "kh-scan own wall, ms (loader → exit, in-process): $label" "${own[$m]}" \
		"untraced ${own[untraced]}; predicted +$predicted ms ($scan_spans spans, $scan_other other probe hits, ${sites[$m]} first hits, $scan_woken wakeups)" \
		"$(calc %.3f× "$orr") [$(calc %.3f "$olo")–$(calc %.3f "$ohi")]" "≤1.01×" \
		"$(verdict "$olo" "$ohi" 1.01)"
done

row 4 "kh-scan own wall, ms, 1 thread pinned to CPU 1, khprof on CPU 0, $R4P rounds: batch" "$p_ba" \
	"untraced $p_un" "$(calc %.4f× "$prr") [$(calc %.4f "$plo")–$(calc %.4f "$phi")]" "≤1.01×" \
	"$(verdict "$plo" "$phi" 1.01)"
row 4 "fixed costs of a traced run, µs (site_cost): first hit of a probe site; 2nd; later hits" \
	"$first_hit; $second_hit; $steady_hit" "untraced: a few ns" "—" "—" "—"
row 4 "fixed costs, µs per event: transition (wakes khprof); identity (delivered with the next wakeup)" \
	"$woken_event; $lazy_event" "—" "—" "—" "—"

# --- 5. accuracy against the program's own clock -----------------------------
say "5/15 accuracy: workload timed US N, khprof vs the workload's own clock"
declare -A N5=([1]=20000 [10]=5000 [100]=1000)
for r in 1 2 3; do
	for us in 1 10 100; do
		for mode in batch span pair; do
			rec=$tmp/r5.$mode.$us.$r.json
			own_line=$("$KHPROF" record --mode $mode -o "$rec" -- "$WORKLOAD" timed $us "${N5[$us]}" 2>"$tmp/stderr") ||
				{ cat "$tmp/stderr" >&2; die "khprof record of workload timed $us failed"; }
			own_ns=$(printf '%s\n' "$own_line" | sed -n 's/^own_total_ns=//p')
			[ -n "$own_ns" ] || die "workload timed $us printed no own_total_ns"
			python3 - "$rec" "$own_ns" >>"$tmp/r5.$mode.$us" <<'EOF' || die "cannot read $rec"
import json, sys
record = json.load(open(sys.argv[1]))
own = int(sys.argv[2])
stage = [s for s in record["stages"] if s["stage"] == "confirmed-patterns"]
if not stage:
    sys.exit("no confirmed-patterns stage in the record")
elapsed, calls = stage[0]["elapsed_ns"], stage[0]["calls"]
ext = record.get("khprof", {})
bias = ext.get("span_bias_ns")
# elapsed_ns has the calibrated bias already subtracted once per call
# (docs/SCHEMA.md); the raw figure adds it back.
raw = elapsed + calls * bias if bias is not None else elapsed
corr = "n/a" if bias is None else "%.4f" % ((elapsed - own) / own * 100)
print("raw_pct=%.4f corr_pct=%s bias_ns=%s raw_ns_per_span=%.1f" % (
    (raw - own) / own * 100, corr, "n/a" if bias is None else bias, (raw - own) / calls))
EOF
		done
	done
done
for us in 1 10 100; do
	for mode in batch span pair; do
		f=$tmp/r5.$mode.$us
		raw=$(field "$f" raw_pct | median)
		per=$(field "$f" raw_ns_per_span | median)
		if grep -q 'corr_pct=n/a' "$f"; then
			corr=n/a bias=n/a
		else
			corr=$(field "$f" corr_pct | median)
			bias=$(field "$f" bias_ns | median)
		fi
		label="accuracy, $us µs spans, $mode: error vs own clock, raw → corrected"
		if [ "$us" = 1 ]; then
			target="state bias"
			met="—"
		else
			target="within 2%"
			check=$corr
			[ "$corr" = n/a ] && check=$raw
			met=$(ok "($check) <= 2 && ($check) >= -2")
		fi
		row 5 "$label" "$(calc %+.2f%% "$raw") → $(calc %+.2f%% "$corr")" \
			"own clock; raw bias $(calc %+.0f "$per") ns/span, calibrated $bias ns" "—" "$target" "$met"
	done
done

# Spans that move between CPUs half way (workload migrate), and every mode
# with CLOCK_MONOTONIC forced for batch mode's spans (KHPROF_TEST_TSC): the
# clock batch mode falls back to where the TSC is not trusted.
say "5/15 accuracy: migrating spans and CLOCK_MONOTONIC forced, every mode"
N5M=2000
for r in 1 2 3; do
	for mode in batch span pair; do
		for v in migrate forced; do
			rec=$tmp/r5.$v.$mode.$r.json
			case $v in
			migrate) envs=() args=(migrate 10 $N5M) ;;
			forced) envs=(KHPROF_TEST_TSC=untrusted) args=(timed 10 5000) ;;
			esac
			own_line=$(env "${envs[@]}" "$KHPROF" record -q --mode $mode -o "$rec" -- "$WORKLOAD" "${args[@]}" 2>"$tmp/stderr") ||
				{ cat "$tmp/stderr" >&2; die "khprof record of workload ${args[*]} failed"; }
			own_ns=$(printf '%s\n' "$own_line" | sed -n 's/^own_total_ns=//p')
			[ -n "$own_ns" ] || die "workload ${args[*]} printed no own_total_ns"
			python3 - "$rec" "$own_ns" >>"$tmp/r5.$v.$mode" <<'EOF' || die "cannot read $rec"
import json, sys
record = json.load(open(sys.argv[1]))
own = int(sys.argv[2])
stage = [s for s in record["stages"] if s["stage"] == "confirmed-patterns"][0]
elapsed, calls = stage["elapsed_ns"], stage["calls"]
ext = record.get("khprof", {})
bias = ext.get("span_bias_ns") or 0
print("raw_pct=%.4f corr_pct=%.4f bias_ns=%s clock=%s" % (
    (elapsed + calls * bias - own) / own * 100, (elapsed - own) / own * 100, bias,
    ext.get("span_clock")))
EOF
		done
	done
done
for v in migrate forced; do
	for mode in batch span pair; do
		f=$tmp/r5.$v.$mode
		raw=$(field "$f" raw_pct | median)
		corr=$(field "$f" corr_pct | median)
		clock=$(sed -n 's/.*clock=//p' "$f" | sort -u | tr '\n' ' ' | sed 's/ $//')
		case $v in
		migrate) label="accuracy, 10 µs spans moving between CPUs half way, $mode ($clock clock): error vs own clock, raw → corrected" ;;
		forced) label="accuracy, 10 µs spans, $mode, CLOCK_MONOTONIC forced ($clock clock): error vs own clock, raw → corrected" ;;
		esac
		row 5 "$label" "$(calc %+.2f%% "$raw") → $(calc %+.2f%% "$corr")" \
			"own clock; calibrated bias $(field "$f" bias_ns | median) ns" "—" "within 2%" \
			"$(ok "($corr) <= 2 && ($corr) >= -2")"
	done
done

# --- 6. scaling with threads ------------------------------------------------
say "6/15 scaling: traced cost per span with 1 and 2 threads"
for r in 1 2 3; do
	for mode in batch span; do
		for th in 1 2; do
			span_ns "khprof $mode x$th" "$KHPROF" record --mode $mode -- "$SC" probes "${N2[$mode]}" $th \
				>>"$tmp/r6.$mode.$th"
		done
	done
	span_ns probes "$SC" probes $N1 >>"$tmp/r6.untraced"
	span_ns inproc-on "$SC" inproc-on 1000000 1 >>"$tmp/r6.inproc.1"
	span_ns inproc-on "$SC" inproc-on 1000000 2 >>"$tmp/r6.inproc.2"
	span_ns inproc-off "$SC" inproc-off $N1 >>"$tmp/r6.inproc-off"
done
untraced6=$(median <"$tmp/r6.untraced")
for mode in batch span; do
	c1=$(calc %.1f "$(median <"$tmp/r6.$mode.1") - $untraced6")
	c2=$(calc %.1f "$(median <"$tmp/r6.$mode.2") - $untraced6")
	row 6 "traced cost, ns/span, 2 threads (worst thread): $mode" "$c2" "1 thread $c1" \
		"$(calc %.2f× "$c2 / $c1")" "≈1× (≤1.2×)" "$(ok "$c2 <= 1.2 * $c1")"
done
off6=$(median <"$tmp/r6.inproc-off")
i1=$(calc %.1f "$(median <"$tmp/r6.inproc.1") - $off6")
i2=$(calc %.1f "$(median <"$tmp/r6.inproc.2") - $off6")
row 6 "reference: in-process design enabled (C port, shared atomic counters), 2 threads" \
	"—" "$i2 (1 thread $i1)" "$(calc %.2f× "$i2 / $i1")" "—" "—"

# --- 7. what one --interval sample costs khprof -----------------------------
say "7/15 --interval sample cost"
sleep 600 &
idle=$!
for _ in 1 2 3 4 5; do
	"$B/interval_cost" "$idle" 20000 >>"$tmp/r7"
done
kill "$idle" 2>/dev/null || true
s7=$(awk '{ print $1 }' "$tmp/r7" | median)
m7=$(awk '{ print $2 }' "$tmp/r7" | median)
p7=$(awk '{ print $3 }' "$tmp/r7" | median)
row 7 "--interval: khprof CPU per sample, µs (slot map read over the CPUs; /proc stat+status)" \
	"$s7 ($m7; $p7)" "—" "$(calc %.3f%% "$s7 / 1000")" "at 100 ms, of one CPU" "—"
# --- 8. page faults of a traced process -------------------------------------
say "8/15 page faults: untraced and traced (khprof's RSS peak watcher)"
PF=$root/$B/page_fault
for r in 1 2 3 4 5; do
	"$PF" 128 8 | sed -n 's/^ns_per_fault=//p' >>"$tmp/r8.untraced"
	"$KHPROF" record -q -- "$PF" 128 8 2>/dev/null | sed -n 's/^ns_per_fault=//p' >>"$tmp/r8.traced"
done
pf0=$(median <"$tmp/r8.untraced")
pf1=$(median <"$tmp/r8.traced")
row 8 "page fault, ns, traced process (every RSS change runs the peak watcher)" "$pf1" \
	"untraced $pf0" "$(calc %.2f× "$pf1 / $pf0")" "—" "—"

# --- 9. live metrics: a scrape, and khprof idle ------------------------------
say "9/15 --serve: khprof CPU per /metrics scrape, and idle-attached"
for r in 1 2 3; do
	./bench/scrape_cost.sh "$KHPROF" "$WORKLOAD" "$root/$B/scrape" "$tmp/r9.$r" "$SC" >>"$tmp/r9"
	settle
done
scrape_us=$(field "$tmp/r9" scrape_us | median)
idle_pct=$(field "$tmp/r9" idle_pct | median)
scrape_bytes=$(field "$tmp/r9" bytes | median)
row 9 "khprof CPU per /metrics scrape, µs (OpenMetrics, $scrape_bytes bytes, session open, 25 stages with histograms)" \
	"$scrape_us" "—" "—" "≤5000" "$(ok "$scrape_us <= 5000")"
row 9 "khprof CPU idle-attached to a quiet process, % of one CPU" \
	"$idle_pct" "—" "—" "≤0.5" "$(ok "$idle_pct <= 0.5")"
plain9=$(field "$tmp/r9" span_plain_ns | median)
scraped9=$(field "$tmp/r9" span_scraped_ns | median)
row 9 "traced program's ns/span (batch) while scraped every 1 s" "$scraped9" \
	"not scraped $plain9" "$(calc %.2f× "$scraped9 / $plain9")" "unchanged within noise" \
	"$(ok "$scraped9 <= 1.1 * $plain9")"
# --- 10. cost per context switch (off-CPU log) --------------------------------
say "10/15 context switches: untraced, traced, and while khprof traces another process"
# sw_ns OUT CMD...: a switch_cost run's ns_per_switch, appended to OUT.
sw_ns() {
	local out=$1
	shift
	"$@" 2>/dev/null | sed -n 's/^ns_per_switch=//p' | tail -n 1 >>"$out"
}
for r in 1 2 3 4 5; do
	sw_ns "$tmp/r10.untraced" "$B/switch_cost" 20000
	sw_ns "$tmp/r10.traced" "$KHPROF" record -q -- "$B/switch_cost" 20000
	# Each wait a queue-wait span: every batch takes the off-CPU pass.
	sw_ns "$tmp/r10.spans-untraced" "$B/switch_cost" 20000 spans
	sw_ns "$tmp/r10.spans" "$KHPROF" record -q --mode batch -- "$B/switch_cost" 20000 spans
	# Another process traced meanwhile (a workload waiting on a fifo): this
	# one pays only the tgid filter.
	rm -f "$tmp/idle"
	mkfifo "$tmp/idle"
	"$KHPROF" record -q -- build/workloads/workload serve <"$tmp/idle" >/dev/null 2>&1 &
	other=$!
	exec 9>"$tmp/idle"
	sleep 0.5 # let it attach: nothing here waits on the other tracer otherwise
	sw_ns "$tmp/r10.other" "$B/switch_cost" 20000
	exec 9>&-
	wait "$other" 2>/dev/null || true
done
sw0=$(median <"$tmp/r10.untraced")
sw1=$(median <"$tmp/r10.traced")
sw2=$(median <"$tmp/r10.other")
sw3=$(median <"$tmp/r10.spans-untraced")
sw4=$(median <"$tmp/r10.spans")
row 10 "context switch of a traced thread, ns (2 threads on 1 CPU, pipe ping-pong)" \
	"$(calc %+.0f "$sw1 - $sw0") ($sw1)" "untraced $sw0" "$(calc %.3f× "$sw1 / $sw0")" "—" "—"
row 10 "context switch of another process while khprof traces one, ns" \
	"$(calc %+.0f "$sw2 - $sw0") ($sw2)" "untraced $sw0" "$(calc %.3f× "$sw2 / $sw0")" "filter only" "—"
row 10 "context switch inside a queue-wait span, batch mode (off-CPU pass), ns" \
	"$(calc %+.0f "$sw4 - $sw3") ($sw4)" "untraced $sw3" "$(calc %.3f× "$sw4 / $sw3")" "—" "—"

# --- 11. --sample -----------------------------------------------------------
say "11/15 --sample: the traced program's wall at 0, 99 and 999 Hz, khprof's CPU, symbolization"
./bench/sample_cost.sh "$KHPROF" build/workloads/stackwork "$B/symbolize" "$tmp/r11" >"$tmp/r11.out"
r99=$(field "$tmp/r11.out" ratio99)
r999=$(field "$tmp/r11.out" ratio999)
row 11 "--sample=99: traced program's own wall (stackwork, 1 thread), vs traced without sampling" \
	"$(field "$tmp/r11.out" wall99_ms) ms" "$(field "$tmp/r11.out" wall0_ms) ms" \
	"$(calc %.3f× "$r99")" "≤1.01×" "$(ok "$r99 <= 1.01")"
row 11 "--sample=999: the same" "$(field "$tmp/r11.out" wall999_ms) ms" \
	"$(field "$tmp/r11.out" wall0_ms) ms" "$(calc %.3f× "$r999")" "≤1.03×" "$(ok "$r999 <= 1.03")"
row 11 "--sample=99 and 999: the traced program's own CPU time, vs traced without sampling" \
	"$(calc %.3f× "$(field "$tmp/r11.out" cpu_ratio99)"); $(calc %.3f× "$(field "$tmp/r11.out" cpu_ratio999)")" \
	"—" "—" "—" "—"
row 11 "--sample: khprof CPU per sample, µs (999 against 99 Hz); fixed, ms (loading the sampler, symbol tables)" \
	"$(field "$tmp/r11.out" cpu_per_sample_us); $(field "$tmp/r11.out" cpu_fixed_ms)" "—" "—" "—" "—"
fill11=$(field "$tmp/r11.out" fill_ms)
row 11 "symbolizing 100,000 samples (2,000 stacks of 12 frames, libc and the program), ms; keeping one, ns" \
	"$fill11; $(field "$tmp/r11.out" add_ns)" "—" "—" "<2000" "$(ok "$fill11 < 2000")"
# What a DWARF unwind of a copied stack would recover without frame
# pointers, and cost (docs/SAMPLING.md): stackwork-nofp at 999 Hz.
for size in 1024 8192; do
	"$B/dwarf_unwind" -s $size -- build/workloads/stackwork-nofp 300 2>/dev/null |
		grep '^samples=' >"$tmp/r11.dwarf$size" || echo "samples=n/a" >"$tmp/r11.dwarf$size"
done
row 11 "DWARF unwind (not built): stacks reaching the thread's entry, 1 KiB and 8 KiB copied, vs the frame-pointer walk (stackwork-nofp)" \
	"$(field "$tmp/r11.dwarf1024" dwarf_complete); $(field "$tmp/r11.dwarf8192" dwarf_complete)" \
	"$(field "$tmp/r11.dwarf8192" fp_complete)" "—" "—" "—"
row 11 "DWARF unwind (not built): bytes per sample; khprof CPU to unwind one, µs (libdwfl, warm; first pass ms)" \
	"$(field "$tmp/r11.dwarf1024" bytes_per_sample), $(field "$tmp/r11.dwarf8192" bytes_per_sample); $(field "$tmp/r11.dwarf8192" unwind_us_per_sample) ($(field "$tmp/r11.dwarf8192" first_pass_ms))" \
	"560 now" "—" "—" "—"

# --- 12. reading a large record: khprof against the seed's reader ----------
say "12/15 a 50 MB record: khprof report --format seed against the seed's reader"
# timed OUT CMD...: "seconds peak_kib" of one run (GNU time), appended to OUT.
timed() {
	local out=$1
	shift
	/usr/bin/time -f '%e %M' -o "$tmp/timed" "$@" >/dev/null 2>&1 || true
	cat "$tmp/timed" >>"$out"
}
python3 bench/records.py big "$tmp/big.json" 50
for r in 1 2 3; do
	timed "$tmp/r12.khprof" "$KHPROF" report "$tmp/big.json" --format seed
	[ -x build/seed-render ] && timed "$tmp/r12.seed" build/seed-render "$tmp/big.json"
done
k11s=$(awk '{ print $1 }' "$tmp/r12.khprof" | median)
k11m=$(awk '{ print $2 / 1024 }' "$tmp/r12.khprof" | median)
s11s=$( [ -s "$tmp/r12.seed" ] && awk '{ print $1 }' "$tmp/r12.seed" | median || echo n/a)
s11m=$( [ -s "$tmp/r12.seed" ] && awk '{ print $2 / 1024 }' "$tmp/r12.seed" | median || echo n/a)
row 12 "50 MB record, seconds to read and print (--format seed)" "$k11s" "seed-render $s11s" \
	"$(calc %.2f× "$k11s / $s11s")" "≤3×" "$(ok "$k11s <= 3 * $s11s")"
row 12 "50 MB record, peak RSS, MiB" "$(calc %.0f "$k11m")" "seed-render $(calc %.0f "$s11m")" \
	"$(calc %.2f× "$k11m / $s11m")" "≤3×" "$(ok "$k11m <= 3 * $s11m")"

# --- 13. khprof diff of many runs: linear, not quadratic ---------------------
say "13/15 khprof diff of 1,000 and 4,000 runs a side"
for n in 1000 4000; do
	python3 bench/records.py runs "$tmp/runs$n" "$n"
	timed "$tmp/r13.$n" "$KHPROF" diff "$tmp/runs$n/base" "$tmp/runs$n/cand"
	rm -rf "$tmp/runs$n"
done
d1=$(awk '{ print $1 }' "$tmp/r13.1000")
d4=$(awk '{ print $1 }' "$tmp/r13.4000")
m4=$(awk '{ print $2 / 1024 }' "$tmp/r13.4000")
row 13 "khprof diff, seconds: 4,000 runs a side (1,000 a side in brackets)" "$d4 ($d1)" \
	"4 × 1,000: $(calc %.1f "4 * $d1")" "$(calc %.2f× "$d4 / (4 * $d1)")" \
	"≤1.5× (linear; all m n pairs grew 16×)" "$(ok "$d4 <= 6 * $d1")"
row 13 "khprof diff, peak RSS, MiB, 4,000 runs a side" "$(calc %.0f "$m4")" "—" "—" "—" "—"

# --- 14. attach --all: what watching every execve of a host costs -------------
say "14/15 attach --all: the first look at the host, and an execve known, new and instrumented"
./bench/all-cost/run.sh "$KHPROF" "$WORKLOAD" "$root/$B/exec_loop" "$root/$B/host_scan" "$tmp/r14" \
	>"$tmp/r14.out"
plain14=$(field "$tmp/r14.out" plain_us)
known14=$(field "$tmp/r14.out" known_us)
row 14 "attach --all, first look at every process: ms cold (warm in brackets), $(field "$tmp/r14.out" processes) processes, $(field "$tmp/r14.out" files) files" \
	"$(field "$tmp/r14.out" scan_cold_ms) ($(field "$tmp/r14.out" scan_warm_ms))" "—" "—" "—" "—"
row 14 "attach --all, µs from fork to exit of /bin/true: its file known plain (no stop)" \
	"$known14" "no khprof $plain14" "$(calc %.3f× "$known14 / $plain14")" "—" "—"
row 14 "attach --all, µs from fork to exit: a file not seen before (stopped, read, resumed; khprof's look in brackets)" \
	"$(field "$tmp/r14.out" new_us) ($(field "$tmp/r14.out" look_us))" "no khprof $plain14" "—" "—" "—"
row 14 "attach --all, ns of kh_exec_start per execve (the kernel's BPF statistics)" \
	"$(field "$tmp/r14.out" prog_ns)" "—" "—" "—" "—"
row 14 "attach --all, µs from fork to exit of an instrumented ~1 ms program (stopped until attached)" \
	"$(field "$tmp/r14.out" instr_all_us)" "no khprof $(field "$tmp/r14.out" instr_plain_us)" \
	"—" "—" "—"

# --- 15. how good khprof diff's verdicts are --------------------------------
# A pool of alternated runs recorded afresh (about 10 minutes here), then
# trials drawn from it (bench/verdict): the table goes into its own section.
say "15/15 khprof diff's verdicts on recorded runs beside a plain U test (bench/verdict)"
./bench/verdict/run.sh "$tmp/verdict" >"$tmp/verdict.md"
grep -q '^| single |' "$tmp/verdict.md" || die "bench/verdict/run.sh printed no table"

# --- the table and docs/PERFORMANCE.md --------------------------------------
header='| row | measurement | khprof | reference | ratio | target | met |
|---|---|---|---|---|---|---|'
table="$header
$(cat "$ROWS")"
echo "$table"

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- . ':!docs/PERFORMANCE.md' 2>/dev/null || commit="$commit (with uncommitted changes)"
misses=$(grep -E '\*\*no\*\* \|$|unresolved \|$' "$ROWS" | awk -F' \\| ' '{
	got = ($5 == "—") ? $3 : $3 ", ratio " $5
	why = ($7 ~ /unresolved/) ? " (unresolved: the 95% interval straddles the target)" : ""
	printf "- row %s, %s: %s against a target of %s%s\n", substr($1, 3), $2, got, $6, why }' || true)
# The verdict rows whose goal khprof missed, or where the plain U test did better.
misses=$(printf '%s\n' "$misses"; awk -F' \\| ' '/^\| / && ($8 ~ /no/ || $9 ~ /no/) {
	printf "- row 15, %s, %s, %s: khprof %s, the U test %s against a goal of %s\n",
		substr($1, 3), $2, $3, $5, $6, $7 }' "$tmp/verdict.md")
misses=$(printf '%s\n' "$misses" | sed '/^$/d')
[ -n "$misses" ] || misses="- none"

{
	cat <<EOF
# khprof performance

Generated by \`make bench\` (\`bench/run.sh\`); rerun it to reproduce, do not
edit by hand. Every figure is a median of runs that alternate it with its
reference in the same run of the script.

- date: $(date -u '+%Y-%m-%d %H:%M UTC')
- kernel: $(uname -r)
- CPU: $cpu, $(nproc) vCPUs
- load average (1, 5, 15 min) at start: $load_start; at end: $(cut -d' ' -f1-3 /proc/loadavg)
- khprof: commit $commit
- bpftrace: $(bpftrace --version 2>/dev/null | head -n 1)
- seed-overhead: $([ -n "$SEED" ] && echo "built from ../shared/seed" || echo "unavailable (n/a)")
- valgrind: $([ "$have_valgrind" = 1 ] && valgrind --version || echo "unavailable (n/a)")

$table

Targets missed or not resolved in this run (why: see the end of this page):

$misses

EOF
	cat bench/rows.md
	echo
	echo "## Row 15: how good khprof diff's verdicts are"
	echo
	cat "$tmp/verdict.md"
	echo
	cat bench/verdict/about.md
} >"$DOC.tmp"
mv "$DOC.tmp" "$DOC"
say "wrote $DOC"
