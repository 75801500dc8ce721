#!/bin/sh
# Installs the Debian packages named on the command line that are missing.
# Used by the Makefile so a fresh machine needs nothing installed by hand.
# A package of another architecture (libbpf-dev:arm64, for make ARCH=arm64)
# first adds that architecture to dpkg: Debian's sources serve every
# architecture the machine lists, unless a source says `Architectures:`,
# which is then named instead of changed.
set -eu
# make -j runs several of these at once (the build's and the seed reader's
# packages); apt takes one at a time, so they queue here instead of failing.
exec 9>"${TMPDIR:-/tmp}/khprof-install-deps.lock"
flock 9
missing=""
for pkg in "$@"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing Debian packages:$missing (run as root or install them)" >&2
	exit 1
fi
native=$(dpkg --print-architecture)
for pkg in $missing; do
	case $pkg in
	*:*) arch=${pkg##*:} ;;
	*) continue ;;
	esac
	[ "$arch" = "$native" ] && continue
	dpkg --print-foreign-architectures | grep -qx "$arch" && continue
	echo "install-deps: adding the architecture $arch to dpkg (for$missing)" >&2
	dpkg --add-architecture "$arch"
	# A deb822 source limited to some architectures does not serve this one.
	for src in /etc/apt/sources.list.d/*.sources; do
		[ -e "$src" ] || continue
		if grep -qi '^Architectures:' "$src" && ! grep -qiE "^Architectures:.*\b$arch\b" "$src"; then
			echo "install-deps: note: '$src' lists its architectures without $arch" >&2
		fi
	done
done
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
