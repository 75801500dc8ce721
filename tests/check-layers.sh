#!/bin/sh
# The layering of docs/ARCHITECTURE.md, checked on the sources and on the
# built objects (belt and braces beside the Makefile's per-layer include
# paths, which already make a wrong include fail to compile):
#  - a file in userspace/common includes only include/ and common/ headers,
#    one in userspace/analysis only those, analysis/ headers and the
#    messages protoc-c made of proto/ (build/proto), and
#    neither includes libbpf, libelf, the BPF skeleton or <linux/bpf.h>;
#  - a file in usdt/ includes only include/, common/ and usdt/ headers (and
#    libelf, libdw), never libbpf or the skeleton; one in userspace/capture
#    everything but userspace/cmd;
#  - within each layer (common, usdt, analysis, capture, cmd) the files call
#    each other one way: no circle of calls between its objects
#    (build/userspace/LAYER, by their symbols);
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

# check_includes LIBS SRC DIR... : in the files under SRC, quoted includes
# must be found in one of DIRs or their sub-folders (a layer's sub-folders
# share its include path; build itself is searched without its
# sub-folders).  LIBS "none": no capture-side library header and no
# skeleton; "elf": libelf and libdw allowed, not libbpf nor the skeleton;
# "all": anything found.
check_includes() {
	libs=$1
	src=$2
	shift 2
	# Every name a quoted include may use: each file's path below a
	# searched folder, from any of its sub-folders down.
	names=$(for d in "$@"; do
		case $d in
		build) find build -maxdepth 1 -type f 2>/dev/null ;;
		*) find "$d" -type f 2>/dev/null ;;
		esac | sed "s|^$d/||"
	done | awk -F/ '{ for (i = 1; i <= NF; i++) { n = $i; for (j = i + 1; j <= NF; j++) n = n "/" $j; print n } }' | sort -u)
	find "$src" -name '*.[ch]' | sort | xargs grep -H '^[[:space:]]*#[[:space:]]*include' |
	sed -n 's/^\([^:]*\):[[:space:]]*#[[:space:]]*include[[:space:]]*\([<"][^>"]*[>"]\).*/\1 \2/p' |
	awk -v libs="$libs" -v where="$*" -v names="$names" '
	BEGIN { n = split(names, list, "\n"); for (i = 1; i <= n; i++) have[list[i]] = 1 }
	{
		file = $1; inc = $2; name = substr(inc, 2, length(inc) - 2)
		if (substr(inc, 1, 1) == "<") {
			bpf = name ~ /^(bpf\/|libbpf)/ || name == "linux/bpf.h"
			elf = name ~ /^(gelf\.h|libelf\.h|dwarf\.h|elfutils\/)/
			if ((libs == "none" && (bpf || elf)) || (libs == "elf" && bpf))
				print file " includes " inc ", a capture-side library header"
			next
		}
		if (libs != "all" && name ~ /\.skel\.h$/) {
			print file " includes " inc ", the BPF skeleton"
			next
		}
		if (!(name in have))
			print file " includes " inc ", which is not in " where
	}'
}

out=$(check_includes none userspace/common include userspace/common
      check_includes none userspace/analysis include userspace/common userspace/analysis build/proto
      check_includes elf usdt include userspace/common usdt
      check_includes all userspace/capture include userspace/common userspace/analysis \
		     build/proto usdt userspace/capture build)
if [ -n "$out" ]; then
	printf '%s\n' "$out" | sed 's/^/layers: /'
	status=1
fi

# check_one_way DIR: the objects of DIR's sources (build/DIR) call each
# other one way.  Each edge is a file calling a function another defines;
# tsort names the files of a circle.
check_one_way() {
	dir=$1
	objs=""
	for src in $(find "$dir" -name '*.c' | sort); do
		obj=build/${src%.c}.o
		if [ ! -e "$obj" ]; then
			breach "$obj is not built"
			continue
		fi
		objs="$objs $obj"
	done
	[ -n "$objs" ] || return
	# One nm each for what the objects define and what they call (a
	# process costs ~60 ms on the shared test machine).
	loop=$( (nm -A --defined-only $objs | sed 's/^/D /'; nm -A -u $objs | sed 's/^/U /') |
		awk '{ split($2, f, ":"); sym = $NF
		       if ($1 == "D") { if ($(NF - 1) ~ /^[TDBR]$/) def[sym] = f[1]; print f[1], f[1] }
		       else use[f[1] " " sym] = 1 }
		     END { for (k in use) { split(k, u, " "); if ((u[2] in def) && def[u[2]] != u[1]) print u[1], def[u[2]] } }' |
		tsort 2>&1 >/dev/null | sed -n 's|^tsort: build/||p' | tr '\n' ' ' | sed 's/ $//')
	[ -n "$loop" ] && breach "$dir calls in a circle: $loop"
}

for dir in userspace/common usdt userspace/analysis userspace/capture userspace/cmd; do
	check_one_way "$dir"
done

libbpf=$(${CC:-cc} -print-file-name=libbpf.so)
if [ ! -e "$libbpf" ]; then
	breach "cannot find libbpf.so to compare symbols with"
else
	exports=$(mktemp)
	nm -D --defined-only "$libbpf" | awk '{ print $NF }' | sed 's/@.*//' | sort -u >"$exports"
	for src in $(find tests/unit -name 'test_*.c' | sort); do
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
