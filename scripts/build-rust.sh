#!/bin/sh
# Builds the keyhog-probes crate (rust/keyhog-probes) and its traced
# workload (tests/workloads-rs) offline with one Rust toolchain, and copies
# the workload to OUT.  The sources are copied under BUILD_DIR/rust/NAME
# first, so that Cargo.lock (whose format differs between cargo versions)
# and every other output stays in build/.
#
#   scripts/build-rust.sh BUILD_DIR current OUT   the cargo on PATH (or ~/.cargo/bin;
#                                                 Debian's $RUST_PACKAGES, default
#                                                 cargo, installed when there is none)
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
mkdir -p "$work/src/rust" "$work/src/tests"
rm -rf "$work/src/rust/keyhog-probes" "$work/src/tests/workloads-rs"
cp -R rust/keyhog-probes "$work/src/rust/keyhog-probes"
cp -R tests/workloads-rs "$work/src/tests/workloads-rs"
rm -f "$work/src/rust/keyhog-probes/Cargo.lock" "$work/src/tests/workloads-rs/Cargo.lock"

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
