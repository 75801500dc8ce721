#!/bin/sh
# kernel-btf.sh DIR - the BTF of the kernel unpacked in DIR (build/kernels/
# KVER, by fetch.sh), the types its /sys/kernel/btf/vmlinux serves, into
# DIR/vmlinux.btf (raw BTF, which bpftool reads); prints the path.  Kept:
# a kernel's BTF never changes.  btf-facts.sh reads it for the matrix,
# vmlinux/gen.sh makes vmlinux/ARCH/vmlinux.h of it.
#
# x86: the compressed kernel is found by the x86 boot protocol's header
# (Documentation/arch/x86/boot.rst): setup_sects at 0x1f1, payload_offset
# and payload_length at 0x248 and 0x24c; the kernel's build appends the
# uncompressed size as 4 bytes after the payload, dropped here.  Its
# vmlinux is an ELF file, whose .BTF section is the BTF.
# arm64: Debian's vmlinuz is the plain Image (gzip'd before Linux 5.x's
# packaging changed; both are read), the kernel's sections laid out as
# loaded, ELF headers gone: the BTF is found by its own header (magic
# 0xeb9f, version 1, a 24-byte header, types at 0, strings right after
# them, all inside the image), whose lengths say where it ends.
set -eu
dir=$1
out=$dir/vmlinux.btf
if [ -s "$out" ] && [ "$out" -nt "$dir/vmlinuz" ]; then
	echo "$out"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
le32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }
unpacker() {
	case $1 in
	1f8b*) echo "gzip -dc" ;;
	fd377a585a00) echo "xz -dc" ;;
	28b52ffd*) echo "zstd -dcq" ;;
	02214c18*) echo "lz4 -dcq" ;;
	*) return 1 ;;
	esac
}
image=$dir/vmlinuz
# An arm64 Image has "ARM\x64" at 0x38.
if [ "$(od -An -c -j $((0x38)) -N4 "$image" | tr -d ' ')" = 'ARMd' ] ||
	unpack=$(unpacker "$(od -An -tx1 -N6 "$image" | tr -d ' \n')"); then
	if [ -n "${unpack:-}" ]; then
		$unpack <"$image" >"$tmp/Image"
		image=$tmp/Image
	fi
	size=$(wc -c <"$image")
	found=""
	for at in $(LC_ALL=C grep -obUaP '\x9f\xeb\x01\x00\x18\x00\x00\x00' "$image" | cut -d: -f1); do
		type_off=$(le32 "$image" $((at + 8))) type_len=$(le32 "$image" $((at + 12)))
		str_off=$(le32 "$image" $((at + 16))) str_len=$(le32 "$image" $((at + 20)))
		len=$((24 + str_off + str_len))
		if [ "$type_off" -eq 0 ] && [ "$str_off" -eq "$type_len" ] && [ "$str_len" -gt 0 ] &&
			[ $((at + len)) -le "$size" ]; then
			tail -c +$((at + 1)) "$image" | head -c "$len" >"$tmp/btf"
			found=1
			break
		fi
	done
	if [ -z "$found" ]; then
		echo "kernel-btf: no BTF found in $dir/vmlinuz" >&2
		exit 1
	fi
else
	setup_sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$image" | tr -d ' ')
	[ "$setup_sects" -eq 0 ] && setup_sects=4
	offset=$(( (setup_sects + 1) * 512 + $(le32 "$image" $((0x248))) ))
	length=$(( $(le32 "$image" $((0x24c))) - 4 ))
	payload() { tail -c +$((offset + 1)) "$image" | head -c "$length"; }
	magic=$(payload | od -An -tx1 -N6 | tr -d ' \n')
	if ! unpack=$(unpacker "$magic"); then
		echo "kernel-btf: $dir/vmlinuz: unknown compression (payload starts $magic)" >&2
		exit 1
	fi
	payload | $unpack >"$tmp/vmlinux"
	if ! objcopy -O binary --only-section=.BTF "$tmp/vmlinux" "$tmp/btf" 2>"$tmp/err" ||
		[ ! -s "$tmp/btf" ]; then
		echo "kernel-btf: no .BTF in the vmlinux of $dir/vmlinuz: $(head -n 1 "$tmp/err")" >&2
		exit 1
	fi
fi
if ! bpftool btf dump file "$tmp/btf" >/dev/null 2>"$tmp/err"; then
	echo "kernel-btf: bpftool cannot read the BTF of $dir/vmlinuz: $(head -n 1 "$tmp/err")" >&2
	exit 1
fi
chmod 644 "$tmp/btf"
mv "$tmp/btf" "$out"
echo "$out"
