#!/bin/sh
# Regenerates vmlinux/vmlinux.h from the running kernel's BTF.  The BPF
# programs are CO-RE: the vendored header only has to contain the types they
# name, and libbpf relocates field offsets against the target kernel's BTF.
set -eu
cd "$(dirname "$0")"
bpftool btf dump file /sys/kernel/btf/vmlinux format c > vmlinux.h.tmp
mv vmlinux.h.tmp vmlinux.h
echo "vmlinux.h regenerated from $(uname -r)"
