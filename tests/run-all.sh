#!/bin/sh
# Checks the layering (tests/check-layers.sh), then runs the test binary of
# every test source, unit tests first, then integration, from the repo
# root, then the kernel matrix, and closes with the machine facts the run
# depended on ("machine: ..." lines: its kernel build, clocksource, CPUs,
# the kernel matrix's accelerator and time) and one line:
# "tests: N passed, N failed, N skipped".  Going by the sources leaves out
# stale binaries in build/tests whose source is gone.
# The BPF tests need root; they skip elsewhere, never when CI=true.
set -u
cd "$(dirname "$0")/.."
passed=0 failed=0 skipped=0 broken=""
# khprof's CO-RE target cache (userspace/capture/kernel/btf_cache.h) in build/, not
# in the machine's /var/cache: the first traced test writes it, the rest
# load with it.
export KHPROF_CACHE_DIR="$PWD/build/tests/khprof-cache"
log=$(mktemp)
# KH_TESTS="BIN[:PATTERN] ..." (make test T=...): those host test binaries
# alone, each with KH_TEST_FILTER=PATTERN when given, and nothing else.
if [ -n "${KH_TESTS:-}" ]; then
	status=0
	for t in $KH_TESTS; do
		bin=build/tests/${t%%:*}
		if [ ! -x "$bin" ]; then
			echo "run-all: no test binary '$bin' (make test T= takes a name of tests/unit or tests/integration)" >&2
			exit 2
		fi
		case $t in
		*:*) KH_TEST_FILTER=${t#*:} "$bin" || status=1 ;;
		*) "$bin" || status=1 ;;
		esac
	done
	exit "$status"
fi
# The layering (docs/ARCHITECTURE.md) counts as one test.
echo "== tests/check-layers.sh"
if ./tests/check-layers.sh; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
fi
# Runs one test binary and adds its counts; LABEL names the run in the log.
run_binary() {
	bin=$1
	label=$2
	echo "== $bin$label"
	"$bin" >"$log" 2>&1
	rc=$?
	cat "$log"
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	if grep -q ": skipped:" "$log" && [ -z "$p$f" ]; then
		skipped=$((skipped + 1))
		return
	fi
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	skipped=$((skipped + ${s:-0}))
	if [ "$rc" -ne 0 ] && [ -z "$f" ]; then
		failed=$((failed + 1))
		broken="$broken $bin$label"
	fi
}
for src in $(find tests/unit -name 'test_*.c' | sort) $(find tests/integration -name 'test_*.c' | sort); do
	name=${src##*/}
	bin=build/tests/${name%.c}
	if [ ! -x "$bin" ]; then
		# A test that was never built must not vanish from the count.
		failed=$((failed + 1))
		broken="$broken $bin"
		continue
	fi
	run_binary "$bin" ""
done
# The fallbacks of older kernels (docs/KERNELS.md) on this one: every mode,
# fault and fork test again as on Linux 6.1, whose features khprof can do
# without are turned off (KHPROF_DISABLE_FEATURES, test_kernels.c names them),
# and without task storage and BPF cookies, as on 5.10.
# All but sched_prepare_exec: its fallback is fentry on begin_new_exec,
# which a kernel without ftrace cannot give (this one), and the kernel
# matrix runs it on 6.1 itself.
fallbacks=uprobe_multi,bpf_preempt_disable,bpf_rdonly_cast,bpf_copy_from_user_str
fallbacks=$fallbacks,bpf_send_signal_task,uprobe_func_ip,exit_before_mm,fentry,task_storage
fallbacks=$fallbacks,bpf_cookie
export KHPROF_DISABLE_FEATURES="$fallbacks"
for name in test_trace test_faults test_follow; do
	[ -x "build/tests/$name" ] && run_binary "build/tests/$name" " (fallbacks: $fallbacks)"
done
unset KHPROF_DISABLE_FEATURES
# The parsers of other people's files under the fuzzer (tests/fuzz/run.sh:
# KH_FUZZ_SECONDS each, a fixed seed); each of its targets counts as a test.
echo "== tests/fuzz/run.sh"
./tests/fuzz/run.sh "${KH_FUZZ_SECONDS:-30}" >"$log" 2>&1
rc=$?
cat "$log"
counts=$(sed -n 's/^fuzz: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$log" | tail -n 1)
if [ -n "$counts" ]; then
	set -- $counts
	passed=$((passed + $1)) failed=$((failed + $2))
fi
if [ "$rc" -ne 0 ] && [ "${2:-0}" -eq 0 ]; then
	failed=$((failed + 1))
	broken="$broken tests/fuzz/run.sh"
fi
# Last, the kernel matrix (tests/kernels/run.sh: the integration tests in
# Debian's own kernels under QEMU), its tests counted with the host's.
# KH_KERNELS=none leaves it out, but not when CI=true.
matrix="not run (K=none)"
if [ "${KH_KERNELS:-}" = none ] && [ "${CI:-}" != true ]; then
	echo "== tests/kernels/run.sh: skipped (KH_KERNELS=none)"
	skipped=$((skipped + 1))
else
	echo "== tests/kernels/run.sh"
	./tests/kernels/run.sh --no-build 2>&1 | tee "$log"
	counts=$(sed -n 's/^kernel-tests: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' "$log" | tail -n 1)
	if [ -n "$counts" ]; then
		set -- $counts
		passed=$((passed + $1)) failed=$((failed + $2)) skipped=$((skipped + $3))
	fi
	# A matrix that failed without a test failing (a kernel that could not
	# be fetched or whose guest never started, a usage error) still fails.
	if ! grep -q '^kernels: [0-9]* passed, 0 failed, 0 not started$' "$log" && [ "${2:-0}" -eq 0 ]; then
		failed=$((failed + 1))
		broken="$broken tests/kernels/run.sh"
	fi
	matrix=$(sed -n 's/^kernel matrix: //p' "$log" | awk '!seen[$0]++' | paste -s -d';' - | sed 's/;/; /g')
fi
rm -f "$log"
[ -n "$broken" ] && echo "crashed or failed to start:$broken"
# What the run depended on, so that a failure on another machine can be
# read from its log (docs/KERNELS.md, "Testing on any machine").
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
echo "machine: kernel $(uname -r) ($(uname -v)), $(uname -m), clocksource" \
	"$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?')," \
	"$(getconf _NPROCESSORS_ONLN) CPUs (${model:-?}), $(awk '/^MemTotal:/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo) GiB," \
	"perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?')"
if [ -x build/khprof ]; then
	missing=$(build/khprof features 2>/dev/null |
		awk 'NR > 2 && $2 == "no" { printf "%s%s", sep, $1; sep = ", " }')
	echo "machine: khprof features missing: ${missing:-none}"
fi
echo "machine: kernel matrix: ${matrix:-?}"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
