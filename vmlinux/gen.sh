#!/bin/sh
# Regenerates vmlinux/ARCH/vmlinux.h, the kernel types of one architecture
# (x86, arm64: the Makefile's ARCH, the BPF side's __TARGET_ARCH_ARCH).
# The BPF programs are CO-RE: the vendored header only has to contain the
# types they name, and libbpf relocates field offsets against the target
# kernel's BTF; the architecture's own types (struct pt_regs, its
# user_pt_regs) are what differs.
#
#   vmlinux/gen.sh                 the running kernel's BTF, for this machine
#   vmlinux/gen.sh ARCH BTF-FILE   a kernel's BTF, e.g. Debian's newest arm64
#                                  kernel's (make vmlinux ARCH=arm64 fetches
#                                  it: tests/kernels/kernel-btf.sh)
set -eu
case ${2:-} in '' | /*) ;; *) set -- "$1" "$PWD/$2" ;; esac
cd "$(dirname "$0")"
if [ $# -eq 0 ]; then
	case $(uname -m) in
	x86_64) arch=x86 ;;
	aarch64) arch=arm64 ;;
	*) echo "gen.sh: no vmlinux/ folder for $(uname -m)" >&2; exit 1 ;;
	esac
	btf=/sys/kernel/btf/vmlinux from=$(uname -r)
else
	arch=${1:?usage: gen.sh [ARCH BTF-FILE]} btf=${2:?usage: gen.sh [ARCH BTF-FILE]} from=$2
fi
mkdir -p "$arch"
bpftool btf dump file "$btf" format c >"$arch/vmlinux.h.tmp"
mv "$arch/vmlinux.h.tmp" "$arch/vmlinux.h"
echo "vmlinux/$arch/vmlinux.h regenerated from $from"
