#!/bin/sh
# seed-check.sh RESULTS DIR - the host's half of seed-defer.sh: the records
# a guest made and the text its khprof printed for each, sent on its
# results port as
#   @@ seed-record NAME
#   (the record, base64)
#   @@ seed-text NAME
#   (khprof report --format seed's text, base64)
#   @@ seed-end NAME
# are unpacked into DIR, and the seed's own reader (build/seed-render,
# built for this machine: a record is the same JSON anywhere) must print
# each text byte for byte.  Appends to RESULTS one test run in init.sh's
# format, "@@ begin seed-check records" ... "@@ end seed-check records RC",
# with cmocka's summary lines, which run.sh counts as the guest's own.
# Exit codes: 0 every record agreed (or there were none), 1 otherwise.
set -u
results=$1 dir=$2
reader=build/seed-render
rm -rf "$dir"
mkdir -p "$dir"
tr -d '\r' <"$results" | awk -v dir="$dir" '
	/^@@ seed-record / { name = $3; out = dir "/" name ".json.b64"; next }
	/^@@ seed-text / { name = $3; out = dir "/" name ".txt.b64"; next }
	/^@@ seed-end / { out = ""; next }
	out != "" { print > out }'
passed=0 failed=0
{
	echo "@@ begin seed-check records"
	for b64 in "$dir"/*.json.b64; do
		[ -e "$b64" ] || continue
		name=$(basename "$b64" .json.b64)
		base64 -d "$b64" >"$dir/$name.json" 2>/dev/null &&
			base64 -d "$dir/$name.txt.b64" >"$dir/$name.txt" 2>/dev/null
		if [ ! -x "$reader" ]; then
			echo "seed-check: $reader is not built (make seed-render)"
			failed=$((failed + 1))
		elif ! "$reader" "$dir/$name.json" >"$dir/$name.seed" 2>"$dir/$name.err"; then
			echo "seed-check: the seed's reader refuses record $name: $(head -n 1 "$dir/$name.err")"
			failed=$((failed + 1))
		elif ! cmp -s "$dir/$name.seed" "$dir/$name.txt"; then
			echo "seed-check: record $name: khprof's text differs from the seed's ($dir/$name.txt, $dir/$name.seed):"
			diff "$dir/$name.seed" "$dir/$name.txt" | head -n 4
			failed=$((failed + 1))
		else
			passed=$((passed + 1))
		fi
	done
	echo "seed-check: $passed of $((passed + failed)) records made in the guest print as the seed prints them"
	echo "[  PASSED  ] $passed test(s)."
	[ "$failed" -eq 0 ] || echo "[  FAILED  ] $failed test(s), listed above."
	echo "@@ end seed-check records $([ "$failed" -eq 0 ] && echo 0 || echo 1)"
} >>"$results"
[ "$failed" -eq 0 ]
