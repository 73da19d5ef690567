#!/bin/sh
# tests/deb.sh BUILD SRC - cpack builds the .deb; it holds the expected files, maintainer
# scripts, conffiles and library Depends; unpacked into a scratch root (dpkg -x) its
# binary runs: --version, and --check-config on the shipped example config.
set -eu
build=$1 src=$2
for t in cpack dpkg-deb dpkg-shlibdeps; do
	command -v $t >/dev/null || { echo "SKIP: no $t"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpack --config "$build/CPackConfig.cmake" -B "$tmp/out" >"$tmp/cpack.log" 2>&1 ||
	{ cat "$tmp/cpack.log"; exit 1; }
deb=$(ls "$tmp"/out/portlogd_*.deb)
echo "built $(basename "$deb") ($(wc -c <"$deb") bytes)"
# /usr unless the build was configured with another prefix
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
etc=$([ "$prefix" = /usr ] && echo /etc || echo "$prefix/etc")
fail=0
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$tmp/files"
for f in "$prefix/sbin/portlogd" /lib/systemd/system/portlogd.service \
	/usr/lib/sysusers.d/portlogd.conf /usr/lib/tmpfiles.d/portlogd.conf \
	/lib/udev/rules.d/60-portlogd.rules "$etc/logrotate.d/portlogd" "$etc/portlogd/portlogd.conf" \
	"$prefix/share/man/man8/portlogd.8" "$prefix/share/man/man5/portlogd.conf.5"; do
	grep -qx "$f" "$tmp/files" || { echo "not in the .deb: $f"; fail=1; }
done
dpkg-deb -c "$deb" | grep " .$prefix/sbin/portlogd\$" | grep -q '^-rwxr-xr-x' ||
	{ echo "$prefix/sbin/portlogd is not mode 0755"; fail=1; }
dpkg-deb -e "$deb" "$tmp/control"
for s in postinst prerm postrm conffiles; do
	[ -f "$tmp/control/$s" ] || { echo "no $s"; fail=1; }
done
printf '%s/portlogd/portlogd.conf\n%s/logrotate.d/portlogd\n' "$etc" "$etc" |
	cmp -s - "$tmp/control/conffiles" ||
	{ echo "conffiles:"; cat "$tmp/control/conffiles"; fail=1; }
grep -q 'systemd-sysusers portlogd.conf' "$tmp/control/postinst" &&
	grep -q 'systemd-tmpfiles --create portlogd.conf' "$tmp/control/postinst" &&
	grep -q '\[ -d /run/systemd/system \]' "$tmp/control/postinst" ||
	{ echo "postinst lacks sysusers, tmpfiles or the systemd guard"; fail=1; }
sh -n "$tmp/control/postinst" && sh -n "$tmp/control/prerm" && sh -n "$tmp/control/postrm" ||
	fail=1
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libserialport0 libieee1284-3 libsystemd0; do
	echo "$depends" | grep -q "$lib" || { echo "Depends lacks $lib"; fail=1; }
done

dpkg -x "$deb" "$tmp/root"
bin=$tmp/root$prefix/sbin/portlogd
v=$("$bin" --version)
[ "$v" = "portlogd $(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")" ] ||
	{ echo "--version says '$v'"; fail=1; }
"$bin" --check-config -c "$tmp/root$etc/portlogd/portlogd.conf" >"$tmp/check" ||
	{ echo "--check-config fails on the shipped config"; fail=1; }
grep -q '^\[serial gps\]$' "$tmp/check" || { echo "--check-config printed:"; cat "$tmp/check"; fail=1; }
cmp -s "$tmp/root$etc/portlogd/portlogd.conf" "$src/config/portlogd.conf" ||
	{ echo "the shipped config is not config/portlogd.conf"; fail=1; }
[ $fail -eq 0 ] && echo "deb: contents, scripts, Depends and the unpacked binary ok"
exit $fail
