#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/pkg/deb-build.sh SRC OUT - builds portlogd's Debian packages the way Debian does,
# from a scratch copy of SRC so that the source tree stays as it was (no obj-*/, no
# debian/portlogd/, nothing in SRC/..): dpkg-buildpackage -us -uc -b for the binary
# packages, dpkg-source -b for the source package (so lintian can check it too).
# OUT receives the .dsc, .tar.xz, .debs, .buildinfo and .changes.
# The copy holds the files git knows (tracked, or new and not ignored: never the
# build*/ trees); outside a git checkout, everything but build*, obj-* and .git.
set -eu
src=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
for t in dpkg-buildpackage dpkg-source dh; do
	command -v $t >/dev/null || { echo "SKIP: no $t (tests/deps.sh: PORTLOGD_DEB_PACKAGES)"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/portlogd"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# --ignore-failed-read: a file deleted but not yet committed is not copied
	git -C "$src" ls-files -z --cached --others --exclude-standard |
		tar -C "$src" --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -C "$tmp/portlogd" -xf -
else
	tar -C "$src" --exclude=./.git --exclude='./build' --exclude='./build-*' --exclude='./obj-*' \
		-cf - . | tar -C "$tmp/portlogd" -xf -
fi
t0=$(date +%s)
(cd "$tmp" && dpkg-source -b portlogd) >"$tmp/source.log" 2>&1 ||
	{ cat "$tmp/source.log"; echo "FAIL deb-build: dpkg-source -b"; exit 1; }
(cd "$tmp/portlogd" && dpkg-buildpackage -us -uc -b -Jauto) >"$tmp/build.log" 2>&1 ||
	{ tail -60 "$tmp/build.log"; echo "FAIL deb-build: dpkg-buildpackage -us -uc -b"; exit 1; }
grep -E '^ *[0-9]+/[0-9]+ Test|tests passed|tests failed' "$tmp/build.log" | sed 's/^/dh_auto_test: /' | tail -3
rm -f "$out"/portlogd_* "$out"/portlogd-dbgsym_*
mv "$tmp"/portlogd_* "$tmp"/portlogd-dbgsym_* "$out/"
echo "built in $(($(date +%s) - t0)) s:" $(cd "$out" && ls portlogd_* portlogd-dbgsym_*)
