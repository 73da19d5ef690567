#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/vm/run.sh BUILD SRC - end to end in a real Linux guest: a Debian bookworm made by
# debootstrap, booted by QEMU with systemd as PID 1, where the guest installs the
# project's Debian package with dpkg (the service enabled and started by its postinst);
# a real 16550A UART (ttyS1) whose other end is a socket here, a real parallel port
# (parport0). The host plays packets into ttyS1, has the guest rotate the log with the
# shipped logrotate file, SIGSTOPs the daemon to see the watchdog restart it; then the
# guest upgrades the package (a second .deb with a higher version), removes and purges
# it; the host checks what the guest collected (vm_check). Phases are timed and printed.
#
# Needs root (debootstrap, chroot), qemu-system-x86_64, debootstrap, mkfs.ext4, debugfs.
# KVM when /dev/kvm can be used, TCG otherwise. Exit 77 only when a tool is missing or
# QEMU cannot run at all; any failed check exits 1 and says which.
#
# Environment:
#   PORTLOGD_VM_DEB=FILE    the package to test (tests/check.sh passes the one tests/deb.sh
#                           built); without it, tests/deb-build.sh builds one from SRC
#   PORTLOGD_VM_KERNEL=PKG  the guest's kernel package (default linux-image-amd64)
#   PORTLOGD_VM_CACHE=DIR   keep the debootstrapped rootfs in DIR and reuse it while its
#                           package list is unchanged (development; CI builds it anew)
#   PORTLOGD_VM_REQUIRE=1   a skip (a tool missing, QEMU unable to start) fails instead
#                           (tests/check.sh: CI installs the tools, so a skip is a fault)
#   PORTLOGD_VM_PACKETS=N   packets played before the watchdog (default 3000)
#   PORTLOGD_VM_BREAK=unit|ready  break the service on purpose, to see the test fail:
#                           unit: a drop-in with PrivateDevices=yes (hides /dev/ttyS1);
#                           ready: the daemon runs without NOTIFY_SOCKET (never READY=1)
#   PORTLOGD_VM_KEEP=1      keep the work directory (it is printed)
#   PORTLOGD_VM_MIRROR=URL  the Debian mirror (default: the host's apt sources)
set -eu
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
packets=${PORTLOGD_VM_PACKETS:-3000}
seed=${PORTLOGD_SEED:-$(date +%s)}
kernel_pkg=${PORTLOGD_VM_KERNEL:-linux-image-amd64}
# the guest's packages (the daemon's libraries: dpkg -i in the guest resolves nothing);
# the cache is reused only while this list is the same
include=systemd,systemd-sysv,udev,kmod,$kernel_pkg,libieee1284-3,libserialport0,libinih1,libsystemd0,procps,util-linux,logrotate

skip() {
	[ "${PORTLOGD_VM_REQUIRE:-0}" = 1 ] && { echo "FAIL (PORTLOGD_VM_REQUIRE=1): $*"; exit 1; }
	echo "SKIP: $*"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "not root (debootstrap and chroot need root)"
for t in qemu-system-x86_64 debootstrap mkfs.ext4 debugfs dpkg-deb chroot mkfifo; do
	command -v $t >/dev/null || skip "no $t (tests/deps.sh: PORTLOGD_VM_PACKAGES)"
done
[ -x "$build/tests/vm_check" ] && [ -x "$build/tests/portlogd-sim" ] ||
	{ echo "build $build first (vm_check, portlogd-sim)"; exit 1; }
if [ -n "${PORTLOGD_VM_DEB:-}" ]; then
	[ -f "$PORTLOGD_VM_DEB" ] || { echo "PORTLOGD_VM_DEB=$PORTLOGD_VM_DEB: no such file"; exit 1; }
else
	command -v dpkg-buildpackage >/dev/null ||
		skip "no dpkg-buildpackage to build the package (tests/deps.sh: PORTLOGD_DEB_PACKAGES)"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/portlogd-vm-XXXXXX")
qpid= simpid=
cleanup() {
	[ -n "$simpid" ] && kill "$simpid" 2>/dev/null
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
	if [ "${PORTLOGD_VM_KEEP:-0}" = 1 ]; then
		echo "kept $work"
	elif [ "$1" != 0 ] && [ "$1" != 77 ] && [ -d "$work/vmtest" ]; then
		# a failure: keep what the guest collected, the packets sent and the console
		rm -rf "$work/rootfs" "$work/rootfs.img" "$work/vmlinuz" "$work/initrd" "$work/deb" \
			"$work/upgrade" "$work/portlogd-upgrade.deb"
		echo "kept what the guest collected in $work"
	else
		rm -rf "$work"
	fi
}
trap 'cleanup $?' EXIT
root=$work/rootfs

t_all=$(date +%s.%N)
t_phase=$t_all
timings=""
phase() { # phase NAME: ends the phase that ran since the last call
	local t
	t=$(date +%s.%N)
	timings="$timings $1=$(echo "$t_phase $t" | awk '{ printf "%.1f", $2 - $1 }')s"
	echo "=== phase $1: $(echo "$t_phase $t" | awk '{ printf "%.1f", $2 - $1 }') s"
	t_phase=$t
}
fail() {
	echo "FAIL $*"
	[ -f "$work/console.log" ] && { echo "--- console (last 40 lines)"; tail -40 "$work/console.log"; }
	exit 1
}

# --- deb: the project's package, as a user gets it, and an upgrade of it: the same
# package with a higher version (dpkg's upgrade path and the maintainer scripts are
# what is tested; rebuilding the same files would only cost time)
if [ -n "${PORTLOGD_VM_DEB:-}" ]; then
	deb=$(cd "$(dirname "$PORTLOGD_VM_DEB")" && pwd)/$(basename "$PORTLOGD_VM_DEB")
else
	sh "$src/tests/deb-build.sh" "$src" "$work/deb" || fail "deb: tests/deb-build.sh failed"
	deb=$(ls "$work"/deb/portlogd_*.deb)
fi
version=$(dpkg-deb -f "$deb" Version)
dpkg-deb -R "$deb" "$work/upgrade"
sed -i "s/^Version: .*/Version: $version+vmtest1/" "$work/upgrade/DEBIAN/control"
dpkg-deb -b "$work/upgrade" "$work/portlogd-upgrade.deb" >/dev/null
rm -rf "$work/upgrade"
echo "package $(basename "$deb"), upgrade $(dpkg-deb -f "$work/portlogd-upgrade.deb" Version)"
phase deb

# --- debootstrap: a minimal bookworm with a kernel and the daemon's libraries
mirror=${PORTLOGD_VM_MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null |
	grep -v security | head -1)}
