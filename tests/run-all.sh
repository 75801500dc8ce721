#!/bin/sh
# Runs every test binary (unit tests first, then integration) from the repo
# root and closes with one line: "tests: N passed, N failed, N skipped".
# Integration tests need root for BPF; they skip elsewhere, never when CI=true.
set -u
cd "$(dirname "$0")/.."
passed=0 failed=0 skipped=0 broken=""
log=$(mktemp)
for bin in build/tests/test_*; do
	[ -x "$bin" ] || continue
	echo "== $bin"
	"$bin" >"$log" 2>&1
	rc=$?
	cat "$log"
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	if grep -q ": skipped:" "$log" && [ -z "$p$f" ]; then
		skipped=$((skipped + 1))
		continue
	fi
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	skipped=$((skipped + ${s:-0}))
	if [ "$rc" -ne 0 ] && [ -z "$f" ]; then
		failed=$((failed + 1))
		broken="$broken $bin"
	fi
done
rm -f "$log"
[ -n "$broken" ] && echo "crashed or failed to start:$broken"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
