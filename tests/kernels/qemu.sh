# qemu.sh - sourced by tests/kernels/run.sh: how a guest of each
# architecture boots, which accelerator each QEMU binary gets on this
# machine, and one boot watched until it has visibly started.
#
# The accelerator is chosen by what boots, not by whether /dev/kvm opens:
# on some machines of our kind /dev/kvm opens and QEMU then aborts at once
# ("failed to set MSR 0x10a"), or starts a guest that never prints
# (docs/KERNELS.md, "Testing on any machine").  Where KVM could serve an
# architecture (the host's own, a KVM device that opens), one probe boot of
# that architecture's first kernel, with busybox as its only process,
# decides for the whole matrix: it reached /init, KVM; it aborted, printed
# nothing for $PROBE_SILENCE s or reached no /init in $PROBE_LIMIT s, TCG.
# The decision is per QEMU binary, so another architecture's guests
# (qemu-system-aarch64, under TCG on this host) get their own.
#
# Every boot is watched the same way: a guest that never shows a line of
# its /init did not start, a harness failure that run.sh retries under the
# other accelerator and never counts as a khprof test failure.
#
# Hooks, to force each case on any machine (docs/KERNELS.md):
#   KH_MATRIX_ACCEL=A     as run.sh --accel A: A for every guest, no probe,
#                         no retry under another accelerator
#   KH_MATRIX_KVM=PATH    the KVM device looked for (default /dev/kvm);
#                         /nonexistent plays a machine without one
#   KH_MATRIX_QEMU_WRAPPER=CMD  each QEMU command runs as "CMD QEMU ARG...";
#                         tests/kernels/fake-kvm.sh plays a KVM whose guests
#                         abort, hang or work

# The guests' shape, the same under every accelerator.
QEMU_MEM_GIB=2 QEMU_SMP=2
# The probe boot's limits, wide for KVM, which boots a kernel to /init in
# seconds: a probe wrongly failed costs the matrix TCG's slower boots, never
# a result.
PROBE_SILENCE=15 PROBE_LIMIT=60
# A real boot's, by accelerator: how long a guest may print nothing, and
# how long it may take to reach /init, before it counts as not started.
# Under TCG on this 2-CPU host, 6.1 prints after ~3 s and its /init reports
# after ~9 s at load 3; the limits leave room for a host ten times busier.
start_limits() {
	case $1 in
	kvm) start_silence=30 start_limit=120 ;;
	*) start_silence=120 start_limit=300 ;;
	esac
}

# qemu_arch KVER: QEMU's name of a Debian kernel's architecture.
qemu_arch() {
	case $1 in
	*-arm64) echo aarch64 ;;
	*) echo x86_64 ;;
	esac
}

# qemu_setup ARCH ACCEL: q_bin, q_args (machine, CPU, memory), q_console
# (the kernel's console device) and q_results (the device of /init's
# results, kh.results= on the command line; qemu_results FILE is QEMU's
# side of it) for a guest of ARCH under ACCEL.  One case per architecture;
# x86-64 guests talk over two 8250 serial ports, built into every Debian
# kernel (the console, then /init's results: run.sh's boot).  QEMU's arm64
# "virt" machine has one PL011 UART (ttyAMA0, the console; a second
# -serial is left unused), so the results go to a PCI 16550, which
# Debian's arm64 kernels drive with built-in code (CONFIG_SERIAL_8250_PCI
# and CONFIG_PCI_HOST_GENERIC=y; virtio's console is a module): ttyS0.
# q_slowdown multiplies run.sh's --timeout: another instruction set under
# TCG runs the subset slower (7.3.4 arm64 on this 2-CPU host: past 900 s,
# the fault matrix alone ~400 s, against ~3 min for an x86-64 kernel).
qemu_setup() {
	case $1 in
	x86_64) q_bin=qemu-system-x86_64 q_args="" q_console=ttyS0 q_results=ttyS1 q_slowdown=1 ;;
	aarch64)
		q_bin=qemu-system-aarch64 q_args="-M virt" q_console=ttyAMA0 q_results=ttyS0
		q_slowdown=1
		[ "$(uname -m)" = aarch64 ] || q_slowdown=3
		;;
	*)
		echo "run.sh: no QEMU set up for $1 guests (tests/kernels/qemu.sh)" >&2
		return 1
		;;
	esac
	# KVM runs the host's own CPU model; TCG the most it emulates.
	case $2 in
	kvm) q_args="$q_args -cpu host" ;;
	*) q_args="$q_args -cpu max" ;;
	esac
	q_args="$q_args -m ${QEMU_MEM_GIB}G -smp $QEMU_SMP"
}

