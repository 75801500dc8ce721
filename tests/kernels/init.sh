#!/bin/sh
# /init of the kernel matrix's guest (tests/kernels/initramfs.sh packs it):
# mounts what khprof needs, reports the kernel's facts, runs the tests of
# /kh/plan from /repo (the tests find build/... relative to the repo root,
# as under make test) and powers off.
#
# Everything the host reads goes to the results port (kh.results= on the
# command line: ttyS1, the second serial port of an x86-64 guest; ttyS0, a
# PCI serial port beside an arm64 guest's PL011 console; qemu.sh), as
# lines the host parses (tests/kernels/run.sh):
#   @@ fact NAME VALUE        a kernel fact (uname, BTF kfuncs, tracepoints)
#   @@ begin BIN PATTERN      a test run starts; its output follows
#   @@ end BIN PATTERN RC     it ended with exit code RC
#   @@ done                   every test ran
#   @@ probe up UPTIME        a probe boot (kh.probe) reached /init
#   @@ seed-record NAME ...   a record seed-defer.sh kept, and its text
#                             (seed-check.sh on the host)
# The console (ttyS0, ttyAMA0) keeps the kernel's own messages, for panics.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /usr/bin /usr/sbin /sbin
/bin/busybox --install -s /bin
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
ulimit -l unlimited 2>/dev/null

out=/dev/$(sed -n 's/.*kh\.results=\([^ ]*\).*/\1/p' /proc/cmdline)
[ "$out" = /dev/ ] && out=/dev/ttyS1
# Raw lines: no \r added to each \n by the tty.
stty -F "$out" raw -echo 2>/dev/null
exec 3>"$out"
fact() { echo "@@ fact $1 $2" >&3; }
# run.sh's probe boot (kh.probe on the command line, tests/kernels/qemu.sh):
# the kernel reached its first process, which is all it asks; the probe's
# initramfs holds busybox and this file alone.
if grep -q 'kh\.probe' /proc/cmdline; then
	echo "@@ probe up $(cut -d' ' -f1 /proc/uptime)" >&3
	poweroff -f
fi
fact uname "$(uname -r)"
fact clocksource "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
fact cpus "$(grep -c ^processor /proc/cpuinfo)"
# The guest as a machine (docs/KERNELS.md, "Testing on any machine"): the
# CPU QEMU shows it, whether its TSC is invariant (the first evidence of
# khprof's span clock), whether it has a PMU (perf's "cpu" event source;
# khprof uses software events only), its memory.
if grep -q '^model name' /proc/cpuinfo; then
	fact cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1) ($(sed -n 's/^vendor_id[[:space:]]*: //p' /proc/cpuinfo | head -n 1))"
else
	# arm64 names no model: its implementer and part numbers (MIDR_EL1).
	fact cpu "$(uname -m) (implementer $(sed -n 's/^CPU implementer[[:space:]]*: //p' /proc/cpuinfo | head -n 1), part $(sed -n 's/^CPU part[[:space:]]*: //p' /proc/cpuinfo | head -n 1))"
fi
if grep -q '^flags.* constant_tsc.* nonstop_tsc' /proc/cpuinfo; then fact invariant_tsc yes; else fact invariant_tsc no; fi
if [ -d /sys/bus/event_source/devices/cpu ]; then fact pmu yes; else fact pmu no; fi
fact memory "$(awk '/^MemTotal:/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo)"

# The kernel's BTF facts are read on the host (tests/kernels/btf-facts.sh,
# ~2 s there, ~37 s here under TCG); its tracepoints here, from tracefs.
if [ -r /sys/kernel/btf/vmlinux ]; then fact btf yes; else fact btf no; fi
for t in sched/sched_prepare_exec sched/sched_process_exec sched/sched_process_fork \
	sched/sched_switch kmem/rss_stat; do
	if [ -d "/sys/kernel/tracing/events/$t" ]; then fact "tracepoint:$t" yes; else fact "tracepoint:$t" no; fi
done
if [ -x /repo/build/khprof ] && /repo/build/khprof help features >/dev/null 2>&1; then
	echo "@@ begin khprof-features -" >&3
	/repo/build/khprof features >&3 2>&1
	echo "@@ end khprof-features - $?" >&3
fi

echo "kmatrix: $(cut -d' ' -f1 /proc/uptime)s: facts done" >/dev/console
cd /repo
# How many test runs the host must see end: a guest that stops early, or a
# plan that lost lines, cannot pass for a clean run.
plan=/kh/plan
# Below khprof's floor (5.10) nothing loads: only the test that says so, in one line.
if ! /repo/build/khprof features >/dev/null 2>&1; then
	echo "test_kernels test_kernel_below_floor_refused" >/tmp/plan
	plan=/tmp/plan
