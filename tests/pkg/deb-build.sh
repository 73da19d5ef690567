#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/pkg/deb-build.sh SRC OUT - builds portlogd's Debian packages the way Debian does,
# from a scratch copy of SRC so that the source tree stays as it was (no obj-*/, no
# debian/portlogd/, nothing in SRC/..): dpkg-buildpackage -us -uc -b for the binary
# packages, dpkg-source -b for the source package (so lintian can check it too).
# OUT receives the .dsc, .tar.xz, .debs, .buildinfo and .changes, and the build's log
# (portlogd_VERSION_ARCH.build).
# The copy holds the files git knows (tracked, or new and not ignored: never the
# build*/ trees); outside a git checkout, everything but build*, obj-* and .git.
# Debian's build flags (dpkg-buildflags), with -Werror appended (DEB_CFLAGS_APPEND): a
# warning fails the build; any other "warning:" line of the log (dpkg, debhelper, CMake)
# is printed and fails it too.
# PORTLOGD_DEB_ARCH=ARCH cross-builds for ARCH (dpkg-buildpackage -a ARCH, CC the
# cross-compiler), with dh_auto_test's unit tests run (DEB_BUILD_OPTIONS=
# crossbuildcanrunhostbinaries: tests/pkg/arch.sh runs this in a chroot where qemu-user
# executes them, or natively for i386).
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
export DEB_CFLAGS_APPEND="${DEB_CFLAGS_APPEND:+$DEB_CFLAGS_APPEND }-Werror"
arch=$(dpkg-architecture -qDEB_BUILD_ARCH)
set --
if [ -n "${PORTLOGD_DEB_ARCH:-}" ] && [ "$PORTLOGD_DEB_ARCH" != "$arch" ]; then
	arch=$PORTLOGD_DEB_ARCH
	set -- -a "$arch"
	# dpkg-architecture warns when CC is not the host's compiler
	export CC="$(dpkg-architecture -a "$arch" -qDEB_HOST_GNU_TYPE 2>/dev/null)-gcc"
	export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }crossbuildcanrunhostbinaries"
fi
log=$tmp/portlogd_$(dpkg-parsechangelog -l "$tmp/portlogd/debian/changelog" -S Version)_$arch.build
rc=0
(cd "$tmp/portlogd" && dpkg-buildpackage -us -uc -b -Jauto "$@") >"$log" 2>&1 || rc=$?
# the lines of the build's own tests (dh_auto_test, ctest -L unit): verdicts and skips
grep -E '^ *[0-9]+/[0-9]+ Test|tests passed|tests failed|^[0-9]+: # .*skipped' "$log" |
	sed 's/^/dh_auto_test: /'
warnings=$(grep -c 'warning:' "$log" || true)
echo "warnings: $warnings"
grep 'warning:' "$log" | sed 's/^/  /' || true
rm -f "$out"/portlogd_* "$out"/portlogd-dbgsym_*
if [ $rc -ne 0 ]; then
	tail -60 "$log"
	mv "$log" "$out/"
	echo "FAIL deb-build: dpkg-buildpackage -us -uc -b $* (the log: $out/$(basename "$log"))"
	exit 1
fi
mv "$tmp"/portlogd_* "$tmp"/portlogd-dbgsym_* "$out/"
[ "$warnings" -eq 0 ] || { echo "FAIL deb-build: $warnings warning lines in the log"; exit 1; }
echo "built in $(($(date +%s) - t0)) s:" $(cd "$out" && ls portlogd_* portlogd-dbgsym_*)
