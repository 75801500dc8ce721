#!/bin/sh
# elf-libs.sh TRIPLET ELF... - the shared libraries the ELF files load, and
# theirs, as the guest's dynamic loader finds them (with its own path),
# one path a line, for a guest of another architecture than the host,
# whose loader ldd cannot run: each DT_NEEDED (readelf reads any machine's
# files) looked up in that architecture's multiarch directories, where
# Debian installs its :arm64 libraries (/usr/lib/aarch64-linux-gnu...).
# A library beside the file that needs it through an $ORIGIN run path is
# one of the repo's (build/arm64/workloads/libkhwork.so), packed with the
# repo's files, and not printed.  initramfs.sh packs them; for the host's
# own architecture it asks ldd.
set -eu
triplet=$1
shift
dirs="/lib/$triplet /usr/lib/$triplet /lib /usr/lib"
seen=""
queue="$*"
while [ -n "$queue" ]; do
	set -- $queue
	file=$1
	shift
	queue="$*"
	interp=$(readelf -lW "$file" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
	origin=""
	readelf -dW "$file" 2>/dev/null | grep -qE '\((RUNPATH|RPATH)\).*\$ORIGIN' && origin=$(dirname "$file")
	for need in $interp $(readelf -dW "$file" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		found=""
		case $need in
		/*) [ -e "$need" ] && found=$need ;;
		*)
			if [ -n "$origin" ] && [ -e "$origin/$need" ]; then
				continue
			fi
			for d in $dirs; do
				if [ -e "$d/$need" ]; then
					found=$d/$need
					break
				fi
			done
			;;
		esac
		if [ -z "$found" ]; then
			echo "elf-libs: $file needs $need, not found in $dirs" >&2
			exit 1
		fi
		case " $seen " in
		*" $found "*) ;;
		*)
			seen="$seen $found"
			echo "$found"
			queue="$queue $found"
			;;
		esac
	done
done
