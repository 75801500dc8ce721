#!/bin/sh
# fetch.sh KEY - downloads and unpacks the newest Debian kernel of KEY
# (tests/kernels/kernels.list) into build/kernels/KVER/ and prints KVER.
# fetch.sh KEY --deb PACKAGE - downloads PACKAGE (the newest version) from
# KEY's suites, for KEY's architecture, and prints the .deb's path: the
# guest's own busybox, bpftool and diff for an arm64 kernel.
#
# apt runs with a state of KEY's own under build/kernels/apt/KEY/ (sources,
# lists, cache, an empty dpkg status), so the machine's apt configuration is
# read, never changed.  The archive is the one the machine's own sources
# use, read from /etc/apt at run time.  The lists are refreshed once a day
# (KH_KERNELS_REFRESH=1: now); a package already unpacked costs nothing.
# A kernel of another architecture (the list's fourth column, arch=arm64)
# is fetched with that architecture as the apt state's only one
# (APT::Architectures), so its lists and downloads are arm64's.
# Exit codes: 0 done, 1 could not fetch, 2 usage.
set -eu
cd "$(dirname "$0")/../.."
top=$PWD
key=${1:-}
deb=""
if [ "${2:-}" = --deb ]; then
	deb=${3:?usage: fetch.sh KEY --deb PACKAGE}
fi
line=$(awk -v k="$key" '$1 == k && $1 !~ /^#/ { print; exit }' tests/kernels/kernels.list)
if [ -z "$key" ] || [ -z "$line" ]; then
	echo "fetch: unknown kernel '$key' (one of: $(awk '!/^#/ && NF { printf "%s ", $1 }' tests/kernels/kernels.list))" >&2
	exit 2
fi
suites=$(echo "$line" | awk '{ print $2 }')
regex=$(echo "$line" | awk '{ print $3 }')
arch=$(echo "$line" | awk '{ for (i = 4; i <= NF; i++) if ($i ~ /^arch=/) print substr($i, 6) }')
[ -n "$arch" ] || arch=$(dpkg --print-architecture)

# The machine's archive and security archive: the URIs of its sources that
# serve its own codename and CODENAME-security, one-line or deb822 format.
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
sources_uri() {
	# $1: the suite to look for.  Prints the first URI serving it.
	{
		cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			sed -e 's/\[[^]]*\]//' |
			awk -v s="$1" '$1 == "deb" { for (i = 3; i <= NF; i++) if ($i == s) { print $2; exit } }'
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -r "$f" ] || continue
			awk -v s="$1" '
				/^[ \t]*#/ { next }
				/^[ \t]*$/ { if (ok && uri) { print uri; exit } ok = 0; uri = ""; next }
				tolower($1) == "uris:" { uri = $2 }
				tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
				END { if (ok && uri) print uri }' "$f"
		done
	} | head -n 1
}
archive=$(sources_uri "$codename")
security=$(sources_uri "$codename-security")
if [ -z "$archive" ]; then
	echo "fetch: cannot find the machine's Debian archive in /etc/apt (no source serves '$codename')" >&2
	exit 1
fi
[ -n "$security" ] || security="${archive%/debian}/debian-security"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

state=$top/build/kernels/apt/$key
mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
: >"$state/status.new"
[ -f "$state/status" ] || mv "$state/status.new" "$state/status"
rm -f "$state/status.new"
list=$state/sources.list.new
echo "$suites" | tr ',' '\n' | while read -r s; do
	case $s in
	*-security) echo "deb [signed-by=$keyring] $security $s main" ;;
	*) echo "deb [signed-by=$keyring] $archive $s main" ;;
	esac
done >"$list"
# A changed source (another mirror, another suite) refreshes the lists.
if ! cmp -s "$list" "$state/sources.list"; then
	mv "$list" "$state/sources.list"
	rm -f "$state/updated"
else
	rm -f "$list"
fi
set -- -o Dir::Etc::SourceList="$state/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
	-o Dir::State::Lists="$state/lists" -o Dir::Cache="$state/cache" \
	-o Dir::State::Status="$state/status" \
	-o Dir::Cache::pkgcache="$state/cache/pkgcache.bin" -o Dir::Cache::srcpkgcache="$state/cache/srcpkgcache.bin" -o Dir::Etc::Preferences=/nonexistent \
	-o Dir::Etc::PreferencesParts=/nonexistent -o APT::Get::List-Cleanup=true \
	-o APT::Architecture="$arch" -o APT::Architectures::="$arch"
