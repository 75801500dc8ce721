#!/bin/sh
# Builds the keyhog-probes crate (rust/keyhog-probes) and its traced
# workload (tests/workloads-rs) offline with one Rust toolchain, and copies
# the workload to OUT.  The sources are copied under BUILD_DIR/rust/NAME
# first, so that Cargo.lock (whose format differs between cargo versions)
# and every other output stays in build/.  The crate's serde form comes
# from Debian's packaged crates (librust-serde-dev...: $RUST_PACKAGES),
# which cargo reads from /usr/share/cargo/registry.
#
# With the seed in ../shared/seed, the program that uses every public item
# of the seed (tests/seed-api, whose build.rs generates that use from the
# seed's source) is built against the crate too, into OUT's folder as
# seed-api-rs: if the crate lacks any of the seed's API, this fails.
#
#   scripts/build-rust.sh BUILD_DIR current OUT   the cargo on PATH (or ~/.cargo/bin;
#                                                 Debian's $RUST_PACKAGES, default
#                                                 cargo, installed when there is none),
#                                                 and OUT-v0 with v0 symbol mangling
#   scripts/build-rust.sh BUILD_DIR debian OUT    Debian 12's own rustc 1.63
#                                                 (/usr/bin/rustc, /usr/bin/cargo)
#
# With a fourth argument, the crate's examples (bench: span_cost) are built
# too and copied into that folder; they need Rust >= 1.66.
#
# RUST_TARGET=aarch64-unknown-linux-gnu cross-builds (make ARCH=arm64),
# linked by RUST_LINKER (aarch64-linux-gnu-gcc).  That needs the target's
# std, which a rustup toolchain offline rarely has: "current" then falls
# back to Debian's rustc with libstd-rust-dev:arm64 (the Makefile installs
# it), and says so.
set -eu
cd "$(dirname "$0")/.."
build=${1:?usage: build-rust.sh BUILD_DIR current|debian OUT}
name=${2:?usage: build-rust.sh BUILD_DIR current|debian OUT}
out=${3:?usage: build-rust.sh BUILD_DIR current|debian OUT}
examples_dir=${4:-}

case $name in
current)
	cargo=${CARGO:-$(command -v cargo || true)}
	[ -z "$cargo" ] && [ -x "$HOME/.cargo/bin/cargo" ] && cargo=$HOME/.cargo/bin/cargo
	if [ -z "$cargo" ]; then
		./scripts/install-deps.sh ${RUST_PACKAGES:-cargo}
		cargo=/usr/bin/cargo
	fi
	;;
debian)
	# Debian's own pair: the oldest Rust the crate must keep building with.
	[ -x /usr/bin/rustc ] || { echo "build-rust: /usr/bin/rustc not found" >&2; exit 1; }
	[ -x /usr/bin/cargo ] || ./scripts/install-deps.sh ${RUST_PACKAGES:-cargo}
	cargo=/usr/bin/cargo
	RUSTC=/usr/bin/rustc
	export RUSTC
	;;
*)
	echo "build-rust: unknown toolchain '$name' (current or debian)" >&2
	exit 2
	;;
esac

target=${RUST_TARGET:-}
if [ -n "$target" ]; then
	sysroot=$(${RUSTC:-rustc} --print sysroot)
	if [ ! -d "$sysroot/lib/rustlib/$target/lib" ]; then
		[ "$name" = debian ] && {
			echo "build-rust: no std for $target in $sysroot (libstd-rust-dev:arm64)" >&2
			exit 1
		}
		echo "build-rust: $(${RUSTC:-rustc} --version) has no std for $target; Debian's rustc builds it" >&2
		[ -x /usr/bin/cargo ] || ./scripts/install-deps.sh ${RUST_PACKAGES:-cargo}
		cargo=/usr/bin/cargo RUSTC=/usr/bin/rustc
		export RUSTC
	fi
	linker_var=CARGO_TARGET_$(echo "$target" | tr 'a-z-' 'A-Z_')_LINKER
	export "$linker_var=${RUST_LINKER:?RUST_LINKER names the linker of $target}"
fi

