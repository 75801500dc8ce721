#!/bin/sh
# The layering of docs/ARCHITECTURE.md, checked on the sources and on the
# unit-test binaries (belt and braces beside the Makefile's per-layer
# include paths, which already make a wrong include fail to compile):
#  - a file in userspace/common includes only include/ and common/ headers,
#    one in userspace/analysis only those, analysis/ headers and the
#    messages protoc-c made of proto/ (build/proto), and
#    neither includes libbpf, libelf, the BPF skeleton or <linux/bpf.h>;
#  - no unit-test binary (build/tests/test_* of tests/unit) needs libbpf or
#    references any symbol libbpf exports: unit tests run without it.
# Prints one line per breach and exits 1, or prints "layers: ok".
set -u
cd "$(dirname "$0")/.."
status=0

breach() {
	echo "layers: $*"
	status=1
}

# check_includes LAYER DIR... : quoted includes must be found in one of DIRs
# or their sub-folders (a layer's sub-folders share its include path).
check_includes() {
	layer=$1
	shift
	dirs=$(find "$@" -type d 2>/dev/null)
	for f in $(find userspace/$layer -name '*.[ch]'); do
		[ -e "$f" ] || continue
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*\([<"][^>"]*[>"]\).*/\1/p' "$f" |
		while read -r inc; do
			name=${inc#?}
			name=${name%?}
			case $inc in
			\<*)
				case $name in
				bpf/*|libbpf*|linux/bpf.h|gelf.h|libelf.h|dwarf.h|elfutils/*)
					echo "$f includes $inc, a capture-side library header" ;;
				esac ;;
			*)
				case $name in
				*.skel.h) echo "$f includes $inc, the BPF skeleton"; continue ;;
				esac
				found=""
				for dir in $dirs; do
					[ -e "$dir/$name" ] && found=1
				done
				[ -n "$found" ] ||
					echo "$f includes $inc, which is not in $*" ;;
			esac
		done
	done
}

out=$(check_includes common include userspace/common
      check_includes analysis include userspace/common userspace/analysis build/proto)
if [ -n "$out" ]; then
	printf '%s\n' "$out" | sed 's/^/layers: /'
	status=1
fi

libbpf=$(${CC:-cc} -print-file-name=libbpf.so)
if [ ! -e "$libbpf" ]; then
	breach "cannot find libbpf.so to compare symbols with"
else
	exports=$(mktemp)
	nm -D --defined-only "$libbpf" | awk '{ print $NF }' | sed 's/@.*//' | sort -u >"$exports"
	for src in tests/unit/test_*.c; do
		name=${src##*/}
		bin=build/tests/${name%.c}
		if [ ! -x "$bin" ]; then
			breach "$bin is not built"
			continue
		fi
		if readelf -d "$bin" | grep -q 'NEEDED.*libbpf'; then
			breach "$bin links libbpf"
		fi
		used=$(nm -a "$bin" 2>/dev/null | awk '{ print $NF }' | sed 's/@.*//' | sort -u |
		       comm -12 - "$exports" | head -n 5 | tr '\n' ' ')
		[ -n "$used" ] && breach "$bin references libbpf symbols: $used"
	done
	rm -f "$exports"
fi
[ "$status" -eq 0 ] && echo "layers: ok"
exit "$status"