if [ "${KH_KERNELS_REFRESH:-}" = 1 ] || [ -z "$(find "$state/updated" -mmin -1440 2>/dev/null)" ]; then
	if ! apt-get "$@" -qq update >"$state/update.log" 2>&1; then
		echo "fetch: cannot update the package lists of '$key' ($suites); see $state/update.log" >&2
		sed -n '1,3p' "$state/update.log" >&2
		exit 1
	fi
	touch "$state/updated"
fi

debs=$top/build/kernels/debs/$arch
[ "$arch" = "$(dpkg --print-architecture)" ] && debs=$top/build/kernels/debs
mkdir -p "$debs"
# download PACKAGE VERSION APT-OPTION...: into $debs unless there already.
download() {
	d_pkg=$1 d_ver=$2
	shift 2
	if ! ls "$debs/${d_pkg}_"*.deb >/dev/null 2>&1; then
		echo "fetch: downloading $d_pkg $d_ver ($arch)" >&2
		if ! (cd "$debs" && apt-get "$@" -qq download "$d_pkg=$d_ver" >"$state/download.log" 2>&1); then
			echo "fetch: cannot download '$d_pkg' $d_ver; see $state/download.log" >&2
			exit 1
		fi
	fi
}

if [ -n "$deb" ]; then
	ver=$(apt-cache "$@" show "$deb" 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -n 1)
	if [ -z "$ver" ]; then
		echo "fetch: no package '$deb' ($arch) in $suites" >&2
		exit 1
	fi
	download "$deb" "$ver" "$@"
	ls "$debs/${deb}_"*.deb | sort -V | tail -n 1
	exit 0
fi

pkg=$(apt-cache "$@" pkgnames linux-image- | grep -E "$regex" | sort -V | tail -n 1)
if [ -z "$pkg" ]; then
	echo "fetch: no package matching '$regex' in $suites" >&2
	exit 1
fi
kver=${pkg#linux-image-}
# Debian's arm64 images without a Secure Boot signature hold the same kernel.
kver=${kver%-unsigned}
dir=$top/build/kernels/$kver
if [ -f "$dir/.unpacked" ]; then
	echo "$kver"
	exit 0
fi
# Since Linux 6.19 Debian's image package holds no kernel: the binary is in
# linux-binary-KVER, a dependency.  Download whichever of the two exist.
pkgs=$pkg
bin=linux-binary-$kver
if apt-cache "$@" show "$bin" >/dev/null 2>&1; then
	pkgs="$pkgs $bin"
fi
for p in $pkgs; do
	download "$p" "$(apt-cache "$@" show "$p" | sed -n 's/^Version: //p' | sort -V | tail -n 1)" "$@"
done
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp"
for p in $pkgs; do
	dpkg-deb -x "$(ls "$debs/${p}_"*.deb | sort -V | tail -n 1)" "$dir.tmp/root"
done
# /boot/vmlinuz-KVER until 6.18, /usr/lib/modules/KVER/vmlinuz after.
vmlinuz=$(find "$dir.tmp/root" \( -name "vmlinuz-$kver" -o -path "*/modules/$kver/vmlinuz" \) | head -n 1)
if [ -z "$vmlinuz" ]; then
	echo "fetch: no vmlinuz in $pkgs" >&2
	exit 1
fi
mv "$vmlinuz" "$dir.tmp/vmlinuz"
config=$(find "$dir.tmp/root" \( -name "config-$kver" -o -path "*/modules/$kver/config" \) | head -n 1)
[ -z "$config" ] || mv "$config" "$dir.tmp/config"
# Modules are not needed: the guest boots from an initramfs and talks over
# the 8250 serial ports, built in on every Debian kernel.
rm -rf "$dir.tmp/root" "$dir"
for p in $pkgs; do
	echo "$p $(dpkg-deb -f "$(ls "$debs/${p}_"*.deb | sort -V | tail -n 1)" Version)"
done >"$dir.tmp/packages"
echo "$suites" >"$dir.tmp/suites"
touch "$dir.tmp/.unpacked"
mv "$dir.tmp" "$dir"
echo "$kver"
