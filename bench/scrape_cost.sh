#!/usr/bin/env bash
# bench/scrape_cost.sh KHPROF WORKLOAD SCRAPE OUTDIR: what --serve costs
# khprof.  Attaches `khprof attach --serve` to the workload's serve loop
# with a session open, then prints
#   scrape_us=   khprof CPU (user + system) per /metrics scrape, over N scrapes
#   idle_pct=    khprof CPU while attached to the quiet process, % of one CPU
#   bytes=       size of one exposition
# Run by bench/run.sh (row 7); usable alone, as root.
set -euo pipefail
KHPROF=$1 WORKLOAD=$2 SCRAPE=$3 out=$4
N=${SCRAPES:-3000}
IDLE_S=${IDLE_S:-10}
tck=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

mkdir -p "$out"
rm -f "$out/w.in"
mkfifo "$out/w.in"
"$WORKLOAD" serve <"$out/w.in" >"$out/w.out" &
wpid=$!
exec 7>"$out/w.in"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$KHPROF" attach -q --mode span -p "$wpid" --serve "127.0.0.1:$port" 2>"$out/khprof.err" &
kpid=$!
cleanup() { kill "$kpid" 2>/dev/null || true; exec 7>&-; wait 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 600); do
	grep -q "attached to PID" "$out/khprof.err" && break
	kill -0 "$kpid" 2>/dev/null || { cat "$out/khprof.err" >&2; exit 1; }
	sleep 0.1
done
# A session open, with spans, so the scrape reads a live slot as well.
echo begin >&7
echo spans >&7

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
