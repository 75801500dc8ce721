#!/bin/sh
# Builds the seed's conformance reader, BUILD_DIR/seed-render, from
# ../shared/seed (read-only, so it is copied under BUILD_DIR first).  The
# unit tests compare khprof's records and reports with it.  PACKAGES are the
# Debian packages cargo needs offline; missing ones are installed.
# Without ../shared/seed the check is unavailable: say so and succeed, and
# the conformance tests skip (or fail under CI=true).
#
#   scripts/build-seed-render.sh BUILD_DIR [PACKAGES...]
set -eu
cd "$(dirname "$0")/.."
build=${1:?usage: build-seed-render.sh BUILD_DIR [PACKAGES...]}
shift
seed=../shared/seed
if [ ! -f "$seed/keyhog_profile_lib.rs" ] || [ ! -f "$seed/conformance/Cargo.toml" ]; then
	echo "seed-render: $seed not found; the seed conformance check is unavailable"
	exit 0
fi
[ "$#" -gt 0 ] && ./scripts/install-deps.sh "$@"

# Cargo.toml finds the library at ../keyhog_profile_lib.rs, so keep that layout.
work="$build/seed-conformance"
mkdir -p "$work"
rm -rf "$work/conformance"
cp -R "$seed/conformance" "$work/conformance"
cp "$seed/keyhog_profile_lib.rs" "$work/keyhog_profile_lib.rs"
chmod -R u+w "$work/conformance" "$work/keyhog_profile_lib.rs"

# Run from the copy so that its .cargo/config.toml (offline, Debian crates) applies.
(cd "$work/conformance" &&
	CARGO_TARGET_DIR="$PWD/../target" cargo build --release --offline --quiet --bin seed-render)
cp "$work/target/release/seed-render" "$build/seed-render.tmp"
mv "$build/seed-render.tmp" "$build/seed-render"
echo "seed-render: built $build/seed-render"
