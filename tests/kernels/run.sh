#!/bin/sh
# run.sh - the kernel matrix: boots Debian's own kernels under QEMU and runs
# khprof's integration tests inside each (docs/KERNELS.md, written from the
# last full run).  make test-kernels runs it; make test runs it after the
# host's tests.
#
#   tests/kernels/run.sh                          every kernel, the subset
#   tests/kernels/run.sh --kernel 6.1             one kernel (key or release prefix)
#   tests/kernels/run.sh --kernel 6.1 --test test_trace
#   tests/kernels/run.sh --kernel 6.12 --test test_trace:test_nested_all_modes
#
# Options (KH_KERNELS=, KH_KERNEL_TESTS= in the environment, K= and T= of
# make, do the same as --kernel and --test):
#   --kernel K      a key of tests/kernels/kernels.list (6.1, 6.12,
#                   backports, 5.10), or a release already fetched
#                   (7.3.4+deb13-cloud-amd64, or a prefix of one); repeatable
#                   or comma-separated; default: every kernel of the list
#   --test BIN[:PATTERN]  build/tests/BIN, only its tests matching PATTERN
#                   (KH_TEST_FILTER); repeatable; default tests/kernels/subset.list
#   --accel A       kvm, tcg, tcg,thread=single or tcg,thread=multi for
#                   every guest, with no probe and no retry under another
#                   (KH_MATRIX_ACCEL=A too); default: KVM where a probe boot
#                   under it reaches /init, else tcg,thread=single, per QEMU
#                   binary (tests/kernels/qemu.sh, which has the test hooks)
#   --timeout S     seconds a boot may take before it is killed (default 900;
#                   arm64 guests, emulated by TCG on x86-64, three times that)
#   --jobs N        guests booted at once (default 2, fewer when the memory
#                   available does not hold that many 2 GiB guests)
#   --shell         boot the first kernel with a shell on the console instead
#                   of the tests (their binaries are in /repo/build/tests)
#   --no-build      do not run make first
#
# Each boot leaves build/kernels/KVER/console.log (the kernel's console) and
# results.log (the tests' output, from the guest's second serial port).  A
# guest that did not start (QEMU aborted, nothing on the console, no line
# of its /init) is booted once more under the other accelerator, and one
# that panicked once more under the same; the logs of a second boot are
# console.2.log and results.2.log.  The closing lines are one per kernel and
#   kernel matrix: 412 s, tcg,thread=single
#   kernels: N passed, N failed, N not started
#   kernel-tests: N passed, N failed, N skipped
# A kernel not started counts no test: the harness, not khprof, failed.
# Exit codes: 0 every selected test passed on every kernel, 1 a test failed,
# a kernel could not be fetched or its guest never started, 2 usage.
set -u
cd "$(dirname "$0")/../.."
top=$PWD
here=tests/kernels
list=$here/kernels.list
. "$here/qemu.sh"

usage() {
	sed -n '2,/^set -u/{ /^set -u/d; s/^# \{0,1\}//; p }' "$0"
}
die_usage() {
	echo "run.sh: $1" >&2
	echo "hint: tests/kernels/run.sh --help" >&2
	exit 2
}

kernels=${KH_KERNELS:-} tests=${KH_KERNEL_TESTS:-} accel=${KH_MATRIX_ACCEL:-} timeout=900 shell=0 build=1 jobs=2
while [ $# -gt 0 ]; do
	case $1 in
	--kernel | --test | --accel | --timeout | --jobs)
		[ $# -ge 2 ] && [ -n "$2" ] || die_usage "option '$1' needs a value"
		case $1 in
		--kernel) kernels="$kernels $2" ;;
		--test) tests="$tests $2" ;;
		--accel) accel=$2 ;;
		--timeout) timeout=$2 ;;
		--jobs) jobs=$2 ;;
		esac
		shift 2
		;;
	--kernel=* | --test=* | --accel=* | --timeout=* | --jobs=*)
		# Parsed again as "--opt value".
		opt=${1%%=*} val=${1#*=}
		shift
		set -- "$opt" "$val" "$@"
		;;
	--shell) shell=1; shift ;;
	--no-build) build=0; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die_usage "unknown option '$1'" ;;
	esac
