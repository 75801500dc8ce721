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
#   --accel A       kvm or tcg (default: kvm when /dev/kvm can be opened)
#   --timeout S     seconds a boot may take before it is killed (default 900)
#   --shell         boot the first kernel with a shell on the console, no tests
#   --no-build      do not run make first
#
# Each boot leaves build/kernels/KVER/console.log (the kernel's console) and
# results.log (the tests' output, from the guest's second serial port); a
# guest that panics is booted once more, its logs then console.2.log and
# results.2.log.  The closing lines are one per kernel and
#   kernels: N passed, N failed
#   kernel-tests: N passed, N failed, N skipped
# Exit codes: 0 every selected test passed on every kernel, 1 a test failed
# or a kernel could not be fetched or booted, 2 usage.
set -u
cd "$(dirname "$0")/../.."
top=$PWD
here=tests/kernels
list=$here/kernels.list

usage() {
	sed -n '2,/^set -u/{ /^set -u/d; s/^# \{0,1\}//; p }' "$0"
}
die_usage() {
	echo "run.sh: $1" >&2
	echo "hint: tests/kernels/run.sh --help" >&2
	exit 2
}

kernels=${KH_KERNELS:-} tests=${KH_KERNEL_TESTS:-} accel="" timeout=900 shell=0 build=1
while [ $# -gt 0 ]; do
	case $1 in
	--kernel | --test | --accel | --timeout)
		[ $# -ge 2 ] && [ -n "$2" ] || die_usage "option '$1' needs a value"
		case $1 in
		--kernel) kernels="$kernels $2" ;;
		--test) tests="$tests $2" ;;
		--accel) accel=$2 ;;
		--timeout) timeout=$2 ;;
		esac
		shift 2
		;;
	--kernel=* | --test=* | --accel=* | --timeout=*)
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
"") if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then accel=kvm; else accel=tcg; fi ;;
kvm | tcg) ;;
*) die_usage "unknown accelerator '$accel' (kvm or tcg)" ;;
esac
case $timeout in '' | *[!0-9]*) die_usage "timeout '$timeout' is not a number of seconds" ;; esac
keys=$(awk '!/^#/ && NF { print $1 }' "$list")
full=0
if [ -z "$kernels" ]; then
	kernels=$keys
	[ -z "$tests" ] && full=1
fi

run=$top/build/kernels/run
mkdir -p "$run"
plan=$run/plan
if [ -n "$tests" ]; then
	for t in $tests; do
		case $t in
		*:*) echo "${t%%:*} ${t#*:}" ;;
		*) echo "$t *" ;;
		esac
	done >"$plan"
else
	grep -v '^#' "$here/subset.list" | awk 'NF' >"$plan"
fi
# A test binary that does not exist is a usage error, found before any boot.
for bin in $(awk '{ print $1 }' "$plan" | sort -u); do
	[ -f "tests/integration/$bin.c" ] || [ -f "tests/unit/$bin.c" ] ||
		die_usage "no test '$bin' (tests/integration/$bin.c)"
done

for tool in qemu-system-x86_64 cpio gzip dpkg-deb apt-get file; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "run.sh: '$tool' not found (make test-kernels installs what the matrix needs)" >&2
		exit 1
	}
done
if [ "$build" = 1 ]; then
	make --no-print-directory -s all seed-render >"$run/make.log" 2>&1 || {
		echo "run.sh: the build failed; see $run/make.log" >&2
		tail -n 5 "$run/make.log" >&2
		exit 1
	}
fi
if [ "$shell" = 1 ]; then
	: >"$plan"
fi
if ! "$here/initramfs.sh" "$plan" "$run/initramfs.gz"; then
	echo "run.sh: cannot build the initramfs" >&2
	exit 1
fi

