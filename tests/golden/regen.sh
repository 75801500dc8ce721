#!/bin/sh
# Regenerates the seed's outputs for every input record in this folder:
# NAME.txt is the seed's render_text() and NAME.seed.json its pretty JSON.
# The inputs (NAME.json) are hand-made data, except seed_workload.json,
# which seed-workload wrote, unknown_fields.khprof.json, khprof's own output
# for unknown_fields.json, and assembled.json, which test_record writes with
# KH_WRITE_ASSEMBLED=tests/golden/assembled.json.
# Usage: tests/golden/regen.sh [SEED_RENDER]
set -eu
here=$(dirname "$0")
render=${1:-build/seed-render}
for input in "$here"/*.json; do
	case $input in
	*.seed.json | *.khprof.json) continue ;;
	esac
	name=${input%.json}
	"$render" "$input" >"$name.txt"
	"$render" --json "$input" >"$name.seed.json"
done