done
kernels=$(echo "$kernels" | tr ',' ' ')
case $accel in
"" | kvm | tcg | tcg,thread=single | tcg,thread=multi) ;;
*) die_usage "unknown accelerator '$accel' (kvm, tcg, tcg,thread=single or tcg,thread=multi)" ;;
esac
# An accelerator asked for is used as it is (qemu.sh's accel_choose).
forced=$accel
case $timeout in '' | *[!0-9]*) die_usage "timeout '$timeout' is not a number of seconds" ;; esac
case $jobs in '' | *[!0-9]* | 0) die_usage "jobs '$jobs' is not a positive number" ;; esac
keys=$(awk '!/^#/ && NF { print $1 }' "$list")
full=0
if [ -z "$kernels" ]; then
	kernels=$keys
	[ -z "$tests" ] && full=1
fi

for k in $kernels; do
	echo "$keys" | grep -qxF "$k" && continue
	ls -d build/kernels/"$k"*/vmlinuz >/dev/null 2>&1 ||
		die_usage "unknown kernel '$k' (one of: $(echo $keys), or a release in build/kernels)"
done

run=$top/build/kernels/run
mkdir -p "$run"
# One run at a time: they share build/kernels/run and each kernel's logs.
exec 9>"$top/build/kernels/.lock"
if ! flock -n 9; then
	echo "run.sh: another tests/kernels/run.sh is running (build/kernels/.lock)" >&2
	exit 1
fi
plan=$run/plan
if [ -n "$tests" ]; then
	set -f # PATTERN's '*' is cmocka's, not the shell's
	for t in $tests; do
		case $t in
		*:*) echo "${t%%:*} ${t#*:}" ;;
		*) echo "$t *" ;;
		esac
	done >"$plan"
	set +f
else
	grep -v '^#' "$here/subset.list" | awk 'NF' >"$plan"
fi
# A test binary that does not exist is a usage error, found before any boot.
for bin in $(awk '{ print $1 }' "$plan" | sort -u); do
	[ -n "$(find tests/integration tests/unit -name "$bin.c")" ] ||
		die_usage "no test '$bin' (tests/integration/*/$bin.c)"
done

for tool in cpio gzip dpkg-deb apt-get file; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "run.sh: '$tool' not found (make test-kernels installs what the matrix needs)" >&2
		exit 1
	}
done
if [ "$build" = 1 ]; then
	make --no-print-directory -s tests seed-render >"$run/make.log" 2>&1 || {
		echo "run.sh: the build failed; see $run/make.log" >&2
		tail -n 5 "$run/make.log" >&2
		exit 1
	}
fi

