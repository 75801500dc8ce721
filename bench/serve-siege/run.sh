#!/usr/bin/env bash
# bench/serve-siege/run.sh [KHPROF...]: the siege of --serve behind the
# choice in userspace/common/httpd.c.  For each server, each attack of
# bench/serve-siege/siege.c for SECONDS (20) while a scraper scrapes every
# 500 ms; one line each:
#   SERVER ATTACK N answered=A scrapes=S attackers_reopened=R server_cpu_pct=C
# Servers: each KHPROF given (default build/khprof) as `record --serve`
# of `sleep`, and Debian's libmicrohttpd (bench/serve-siege/mhd_serve.c,
# installed and built here) with khprof's old bounds (8 connections, 5 s),
# its new ones (64, 2 s), and with a per-IP limit of 8 against attackers
# from another address (127.0.0.2).  Root (khprof traces); a measurement of
# minutes, not a test: make test never runs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_EACH=${SECONDS_EACH:-20}
# KHPROFS="" leaves khprof out (libmicrohttpd alone).
[ $# -gt 0 ] || set -- ${KHPROFS-build/khprof}
./scripts/install-deps.sh libmicrohttpd-dev
make --no-print-directory build/serve-siege build/serve-mhd >/dev/null
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT
tck=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
attacks=("idle 8" "idle 12" "idle 200" "slowloris 200" "noeol 20")

# siege_all NAME PORT PID [ATTACKER_ADDR]: every attack against the server
# on PORT, with the server's CPU (process PID) in % of one CPU.
siege_all() {
	local name=$1 port=$2 pid=$3 from=${4:-} a before result
	for a in "${attacks[@]}"; do
		before=$(cpu_ticks "$pid")
		# shellcheck disable=SC2086
		result=$(build/serve-siege "$port" $a "$SECONDS_EACH" $from)
		echo "$name $a $result server_cpu_pct=$(( ($(cpu_ticks "$pid") - before) * 100 / (tck * SECONDS_EACH) ))"
	done
}

# wait_ready FILE PID: until FILE says the server listens.
wait_ready() {
	for _ in $(seq 300); do
		grep -qE "serving metrics|ready" "$1" && return 0
		kill -0 "$2" 2>/dev/null || { cat "$1" >&2; return 1; }
		sleep 0.1
	done
	return 1
}

# As many bytes as khprof's exposition (BYTES without khprof: about that of `sleep`'s).
bytes=${BYTES:-10190}
for k in "$@"; do
	port=$(free_port)
	"$k" record -q --serve "127.0.0.1:$port" -- sleep 100000 >"$out/k.out" 2>&1 &
	pid=$!
	wait_ready "$out/k.out" "$pid"
	bytes=$(curl -s "http://127.0.0.1:$port/metrics" | wc -c)
	siege_all "$k" "$port" "$pid"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
done
# libmicrohttpd serving as many bytes.
for cfg in "8 5 0" "64 2 0" "64 2 8"; do
	port=$(free_port)
	# shellcheck disable=SC2086
	build/serve-mhd "$port" $cfg "$bytes" >"$out/m.out" 2>&1 &
	pid=$!
	wait_ready "$out/m.out" "$pid"
	set -- $cfg
	if [ "$3" != 0 ]; then
		siege_all "mhd(limit=$1,timeout=${2}s,per_ip=$3)" "$port" "$pid" 127.0.0.2
	else
		siege_all "mhd(limit=$1,timeout=${2}s)" "$port" "$pid"
	fi
	kill "$pid"
	wait "$pid" 2>/dev/null || true
done
