#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/pkg/install.sh BUILD - cmake --install into a scratch root (DESTDIR): the expected
# files; sysusers and tmpfiles make the user and log directory there; the installed unit
# passes systemd-analyze verify (with its ExecStart pointed at the installed binary) and
# scores <= 2.0 in systemd-analyze security --offline.
set -eu
build=$1
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
DESTDIR=$root cmake --install "$build" >"$tmp/install.log"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
unitdir=$(sed -n 's/^PORTLOGD_UNITDIR:PATH=//p' "$build/CMakeCache.txt")
fail=0
for f in "$prefix/sbin/portlogd" "$unitdir/portlogd.service" \
	/usr/lib/sysusers.d/portlogd.conf /usr/lib/tmpfiles.d/portlogd.conf \
	/lib/udev/rules.d/60-portlogd.rules "$prefix/share/man/man8/portlogd.8" \
	"$prefix/share/man/man5/portlogd.conf.5" "$prefix/share/man/man5/portlogd-log.5" \
	"$prefix/share/man/man7/portlogd-rt.7" "$prefix/share/man/man1/portlogd-fleet.1" \
	"$prefix/share/doc/portlogd/examples/rsyslog/portlogd-forward.conf" \
	"$prefix/share/doc/portlogd/examples/rsyslog/portlogd-central.conf" \
	"$prefix/share/doc/portlogd/examples/rsyslog/portlogd-central.logrotate" \
	"$prefix/share/doc/portlogd/examples/prometheus/portlogd.rules.yml" \
	"$prefix/share/doc/portlogd/examples/grafana/portlogd.json"; do
	[ -f "$root$f" ] || { echo "not installed: $f"; fail=1; }
done
etc=$([ "$prefix" = /usr ] && echo /etc || echo "$prefix/etc")
for f in "$etc/portlogd/portlogd.conf" "$etc/logrotate.d/portlogd"; do
	[ -f "$root$f" ] || { echo "not installed: $f"; fail=1; }
done
[ -x "$root$prefix/sbin/portlogd" ] || { echo "portlogd is not executable"; fail=1; }
[ -x "$root$prefix/bin/portlogd-fleet" ] || { echo "portlogd-fleet is not installed executable"; fail=1; }
# the rsyslog configs are examples: nothing forwards until a site copies one
[ ! -e "$root/etc/rsyslog.d" ] || { echo "something was installed into /etc/rsyslog.d"; fail=1; }

# an edited config survives a second install
echo "# edited" >>"$root$etc/portlogd/portlogd.conf"
DESTDIR=$root cmake --install "$build" >"$tmp/install2.log"
grep -q "^# edited" "$root$etc/portlogd/portlogd.conf" ||
	{ echo "a second install overwrote the edited config"; fail=1; }

# what postinst runs, in the scratch root: the user, in dialout and lp, and the log directory
mkdir -p "$root/etc"
cp /etc/passwd /etc/group "$root/etc/"
systemd-sysusers --root="$root" portlogd.conf 2>"$tmp/sysusers.log" ||
	{ echo "systemd-sysusers failed:"; cat "$tmp/sysusers.log"; fail=1; }
uid=$(awk -F: '$1 == "portlogd" { print $3 }' "$root/etc/passwd")
gid=$(awk -F: '$1 == "portlogd" { print $3 }' "$root/etc/group")
[ -n "$uid" ] && [ -n "$gid" ] || { echo "sysusers made no user or group portlogd"; fail=1; }
for g in dialout lp; do
	awk -F: -v g=$g '$1 == g && ("," $4 ",") ~ /,portlogd,/ { ok = 1 } END { exit !ok }' \
		"$root/etc/group" || { echo "portlogd is not in group $g"; fail=1; }
done
systemd-tmpfiles --root="$root" --create portlogd.conf ||
	{ echo "systemd-tmpfiles --create failed"; fail=1; }
[ "$(stat -c '%a %u:%g' "$root/var/log/portlogd")" = "750 $uid:$gid" ] ||
	{ echo "/var/log/portlogd: $(stat -c '%a %u:%g' "$root/var/log/portlogd"), not 750 portlogd"; fail=1; }

# the installed unit names the installed binary and config
unit=$root$unitdir/portlogd.service
grep -q "^ExecStart=$prefix/sbin/portlogd -c $etc/portlogd/portlogd.conf\$" "$unit" ||
	{ echo "ExecStart does not name $prefix/sbin/portlogd and $etc/portlogd/portlogd.conf"; fail=1; }

# verify wants ExecStart's binary and the man pages of Documentation= to exist:
# point it at the scratch root (systemd 252's --root= also wants a whole system there)
mkdir "$tmp/verify"
sed "s|$prefix/sbin/portlogd|$root$prefix/sbin/portlogd|g" "$unit" >"$tmp/verify/portlogd.service"
out=$(MANPATH=$root$prefix/share/man systemd-analyze verify "$tmp/verify/portlogd.service" 2>&1) ||
	{ echo "systemd-analyze verify failed:"; echo "$out"; fail=1; }
# it only warns about unknown keys and bad values: any output is a failure
[ -z "$out" ] || { echo "systemd-analyze verify says:"; echo "$out"; fail=1; }

sec=$(systemd-analyze security --offline=true --no-pager "$unit" 2>&1 | tail -1)
echo "$sec"
score=$(echo "$sec" | sed -n 's/.*Overall exposure level for portlogd.service: \([0-9.]*\).*/\1/p')
[ -n "$score" ] || { echo "no exposure score"; fail=1; }
[ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' ||
	{ echo "exposure $score is above 2.0"; fail=1; }
[ $fail -eq 0 ] && echo "install: files, verify and exposure $score ok"
exit $fail