work=$build/rust/$name
mkdir -p "$work/src/rust" "$work/src/tests" "$work/src/.cargo"
rm -rf "$work/src/rust/keyhog-probes" "$work/src/tests/workloads-rs" "$work/src/tests/seed-api"
cp -R rust/keyhog-probes "$work/src/rust/keyhog-probes"
cp -R tests/workloads-rs "$work/src/tests/workloads-rs"
cp -R tests/seed-api "$work/src/tests/seed-api"
rm -f "$work/src/rust/keyhog-probes/Cargo.lock" "$work/src/tests/workloads-rs/Cargo.lock" \
	"$work/src/tests/seed-api/Cargo.lock"
# Offline, from Debian's crates, as the seed's conformance build does.
printf '%s\n' '[source.crates-io]' 'replace-with = "debian"' '[source.debian]' \
	'directory = "/usr/share/cargo/registry"' '[net]' 'offline = true' >"$work/src/.cargo/config.toml"

# Debian's cargo would otherwise write its package cache under ~/.cargo.
# rustup's cargo is a proxy that finds its toolchain through CARGO_HOME,
# so it keeps the one it was given.
case $cargo in
/usr/bin/cargo) CARGO_HOME=$PWD/$work/cargo-home && export CARGO_HOME ;;
esac

echo "build-rust: $("$cargo" --version) with $(${RUSTC:-rustc} --version) in $work${target:+ for $target}" >&2
(cd "$work/src/tests/workloads-rs" &&
	CARGO_TARGET_DIR=$PWD/../../../target "$cargo" build --offline --release --quiet \
		${target:+--target "$target"})
release=$work/target/${target:+$target/}release
mkdir -p "$(dirname "$out")"
cp "$release/workload-rs" "$out.tmp"
mv "$out.tmp" "$out"

# With the current toolchain, the workload once more with Rust's v0 symbol
# mangling (-C symbol-mangling-version=v0, stable since Rust 1.59) as
# OUT-v0: the names --sample reports come in both schemes, the legacy one
# above (rustc's default for a crate's own code) and v0 (the std of recent
# toolchains, and crates built with it), and khprof demangles both
# (tests/integration/tracing/test_stacks.c).  Its own target folder, as
# RUSTFLAGS would otherwise rebuild the first each time.  Not for the
# benchmarks' build (with examples), which do not run it.
if [ "$name" = current ] && [ -z "$examples_dir" ]; then
	(cd "$work/src/tests/workloads-rs" &&
		RUSTFLAGS="${RUSTFLAGS:-} -C symbol-mangling-version=v0" \
			CARGO_TARGET_DIR=$PWD/../../../target-v0 "$cargo" build --offline --release --quiet \
				${target:+--target "$target"})
	cp "$work/target-v0/${target:+$target/}release/workload-rs" "$out-v0.tmp"
	mv "$out-v0.tmp" "$out-v0"
fi

# Without its default feature (serde) the crate has no dependency at all:
# keep that building too.
(cd "$work/src/rust/keyhog-probes" &&
	CARGO_TARGET_DIR=$PWD/../../../target/no-default "$cargo" build --offline --release --quiet \
		--lib --no-default-features ${target:+--target "$target"})

# The seed's whole API against the crate (tests/seed-api/build.rs reads
# the seed's source and docs page).
seed=$PWD/../shared/seed
api_out=$(dirname "$out")/seed-api-rs
rm -f "$api_out"
if [ -f "$seed/keyhog_profile_lib.rs" ]; then
	(cd "$work/src/tests/seed-api" &&
		KH_SEED_LIB="$seed/keyhog_profile_lib.rs" KH_SEED_DOCS="$seed/keyhog_profile_docs.txt" \
			CARGO_TARGET_DIR=$PWD/../../../target "$cargo" build --offline --release --quiet \
				${target:+--target "$target"})
	cp "$release/seed-api" "$api_out.tmp"
	mv "$api_out.tmp" "$api_out"
else
	echo "build-rust: $seed not found; the seed's API is not checked against the crate" >&2
fi
if [ -n "$examples_dir" ]; then
	(cd "$work/src/rust/keyhog-probes" &&
		CARGO_TARGET_DIR=$PWD/../../../target "$cargo" build --offline --release --quiet --examples \
			${target:+--target "$target"})
	mkdir -p "$examples_dir"
	for example in rust/keyhog-probes/examples/*.rs; do
		name=$(basename "$example" .rs)
		cp "$release/examples/$name" "$examples_dir/${name}_rs.tmp"
		mv "$examples_dir/${name}_rs.tmp" "$examples_dir/${name}_rs"
	done
fi
