#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/pkg/arch.sh ARCH SRC OUT - portlogd on another Debian architecture (arm64, armhf,
# i386), the Debian way: in a bookworm chroot of this machine's architecture made with
# mmdebstrap (ARCH added with dpkg --add-architecture, crossbuild-essential-ARCH, the
# Build-Depends for ARCH from SRC's debian/control), tests/pkg/deb-build.sh cross-builds the
# package (dpkg-buildpackage -a ARCH, Debian's flags with -Werror) and dh_auto_test runs
# its unit tests (ctest -L unit): under qemu-user through binfmt_misc (qemu-user-static,
# binfmt-support) for arm64 and armhf, natively for i386. PORTLOGD_TEST_EMULATOR tells
# the tests they run emulated: those that need what qemu-user does not emulate skip
# themselves and say why. The packages land in OUT/ARCH, with the build's log.
# Prints the package, the warning count (the build fails on any), the unit tests N/N with
# every skip, and the time of each step.
#
# The chroot is kept in PORTLOGD_ARCH_CACHE/ARCH (/var/cache/portlogd-arch; never in the
# tree) and made again when missing or made with other options; the Build-Depends are
# brought up to date each run. Its apt sources: the host's Debian mirror, bookworm and
# bookworm-updates (not the security suite, whose armhf and i386 lists can fail to
# update here). Root only (mmdebstrap, chroot, mounts in a namespace of its own, which
# end with it). Exit 77 (skipped) when a tool is missing.
set -eu
arch=$1 src=$(cd "$2" && pwd)
mkdir -p "$3/$1"
out=$(cd "$3/$1" && pwd)
. "$src/tests/deps.sh"
for t in mmdebstrap unshare chroot flock; do
	command -v $t >/dev/null || { echo "SKIP: no $t (tests/deps.sh: PORTLOGD_ARCH_PACKAGES)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: $arch: needs root (mmdebstrap, chroot, mounts)"; exit 77; }
native=$(dpkg --print-architecture)
case $arch in
arm64) qemu=qemu-aarch64 ;;
armhf) qemu=qemu-arm ;;
i386) qemu= ;;          # an amd64 kernel runs i386 programs itself
*) echo "FAIL arch: $arch is none of arm64, armhf, i386"; exit 2 ;;
esac
t0=$(date +%s)
if [ -n "$qemu" ]; then
	command -v $qemu-static >/dev/null && command -v update-binfmts >/dev/null ||
		{ echo "SKIP: no $qemu-static or update-binfmts (tests/deps.sh: PORTLOGD_ARCH_PACKAGES)"; exit 77; }
	# F (fix-binary): the kernel keeps the host's interpreter open, usable inside the chroot
	update-binfmts --import $qemu >/dev/null 2>&1 || true
	update-binfmts --enable $qemu 2>/dev/null || true
	grep -q '^flags: .*F' /proc/sys/fs/binfmt_misc/$qemu 2>/dev/null ||
		{ echo "FAIL arch: $arch: binfmt_misc has no $qemu entry with flag F (update-binfmts --display $qemu)"; exit 1; }
fi

# --- the chroot: made once, kept
cache=${PORTLOGD_ARCH_CACHE:-/var/cache/portlogd-arch}
root=$cache/$arch
mirror=$(portlogd_mirror)
opts="--variant=buildd --architectures=$native,$arch --include=crossbuild-essential-$arch,git"
mkdir -p "$cache"
exec 9>"$cache/$arch.lock"
flock 9             # one run at a time per chroot
if [ "$(cat "$root/.portlogd-chroot" 2>/dev/null)" != "$opts $mirror" ]; then
	rm -rf "$root"
	# the apt lists stay in the chroot (--skip=cleanup/apt/lists): build-dep needs them
	if ! mmdebstrap $opts --skip=cleanup/apt/lists bookworm "$root" \
		"deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
		>"$out/mmdebstrap.log" 2>&1; then
		tail -20 "$out/mmdebstrap.log"
		rm -rf "$root"
		echo "FAIL arch: $arch: mmdebstrap (the log: $out/mmdebstrap.log)"
		exit 1
	fi
	echo "$opts $mirror" >"$root/.portlogd-chroot"
	made="made"
else
	made="cached"
fi
t1=$(date +%s)

# in_root CMD...: CMD in the chroot, with /proc, /sys and /dev (ptys, this machine's UART),
# SRC read-only at /src, OUT at /out; the chroot is a mount point of its own, so that "/"
# is one inside (test_input makes its /sys/class private in a mount namespace)
in_root() {
	unshare --mount --propagation private sh -c '
		r=$1 s=$2 o=$3; shift 3
		mount --bind "$r" "$r" && mount -t proc proc "$r/proc" &&
		mount -t sysfs sysfs "$r/sys" && mount --rbind /dev "$r/dev" &&
		mkdir -p "$r/src" "$r/out" && mount --bind -o ro "$s" "$r/src" &&
		mount --bind "$o" "$r/out" && exec chroot "$r" "$@"' sh "$root" "$src" "$out" "$@"
}
deps="DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -q -a $arch /src"
in_root sh -c "$deps || { apt-get update -q && $deps; }" >"$out/build-dep.log" 2>&1 ||
	{ tail -20 "$out/build-dep.log"; echo "FAIL arch: $arch: apt-get build-dep -a $arch"; exit 1; }
t2=$(date +%s)

# --- the package, its unit tests
rc=0
in_root env PORTLOGD_DEB_ARCH="$arch" ${qemu:+PORTLOGD_TEST_EMULATOR=$qemu-static} \
	sh /src/tests/pkg/deb-build.sh /src /out >"$out/deb-build.out" 2>&1 || rc=$?
t3=$(date +%s)
sed "s/^/$arch: /" "$out/deb-build.out"
log=$(ls "$out"/portlogd_*_"$arch".build 2>/dev/null || echo "$out/deb-build.out")
deb=$(cd "$out" && ls portlogd_*_"$arch".deb 2>/dev/null || echo "none")
warnings=$(grep -c 'warning:' "$log" || true)
# ctest's "100% tests passed, 0 tests failed out of 18": passed/all
tests=$(sed -n 's/.* \([0-9]*\) tests failed out of \([0-9]*\)$/\1 \2/p' "$log" | tail -1)
tests=$([ -n "$tests" ] && echo "$tests" | awk '{ print $2 - $1 "/" $2 }' || echo "none run")
how=$([ -n "$qemu" ] && echo "under $qemu-static" || echo "native")
echo "=== $arch: package $deb; $warnings warnings; unit tests $tests ($how);" \
	"chroot $((t1 - t0)) s ($made), build-deps $((t2 - t1)) s, build and tests $((t3 - t2)) s," \
	"total $((t3 - t0)) s"
grep -E '^[0-9]+: # .*skipped' "$log" 2>/dev/null | while IFS= read -r l; do
	n=${l%%:*}
	name=$(sed -n "s/^ *[0-9]*\/[0-9]* Test *#$n: \([^ ]*\) .*/\1/p" "$log" | head -1)
	echo "=== $arch: $name: ${l#*: # }"
done
[ $rc -eq 0 ] || { echo "FAIL arch: $arch (the log: ${log:-$out/deb-build.out})"; exit 1; }
