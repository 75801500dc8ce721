#!/bin/sh
# Installs the Debian packages named on the command line that are missing.
# Used by the Makefile so a fresh machine needs nothing installed by hand.
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
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