fi
# A line's third field "not=5.10,...": skipped on kernels whose release
# starts so; "only=5.10,...": run on those alone (tests/kernels/subset.list
# says why); "6.1@arm64": a 6.1 release of that architecture alone (its
# Debian release ends "-arm64").  The rest is the plan.
awk -v rel="$(uname -r)" '
	function listed(list,    n, i, k, at, a) {
		n = split(list, k, ",")
		for (i = 1; i <= n; i++) {
			a = ""
			at = index(k[i], "@")
			if (at) {
				a = "-" substr(k[i], at + 1)
				k[i] = substr(k[i], 1, at - 1)
				if (substr(rel, length(rel) - length(a) + 1) != a)
					continue
			}
			if (index(rel, k[i] ".") == 1 || index(rel, k[i] "-") == 1)
				return 1
		}
		return 0
	}
	/^#/ || NF == 0 { next }
	$3 ~ /^not=/ && listed(substr($3, 5)) { next }
	$3 ~ /^only=/ && !listed(substr($3, 6)) { next }
	{ print $1, $2 }' "$plan" >/tmp/plan.kernel
plan=/tmp/plan.kernel
fact planned "$(grep -c -v -e '^#' -e '^[[:space:]]*$' "$plan")"
export KHPROF_CACHE_DIR=/repo/build/tests/khprof-cache
# As strict as CI (nothing skipped) where the host could be: its seed reader
# came along.  A host without ../shared skips the seed's checks, and so
# does the guest then, instead of failing each record for a missing reader.
[ -x /repo/build/seed-render ] && export CI=true
# run.sh --shell boots with kh.shell: no modes, no tests, a shell.
if grep -q 'kh\.shell' /proc/cmdline; then
	echo "kmatrix: the repo is in /repo (build/tests/BIN runs a test); exit powers off" >/dev/console
	setsid cttyhack sh
	poweroff -f
fi
# Which modes record at all on this kernel: one short record each, its
# exit code and the first line khprof printed when it failed.
for m in batch span pair; do
	if build/khprof record -q --mode "$m" -o "/tmp/mode-$m.json" -- build/workloads/workload nested 5 \
		>/dev/null 2>/tmp/mode.out && [ -s "/tmp/mode-$m.json" ]; then
		fact "mode:$m" ok
	else
		why=$(grep -v -e 'warning:' -e 'note:' /tmp/mode.out | grep -m 1 -v '^$')
		fact "mode:$m" "fails: ${why:-no record}"
		# The first failure once more with -v: libbpf's and the
		# verifier's own lines, for whoever fixes it.
		if [ -z "${verbose_done:-}" ]; then
			verbose_done=1
			echo "@@ begin khprof-v $m" >&3
			build/khprof -v record -q --mode "$m" -o /tmp/mode-v.json -- build/workloads/workload nested 5 \
				>/dev/null 2>/tmp/mode.v
			tail -n 60 /tmp/mode.v >&3
			printf '\n@@ end khprof-v %s\n' "$m" >&3
		fi
	fi
done
rm -f /tmp/mode-*.json /tmp/mode.out
while read -r bin pattern; do
	case $bin in '' | '#'*) continue ;; esac
	echo "@@ begin $bin $pattern" >&3
	echo "kmatrix: $(cut -d' ' -f1 /proc/uptime)s: $bin $pattern" >/dev/console
	if [ "$pattern" = "*" ]; then
		"build/tests/$bin" >&3 2>&1
	else
		KH_TEST_FILTER="$pattern" "build/tests/$bin" >&3 2>&1
	fi
	rc=$?
	# A newline first: the output may end without one.
	printf "\n@@ end %s %s %s\n" "$bin" "$pattern" "$rc" >&3
done <"$plan"
echo "kmatrix: $(cut -d' ' -f1 /proc/uptime)s: done" >/dev/console
# The records seed-defer.sh kept (a guest without the seed's reader), with
# the text khprof printed for each, for the host's reader.
for record in /tmp/kh-seed/*.json; do
	[ -e "$record" ] || continue
	name=$(basename "$record" .json)
	{
		echo "@@ seed-record $name"
		base64 "$record"
		echo "@@ seed-text $name"
		base64 "/tmp/kh-seed/$name.txt"
		echo "@@ seed-end $name"
	} >&3
done
echo "@@ done" >&3
sync
poweroff -f
