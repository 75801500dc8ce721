#!/bin/sh
# Runs each cmocka unit-test binary given on the command line from the repo
# root, shows its output, and fails if any binary failed or did not run.
#
#   tests/run-unit.sh build/tests/test_json build/tests/test_text ...
set -u
cd "$(dirname "$0")/.."
failed=""
for bin in "$@"; do
	echo "== $bin"
	if ! "$bin"; then
		failed="$failed $bin"
	fi
done
if [ -n "$failed" ]; then
	echo "unit tests failed:$failed"
	exit 1
fi
echo "unit tests: all $# binaries passed"
