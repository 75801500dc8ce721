#!/bin/sh
# btf-facts.sh DIR - the BPF facts of the kernel unpacked in DIR
# (build/kernels/KVER, by fetch.sh), from its own BTF, as "NAME VALUE" lines
# into DIR/btf-facts; prints them.
#
# Read on the host, from the kernel's BTF (kernel-btf.sh), because the same
# bpftool dump takes ~37 s in a TCG guest and ~2 s here, and a kernel's BTF
# never changes: the facts are kept.
set -eu
dir=$1
out=$dir/btf-facts
if [ -s "$out" ] && [ "$out" -nt "$dir/vmlinuz" ]; then
	cat "$out"
	exit 0
fi
btf=$("$(dirname "$0")/kernel-btf.sh" "$dir") || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! bpftool btf dump file "$btf" >"$tmp/btf.txt" 2>"$tmp/err"; then
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