# boot KVER ATTEMPT: one guest; sets $verdict (done, panic, timeout, died).
boot() {
	dir=$top/build/kernels/$1
	sfx=""
	[ "$2" -gt 1 ] && sfx=.$2
	console=$dir/console$sfx.log results=$dir/results$sfx.log
	rm -f "$console" "$results"
	cpu=max
	[ "$accel" = kvm ] && cpu=host
	set -- qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -m 2G -smp 2 -nographic -no-reboot \
		-nodefaults -monitor none -kernel "$dir/vmlinuz" -initrd "$run/initramfs.gz"
	if [ "$shell" = 1 ]; then
		"$@" -serial stdio -append "console=ttyS0 panic=-1 rdinit=/bin/sh"
		exit $?
	fi
	# oops=panic: after an oops the guest's results cannot be trusted, and a
	# half-dead guest would otherwise wait for the timeout.
	start=$(date +%s)
	timeout -k 10 "$timeout" "$@" -serial "file:$console" -serial "file:$results" \
		-append "console=ttyS0 panic=-1 oops=panic" >"$dir/qemu$sfx.log" 2>&1
	qrc=$?
	secs=$(($(date +%s) - start))
	if grep -q "Kernel panic" "$console" 2>/dev/null; then
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
			if (bin == "") return
			if (how != "") { f++; print bin " " pat ": " how > fails; for (i = 0; i < n && i < 8; i++) print "    " lines[i] > fails }
			bin = ""
		}
		{ sub(/\r$/, "") }
		/^@@ begin / { bin = $3; pat = $4; np = ""; nf = ""; nsk = ""; n = 0; next }
		/^@@ end / {
			if (bin == "") next
			rc = $5
			if (np != "") p += np
			if (nsk != "") s += nsk
			if (nf != "") { f += nf; flush("failed") }
			else if (rc != 0) flush("exited " rc)
			else if (np == "" && nsk == "") flush("printed no cmocka summary")
			else if (np + 0 == 0 && nsk + 0 == 0) flush("no test matched")
			bin = ""
			next
		}
		bin != "" {
			if (match($0, /^\[  PASSED  \] [0-9]+/)) np = substr($0, 14) + 0
			else if (match($0, /^\[  FAILED  \] [0-9]+ test/)) nf = substr($0, 14) + 0
			else if (match($0, /^\[  SKIPPED \] [0-9]+/)) nsk = substr($0, 14) + 0
			if ($0 !~ /^\[ *(RUN|OK|PASSED|SKIPPED|=+) *\]/ && $0 != "" && n < 8) lines[n++] = $0
		}
		END {
			if (bin != "") flush("did not finish (the guest stopped)")
			printf "%d %d %d\n", p, f, s
		}' "$1"
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

total_p=0 total_f=0 total_s=0 kpass=0 kfail=0
summary=$run/summary
: >"$summary"
: >"$run/kernels"
matrix_start=$(date +%s)
for k in $kernels; do
	kver=$(resolve "$k") || kver=""
	if [ -z "$kver" ]; then
		echo "kernel $k: could not be fetched" >>"$summary"
		kfail=$((kfail + 1)) total_f=$((total_f + 1))
		continue
	fi
	dir=$top/build/kernels/$kver
	echo "$k $kver" >>"$run/kernels"
	"$here/btf-facts.sh" "$dir" >/dev/null || echo "run.sh: $kver: no BTF facts" >&2
	rm -f "$dir"/console*.log "$dir"/results*.log "$dir"/qemu*.log "$dir/failures" "$dir/attempts"
	echo "== kernel $kver ($accel)"
	attempt=1
	while :; do
		boot "$kver" "$attempt"
		echo "attempt $attempt: $verdict after ${secs}s, console $console" | tee -a "$dir/attempts"
		if [ "$verdict" = panic ]; then
			grep -m 3 -E "Oops|BUG:|RIP:|Kernel panic" "$console" | sed 's/^/    /' | tee -a "$dir/attempts"
		fi
		[ "$verdict" = panic ] && [ "$attempt" -lt 2 ] && { attempt=$((attempt + 1)); continue; }
		break
	done
	: >"$dir/failures"
	set -- $(count "$results")
	tp=$1 tf=$2 ts=$3
	case $verdict in
	done) ;;
	*)
		# A guest that never ran a test (or stopped between two) fails.
		[ "$tf" -eq 0 ] && { tf=1; echo "guest: $verdict before the tests were done" >>"$dir/failures"; }
		;;
	esac
	tr -d '\r' <"$results" 2>/dev/null | grep '^@@ fact ' | cut -c9- >"$dir/facts"
	tr -d '\r' <"$results" 2>/dev/null | sed -n '/^@@ begin khprof-features/,/^@@ end khprof-features/p' |
		grep -v '^@@' >"$dir/features"
	echo "$tp $tf $ts $verdict $attempt $secs $accel" >"$dir/counts"
	total_p=$((total_p + tp)) total_f=$((total_f + tf)) total_s=$((total_s + ts))
	line="kernel $kver: $tp passed, $tf failed, $ts skipped (${secs}s, $accel"
	[ "$attempt" -gt 1 ] && line="$line, attempt $attempt after a panic"
	line="$line)"
	if [ "$tf" -eq 0 ]; then
		kpass=$((kpass + 1))
		echo "$line" >>"$summary"
	else
		kfail=$((kfail + 1))
		{
			echo "$line"
			sed 's/^/  /' "$dir/failures"
			echo "  console: $console"
			echo "  results: $results"
		} >>"$summary"
	fi
	echo "$line"
done
matrix_secs=$(($(date +%s) - matrix_start))

if [ "$full" = 1 ]; then
	"$here/doc.sh" "$run/kernels" "$matrix_secs" >"$run/KERNELS.md" && cp "$run/KERNELS.md" docs/KERNELS.md
fi
echo "== kernel matrix (${matrix_secs}s)"
cat "$summary"
echo "kernels: $kpass passed, $kfail failed"
echo "kernel-tests: $total_p passed, $total_f failed, $total_s skipped"
[ "$kfail" -eq 0 ]
