#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/pkg/deb.sh BUILD SRC - the Debian package: debian/changelog's version is CMake's and
# the man pages'; tests/pkg/deb-build.sh builds it from a copy of SRC (dpkg-buildpackage)
# into BUILD/deb and leaves SRC as it was; lintian finds no error and no warning (its
# info and pedantic tags are printed); the package holds the expected files (man pages
# compressed, the binary stripped, its debug symbols in portlogd-dbgsym), conffiles,
# the helpers' maintainer scripts and library Depends; the source package holds no
# build tree; unpacked (dpkg -x) its binary runs --version and --check-config on the
# shipped config. tests/pkg/autopkgtest.sh then tests the installed package.
set -eu
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
for t in dpkg-buildpackage dpkg-parsechangelog lintian; do
	command -v $t >/dev/null || { echo "SKIP: no $t (tests/deps.sh: PORTLOGD_DEB_PACKAGES)"; exit 77; }
done
out=$build/deb
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# --- one version: CMake's project(), debian/changelog, the man pages' .TH
cmake_v=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
deb_v=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
[ "$deb_v" = "$cmake_v" ] || [ "${deb_v%-*}" = "$cmake_v" ] ||
	{ echo "FAIL version: debian/changelog says $deb_v, CMakeLists.txt's project() $cmake_v"; fail=1; }
for m in "$src"/config/man/*.[1-9]; do
	grep -q "^\.TH .* \"portlogd $cmake_v\" " "$m" ||
		{ echo "FAIL version: ${m#"$src"/} .TH is not \"portlogd $cmake_v\""; fail=1; }
done

# --- build from a copy; SRC unchanged
state() { git -C "$src" status --porcelain --ignored 2>/dev/null | grep -v '^!! build' || true; }
state >"$tmp/before"
# what dpkg-buildpackage would leave in the parent: portlogd_* and portlogd-dbgsym_*
artifacts() { ls "$src/.." | grep -E '^portlogd(-dbgsym)?_' || true; }
artifacts >"$tmp/parent-before"
sh "$src/tests/pkg/deb-build.sh" "$src" "$out" || exit 1
state >"$tmp/after"
artifacts >"$tmp/parent-after"
cmp -s "$tmp/before" "$tmp/after" && cmp -s "$tmp/parent-before" "$tmp/parent-after" ||
	{ echo "FAIL the build changed the source tree or its parent:"; diff "$tmp/before" "$tmp/after"
	  diff "$tmp/parent-before" "$tmp/parent-after"; fail=1; }
deb=$(ls "$out"/portlogd_*.deb)
dbg=$(ls "$out"/portlogd-dbgsym_*.deb)

# --- lintian: the binary packages (.changes) and the source package (.dsc)
# (not --show-overrides: with it, lintian 2.116 fails on overridden tags too)
lintian --fail-on error,warning --display-info --pedantic \
	"$out"/portlogd_*.changes "$out"/portlogd_*.dsc >"$tmp/lintian" 2>"$tmp/lintian.err" || fail=1
grep -v 'running with root privileges' "$tmp/lintian.err" || true
grep -q '^[EW]: ' "$tmp/lintian" && fail=1
echo "lintian: $(grep -c '^E: ' "$tmp/lintian") errors, $(grep -c '^W: ' "$tmp/lintian") warnings"
sed 's/^/  /' "$tmp/lintian"

# --- the files
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$tmp/files"
for f in /usr/sbin/portlogd /lib/systemd/system/portlogd.service \
	/usr/lib/sysusers.d/portlogd.conf /usr/lib/tmpfiles.d/portlogd.conf \
	/lib/udev/rules.d/60-portlogd.rules /etc/logrotate.d/portlogd /etc/portlogd/portlogd.conf \
	/usr/share/man/man8/portlogd.8.gz /usr/share/man/man5/portlogd.conf.5.gz \
	/usr/share/man/man5/portlogd-log.5.gz /usr/share/man/man7/portlogd-rt.7.gz \
	/usr/bin/portlogd-fleet /usr/share/man/man1/portlogd-fleet.1.gz \
	/usr/share/doc/portlogd/copyright /usr/share/doc/portlogd/changelog.gz \
	/etc/apparmor.d/usr.sbin.portlogd; do
	grep -qx "$f" "$tmp/files" || { echo "FAIL not in the .deb: $f"; fail=1; }
done
dpkg-deb -c "$deb" >"$tmp/list"
grep ' \./usr/sbin/portlogd$' "$tmp/list" | grep -q '^-rwxr-xr-x root/root' ||
	{ echo "FAIL /usr/sbin/portlogd is not root's and 0755"; fail=1; }
dpkg-deb -x "$deb" "$tmp/root"
file "$tmp/root/usr/sbin/portlogd" | grep -q ', stripped' ||
	{ echo "FAIL /usr/sbin/portlogd is not stripped"; fail=1; }
id=$(readelf -n "$tmp/root/usr/sbin/portlogd" | sed -n 's/.*Build ID: *//p')
dpkg-deb -c "$dbg" >"$tmp/dbgsym"
grep -q "/usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug\$" "$tmp/dbgsym" ||
	{ echo "FAIL portlogd-dbgsym has no /usr/lib/debug/.build-id/ file for build id $id"; fail=1; }
grep -q '^License: GPL-2+$' "$tmp/root/usr/share/doc/portlogd/copyright" ||
	{ echo "FAIL the copyright file names no License: GPL-2+"; fail=1; }

