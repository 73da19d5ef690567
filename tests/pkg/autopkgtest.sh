#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/pkg/autopkgtest.sh DEBDIR - autopkgtest with the null runner on DEBDIR's package
# (what tests/pkg/deb.sh built there: portlogd_*.deb and the source .dsc, whose
# debian/tests/control lists the tests), without the network (unshare -n: nothing is
# downloaded; the test's Depends must be installed, tests/deps.sh does that).
# The null runner installs the package on THIS machine: so it refuses to run where
# portlogd is already installed, and afterwards purges it and removes the user
# portlogd if the test made it. Needs root. Prints autopkgtest's summary.
set -eu
dir=$(cd "$1" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root (the null runner installs the package)"; exit 77; }
for t in autopkgtest unshare; do
	command -v $t >/dev/null || { echo "SKIP: no $t (tests/deps.sh: PORTLOGD_DEB_PACKAGES)"; exit 77; }
done
deb=$(ls "$dir"/portlogd_*.deb) dsc=$(ls "$dir"/portlogd_*.dsc) ||
	{ echo "FAIL autopkgtest: no portlogd_*.deb and .dsc in $dir (tests/pkg/deb.sh makes them)"; exit 1; }
if dpkg-query -W -f '${Status}' portlogd 2>/dev/null | grep -q 'ok installed'; then
	echo "FAIL autopkgtest: portlogd is installed on this machine; the null runner would" \
		"replace it and this script purge it. Purge it first, or run elsewhere."
	exit 1
fi
had_user=$(getent passwd portlogd >/dev/null && echo 1 || echo 0)
tmp=$(mktemp -d)
cleanup() {
	dpkg --purge portlogd >/dev/null 2>&1 || true
	if [ "$had_user" = 0 ] && getent passwd portlogd >/dev/null; then
		userdel portlogd 2>/dev/null || true
		getent group portlogd >/dev/null && groupdel portlogd 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
t0=$(date +%s)
rc=0
unshare --net autopkgtest --no-built-binaries "$deb" "$dsc" --output-dir "$tmp/out" \
	--summary-file "$tmp/summary" -- null >"$tmp/log" 2>&1 || rc=$?
# every test's own output, then the summary
for f in "$tmp"/out/*-stdout "$tmp"/out/*-stderr; do
	[ -s "$f" ] || continue
	echo "--- ${f##*/}"
	grep -v '^20[0-9][0-9]-' "$f" | cut -c1-300     # not the daemon's log lines
done
echo "--- autopkgtest summary ($(($(date +%s) - t0)) s, exit $rc)"
cat "$tmp/summary" 2>/dev/null || { tail -30 "$tmp/log"; }
# 0: all passed; 2: at least one skipped (man pages left out by dpkg); anything else fails
case $rc in
0 | 2) echo "autopkgtest: ok" ;;
*) tail -30 "$tmp/log"; echo "FAIL autopkgtest exit $rc"; exit 1 ;;
esac
