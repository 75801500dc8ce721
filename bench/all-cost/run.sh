#!/usr/bin/env bash
# bench/all-cost/run.sh KHPROF WORKLOAD EXEC_LOOP HOST_SCAN OUTDIR: what
# attach --all costs the host.  Prints one line:
#   processes= files= scan_cold_ms= scan_warm_ms=  the first look at every
#                   process of this host (host_scan.c, nothing attached)
#   plain_us=       /bin/true's fork, execve and exit, no khprof
#   known_us=       the same under attach --all, its file known plain (a
#                   lookup in the BPF side, no stop)
#   prog_ns=        kh_exec_start's own time per execve in that case, from
#                   the kernel's BPF statistics (kernel.bpf_stats_enabled,
#                   on for that loop only)
#   new_us=         a file the watch has not seen: stopped, its notes and
#                   those of the libraries it names read, resumed (copies
#                   of /bin/true, each run once)
#   look_us=        of which khprof's look at the file (its -v lines)
#   instr_plain_us= instr_all_us=  an instrumented program of ~1 ms
#                   (workload timed 1 1), alone and under --all (stopped
#                   at its execve until its own tracer is attached)
# each the median of ROUNDS rounds (5) alternating without and with khprof.
# The watch is kept to a cgroup of its own (--container), so no other
# process of the machine is stopped.  Run by bench/run.sh (row 13); usable
# alone, as root.
set -euo pipefail
KHPROF=$1 WORKLOAD=$2 LOOP=$3 SCAN=$4 out=$5
ROUNDS=${ROUNDS:-5} N=${EXECS:-200} SETTLE=${SETTLE:-2}
mkdir -p "$out"
read -r scan < <("$SCAN")
mount=$(awk '/ - cgroup2 / && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
[ -n "$mount" ] || { echo "all-cost: no cgroup2 file system" >&2; exit 1; }
cg=/khprof-bench-all-$$
mkdir -p "$mount$cg/run"
kpid=
cleanup() {
	[ -z "$kpid" ] || { kill "$kpid" 2>/dev/null; wait "$kpid" 2>/dev/null || true; }
	rmdir "$mount$cg/run" "$mount$cg" 2>/dev/null || true
}
trap cleanup EXIT
# Runs the loop inside the watched cgroup; its mean µs per exec.
in_cgroup() { sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$mount$cg/run" "$LOOP" "$@" |
	      sed -n 's/^exec_us=//p'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for r in $(seq "$ROUNDS"); do
	in_cgroup "$N" /bin/true >>"$out/plain"
	in_cgroup 20 "$WORKLOAD" timed 1 1 >>"$out/instr_plain"
	: >"$out/khprof.err"
	"$KHPROF" -v attach --all --container "$cg" -q 2>"$out/khprof.err" &
	kpid=$!
	until grep -q watching "$out/khprof.err"; do
		kill -0 "$kpid" 2>/dev/null || { cat "$out/khprof.err" >&2; exit 1; }
		sleep 0.05
	done
	sleep "$SETTLE" # the start-up's work, and the last round's uprobe detaches, done
	in_cgroup 1 /bin/true >/dev/null # its file known plain from here on
	stats=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -qw kernel.bpf_stats_enabled=1
	in_cgroup "$N" /bin/true >>"$out/known"
	# This watch's program: the newest of the name (one alone, as a rule).
	bpftool -j prog show name kh_exec_start | python3 -c '
import json, sys
progs = json.load(sys.stdin)
p = max(progs if isinstance(progs, list) else [progs], key=lambda p: p["id"])
if p.get("run_cnt"):
    print("%.0f" % (p["run_time_ns"] / p["run_cnt"]))' >>"$out/prog"
	sysctl -qw kernel.bpf_stats_enabled="$stats"
	rm -rf "$out/copies"
	mkdir "$out/copies"
	for i in $(seq "$N"); do cp /bin/true "$out/copies/true.$i"; done
	from=$(wc -l <"$out/khprof.err")
	in_cgroup -each "$out"/copies/true.* >>"$out/new"
	tail -n +"$((from + 1))" "$out/khprof.err" |
		sed -n 's/.*program looked at in \([0-9]*\) us: none/\1/p' | median >>"$out/look"
	in_cgroup 20 "$WORKLOAD" timed 1 1 >>"$out/instr_all"
	kill "$kpid"
	wait "$kpid" || true
	kpid=
	# The kernel detaches the traced programs' uprobes after khprof has gone
	# (~80 ms a link), holding up every fork meanwhile: not the next loop's.
	sleep "$SETTLE"
done
echo "$scan" | sed 's/instrumented=[0-9]* //; s/cold_ms/scan_cold_ms/; s/warm_ms/scan_warm_ms/' |
	tr '\n' ' '
for f in plain known new look instr_plain instr_all; do
	printf '%s_us=%s ' "$f" "$(median <"$out/$f")"
done
printf 'prog_ns=%s' "$( [ -s "$out/prog" ] && median <"$out/prog" || echo n/a)"
echo