# --- conffiles and the maintainer scripts the helpers wrote
dpkg-deb -e "$deb" "$tmp/control"
printf '/etc/apparmor.d/usr.sbin.portlogd\n/etc/logrotate.d/portlogd\n/etc/portlogd/portlogd.conf\n' | cmp -s - "$tmp/control/conffiles" ||
	{ echo "FAIL conffiles:"; cat "$tmp/control/conffiles"; fail=1; }
# has SCRIPT PATTERN WHO: the script holds a line matching PATTERN
has() {
	grep -q -- "$2" "$tmp/control/$1" || { echo "FAIL $1 lacks $3 ($2)"; fail=1; }
}
has preinst 'systemd-sysusers --replace=/usr/lib/sysusers.d/portlogd.conf -' "the preinst's early user"
has preinst '^u portlogd ' "systemd/portlogd.sysusers (debian/rules' #SYSUSERS#)"
has postinst 'systemd-sysusers .* portlogd.conf' dh_installsysusers
has postinst 'systemd-tmpfiles .*--create portlogd.conf' dh_installtmpfiles
has postinst "deb-systemd-helper enable 'portlogd.service'" "dh_installsystemd's enable"
has postinst 'deb-systemd-invoke $_dh_action' "dh_installsystemd's start/restart"
has postinst '--sysname-match=cpu_dma_latency' "debian/portlogd.postinst's udev trigger"
has postinst 'apparmor_parser -r -T -W "$APP_PROFILE"' "dh_apparmor's profile load"
has postinst 'LOCAL_APP_PROFILE="/etc/apparmor.d/local/usr.sbin.portlogd"' "dh_apparmor's local include"
has postrm 'rm -f "/etc/apparmor.d/local/usr.sbin.portlogd"' "dh_apparmor's purge of the local include"
has prerm "deb-systemd-invoke stop 'portlogd.service'" "dh_installsystemd's stop"
# an upgrade is a restart (the postinst's), which keeps the ports open in the file
# descriptor store; a stop in the prerm would empty it (portlogd(8), RESTARTS)
has prerm '"$1" = remove' "dh_installsystemd's stop on removal only"
has postrm "deb-systemd-helper purge 'portlogd.service'" "dh_installsystemd's purge"
has postrm 'rm -rf /var/log/portlogd' "debian/portlogd.postrm's purge of the logs"
for s in preinst postinst prerm postrm; do
	sh -n "$tmp/control/$s" || { echo "FAIL $s: sh -n"; fail=1; }
done
# udev applies the rules to present devices, then sysusers, enable, start (not comments);
# the AppArmor profile is loaded before the start (else the daemon starts unconfined and
# stays so until its next restart)
awk '/^[ \t]*#/ { next } /--sysname-match=cpu_dma_latency/ && !u { u = NR }
	/systemd-sysusers/ && !y { y = NR } /deb-systemd-helper enable/ && !e { e = NR }
	/apparmor_parser -r/ && !a { a = NR }
	/deb-systemd-invoke \$_dh_action/ { s = NR }
	END { exit !(u && u < y && y < e && e < s && a && a < s) }' \
	"$tmp/control/postinst" ||
	{ echo "FAIL postinst: not udev trigger, sysusers, enable, start in this order, the AppArmor profile loaded before the start"; fail=1; }
# the profile as the package ships it parses (apparmor_parser -Q: no kernel needed)
if command -v apparmor_parser >/dev/null; then
	apparmor_parser -Q -K "$tmp/root/etc/apparmor.d/usr.sbin.portlogd" 2>"$tmp/aa.err" ||
		{ echo "FAIL the AppArmor profile does not parse:"; cat "$tmp/aa.err"; fail=1; }
fi
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libserialport0 libieee1284-3 libsystemd0 zlib1g libc6; do
	echo "$depends" | grep -q "$lib" || { echo "FAIL Depends lacks $lib"; fail=1; }
done

# --- the source package: debian/ and the project, no build tree
tar -tf "$out"/portlogd_*.tar.xz >"$tmp/source"
grep -E '^portlogd/(build|obj-)' "$tmp/source" && { echo "FAIL build trees in the source package"; fail=1; }
for f in portlogd/debian/control portlogd/LICENSE portlogd/CMakeLists.txt; do
	grep -qx "$f" "$tmp/source" || { echo "FAIL not in the source package: $f"; fail=1; }
done

# --- the unpacked binary
v=$("$tmp/root/usr/sbin/portlogd" --version)
[ "$v" = "portlogd $cmake_v" ] || { echo "FAIL --version says '$v'"; fail=1; }
"$tmp/root/usr/sbin/portlogd" --check-config -c "$tmp/root/etc/portlogd/portlogd.conf" >"$tmp/check" \
	2>"$tmp/said" || { echo "FAIL --check-config fails on the shipped config"; fail=1; }
# as shipped: no port (nothing is opened until one is written), and it says so
grep -q '^\[logger\]$' "$tmp/check" && ! grep -q '^\[serial ' "$tmp/check" && grep -q 'no port' "$tmp/said" ||
	{ echo "FAIL --check-config printed:"; cat "$tmp/check" "$tmp/said"; fail=1; }
cmp -s "$tmp/root/etc/portlogd/portlogd.conf" "$src/config/portlogd.conf" ||
	{ echo "FAIL the shipped config is not config/portlogd.conf"; fail=1; }
echo "--- dpkg -c $(basename "$deb")"
grep -v '/$' "$tmp/list"
[ $fail -eq 0 ] && echo "deb: version, build, lintian, contents, scripts, source and binary ok"
exit $fail
