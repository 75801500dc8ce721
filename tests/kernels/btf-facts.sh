#!/bin/sh
# btf-facts.sh DIR - the BPF facts of the kernel unpacked in DIR
# (build/kernels/KVER, by fetch.sh), from its own BTF, as "NAME VALUE" lines
# into DIR/btf-facts; prints them.
#
# Read on the host, from the vmlinux inside DIR/vmlinuz, because the same
# bpftool dump takes ~37 s in a TCG guest and ~2 s here, and a kernel's BTF
# never changes: the facts are kept.  The BTF is the one the guest's
# /sys/kernel/btf/vmlinux serves (the kernel's .BTF section).
#
# The compressed kernel is found by the x86 boot protocol's header
# (Documentation/arch/x86/boot.rst): setup_sects at 0x1f1, payload_offset
# and payload_length at 0x248 and 0x24c; the kernel's build appends the
# uncompressed size as 4 bytes after the payload, dropped here.
set -eu
dir=$1
out=$dir/btf-facts
if [ -s "$out" ] && [ "$out" -nt "$dir/vmlinuz" ]; then
	cat "$out"
	exit 0
fi
le32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }
setup_sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$dir/vmlinuz" | tr -d ' ')
[ "$setup_sects" -eq 0 ] && setup_sects=4
offset=$(( (setup_sects + 1) * 512 + $(le32 "$dir/vmlinuz" $((0x248))) ))
length=$(( $(le32 "$dir/vmlinuz" $((0x24c))) - 4 ))
payload() { tail -c +$((offset + 1)) "$dir/vmlinuz" | head -c "$length"; }
magic=$(payload | od -An -tx1 -N6 | tr -d ' \n')
case $magic in
1f8b*) unpack="gzip -dc" ;;
fd377a585a00) unpack="xz -dc" ;;
28b52ffd*) unpack="zstd -dcq" ;;
02214c18*) unpack="lz4 -dcq" ;;
*)
	echo "btf-facts: $dir/vmlinuz: unknown compression (payload starts $magic)" >&2
	exit 1
	;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
payload | $unpack >"$tmp/vmlinux"
if ! bpftool btf dump file "$tmp/vmlinux" >"$tmp/btf.txt" 2>"$tmp/err"; then
	echo "btf-facts: bpftool cannot read the BTF of $dir/vmlinuz: $(head -n 1 "$tmp/err")" >&2
	exit 1
fi
{
	# kfuncs khprof's BPF side calls or falls back from (issue 23).
	for f in bpf_copy_from_user_str bpf_preempt_disable bpf_preempt_enable bpf_rdonly_cast \
		bpf_send_signal_task bpf_iter_num_new bpf_task_from_pid; do
		if grep -q "FUNC '$f' " "$tmp/btf.txt"; then echo "kfunc:$f yes"; else echo "kfunc:$f no"; fi
	done
	# Helpers and link types by their values in the kernel's own uapi
	# enums (bpf_func_id, bpf_link_type).
	for e in BPF_FUNC_loop BPF_FUNC_get_attach_cookie BPF_FUNC_ringbuf_output \
		BPF_FUNC_copy_from_user BPF_LINK_TYPE_UPROBE_MULTI; do
		if grep -q "'$e' val=" "$tmp/btf.txt"; then echo "enum:$e yes"; else echo "enum:$e no"; fi
	done
	# Tracepoints with BTF, which tp_btf programs need.
	for t in sched_prepare_exec sched_process_exec sched_switch sched_wakeup; do
		if grep -q "TYPEDEF 'btf_trace_$t' " "$tmp/btf.txt"; then echo "tp_btf:$t yes"; else echo "tp_btf:$t no"; fi
	done
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