# boot KVER ATTEMPT ACCEL: one guest; sets $verdict (done, panic, timeout,
# died after /init started; nostart before, with $nostart saying why).
boot() {
	dir=$top/build/kernels/$1
	sfx=""
	[ "$2" -gt 1 ] && sfx=.$2
	console=$dir/console$sfx.log results=$dir/results$sfx.log
	rm -f "$console" "$results"
	qemu_setup "$(qemu_arch "$1")" "$3" || exit 1
	set -- $q_bin -accel "$3" $q_args -display none -no-reboot -nodefaults -monitor none \
		-kernel "$dir/vmlinuz" -initrd "$run/initramfs-$(qemu_arch "$1").gz"
	if [ "$shell" = 1 ]; then
		${KH_MATRIX_QEMU_WRAPPER:+$KH_MATRIX_QEMU_WRAPPER} "$@" -serial stdio $(qemu_results /dev/null) \
			-append "console=$q_console kh.results=$q_results panic=-1 no_timer_check kh.shell"
		exit $?
	fi
	# oops=panic: after an oops the guest's results cannot be trusted, and a
	# half-dead guest would otherwise wait for the timeout.  no_timer_check:
	# on a busy host TCG's timer ticks can miss the IO-APIC check's window,
	# and 5.10 then panicked at boot ("IO-APIC + timer doesn't work").
	start_limits "$3"
	start=$(date +%s)
	qemu_watch "$start_silence" "$start_limit" $((timeout * q_slowdown)) "$console" "$results" "$dir/qemu$sfx.log" \
		"$@" -serial "file:$console" $(qemu_results "$results") \
		-append "console=$q_console kh.results=$q_results panic=-1 oops=panic no_timer_check"
	secs=$(($(date +%s) - start))
	if [ -n "$nostart" ]; then
		verdict=nostart
	elif grep -q "Kernel panic" "$console" 2>/dev/null; then
		verdict=panic
	elif [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
		verdict=timeout
	elif grep -q '^@@ done' "$results" 2>/dev/null; then
		verdict=done
	else
		verdict=died
	fi
}

# count RESULTS: the cmocka counts of each test run in it, into
# $tp $tf $ts, and the failures' first lines into $dir/failures.
count() {
	awk -v fails="$dir/failures" '
		function flush(how) {
			print bin " " pat ": " how > fails
			for (i = 0; i < n && i < 4; i++) print "    " lines[i] > fails
			print "    rerun: tests/kernels/run.sh --kernel " kver " --test " bin ":" pat > fails
		}
		{ sub(/\r$/, "") }
		/^@@ begin khprof-/ { bin = ""; next }
		/^@@ begin / { bin = $3; pat = $4; np = ""; nf = ""; nsk = ""; n = 0; next }
		/^@@ end / {
			if (bin == "") next
			rc = $5
			if (np != "") p += np
			if (nsk != "") s += nsk
			if (nf != "") { f += nf; flush("failed") }
			else if (rc != 0) { f++; flush("exited " rc) }
			else if (np == "" && nsk == "") { f++; flush("printed no cmocka summary") }
			else if (np + 0 == 0 && nsk + 0 == 0) { f++; flush("no test matched") }
			bin = ""
			next
		}
		bin != "" {
			if ($0 ~ /^\[  PASSED  \] [0-9]+/) np = substr($0, 14) + 0
			else if ($0 ~ /^\[  FAILED  \] [0-9]+ test/) nf = substr($0, 14) + 0
			else if ($0 ~ /^\[  SKIPPED \] [0-9]+/) nsk = substr($0, 14) + 0
			# The failure itself, not cmocka'"'"'s lists of it.
			if ($0 !~ /^\[ *(RUN|OK|PASSED|FAILED|SKIPPED|=+) *\]/ && $0 !~ /FAILED TEST/ &&
			    $0 != "" && n < 4) lines[n++] = $0
		}
		END {
			if (bin != "") { f++; flush("did not finish (the guest stopped)") }
			printf "%d %d %d\n", p, f, s
		}' kver="$kkey" "$1"
}

resolve() {
	# KEY or release prefix -> release, fetched; empty and a message when not.
	for k in $keys; do
		if [ "$k" = "$1" ]; then
			"$here/fetch.sh" "$k"
			return
		fi
	done
	for d in build/kernels/"$1"*/; do
		[ -f "$d/vmlinuz" ] && { basename "$d"; return; }
	done
	echo "run.sh: unknown kernel '$1' (one of: $(echo $keys), or a release in build/kernels)" >&2
	return 1
}

# test_kernel KVER: its boots (one that did not start once more under the
# other accelerator, a panicked one once more under the same), then
# build/kernels/KVER/{counts,facts,features,failures,report}.
test_kernel() {
	kver=$1 kkey=$2
	dir=$top/build/kernels/$kver
	rm -f "$dir"/console*.log "$dir"/results*.log "$dir"/qemu*.log "$dir/failures" \
		"$dir/attempts" "$dir/counts" "$dir/report"
	arch=$(qemu_arch "$kver")
	a=$(accel_of "$arch" "$run")
	attempt=1 restarted=0 repanicked=0
	while :; do
		boot "$kver" "$attempt" "$a"
		{
			if [ "$verdict" = nostart ]; then
				echo "attempt $attempt: did not start under $a after ${secs}s: $nostart"
			else
				echo "attempt $attempt: $verdict after ${secs}s under $a (/init after ${init_secs}s), console ${console#"$top"/}"
			fi
			if [ "$verdict" = panic ]; then
				grep -m 3 -E "Oops|BUG:|RIP:|Kernel panic" "$console" | sed 's/^ */    /'
			fi
		} >>"$dir/attempts"
		grep -v '^ ' "$dir/attempts" | tail -n 1 | sed "s/^/$kver: /"
		attempt=$((attempt + 1))
		if [ "$verdict" = nostart ] && [ "$restarted" = 0 ]; then
			restarted=1 a=$(accel_other "$a" "$arch" "$run")
			continue
		fi
		[ "$verdict" = panic ] && [ "$repanicked" = 0 ] && { repanicked=1; continue; }
		attempt=$((attempt - 1))
		break
	done
	: >"$dir/failures"
	[ -f "$results" ] || : >"$results"
	# Records a guest without the seed's reader kept (seed-defer.sh): the
	# host's reader must print each as the guest's khprof did, one more
	# test run in the results.
	if tr -d '\r' <"$results" | grep -q '^@@ seed-record '; then
		"$here/seed-check.sh" "$results" "$dir/seed" >/dev/null
	fi
	set -- $(count "$results")
	tp=${1:-0} tf=${2:-0} ts=${3:-0}
	if [ "$verdict" = nostart ]; then
		# The harness failed, not khprof: no test ran, none failed.
		tp=0 tf=0 ts=0
		echo "guest: did not start in $attempt boots (the harness failed, not khprof): see $dir/attempts" \
			>"$dir/failures"
	fi
	planned=$(tr -d '\r' <"$results" | sed -n 's/^@@ fact planned //p')
	ended=$(tr -d '\r' <"$results" | grep -v '^@@ end seed-check ' | grep -c '^@@ end [^k]')
	if [ "$verdict" = done ] && [ "${planned:-0}" -ne "$ended" ]; then
		tf=$((tf + 1))
		echo "guest: ran $ended of ${planned:-?} planned tests" >>"$dir/failures"
	fi
	if [ "$verdict" != done ] && [ "$verdict" != nostart ]; then
		# A guest that started and never ran a test (or stopped between two) fails.
		[ "$tf" -eq 0 ] && tf=1
		echo "guest: $verdict before the tests were done" >>"$dir/failures"
		if [ ! -s "$console" ] && [ -s "$dir/qemu$sfx.log" ]; then
			sed -n '1,3s/^/    qemu: /p' "$dir/qemu$sfx.log" >>"$dir/failures"
		fi
	fi
	tr -d '\r' <"$results" | grep '^@@ fact ' | cut -c9- >"$dir/facts"
	tr -d '\r' <"$results" | sed -n '/^@@ begin khprof-features/,/^@@ end khprof-features/p' |
		grep -v '^@@' >"$dir/features"
	tr -d '\r' <"$results" | sed -n '/^@@ begin khprof-v/,/^@@ end khprof-v/p' |
		grep -v '^@@' >"$dir/load-v.log"
	echo "$tp $tf $ts $verdict $attempt $secs $a" >"$dir/counts"
	line="kernel $kver: $tp passed, $tf failed, $ts skipped (${secs}s, $a"
	[ "$attempt" -gt 1 ] && line="$line, attempt $attempt: see $dir/attempts"
	[ "$verdict" = nostart ] && line="kernel $kver: not run: its guest did not start ($nostart"
	{
		echo "$line)"
		if [ "$verdict" = nostart ]; then
			sed 's/^/  /' "$dir/attempts"
		elif [ "$tf" -ne 0 ]; then
			if [ -s "$dir/load-v.log" ]; then
				echo "  khprof -v record's last lines (all: $dir/load-v.log):"
				grep -v "^$" "$dir/load-v.log" | tail -n 4 | sed "s/^/    /"
			fi
			sed 's/^/  /' "$dir/failures"
			echo "  console: $console"
			echo "  results: $results"
		fi
	} >"$dir/report"
}

total_p=0 total_f=0 total_s=0 kpass=0 kfail=0 knot=0
summary=$run/summary
: >"$summary"
: >"$run/kernels"
rm -f "$run"/accel.* "$run/time" "$run/hooks"
matrix_start=$(date +%s)
cut -d' ' -f1 /proc/loadavg >"$run/load"
for k in $kernels; do
	kver=$(resolve "$k") || kver=""
	if [ -z "$kver" ]; then
		echo "kernel $k: could not be fetched" >>"$summary"
		kfail=$((kfail + 1)) total_f=$((total_f + 1))
		continue
	fi
	echo "$k $kver" >>"$run/kernels"
	"$here/btf-facts.sh" "$top/build/kernels/$kver" >/dev/null || echo "run.sh: $kver: no BTF facts" >&2
done
# A test hook in force is said first: the lines after it are about a
# machine it plays, not this one.
hooks=""
for v in KH_MATRIX_KVM KH_MATRIX_QEMU_WRAPPER KH_FAKE_KVM; do
	eval "val=\${$v:-}"
	[ -n "$val" ] && hooks="$hooks $v=$val"
done
[ -z "$hooks" ] || echo "kernel matrix: test hooks:$hooks" >"$run/hooks"
cat "$run/hooks" 2>/dev/null
# Each architecture's accelerator, by a probe boot of its first kernel
# (qemu.sh): one line each, "kernel matrix: kvm unusable here (...): tcg".
for arch in $(awk '{ print $2 }' "$run/kernels" | while read -r kver; do qemu_arch "$kver"; done | sort -u); do
	first=$(awk '{ print $2 }' "$run/kernels" | while read -r kver; do
		[ "$(qemu_arch "$kver")" = "$arch" ] && echo "$kver"
	done | head -n 1)
	accel_choose "$arch" "$first" "$run" || exit 1
	# The guests of each architecture boot its own build (initramfs.sh).
	if ! "$here/initramfs.sh" "$plan" "$run/initramfs-$arch.gz" "$arch"; then
		echo "run.sh: cannot build the $arch guests' initramfs" >&2
		exit 1
	fi
done
if [ "$shell" = 1 ]; then
	first=$(awk 'NR == 1 { print $2 }' "$run/kernels")
	boot "$first" 1 "$(accel_of "$(qemu_arch "$first")" "$run")"
fi
# QEMU takes a guest's memory as the guest touches it, up to its 2 GiB:
# no more guests at once than the memory available holds, a GiB left over.
avail=$(awk '/^MemAvailable:/ { print int($2 / 1048576) }' /proc/meminfo)
fit=$(((${avail:-0} - 1) / QEMU_MEM_GIB))
[ "$fit" -ge 1 ] || fit=1
if [ "$jobs" -gt "$fit" ]; then
	echo "kernel matrix: ${avail:-?} GiB of memory available: $fit guest(s) of ${QEMU_MEM_GIB} GiB at a time, not $jobs"
	jobs=$fit
fi
echo "$jobs" >"$run/jobs"
# Guests wait more than they compute (a TCG guest ran 81 s of CPU in a
# 247 s boot), so $jobs of them boot at once.
accels=$(cut -f1 "$run"/accel.* | sort -u | tr '\n' ' ' | sed 's/ $//; s/ /, /g')
echo "== booting $(awk '{ print $2 }' "$run/kernels" | tr '\n' ' ')($accels, $jobs at a time)"
n=0
while read -r key kver; do
	test_kernel "$kver" "$key" &
	n=$((n + 1))
	[ $((n % jobs)) -eq 0 ] && wait
done <"$run/kernels"
wait
for kver in $(awk '{ print $2 }' "$run/kernels"); do
	dir=$top/build/kernels/$kver
	if [ -f "$dir/counts" ]; then
		set -- $(cat "$dir/counts")
	else
		set -- 0 1 0
		echo "kernel $kver: the harness stopped before its report" >"$dir/report"
	fi
	total_p=$((total_p + $1)) total_f=$((total_f + $2)) total_s=$((total_s + $3))
	if [ "${4:-}" = nostart ]; then
		knot=$((knot + 1))
	elif [ "$2" -eq 0 ]; then
		kpass=$((kpass + 1))
	else
		kfail=$((kfail + 1))
	fi
	cat "$dir/report" >>"$summary"
done
matrix_secs=$(($(date +%s) - matrix_start))
# What the run depended on, for make test's closing lines (run-all.sh).
used=$(for kver in $(awk '{ print $2 }' "$run/kernels"); do
	awk '{ print $7 }' "$top/build/kernels/$kver/counts" 2>/dev/null
done | sort -u | tr '\n' ' ' | sed 's/ $//; s/ /, /g')
echo "$matrix_secs ${used:--}" >"$run/time"

if [ "$full" = 1 ]; then
	"$here/doc.sh" "$run/kernels" "$matrix_secs" >"$run/KERNELS.md" && cp "$run/KERNELS.md" docs/KERNELS.md
fi
echo "== kernel matrix (${matrix_secs}s)"
cat "$summary"
cat "$run/hooks" 2>/dev/null
cut -f2 "$run"/accel.* 2>/dev/null
echo "kernel matrix: ${matrix_secs} s, ${used:--}"
echo "kernels: $kpass passed, $kfail failed, $knot not started"
echo "kernel-tests: $total_p passed, $total_f failed, $total_s skipped"
[ "$kfail" -eq 0 ] && [ "$knot" -eq 0 ]