# qemu_results FILE: QEMU's arguments that write the guest's q_results
# device (qemu_setup's) to FILE.
qemu_results() {
	case $q_results in
	ttyS1) echo "-serial file:$1" ;;
	*) echo "-chardev file,id=khresults,path=$1 -device pci-serial,chardev=khresults" ;;
	esac
}

# qemu_watch SILENT START LIMIT CONSOLE RESULTS LOG QEMU ARG...: runs one
# QEMU command (through the wrapper hook) for at most LIMIT seconds, and
# watches it every 0.2 s until /init's first line arrives on the results
# port ("@@ "); then waits for it to end.  It is stopped when CONSOLE
# stays empty for SILENT seconds or no /init line came in START.  Sets qrc
# (its exit status: 124 past LIMIT), nostart: empty when the guest
# started, else why not, in a few words, and init_secs: when /init spoke.
qemu_watch() {
	silent=$(($1 * 5)) limit=$(($2 * 5)) w_limit=$3 w_console=$4 w_results=$5 w_log=$6
	shift 6
	timeout -k 10 "$w_limit" ${KH_MATRIX_QEMU_WRAPPER:+$KH_MATRIX_QEMU_WRAPPER} "$@" \
		>"$w_log" 2>&1 &
	w_pid=$!
	ticks=0 nostart="" init_secs="?"
	while kill -0 "$w_pid" 2>/dev/null; do
		if grep -q '^@@ ' "$w_results" 2>/dev/null; then
			init_secs=$((ticks / 5))
			break
		fi
		if [ "$ticks" -ge "$silent" ] && [ ! -s "$w_console" ]; then
			nostart="no console output in $((ticks / 5)) s"
		elif [ "$ticks" -ge "$limit" ]; then
			nostart="the kernel printed, but /init did not start in $((ticks / 5)) s"
		fi
		if [ -n "$nostart" ]; then
			# timeout's own alarm: it stops QEMU as at its limit, and
			# exits 124 without dying of a signal the shell reports.
			kill -ALRM "$w_pid" 2>/dev/null
			break
		fi
		sleep 0.2
		ticks=$((ticks + 1))
	done
	wait "$w_pid"
	qrc=$?
	[ -n "$nostart" ] && return
	grep -q '^@@ ' "$w_results" 2>/dev/null && return
	# It ended by itself without a line of /init's.
	if grep -q "Kernel panic" "$w_console" 2>/dev/null; then
		nostart="kernel panic before /init: $(grep -m 1 'Kernel panic' "$w_console" | tr -d '\r' |
			sed 's/^.*Kernel panic - not syncing: *//')"
	elif [ -s "$w_log" ]; then
		# QEMU's own first complaint: "qemu-system-x86_64: error: failed
		# to set MSR 0x10a to 0x69" -> "qemu: failed to set MSR 0x10a to 0x69".
		nostart="qemu: $(grep -v -e '^[[:space:]]*$' -e 'warning:' "$w_log" | head -n 1 |
			sed -e 's/^[^ :]*qemu[^ :]*: //' -e 's/^error: //')"
		[ "$nostart" = "qemu: " ] && nostart="qemu exited with status $qrc, before /init"
	else
		nostart="qemu exited with status $qrc, before /init"
	fi
}

# accel_kvm_device: the KVM device this machine offers QEMU, or nothing.
accel_kvm_device() {
	d=${KH_MATRIX_KVM:-/dev/kvm}
	[ -c "$d" ] && [ -r "$d" ] && [ -w "$d" ] && echo "$d"
}

