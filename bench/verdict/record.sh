#!/usr/bin/env bash
# Records the pools of runs bench/verdict/run.sh draws its trials from:
# ROUNDS rounds, each one run of every configuration of each workload, in
# an order that turns by one every round, so that the runs of one round lie
# seconds apart (an alternated series, as docs/CI.md recommends) and a
# change in the machine's load hits every configuration alike.
#
#   bench/verdict/record.sh DIR [ROUNDS]     (as root, after make)
#
# DIR/WORKLOAD/CONFIG/run-NNN.json is round NNN of CONFIG.  The workloads:
# build/workloads/stagework single and threads (stages of known cost), and
# kh-scan on the demo corpus (the same build only: a real scanner's
# identical builds).  Configurations ending in "-busy" run while
# build/workloads/hog spins one thread on every CPU: the hogs are started
# before the run, which starts only once they all spin (they say "ready"),
# and stopped and waited for after it.  No sleep stands in for either.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$1
rounds=${2:-30}
CORPUS=build/demo-corpus
for f in build/khprof build/workloads/stagework build/workloads/hog build/kh-scan build/kh-corpus; do
	[ -x "$f" ] || { echo "record.sh: $f is missing: run make first" >&2; exit 1; }
done
[ -f "$CORPUS/truth.jsonl" ] || build/kh-corpus --seed 1 --size 32 "$CORPUS" >/dev/null
# Private copies, so that a rebuild during the minutes of recording cannot
# mix two versions into one pool.
mkdir -p "$dir/bin"
cp build/khprof build/workloads/stagework build/workloads/hog build/kh-scan "$dir/bin/"
KH=$dir/bin/khprof
SW=$dir/bin/stagework
HOG=$dir/bin/hog
KS=$dir/bin/kh-scan

# NAME:STAGE=FACTOR (or nothing): the stage costs of each configuration.
stagework_configs=(a: a2: a-busy: up10:decode=1.1 up10-busy:decode=1.1 up20:decode=1.2
	up20-busy:decode=1.2 fast:phase1-triggers=0.5 fast-busy:phase1-triggers=0.5)
khscan_configs=(a: a2: a-busy:)
declare -A units=([single]=200 [threads]=300)

record() { # record WORKLOAD NAME:FACTOR ROUND
	local w=$1 name=${2%%:*} factor=${2#*:} out=$dir/$1/${2%%:*} hog_pid status=0 cmd
	case $w in
	kh-scan) cmd=("$KS" --threads 2 --workload-class verdict "$CORPUS/tree") ;;
	*)
		cmd=("$SW" "$w" "${units[$w]}")
		[ -n "$factor" ] && cmd+=("$factor")
		;;
	esac
	mkdir -p "$out"
	case $name in
	*-busy)
		coproc HOGS { exec "$HOG"; }
		hog_pid=$HOGS_PID
		read -r ready <&"${HOGS[0]}"
		[ "$ready" = ready ] || { echo "record.sh: the hogs did not start" >&2; exit 1; }
		;;
	esac
	"$KH" record -q --repeat 1 --append -o "$out" -- "${cmd[@]}" >/dev/null 2>"$dir/last.err" ||
		status=$?
	case $name in
	*-busy)
		eval "exec ${HOGS[1]}>&-"
		wait "$hog_pid"
		;;
	esac
	# kh-scan exits 1 when it reports findings, and record with its status.
	[ "$status" -le 1 ] || { cat "$dir/last.err" >&2; exit 1; }
	[ -f "$out/$(printf 'run-%03d.json' "$3")" ] ||
		{ echo "record.sh: no record for round $3 in $out" >&2; exit 1; }
}

for w in single threads kh-scan; do
	if [ "$w" = kh-scan ]; then
		configs=("${khscan_configs[@]}")
		"$KS" --threads 2 "$CORPUS/tree" >/dev/null || true # warm the page cache
	else
		configs=("${stagework_configs[@]}")
		"$SW" "$w" "${units[$w]}" >/dev/null
	fi
	n=${#configs[@]}
	for r in $(seq "$rounds"); do
		for k in $(seq 0 $((n - 1))); do
			record "$w" "${configs[$(((r + k) % n))]}" "$r"
		done
		echo "record.sh: $w round $r of $rounds" >&2
	done
done
