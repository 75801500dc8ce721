#!/bin/sh
# fake-kvm.sh QEMU ARG... - a test hook of the kernel matrix: plays the KVM
# of another machine, so that each case of the accelerator's choice
# (tests/kernels/qemu.sh) can be forced on any machine:
#
#   KH_MATRIX_QEMU_WRAPPER=tests/kernels/fake-kvm.sh KH_FAKE_KVM=CASE make test
#
# QEMU runs as asked unless ARG has "-accel kvm"; then by CASE:
#   abort   (the default) what QEMU 7.2 does on a nested /dev/kvm that
#           cannot run a guest: its two lines on stderr, then SIGABRT
#   hang    it starts and prints nothing until killed, as
#           "-cpu host,-arch-capabilities" does on that machine
#   works   the guest runs, under single-threaded TCG in KVM's place: the
#           harness takes KVM's path where KVM cannot boot (as here)
#   probe-only  the probe boot (kh.probe) works, every other guest aborts:
#           a KVM that boots one kernel and not the next, whose guests are
#           retried under TCG
set -u
qemu=$1
shift
kvm=0 probe=0 prev=""
for a in "$@"; do
	[ "$prev" = -accel ] && [ "$a" = kvm ] && kvm=1
	[ "$prev" = -append ] && case $a in *kh.probe*) probe=1 ;; esac
	prev=$a
done
[ "$kvm" = 1 ] || exec "$qemu" "$@"
how=${KH_FAKE_KVM:-abort}
[ "$how" = probe-only ] && if [ "$probe" = 1 ]; then how=works; else how=abort; fi
case $how in
abort)
	echo "$qemu: error: failed to set MSR 0x10a to 0x69" >&2
	echo "$qemu: ../../target/i386/kvm/kvm.c:3183: kvm_buf_set_msrs: Assertion \`ret == cpu->kvm_msr_buf->nmsrs' failed." >&2
	kill -ABRT $$
	exit 134
	;;
hang)
	exec sleep infinity
	;;
works)
	# The same command with TCG's accelerator and CPU model.
	n=$#
	prev=""
	for a in "$@"; do
		case $prev in
		-accel) a=tcg,thread=single ;;
		-cpu) a=max ;;
		esac
		set -- "$@" "$a"
		prev=$a
	done
	shift "$n"
	exec "$qemu" "$@"
	;;
*)
	echo "fake-kvm: unknown KH_FAKE_KVM '$how' (abort, hang, works or probe-only)" >&2
	exit 2
	;;
esac