mirror=${mirror:-http://deb.debian.org/debian}
cache=${PORTLOGD_VM_CACHE:-}
if [ -n "$cache" ] && [ -f "$cache/stamp" ] && [ "$(cat "$cache/stamp")" = "$include" ]; then
	cp -a "$cache/rootfs" "$root"
	echo "rootfs from the cache $cache"
else
	debootstrap --variant=minbase --include="$include" bookworm "$root" "$mirror" \
		>"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; fail "debootstrap failed"; }
	rm -f "$root"/var/cache/apt/archives/*.deb
	if [ -n "$cache" ]; then
		rm -rf "$cache" && mkdir -p "$cache" && cp -a "$root" "$cache/rootfs" &&
			echo "$include" >"$cache/stamp"
	fi
fi
phase debootstrap

# --- install: the packages and the test's config into the tree; the guest installs them
# under systemd (guest.sh), so that the postinst's enable and start are what a user gets
: >"$root/etc/fstab"
: >"$root/etc/machine-id"
chroot "$root" passwd -d root >/dev/null
echo vmtest >"$root/etc/hostname"
pkg=$root/var/tmp/vmtest-pkg
mkdir -p "$pkg"
cp "$deb" "$pkg/portlogd.deb"
cp "$work/portlogd-upgrade.deb" "$pkg/portlogd-upgrade.deb"
echo ppdev >"$root/etc/modules-load.d/portlogd-vmtest.conf"
# only the test's rotation, not logrotate.timer's
ln -sf /dev/null "$root/etc/systemd/system/logrotate.timer"
cat >"$pkg/portlogd.conf" <<'CONF'
# written by tests/vm/run.sh
[logger]
log_file = /var/log/portlogd/portlogd.log
flush_interval_ms = 100
stat_interval_s = 10
flusher_priority = 10

[timer]
period_us = 1000
priority = 90

# the guest's real 16550A; its other end is a socket on the host
[serial line1]
device = /dev/ttyS1
baud = 115200
format = 8N1
gap_us = 3000
delimiter = none
max_packet = 4096
priority = 70

[parallel lpt0]
driver = ieee1284
device = parport0
read = status
mask = 0xff
priority = 80
CONF
install -m 0755 "$src/tests/vm/guest.sh" "$root/usr/local/sbin/portlogd-vmtest"
cat >"$root/etc/systemd/system/portlogd-vmtest.service" <<'UNIT'
[Unit]
Description=portlogd VM test: obeys the host on ttyS2
[Service]
Type=simple
ExecStart=/usr/local/sbin/portlogd-vmtest
[Install]
WantedBy=multi-user.target
UNIT
# a break goes in as a drop-in after the package's install check (guest.sh)
case ${PORTLOGD_VM_BREAK:-} in
'') ;;
unit)
	printf '[Service]\nPrivateDevices=yes\n' >"$pkg/break.conf"
	echo "BREAK: PrivateDevices=yes in a drop-in" ;;
ready)
	printf '[Service]\nExecStart=\nExecStart=/usr/bin/env -u NOTIFY_SOCKET /usr/sbin/portlogd -c /etc/portlogd/portlogd.conf\n' \
		>"$pkg/break.conf"
	echo "BREAK: the daemon runs without NOTIFY_SOCKET" ;;
*) echo "unknown PORTLOGD_VM_BREAK=$PORTLOGD_VM_BREAK"; exit 2 ;;
esac
systemctl --root="$root" enable portlogd-vmtest.service
phase install

# --- image: an ext4 file system made from the tree
size=$(du -sm "$root" | cut -f1)
truncate -s $((size + 700))M "$work/rootfs.img"
mkfs.ext4 -q -F -L root -d "$root" "$work/rootfs.img" || fail "image: mkfs.ext4 -d failed"
kernel=$(ls "$root"/boot/vmlinuz-* | head -1)
initrd=$(ls "$root"/boot/initrd.img-* | head -1)
cp "$kernel" "$work/vmlinuz" && cp "$initrd" "$work/initrd"
rm -rf "$root"
phase image

# --- boot: ttyS0 console (a file), ttyS1 data (a socket), ttyS2 control (two fifos), lpt
mkfifo "$work/ctl.in" "$work/ctl.out"
exec 4<>"$work/ctl.out"
# start_qemu ACCEL CPU: boots the image in the background
start_qemu() {
	: >"$work/console.log"
	qemu-system-x86_64 -machine pc,accel=$1 -cpu "$2" -smp 2 -m 768M \
		-kernel "$work/vmlinuz" -initrd "$work/initrd" \
		-append "console=ttyS0,115200 root=/dev/vda rw fsck.mode=skip loglevel=4" \
		-drive file="$work/rootfs.img",format=raw,if=virtio,cache=unsafe \
		-display none -no-reboot -monitor none -nic none \
		-serial file:"$work/console.log" \
		-chardev socket,id=ser1,path="$work/ser1.sock",server=on,wait=off -serial chardev:ser1 \
		-chardev pipe,id=ctl,path="$work/ctl" -serial chardev:ctl \
		-chardev file,id=lpt0,path="$work/lpt.out" -parallel chardev:lpt0 \
		>"$work/qemu.log" 2>&1 &
	qpid=$!
	accel=$1
}
# KVM when /dev/kvm opens and a guest kernel really runs under it (a nested KVM may
# answer the API yet fail on an MSR, or never get the kernel going): it must print
# "Linux version" within 20 s; otherwise TCG
accel=
if [ -c /dev/kvm ] && { exec 5<>/dev/kvm; } 2>/dev/null; then
	exec 5>&-
	# no arch-capabilities: a nested KVM refuses that MSR
	start_qemu kvm max,-arch-capabilities
	i=0
	until grep -q 'Linux version' "$work/console.log" || [ $i -ge 100 ] || ! kill -0 $qpid 2>/dev/null; do
		sleep 0.2
		i=$((i + 1))
	done
	if ! grep -q 'Linux version' "$work/console.log"; then
		echo "KVM: no kernel output after $((i / 5)) s ($(head -c 300 "$work/qemu.log" | tr '\n' ' ')); using TCG"
		kill $qpid 2>/dev/null; wait $qpid 2>/dev/null || true
		accel=
	fi
else
	echo "no usable /dev/kvm: TCG"
fi
[ -n "$accel" ] || start_qemu tcg max
echo "qemu pid $qpid, accel=$accel"

# expect PATTERN SECONDS: the next control line matching PATTERN (others are printed).
# Patterns start at "TEST": the guest's ttyS2 once lost a line's first bytes.
reply=
expect() {
	local end=$((SECONDS + $2)) line
	while [ $SECONDS -lt $end ]; do
		if read -r -t 1 line <&4; then
			line=${line%$'\r'}
			echo "guest: $line"
			case $line in $1) reply=$line; return 0 ;; *"TEST NOTREADY"*) reply=$line; return 1 ;; esac
		elif ! kill -0 "$qpid" 2>/dev/null; then
			cat "$work/qemu.log"
			return 2
		fi
	done
	return 1
}
send() { echo "host: $1"; printf '%s\n' "$1" >"$work/ctl.in"; }

boot_limit=$([ "$accel" = tcg ] && echo 400 || echo 200)
rc=0
expect "*TEST READY*" "$boot_limit" || rc=$?
if [ $rc != 0 ]; then
	# QEMU gone without a word from the guest: it cannot run here
	[ $rc = 2 ] && ! grep -q . "$work/console.log" && skip "QEMU cannot run here"
	if [ -n "$reply" ]; then
		# the guest saw the service fail: wait for its power-off, then report what it saw
		wait "$qpid" 2>/dev/null || true
		qpid=
		debugfs -R "rdump /var/tmp/vmtest $work" "$work/rootfs.img" >/dev/null 2>&1 || true
		echo "--- the package's install"; cat "$work/vmtest/pkg-install.txt" 2>/dev/null || true
		echo "--- systemctl show portlogd"; cat "$work/vmtest/show.txt" 2>/dev/null || true
		echo "--- journal of portlogd (last 15 lines, without --check-config's printout)"
		grep -Ev 'portlogd\[[0-9]+\]: ([a-z_0-9]+ = |\[|# )' "$work/vmtest/journal.txt" 2>/dev/null |
			tail -15 || true
		fail "check service-active: portlogd did not become active within 120 s of the guest test" \
			"starting (${reply#*TEST NOTREADY }): no READY=1 from the daemon, or it failed"
	fi
	fail "boot: no VMTEST READY from the guest within $boot_limit s"
fi
phase boot

# --- traffic: packets into ttyS1 at most as fast as 115200 baud allows, fragmented,
# 8-12 ms apart (the guest's gap_us is 3 ms); the log rotated in the middle
sim() { # sim N OUTFILE SEED
	timeout $(($1 / 50 + 60)) "$build/tests/portlogd-sim" --connect line1="$work/ser1.sock" -n "$1" -l 1-64 -F 3 \
		-i 300 -g 8000-12000 -G 3000 -b 115200 -s "$3" -o "$2" >>"$work/sim.log" 2>&1
}
echo "seed $seed, $packets packets"
sim "$packets" "$work/sent1.txt" "$seed" &
simpid=$!
sleep $((packets / 250 + 1))       # about a third of the way
send ROTATE
expect "*TEST ROTATE*" 60 || fail "traffic: no answer to ROTATE"
case $reply in *"TEST ROTATE rc=0 "*) ;; *) fail "check rotate: logrotate -f in the guest: $reply" ;; esac
# a failed or stuck simulator (nobody reads ttyS1 in the guest) is reported, and the
# checks still run on what the guest has
simfail=0
wait "$simpid" || { cat "$work/sim.log"; echo "traffic: portlogd-sim failed or timed out"; simfail=1; }
simpid=
echo "sent $(wc -l <"$work/sent1.txt") packets"
sleep 1                            # the flusher writes every 100 ms
phase traffic

# --- collect: the running service's state; the watchdog; more packets to the new daemon
send COLLECT
expect "*TEST COLLECT*" 120 || fail "collect: no answer to COLLECT"
send WATCHDOG
expect "*TEST WATCHDOG*" 120 || fail "collect: no answer to WATCHDOG"
sim 200 "$work/sent2.txt" $((seed + 1)) ||
	{ cat "$work/sim.log"; echo "traffic: portlogd-sim (after the restart) failed"; simfail=1; }
sleep 1
send DONE
expect "*TEST DONE" 120 || fail "collect: no answer to DONE"
phase collect

# --- package: the user re-enables and starts the service, then upgrade, remove, purge
send PACKAGE
expect "*TEST PACKAGE*" 300 || fail "package: no answer to PACKAGE"
end=$((SECONDS + 120))
while kill -0 "$qpid" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
kill -0 "$qpid" 2>/dev/null && fail "package: the guest did not power off within 120 s"
wait "$qpid" || true
qpid=
debugfs -R "rdump /var/tmp/vmtest $work" "$work/rootfs.img" >"$work/debugfs.log" 2>&1
[ -f "$work/vmtest/show.txt" ] || { cat "$work/debugfs.log"; fail "collect: nothing read from the image"; }
phase package

# --- checks
echo "--- collected in the guest"
for f in virt uname pkg-install show ps user status_reg watchdog show-after pkg; do
	echo "[$f]"; cat "$work/vmtest/$f.txt"; echo
done
grep -i 'overall exposure' "$work/vmtest/security.txt" || true
echo "---"
rc=0
# the watchdog: systemd kills the stopped daemon WatchdogSec after its last WATCHDOG=1,
# then RestartSec=2s, then the start up to READY=1 (seconds under TCG):
# WatchdogSec + 15 s
"$build/tests/vm_check" --dir "$work/vmtest" --sent "$work/sent1.txt" --sent "$work/sent2.txt" \
	--gap-us 3000 --prio plog-timer=90 --prio plog-lpt0=80 --prio plog-line1=70 \
	--prio plog-flush=10 --user portlogd --groups dialout,lp --max-exposure 2.0 \
	--watchdog-margin 15 || rc=1
phase checks
echo "timings:$timings total=$(echo "$t_all $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')s"
[ $simfail = 0 ] || { echo "FAIL traffic: portlogd-sim could not play every packet into ttyS1"; rc=1; }
[ $rc = 0 ] || { echo "--- journal (last 20 lines)"; tail -20 "$work/vmtest/journal.txt"; fail "see the checks above"; }
echo "vm: all checks passed"
