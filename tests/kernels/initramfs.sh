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
# initramfs.sh --probe OUT - the probe boot's (tests/kernels/qemu.sh):
# busybox and init.sh alone, 1 MiB, built in a few milliseconds.
set -eu
cd "$(dirname "$0")/../.."
plan=$1 out=$2
stage=$(dirname "$out")/initramfs.d
[ "$plan" = --probe ] && stage=$out.d
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/kh"

busybox=$(command -v busybox || echo /bin/busybox)
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

# The repo's files, at their relative paths under /repo.
elfs=""
add_repo() {
	for f in "$@"; do
		[ -e "$f" ] || continue
		mkdir -p "$stage/repo/$(dirname "$f")"
		cp -a "$f" "$stage/repo/$f"
		file -L "$f" | grep -q 'ELF.*dynamically linked' && elfs="$elfs $f"
	done
	return 0
}
add_repo build/khprof build/kh-scan build/kh-corpus build/seed-render build/fixtures/* \
	build/workloads/* build/rust-debian/workload-rs
awk '!/^#/ && NF { print $1 }' "$plan" | sort -u | while read -r bin; do
	if [ ! -x "build/tests/$bin" ]; then
		echo "initramfs: build/tests/$bin is not built (make build/tests/$bin)" >&2
		exit 1
	fi
done
for bin in $(awk '!/^#/ && NF { print $1 }' "$plan" | sort -u); do
	add_repo "build/tests/$bin"
done
cp -a tests/golden "$stage/repo/tests/golden"

# Tools the guest runs besides busybox: bpftool for the kernel's BTF facts
# and khprof's CO-RE cache, diff (the tests compare texts with it).
for tool in /usr/sbin/bpftool /usr/bin/diff; do
	[ -x "$tool" ] || continue
	mkdir -p "$stage$(dirname "$tool")"
	cp -L "$tool" "$stage$tool"
	elfs="$elfs $tool"
done

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
