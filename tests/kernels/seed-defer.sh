#!/bin/sh
# seed-defer.sh RECORD - in a guest whose build has no seed reader (arm64:
# the seed needs Rust >= 1.79, which does not cross-build here), the
# tests' build/seed-render (KH_SEED_RENDER, init.sh sets it): prints what
# `khprof report --format seed RECORD` prints, so the test's comparison in
# the guest holds, and keeps the record with that text in /tmp/kh-seed/.
# init.sh sends them to the host at the end, where the seed's own reader
# (build/seed-render) renders each record and must print the same text
# (seed-check.sh): the seed check of a record made in the guest, run on
# the host.
set -u
spool=/tmp/kh-seed
mkdir -p "$spool"
name=$$
cp "$1" "$spool/$name.json" || exit 2
/repo/build/khprof report --format seed "$1" >"$spool/$name.txt"
rc=$?
cat "$spool/$name.txt"
exit "$rc"
