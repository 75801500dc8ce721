#!/bin/sh
# initramfs.sh PLAN OUT - packs the kernel matrix's guest: busybox-static,
# tests/kernels/init.sh as /init, and the repo's build tree under /repo at
# the paths the tests expect (build/khprof, build/tests/BIN for each BIN of
# PLAN, build/workloads, build/kh-scan, build/seed-render, tests/golden...),
# with every shared library they load (ldd) at its own path.  OUT is a
# gzip'd cpio (newc), which every Debian kernel unpacks itself: no modules,
# no disk, no virtio (modular in 6.1) are needed.
# PLAN: the guest's tests, one "BIN PATTERN" a line (init.sh).
#
# initramfs.sh PLAN OUT aarch64 - the same for an arm64 guest: the arm64
# build (build/arm64/, make ARCH=arm64 guest) packed as /repo/build, and
# the guest's busybox, bpftool and diff from Debian's arm64 packages
# (fetch.sh --deb), with their libraries found by readelf (elf-libs.sh),
# as ldd cannot run another architecture's loader.  The seed's reader does
# not cross-build: seed-defer.sh stands in for it (seed-check.sh).
#
# initramfs.sh --probe OUT - the probe boot's (tests/kernels/qemu.sh):
# busybox and init.sh alone, 1 MiB, built in a few milliseconds.
set -eu
cd "$(dirname "$0")/../.."
plan=$1 out=$2 arch=${3:-$(uname -m)}
stage=$(dirname "$out")/initramfs-$arch.d
[ "$plan" = --probe ] && stage=$out.d
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/kh"

# The build the guest runs, and where its own tools come from.
build=build cross=""
if [ "$arch" != "$(uname -m)" ]; then
	case $arch in
	aarch64) build=build/arm64 triplet=aarch64-linux-gnu ;;
	*)
		echo "initramfs: no guest build for $arch (make ARCH=arm64 guest makes aarch64's)" >&2
		exit 1
		;;
	esac
	cross=$(dirname "$out")/initramfs-$arch.debs
	rm -rf "$cross"
	mkdir -p "$cross"
	# The first kernel of the list of that architecture names the suites.
	key=$(awk -v a="arch=${build#build/}" '!/^#/ && $4 == a { print $1; exit }' tests/kernels/kernels.list)
	for pkg in busybox-static bpftool diffutils; do
		deb=$(tests/kernels/fetch.sh "$key" --deb "$pkg") || exit 1
		dpkg-deb -x "$deb" "$cross"
	done
fi

busybox=${cross:+$cross/bin/busybox}
[ -n "$busybox" ] || busybox=$(command -v busybox || echo /bin/busybox)
if ! file -L "$busybox" | grep -q 'statically linked'; then
	echo "initramfs: $busybox is not static (install busybox-static)" >&2
	exit 1
fi
cp "$busybox" "$stage/bin/busybox"
ln -s busybox "$stage/bin/sh"
cp tests/kernels/init.sh "$stage/init"
chmod 755 "$stage/init"
pack() {
	(cd "$stage" && find . | cpio -o -H newc --quiet) | gzip -1 >"$out.tmp"
	mv "$out.tmp" "$out"
	rm -rf "$stage"
}
if [ "$plan" = --probe ]; then
	pack
	exit 0
fi
mkdir -p "$stage/repo/build/tests" "$stage/repo/tests" "$stage/etc" "$stage/root"
cp "$plan" "$stage/kh/plan"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$stage/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$stage/etc/group"
printf 'passwd: files\ngroup: files\n' >"$stage/etc/nsswitch.conf"

# The build's files, at the paths under /repo/build the tests expect.
elfs=""
add_build() {
	for f in "$@"; do
		[ -e "$build/$f" ] || continue
		mkdir -p "$stage/repo/build/$(dirname "$f")"
		cp -a "$build/$f" "$stage/repo/build/$f"
		file -L "$build/$f" | grep -q 'ELF.*dynamically linked' && elfs="$elfs $build/$f"
	done
	return 0
}
add_build khprof kh-scan kh-corpus rust-debian/workload-rs
(cd "$build" && ls -d fixtures/* workloads/*) >"$stage/kh/files" 2>/dev/null || :
add_build $(cat "$stage/kh/files")
rm -f "$stage/kh/files"
if [ -z "$cross" ]; then
	add_build seed-render
else
	cp tests/kernels/seed-defer.sh "$stage/repo/build/seed-render"
fi
awk '!/^#/ && NF { print $1 }' "$plan" | sort -u | while read -r bin; do
	if [ ! -x "$build/tests/$bin" ]; then
		echo "initramfs: $build/tests/$bin is not built (make${cross:+ ARCH=arm64} $build/tests/$bin)" >&2
		exit 1
	fi
done
for bin in $(awk '!/^#/ && NF { print $1 }' "$plan" | sort -u); do
	add_build "tests/$bin"
done
cp -a tests/golden "$stage/repo/tests/golden"

# Tools the guest runs besides busybox: bpftool for the kernel's BTF facts
# and khprof's CO-RE cache, diff (the tests compare texts with it).
for tool in /usr/sbin/bpftool /usr/bin/diff; do
	[ -x "$cross$tool" ] || continue
	mkdir -p "$stage$(dirname "$tool")"
	cp -L "$cross$tool" "$stage$tool"
	elfs="$elfs $cross$tool"
done

if [ -n "$cross" ]; then
	# Another architecture's libraries, by readelf, at their own paths
	# (Debian's multiarch ones), and its libgcc_s (see below).
	libs=$(tests/kernels/elf-libs.sh "$triplet" $elfs) || exit 1
	gcc_s=$(ls /lib/$triplet/libgcc_s.so.1 /usr/lib/$triplet/libgcc_s.so.1 2>/dev/null | head -n 1)
	for lib in $libs $gcc_s; do
		mkdir -p "$stage$(dirname "$lib")"
		cp -L "$lib" "$stage$lib"
	done
	rm -rf "$cross"
	pack
	exit 0
fi

# Shared libraries by ldd, the dynamic loader included, at their own paths
# (the guest resolves them as the host does).  libgcc_s is dlopen'ed by
# glibc when a thread is cancelled, so ldd cannot see it.
libs=$(for e in $elfs; do ldd "$e" 2>/dev/null; done |
	sed -n -e 's/.*=> \(\/[^ ]*\) .*/\1/p' -e 's/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' |
	grep -v "^$PWD/" | sort -u)
gcc_s=$(ldconfig -p | sed -n 's/.*libgcc_s\.so\.1 (libc6,x86-64) => //p' | head -n 1)
for lib in $libs $gcc_s; do
	mkdir -p "$stage$(dirname "$lib")"
	cp -L "$lib" "$stage$lib"
done
# The loader by its canonical path too, wherever ldd found it.
if [ ! -e "$stage/lib64/ld-linux-x86-64.so.2" ] && [ -e /lib64/ld-linux-x86-64.so.2 ]; then
	mkdir -p "$stage/lib64"
	cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib64/"
fi

pack
