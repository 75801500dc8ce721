#!/usr/bin/env bash
# bench/scrape_cost.sh KHPROF WORKLOAD SCRAPE OUTDIR [SPAN_COST]: what
# --serve costs.  Attaches `khprof attach --serve` to the workload's serve
# loop with a session open and spans of all 25 stages, then prints
#   scrape_us=   khprof CPU (user + system) per /metrics scrape, over N scrapes
#   idle_pct=    khprof CPU while attached to the quiet process, % of one CPU
#   bytes=       size of one exposition
# and with SPAN_COST (bench/span_cost.c), the traced program's own cost per
# span under `record --mode batch`, not scraped and scraped every second:
#   span_plain_ns=  span_scraped_ns=
# Run by bench/run.sh (row 9); usable alone, as root.
set -euo pipefail
KHPROF=$1 WORKLOAD=$2 SCRAPE=$3 out=$4
N=${SCRAPES:-3000}
IDLE_S=${IDLE_S:-10}
tck=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

mkdir -p "$out"
rm -f "$out/w.in"
mkfifo "$out/w.in"
"$WORKLOAD" serve <"$out/w.in" >"$out/w.out" &
wpid=$!
exec 7>"$out/w.in"
port=$(free_port)
"$KHPROF" attach -q --mode span -p "$wpid" --serve "127.0.0.1:$port" 2>"$out/khprof.err" &
kpid=$!
cleanup() { kill "$kpid" 2>/dev/null || true; exec 7>&-; wait 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 600); do
	grep -q "attached to PID" "$out/khprof.err" && break
	kill -0 "$kpid" 2>/dev/null || { cat "$out/khprof.err" >&2; exit 1; }
	sleep 0.1
done
# A session open, with spans of all 25 stages, so every scrape reads a live
# slot and folds 25 latency histograms from each CPU's block.
echo begin >&7
echo spans >&7
echo stages >&7

# Idle: attached, nobody scraping, the process quiet.
t0=$(cpu_ticks "$kpid")
sleep "$IDLE_S"
t1=$(cpu_ticks "$kpid")
idle_pct=$(awk "BEGIN { printf \"%.2f\", ($t1 - $t0) * 100 / $tck / $IDLE_S }")

t0=$(cpu_ticks "$kpid")
res=$("$SCRAPE" "$port" "$N")
t1=$(cpu_ticks "$kpid")
scrapes=$(sed -n 's/.*scrapes=\([0-9]*\).*/\1/p' <<<"$res")
bytes=$(sed -n 's/.*bytes=\([0-9]*\).*/\1/p' <<<"$res")
scrape_us=$(awk "BEGIN { printf \"%.1f\", ($t1 - $t0) * 1e6 / $tck / $scrapes }")
echo "scrape_us=$scrape_us idle_pct=$idle_pct bytes=$((bytes / scrapes))"
cleanup
trap - EXIT

[ -n "${5:-}" ] || exit 0
SC=$5
SPANS=${SPANS:-100000000} # about 4 s in batch mode: 4 scrapes
span_ns() { sed -n 's/^ns_per_span=//p' | tail -n 1; }
plain=$("$KHPROF" record -q --mode batch -- "$SC" probes "$SPANS" 2>/dev/null | span_ns)
port=$(free_port)
(while sleep 1; do "$SCRAPE" "$port" 1 >/dev/null 2>&1 || true; done) &
scraper=$!
scraped=$("$KHPROF" record -q --mode batch --serve "127.0.0.1:$port" -- "$SC" probes "$SPANS" 2>/dev/null | span_ns)
kill "$scraper"
echo "span_plain_ns=$plain span_scraped_ns=$scraped"