# accel_choose ARCH KVER DIR: the accelerator of every ARCH guest, written
# to DIR/accel.ARCH as "ACCEL<tab>LINE" (once per run and QEMU binary; KVER
# is the kernel a probe boots) and its one LINE printed:
#   kernel matrix: kvm (a probe boot of 6.1.0-57-cloud-amd64 reached /init in N.N s)
#   kernel matrix: kvm unusable here (qemu: failed to set MSR 0x10a to 0x69): tcg
# Returns 1 when no accelerator can be chosen (no QEMU for ARCH).  Reads
# run.sh's $top, $here and $forced (the accelerator asked for, if any).
accel_choose() {
	arch=$1 pkver=$2 adir=$3
	[ -f "$adir/accel.$arch" ] && return 0
	qemu_setup "$arch" tcg || return 1
	if ! command -v "$q_bin" >/dev/null 2>&1; then
		echo "run.sh: '$q_bin' not found (make test-kernels installs what the matrix needs)" >&2
		return 1
	fi
	tcg=tcg,thread=single
	# One TCG thread for both vCPUs: with a thread each (MTTCG), 2 of 3
	# boots of 7.3.4 oopsed at an int3 of a tracepoint's static key that
	# no CPU was patching any more; with one, none did (docs/KERNELS.md).
	prefix="kernel matrix:"
	[ "$arch" = x86_64 ] || prefix="kernel matrix: $arch guests:"
	if [ -n "$forced" ]; then
		choice=$forced why="$forced (--accel or KH_MATRIX_ACCEL: no probe)"
	elif [ "$(uname -m)" != "$arch" ]; then
		choice=$tcg why="tcg (KVM runs the host's own architecture only)"
	elif [ -z "$(accel_kvm_device)" ]; then
		choice=$tcg why="no ${KH_MATRIX_KVM:-/dev/kvm} here: tcg"
	else
		pdir=$adir/probe-$arch
		rm -rf "$pdir"
		mkdir -p "$pdir"
		p_start=$(date +%s%N)
		"$here/initramfs.sh" --probe "$pdir/initramfs.gz" || return 1
		qemu_setup "$arch" kvm
		set -- $q_bin -accel kvm $q_args -display none -no-reboot -nodefaults -monitor none \
			-kernel "$top/build/kernels/$pkver/vmlinuz" -initrd "$pdir/initramfs.gz" \
			-serial "file:$pdir/console.log" -serial "file:$pdir/results.log" \
			-append "console=$q_console panic=-1 no_timer_check kh.probe"
		qemu_watch "$PROBE_SILENCE" "$PROBE_LIMIT" $((PROBE_LIMIT + 5)) "$pdir/console.log" \
			"$pdir/results.log" "$pdir/qemu.log" "$@"
		p_ms=$((($(date +%s%N) - p_start) / 1000000))
		echo "$p_ms" >"$pdir/ms"
		if [ -z "$nostart" ] && ! grep -q '^@@ probe up' "$pdir/results.log"; then
			nostart="no result from /init"
		fi
		if [ -z "$nostart" ]; then
			choice=kvm
			why="kvm (a probe boot of $pkver reached /init in $((p_ms / 100 / 10)).$((p_ms / 100 % 10)) s)"
		else
			choice=$tcg
			why="kvm unusable here ($nostart): tcg"
		fi
	fi
	printf '%s\t%s\n' "$choice" "$prefix $why" >"$adir/accel.$arch"
	echo "$prefix $why"
}

# accel_of ARCH DIR: the accelerator accel_choose chose for ARCH.
accel_of() {
	cut -f1 "$2/accel.$1"
}

# accel_other ACCEL ARCH DIR: the accelerator a guest that did not start
# under ACCEL is retried under: TCG after KVM; after TCG, KVM where the
# probe found it boots, else TCG again; with a forced one, that one.
accel_other() {
	if [ -n "$forced" ]; then
		echo "$1"
	elif [ "$1" = kvm ]; then
		echo tcg,thread=single
	elif [ "$(accel_of "$2" "$3")" = kvm ]; then
		echo kvm
	else
		echo "$1"
	fi
}
