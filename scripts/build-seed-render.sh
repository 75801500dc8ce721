#!/bin/sh
# Builds the seed's conformance reader, BUILD_DIR/seed-render, from
# ../shared/seed (read-only, so it is copied under BUILD_DIR first).  The
# unit tests compare khprof's records and reports with it.  PACKAGES are the
# Debian packages cargo needs offline; missing ones are installed.
# Without ../shared/seed, or without a Rust new enough for it, the check is
# unavailable: say so and succeed, and the conformance tests skip (or fail
# under CI=true, naming the missing reader).
# SEED_BINS names the seed's binaries to build (default seed-render; make
# bench adds seed-overhead), all in one cargo call and one target directory.
# Then tests/seed-api, the program written against the seed's API, is built
# against the seed itself as BUILD_DIR/seed-api-seed: the same source as
# build/workloads/seed-api-rs (scripts/build-rust.sh, against khprof's
# crate), with its one dependency line pointing at the seed instead.  It
# must build wherever the seed does: if it does not, this fails.
#
#   [SEED_BINS="seed-render seed-overhead"] scripts/build-seed-render.sh BUILD_DIR [PACKAGES...]
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

# The seed needs Rust >= 1.79 (inline const blocks), newer than Debian's
# cargo; the machine's own toolchain comes first when it has one.
cargo=${CARGO:-cargo}
[ -z "${CARGO:-}" ] && [ -x "$HOME/.cargo/bin/cargo" ] && cargo="$HOME/.cargo/bin/cargo"

bins=${SEED_BINS:-seed-render}
bin_args=""
for bin in $bins; do
	bin_args="$bin_args --bin $bin"
done

# Run from the copy so that its .cargo/config.toml (offline, Debian crates) applies.
# shellcheck disable=SC2086
if ! (cd "$work/conformance" && CARGO_TARGET_DIR="$PWD/../target" \
	"$cargo" build --release --offline --quiet $bin_args); then
	echo "seed-render: build failed with $("$cargo" --version 2>&1) (the seed needs Rust >= 1.79);" \
		"the seed conformance check is unavailable"
	exit 0
fi
for bin in $bins; do
	cp "$work/target/release/$bin" "$build/$bin.tmp"
	mv "$build/$bin.tmp" "$build/$bin"
	echo "seed-render: built $build/$bin"
done

rm -rf "$work/seed-api"
cp -R tests/seed-api "$work/seed-api"
rm -f "$work/seed-api/Cargo.lock"
sed 's|^keyhog_profile = .*|keyhog_profile = { package = "seed_profile", path = "../conformance" }|' \
	tests/seed-api/Cargo.toml >"$work/seed-api/Cargo.toml"
# The conformance folder's .cargo/config.toml (offline, Debian's crates), one level up.
mkdir -p "$work/.cargo"
cp "$work/conformance/.cargo/config.toml" "$work/.cargo/config.toml"
seed_abs=$(cd "$seed" && pwd)
(cd "$work/seed-api" && KH_SEED_LIB="$seed_abs/keyhog_profile_lib.rs" \
	KH_SEED_DOCS="$seed_abs/keyhog_profile_docs.txt" CARGO_TARGET_DIR="$PWD/../target" \
	"$cargo" build --release --offline --quiet)
cp "$work/target/release/seed-api" "$build/seed-api-seed.tmp"
mv "$build/seed-api-seed.tmp" "$build/seed-api-seed"
echo "seed-render: built $build/seed-api-seed"
