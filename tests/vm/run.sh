#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/vm/run.sh BUILD SRC - end to end in a real Linux guest: a Debian bookworm made by
# debootstrap, booted by QEMU with systemd as PID 1, where the guest installs the
# project's Debian package with dpkg (the service enabled and started by its postinst);
# a real 16550A UART (ttyS1) whose other end is a socket here, a real parallel port
# (parport0). Then each boot runs a list of scenarios, in order, each a function scn_NAME
# here and commands to the guest (guest.sh), timed as a phase of its own; what the guest
# collected is read from the image after its power-off and checked (chk_NAME, vm_check,
# vm_wire). The standard list (the first kernel): traffic (the host plays packets into
# ttyS1, the guest rotates the log with the shipped logrotate file, the running service's
# state is collected), watchdog (SIGSTOP: the watchdog restarts the daemon; more packets),
# wire, pci4x and usb (issue 21: below), pause (issue 29), restarts (issue 22: every kind
# of restart under traffic), package (the guest upgrades the package to a second .deb
# with a higher version, removes and purges it; powers off); the others' boots (the
# real-time kernel): traffic, rtload (issue 29), usbplug and powercut (below), the last
# two depending on no kernel feature and so sharing a boot that has room for them.
#
# One debootstrap holds every kernel of PORTLOGD_VM_KERNEL (Debian's standard one and its
# PREEMPT_RT one, linux-image-rt-amd64); each boots its own image made from that tree
# (QEMU's -kernel/-initrd choose the kernel), so every run starts from the same fresh
# guest. What depends on the kernel is checked on each: the install under systemd, the
# traffic and the rotation, the threads and the ports' interrupt threads (irq_priority),
# --check-system, the ADC strobe's pulses counted on the host (in a boot without the
# watchdog, whose SIGKILL leaves the killed daemon's last samples uncounted), a clean stop.
#
# The scenarios (PORTLOGD_VM_ONLY names some; each adds to QEMU only the devices it needs):
#   wire     issue 21's trials on the real 8250 driver: the daemon's default config
#            (gap_us = auto, rx_trigger = auto) on ttyS1, run by the guest as each of
#            PORTLOGD_VM_WIRE_USERS at each BAUD:TRIG of PORTLOGD_VM_WIRE, then as root
#            with rx_trigger = keep at each BAUD:TRIG of PORTLOGD_VM_WIRE_KEEP; the host
#            paces PORTLOGD_VM_WIRE_PACKETS packets of 5 and 20 bytes in turn at the baud
#            (portlogd-sim --pace), 15-25 character times apart. Checked (chk_trials):
#            every byte logged once, in order; no wrong boundary without its EV
#            late-delivery mark (of the packets the host handed over cleanly at the gap
#            EV open states); at 2400 baud and below the short-minus-long first-byte
#            bias within a character; EV open's delivery= rx_trigger= rx_trigger_found=
#            and the trigger level back after the stop (chk_open); a table of the figures
#   pci4x    the same on QEMU's pci-serial-4x (four 16550As on one PCI interrupt, the
#            guest's ttyS4..7, 8250.nr_uarts=8), all four at once, 9600 baud, as root
#            and as nobody
#   pci16    issue 31: the same on four pci-serial-4x cards (sixteen 16550As, a card's four
#            on one PCI interrupt, the cards sharing the PIIX's lines; the guest's
#            ttyS4..19, 8250.nr_uarts=20), all sixteen at once, 2400 baud (together what
#            pci4x's four carry at 9600: at 9600 each, QEMU under TCG, which serves every
#            socket from its one main loop, fell seconds behind and left no packet clean),
#            as root: every byte once, no unmarked wrong boundary on any; the interrupts
#            shared (fewer lines than ports) (chk_pci16)
#   usb      the same on QEMU's usb-serial (an FTDI FT232BM behind qemu-xhci, the guest's
#            ftdi_sio, opened by its /dev/serial/by-id/ link) at 115200, as root
#            (EV open: delivery=usb usb=ftdi_sio hold_us=)
#   calibrate issue 30: portlogd --calibrate in the guest through a loopback the host
#            makes (vm_echo: what the port sends comes back, a byte a character time after
#            the one before): ttyS1 at receive trigger 1, 8 and 14 and QEMU's usb-serial,
#            at 9600 baud (PORTLOGD_VM_CALIBRATE_BAUD). Checked against what the devices do:
#            QEMU's 16550A hands over at its trigger or after 4 quiet characters (fifo:8,
#            fifo:14; trigger 1: direct); its usb-serial answers each of the host's polls
#            with what it holds (no timer): every byte alone, a line of usb:MS under 1.5
#            characters, or none; every burst came back whole
#   pause    issue 29: a wire trial on ttyS1 and pci4x's four UARTs at once (9600, root),
#            the whole guest stopped PORTLOGD_VM_PAUSES times (10) through QEMU's monitor
#            (QMP stop, cont 20-200 ms later) while the host paces on (--hold 0: the bytes
#            wait in the sockets and come back to back; the guest's clock stands still).
#            The wire's checks, the packets the pauses made late judged too (vm_wire
#            --pauses), and on each port a wrong boundary marked (--want-marked: else the
#            pauses decided nothing)
#   vcpustop issue 29: ttyS1 at 9600 as root while the host stops the guest's second vCPU
#            alone (its thread by itself on host CPU 1 beside portlogd-stall's SCHED_FIFO
#            99 loop there, 30-200 ms at a time, PORTLOGD_VM_VCPUSTOP_S seconds: 12), the
#            UART's interrupt taken on that vCPU (IRQCPU), the daemon free on both: a
#            reader on the other finds the kernel empty at a packet's deadline while a
#            byte waits there for its interrupt; --hold 0 as pause (the UART's FIFO full,
#            the bytes wait in the socket: the packets the stops made late judged too,
#            vm_wire --pauses with the stops as portlogd-stall --log made them). The
#            wire's checks, a wrong boundary marked (--want-marked), ten stops or more
#            made. Skipped when
#            one host thread runs every vCPU (no MTTCG) or the host has one CPU
#   rtload   issue 29: ttyS1 at 9600 as root, quiet, then under a SCHED_FIFO 50 busy loop
#            on every guest CPU at once (RTLOAD: PORTLOGD_VM_RTLOAD bursts of 30-200 ms,
#            12), below the readers and sensors: the tty worker starves (seed 001). The
#            wire's checks, a wrong boundary marked and the sensors' tty probe late at
#            least once under the load. Every trial's STAT sensor figures (tty_probes,
#            tty_stalls, tty_p50/p99/max_us, stalls) make the run's closing tty table
#   usbplug  issue 22: the adapter, a port of the service (usb0, its by-id link), unplugged
#            and plugged in again through QEMU's monitor (device_del, device_add)
#            PORTLOGD_VM_USBPLUG times (20; 5 in the standard list), traffic paced at
#            9600 while it is plugged in: every byte sent logged, EV close and EV open
#            each time, ttyUSB0 and its link
#            gone and back, the udev rule's latency_timer on each new device, the
#            service's descriptors and threads at the end as at the start, no restart
# * restarts issue 22's table: the test's config at 9600 on ttyS1 under the service, bytes
#            paced in continuously while the service is restarted in each way of
#            PORTLOGD_VM_RESTARTS (restart reload upgrade watchdog kill9 stopstart); one
#            window of traffic each; vm_wire --windows counts each window's bytes sent,
#            logged, lost and held (kept open across the restart, marked)
# * powercut QEMU SIGKILLed while the daemon writes (traffic paced at 9600), the disk
#            with cache=writeback so that the guest's flushes reach the image; the image
#            booted again (the kernel replays ext4's journal; e2fsck -fn on the host after
#            the power-off), PORTLOGD_VM_POWERCUTS times (3; 2 in the standard list) at
#            random moments; the log is checked for torn lines, and each cut's loss
#            against sync_interval_ms
#   apparmor issue 32: the package's AppArmor profile (loaded in enforce mode by its
#            postinst; Debian's kernel has AppArmor on): the service ran confined
#            (/proc/PID/attr/current, --check-system's apparmor row), the kernel log holds
#            no DENIED line of portlogd's after every scenario before it; then what the
#            profile must deny is denied, with its DENIED line (a shell executed, /etc/shadow
#            read, a log outside /var/log/portlogd), and --export of the log still works.
#            Last before package (which removes the profile): the scenarios before it are
#            the ones whose denials it counts. The trials' logs in /var/tmp/vmtest are let
#            through by the profile's local include, as a site would (run.sh writes it)
# The guest side of each is a command of guest.sh (TRIAL/TRIALEND, USBDEV, RESTARTS/
# RESTART, SERVICE, COPYLOG, RTLOAD); a new scenario is a scn_NAME function (and a chk_NAME
# for what it checks after the power-off) and, if it needs one, a guest command.
#
# Needs root (debootstrap, chroot), qemu-system-x86_64, debootstrap, mkfs.ext4, debugfs;
# socat for usbplug and pause (QEMU's monitor). KVM when /dev/kvm can be used, TCG otherwise. Exit
# 77 only when a tool is missing or QEMU cannot run at all; any failed check exits 1 and
# says which.
#
# Environment:
#   PORTLOGD_VM_DEB=FILE    the package to test (tests/check.sh passes the one tests/pkg/deb.sh
#                           built); without it, tests/pkg/deb-build.sh builds one from SRC
#   PORTLOGD_VM_KERNEL="PKG..."  the guest's kernel packages, each booted in turn, the first
#                           with the standard list (default "linux-image-amd64
#                           linux-image-rt-amd64")
#   PORTLOGD_VM_ONLY=NAME[,NAME...]  the scenarios of every boot, in this order, instead
#                           of the standard lists (package powers the guest off: last).
#                           Quick: PORTLOGD_VM_ONLY=wire PORTLOGD_VM_WIRE=9600:8
#                           PORTLOGD_VM_WIRE_USERS=root PORTLOGD_VM_WIRE_KEEP=
#                           PORTLOGD_VM_KERNEL=linux-image-amd64 (with PORTLOGD_VM_ACCEL,
#                           PORTLOGD_VM_CACHE and PORTLOGD_VM_DEB: about 2 minutes)
#   PORTLOGD_VM_CACHE=DIR   keep the debootstrapped rootfs in DIR and reuse it for a week
#                           while it holds every package listed below (tests/check.sh:
#                           /var/cache/portlogd-vm; older, it is made anew from the archive,
#                           so that a week's updates reach the guest)
#   PORTLOGD_VM_REQUIRE=1   a skip (a tool missing, QEMU unable to start) fails instead
#                           (tests/check.sh: CI installs the tools, so a skip is a fault)
#   PORTLOGD_VM_PACKETS=N   packets played by traffic (default 3000)
#   PORTLOGD_VM_WIRE="BAUD:TRIG ..."  wire's runs with the default config (default
#                           "2400:8 9600:8"); TRIG: rx_trig_bytes set first (8: Linux's
#                           level for a 16550A, which a daemon killed by the watchdog
#                           leaves at 1), - leaves it
#   PORTLOGD_VM_WIRE_USERS="USER ..."  whom those run the daemon as (default "root service
#                           nobody"): root; service: the installed unit as it is (its user
#                           portlogd, its sandbox, the udev rule's rx_trig_bytes); another
#                           user (nobody): in group dialout with the unit's capabilities
#                           (CAP_SYS_NICE, CAP_IPC_LOCK), unable to write sysfs
#   PORTLOGD_VM_WIRE_KEEP="BAUD:TRIG ..."  wire's runs as root with rx_trigger = keep
#                           (default "2400:4 2400:14 9600:4 9600:14"; empty: none)
#   PORTLOGD_VM_WIRE_PACKETS=N  packets of each wire, pci4x and usb run (default 120)
#   PORTLOGD_VM_RESTARTS="KIND ..."  restarts' kinds (default "restart reload upgrade
#                           watchdog kill9 stopstart")
#   PORTLOGD_VM_USBPLUG=N   usbplug's cycles (default 20 with PORTLOGD_VM_ONLY, 5 in the
#                           standard list, to keep CI's guest stage short: 12 s a cycle)
#   PORTLOGD_VM_POWERCUTS=N powercut's cuts (default 3 with PORTLOGD_VM_ONLY, 2 in the
#                           standard list: a boot each)
#   PORTLOGD_VM_PAUSES=N    pause's pauses (default 10, the fewest it accepts)
#   PORTLOGD_VM_RTLOAD=N    rtload's bursts (default 12)
#   PORTLOGD_VM_VCPUSTOP_S=N  vcpustop's seconds of stops (default 12)
#   PORTLOGD_VM_DISK=unsafe|writeback  QEMU's cache mode for the image (default unsafe,
#                           writeback when powercut runs)
#   PORTLOGD_VM_BREAK=unit|ready|irq|strobe[,...]  break the service on purpose, to see
#                           the test fail:
#                           unit: a drop-in with PrivateDevices=yes (hides /dev/ttyS1);
#                           ready: the daemon runs without NOTIFY_SOCKET (never READY=1);
#                           irq: irq_priority = off (the interrupt thread stays at 50,
#                           nothing said); strobe: strobe_level = high (the pin's rest
#                           level at open is a pulse to QEMU: one byte more than samples)
#   PORTLOGD_VM_ACCEL=tcg|kvm  no probe for KVM (it costs 10 s where /dev/kvm opens but
#                           runs no guest)
#   PORTLOGD_VM_KEEP=1      keep the work directory (it is printed)
#   PORTLOGD_VM_MIRROR=URL  the Debian mirror (default: the host's apt sources)
set -eu
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
packets=${PORTLOGD_VM_PACKETS:-3000}
seed=${PORTLOGD_SEED:-$(date +%s)}
kernel_pkgs=$(echo ${PORTLOGD_VM_KERNEL:-linux-image-amd64 linux-image-rt-amd64} | tr ',' ' ')
# usbplug's cycles and powercut's cuts: the issue's proof when asked for alone, fewer in
# the standard list
usbplug_n=${PORTLOGD_VM_USBPLUG:-$([ -n "${PORTLOGD_VM_ONLY:-}" ] && echo 20 || echo 5)}
powercut_n=${PORTLOGD_VM_POWERCUTS:-$([ -n "${PORTLOGD_VM_ONLY:-}" ] && echo 3 || echo 2)}
# the scenarios of the first kernel's boot and of the others'
first_list=$(echo ${PORTLOGD_VM_ONLY:-traffic watchdog wire pci4x pci16 usb calibrate pause vcpustop restarts apparmor package} | tr ',' ' ')
other_list=$(echo ${PORTLOGD_VM_ONLY:-traffic rtload usbplug powercut} | tr ',' ' ')
# the guest's packages (the daemon's libraries: dpkg -i in the guest resolves nothing);
# the cache is reused only while it holds all of this list
# apparmor: its parser loads the package's profile (the postinst), apparmor.service at boot
include=systemd,systemd-sysv,udev,kmod,$(echo $kernel_pkgs | tr ' ' ','),libieee1284-3,libserialport0,libinih1,libsystemd0,procps,util-linux,logrotate,apparmor

skip() {
	[ "${PORTLOGD_VM_REQUIRE:-0}" = 1 ] && { echo "FAIL (PORTLOGD_VM_REQUIRE=1): $*"; exit 1; }
	echo "SKIP: $*"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "not root (debootstrap and chroot need root)"
# has LIST NAME: the scenario list holds NAME
has() { case " $1 " in *" $2 "*) return 0 ;; esac; return 1; }
scenarios="traffic watchdog package wire pci4x pci16 usb calibrate pause vcpustop rtload usbplug restarts powercut apparmor"
for n in $first_list $other_list; do
	has "$scenarios" "$n" || { echo "PORTLOGD_VM_ONLY: no scenario $n (there are: $scenarios)"; exit 2; }
done
tools="qemu-system-x86_64 debootstrap mkfs.ext4 debugfs dpkg-deb chroot mkfifo"
{ has "$first_list $other_list" usbplug || has "$first_list $other_list" pause ||
	has "$first_list $other_list" vcpustop; } && tools="$tools socat"
! has "$first_list $other_list" vcpustop || tools="$tools python3 taskset"
for t in $tools; do
	command -v $t >/dev/null || skip "no $t (tests/deps.sh: PORTLOGD_VM_PACKAGES)"
done
[ -x "$build/tests/vm_check" ] && [ -x "$build/tests/vm_wire" ] && [ -x "$build/tests/portlogd-sim" ] && [ -x "$build/tests/vm_echo" ] ||
	{ echo "build $build first (vm_check, vm_wire, vm_echo, portlogd-sim)"; exit 1; }
if [ -n "${PORTLOGD_VM_DEB:-}" ]; then
	[ -f "$PORTLOGD_VM_DEB" ] || { echo "PORTLOGD_VM_DEB=$PORTLOGD_VM_DEB: no such file"; exit 1; }
else
	command -v dpkg-buildpackage >/dev/null ||
		skip "no dpkg-buildpackage to build the package (tests/deps.sh: PORTLOGD_DEB_PACKAGES)"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/portlogd-vm-XXXXXX")
qpid= simpid=
cleanup() {
	[ -z "$simpid" ] || kill "$simpid" 2>/dev/null || true
	if [ -n "$qpid" ] && kill "$qpid" 2>/dev/null; then wait "$qpid" 2>/dev/null || true; fi
	if [ "${PORTLOGD_VM_KEEP:-0}" = 1 ]; then
		echo "kept $work"
	elif [ "$1" != 0 ] && [ "$1" != 77 ] && ls -d "$work"/*/vmtest >/dev/null 2>&1; then
		# a failure: keep what the guest collected, the packets sent and the console
		rm -rf "$work/rootfs" "$work/deb" "$work/upgrade" "$work"/portlogd-upgrade?.deb \
			"$work"/*/rootfs.img "$work"/*/vmlinuz "$work"/*/initrd
		echo "kept what the guest collected in $work"
	else
		rm -rf "$work"
	fi
}
trap 'cleanup $?' EXIT
root=$work/rootfs
run=$work                          # the directory of the kernel being booted (below)

t_all=$(date +%s.%N)
t_phase=$t_all
timings=""
secs() { echo "$1 $2" | awk '{ printf "%.1f", $2 - $1 }'; }
phase() { # phase NAME: ends the phase that ran since the last call
	local t
	t=$(date +%s.%N)
	timings="$timings $1=$(secs "$t_phase" "$t")s"
	echo "=== phase $1: $(secs "$t_phase" "$t") s"
	t_phase=$t
}
where=                             # "kernel VERSION (MODEL)" while one boots (boot_test)
fail() {
	echo "FAIL ${where:+$where: }$*"
	[ -f "$run/console.log" ] && { echo "--- console (last 40 lines)"; tail -40 "$run/console.log"; }
	exit 1
}

# --- deb: the project's package, as a user gets it, and an upgrade of it: the same
# package with a higher version (dpkg's upgrade path and the maintainer scripts are
# what is tested; rebuilding the same files would only cost time)
if [ -n "${PORTLOGD_VM_DEB:-}" ]; then
	deb=$(cd "$(dirname "$PORTLOGD_VM_DEB")" && pwd)/$(basename "$PORTLOGD_VM_DEB")
else
	sh "$src/tests/pkg/deb-build.sh" "$src" "$work/deb" || fail "deb: tests/pkg/deb-build.sh failed"
	deb=$(ls "$work"/deb/portlogd_*.deb)
fi
version=$(dpkg-deb -f "$deb" Version)
dpkg-deb -R "$deb" "$work/upgrade"
# +vmtest1 for package's upgrade, +vmtest0 (lower) for restarts' upgrade before it
for v in 0 1; do
	sed -i "s/^Version: .*/Version: $version+vmtest$v/" "$work/upgrade/DEBIAN/control"
	dpkg-deb -b "$work/upgrade" "$work/portlogd-upgrade$v.deb" >/dev/null
done
rm -rf "$work/upgrade"
echo "package $(basename "$deb"), upgrades $(dpkg-deb -f "$work/portlogd-upgrade0.deb" Version)" \
	"$(dpkg-deb -f "$work/portlogd-upgrade1.deb" Version)"
phase deb

# --- debootstrap: a minimal bookworm with a kernel and the daemon's libraries
. "$src/tests/deps.sh"          # portlogd_mirror
mirror=${PORTLOGD_VM_MIRROR:-$(portlogd_mirror)}
cache=${PORTLOGD_VM_CACHE:-}
# in_cache: the cached tree holds every package of $include (a tree made with both kernels
# serves a run that boots one of them)
in_cache() {
	[ -n "$cache" ] && [ -f "$cache/stamp" ] || return 1
	[ -n "$(find "$cache/stamp" -mtime -7)" ] || return 1
	local p
	for p in $(echo "$include" | tr ',' ' '); do
		case ",$(cat "$cache/stamp")," in *",$p,"*) ;; *) return 1 ;; esac
	done
}
if in_cache; then
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
cp "$work/portlogd-upgrade1.deb" "$pkg/portlogd-upgrade.deb"
cp "$work/portlogd-upgrade0.deb" "$pkg/portlogd-upgrade0.deb"
echo ppdev >"$root/etc/modules-load.d/portlogd-vmtest.conf"
# the test's site addition to the AppArmor profile, as an admin makes one: the trials'
# configs and logs below /var/tmp/vmtest (the postinst keeps a local include it finds)
mkdir -p "$root/etc/apparmor.d/local"
# every AppArmor audit line in the kernel log: without auditd the kernel prints them
# under printk_ratelimit (10 in 5 s), and drops the rest ("printk limit exceeded")
echo 'kernel.printk_ratelimit = 0' >"$root/etc/sysctl.d/60-portlogd-vmtest.conf"
printf '# tests/vm/run.sh: the trials run the daemon on configs and logs here\n/var/tmp/vmtest/ r,\n/var/tmp/vmtest/** rwk,\n' \
	>"$root/etc/apparmor.d/local/usr.sbin.portlogd"
# only the test's rotation, not logrotate.timer's
ln -sf /dev/null "$root/etc/systemd/system/logrotate.timer"
cat >"$pkg/portlogd.conf" <<'CONF'
# written by tests/vm/run.sh
[logger]
log_file = /var/log/portlogd/portlogd.log
flush_interval_ms = 100
stat_interval_s = 10
flusher_priority = 10
# the ports' interrupt threads (on PREEMPT_RT): line1's reader + 1, lpt0's left alone
irq_priority = auto

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
# nStrobe (pin 1) pulsed low around every read: QEMU's parallel port sends the data
# register to its chardev (lpt.out here) on each such pulse, one byte per sample
strobe = control:0
strobe_us = 20
strobe_level = low
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
for b in $(echo "${PORTLOGD_VM_BREAK:-}" | tr ',' ' '); do
	case $b in
	unit)
		printf '[Service]\nPrivateDevices=yes\n' >"$pkg/break.conf"
		echo "BREAK: PrivateDevices=yes in a drop-in" ;;
	ready)
		printf '[Service]\nExecStart=\nExecStart=/usr/bin/env -u NOTIFY_SOCKET /usr/sbin/portlogd -c /etc/portlogd/portlogd.conf\n' \
			>"$pkg/break.conf"
		echo "BREAK: the daemon runs without NOTIFY_SOCKET" ;;
	irq)
		sed -i 's/^irq_priority = auto$/irq_priority = off/' "$pkg/portlogd.conf"
		echo "BREAK: irq_priority = off" ;;
	strobe)
		sed -i 's/^strobe_level = low$/strobe_level = high/' "$pkg/portlogd.conf"
		echo "BREAK: strobe_level = high" ;;
	*) echo "unknown PORTLOGD_VM_BREAK=$PORTLOGD_VM_BREAK"; exit 2 ;;
	esac
done
systemctl --root="$root" enable portlogd-vmtest.service
phase install

# --- the kernels: the version each package installs (its own /boot/vmlinuz-VERSION, or
# that of the package it depends on: linux-image-amd64 -> linux-image-6.1.0-N-amd64), and
# whether it is PREEMPT_RT (its config), which the checks expect of --check-system and of
# the interrupt threads
kver_of() {
	local p=$1 v
	for _ in 1 2; do
		v=$(chroot "$root" dpkg-query -L "$p" 2>/dev/null | sed -n 's|^/boot/vmlinuz-||p' | head -1)
		[ -n "$v" ] && { echo "$v"; return 0; }
		p=$(chroot "$root" dpkg-query -W -f '${Depends}' "$p" 2>/dev/null | sed 's/[ ,(|].*//')
		[ -n "$p" ] || break
	done
	return 1
}
runs=
for k in $kernel_pkgs; do
	v=$(kver_of "$k") || fail "kernel: $k installs no /boot/vmlinuz-* in the guest"
	grep -q '^CONFIG_PREEMPT_RT=y' "$root/boot/config-$v" && model=rt || model=std
	runs="$runs $v:$model"
	echo "kernel $k: $v ($model)"
done

# --- boot: ttyS0 console (a file), ttyS1 data (a socket), ttyS2 control (two fifos), lpt,
# QEMU's monitor on a socket; and the optional devices the boot's scenarios need
# a serial number of its own, as a real FTDI chip has: QEMU's default one holds the port's
# path, so the /dev/serial/by-id/ link would change with each plug
usb_dev='"driver":"usb-serial","id":"ftdi0","bus":"xhci.0","chardev":"usb0","serial":"PLOGD001"'
# devices LIST: sets dev_args (QEMU's options), kernel_extra (the kernel's) and disk_cache
# for the scenarios in LIST: pci-serial-4x (pci4x, pause), qemu-xhci and usb-serial (usb,
# usbplug), cache=writeback (powercut: the guest's flushes reach the image)
devices() {
	dev_args=() kernel_extra="" disk_cache=${PORTLOGD_VM_DISK:-unsafe}
	if has "$1" pci4x || has "$1" pause || has "$1" pci16; then
		local i c cards=1
		# pci16: four cards (the first is pci4x's and pause's ttyS4-7)
		! has "$1" pci16 || cards=4
		for i in $(seq 0 $((4 * cards - 1))); do
			dev_args+=(-chardev "socket,id=pci$i,path=$run/pci$i.sock,server=on,wait=off")
		done
		for c in $(seq 0 $((cards - 1))); do
			dev_args+=(-device "pci-serial-4x,chardev1=pci$((4 * c)),chardev2=pci$((4 * c + 1)),chardev3=pci$((4 * c + 2)),chardev4=pci$((4 * c + 3))")
		done
		# Debian's kernel has 4 8250 ports (CONFIG_SERIAL_8250_RUNTIME_UARTS), ttyS0-3, taken
		# by the ISA ones: a card's four become ttyS4-7 (ttyS4-19) only with more
		kernel_extra="8250.nr_uarts=$((4 + 4 * cards))"
	fi
	if has "$1" usb || has "$1" usbplug || has "$1" calibrate; then
		# a pipe, not a socket: QEMU's usb-serial is plugged in only while its chardev is
		# open, and a socket's is closed while no client is connected
		[ -p "$run/usb0.in" ] || mkfifo "$run/usb0.in" "$run/usb0.out"
		dev_args+=(-device qemu-xhci,id=xhci -chardev "pipe,id=usb0,path=$run/usb0"
			-device "$(echo "$usb_dev" | sed 's/"driver":"\([^"]*\)"/\1/; s/"//g; s/:/=/g')")
	fi
	if has "$1" powercut; then disk_cache=${PORTLOGD_VM_DISK:-writeback}; fi
}
# start_qemu ACCEL CPU: boots $run's image in the background
start_qemu() {
	: >"$run/console.log"
	qemu-system-x86_64 -machine pc,accel=$1 -cpu "$2" -smp 2 -m 768M \
		-kernel "$run/vmlinuz" -initrd "$run/initrd" \
		-append "console=ttyS0,115200 root=/dev/vda rw fsck.mode=skip loglevel=4${kernel_extra:+ $kernel_extra}" \
		-drive file="$run/rootfs.img",format=raw,if=virtio,cache=$disk_cache \
		-display none -no-reboot -monitor none -qmp unix:"$run/qmp.sock",server=on,wait=off -nic none \
		-serial file:"$run/console.log" \
		-chardev socket,id=ser1,path="$run/ser1.sock",server=on,wait=off -serial chardev:ser1 \
		-chardev pipe,id=ctl,path="$run/ctl" -serial chardev:ctl \
		-chardev file,id=lpt0,path="$run/lpt.out" -parallel chardev:lpt0 \
		"${dev_args[@]}" >"$run/qemu.log" 2>&1 &
	qpid=$!
	accel=$1
}
# KVM when /dev/kvm opens and a guest kernel really runs under it (a nested KVM may
# answer the API yet fail on an MSR, or never get the kernel going): the console must
# show the guest's first output (with loglevel=4 the kernel's banner is not there: the
# initramfs's "Loading, please wait...", a second or two into a KVM boot) within 10 s;
# otherwise TCG. Found out at the first boot, kept after.
accel=${PORTLOGD_VM_ACCEL:-}
kvm_probed=$([ -n "$accel" ] && echo 1 || echo 0)
boot_qemu() {
	if [ $kvm_probed = 0 ]; then
		kvm_probed=1
		if [ -c /dev/kvm ] && { exec 5<>/dev/kvm; } 2>/dev/null; then
			exec 5>&-
			# no arch-capabilities: a nested KVM refuses that MSR
			start_qemu kvm max,-arch-capabilities
			local i=0
			until grep -q . "$run/console.log" || [ $i -ge 50 ] || ! kill -0 $qpid 2>/dev/null; do
				sleep 0.2
				i=$((i + 1))
			done
			grep -q . "$run/console.log" && return 0
			echo "KVM: no console output after $((i / 5)) s ($(head -c 300 "$run/qemu.log" | tr '\n' ' ')); using TCG"
			kill $qpid 2>/dev/null; wait $qpid 2>/dev/null || true
		else
			echo "no usable /dev/kvm: TCG"
		fi
		accel=tcg
	fi
	if [ "$accel" = kvm ]; then start_qemu kvm max,-arch-capabilities; else start_qemu tcg max; fi
}

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
			cat "$run/qemu.log"
			return 2
		fi
	done
	return 1
}
send() { echo "host: $1"; printf '%s\n' "$1" >"$run/ctl.in"; }
sim() { # sim N OUTFILE SEED: packets into ttyS1 (see traffic)
	timeout $(($1 / 50 + 60)) "$build/tests/portlogd-sim" --connect line1="$run/ser1.sock" -n "$1" -l 1-64 -F 3 \
		-i 300 -g 8000-12000 -G 3000 -b 115200 -s "$3" -o "$2" >>"$run/sim.log" 2>&1
}
# paced NAME OUTFILE SEED: bytes paced into ttyS1 at 9600 baud, 20-byte packets 5
# characters apart, until killed (restarts, powercut); in the background ($simpid)
paced() {
	"$build/tests/portlogd-sim" --connect line1="$run/ser1.sock" --pace -b 9600 --lens 20 \
		--gap-chars 5-5 -n 0 -G 3000 -s "$3" -o "$2" >"$2.sim" 2>&1 &
	simpid=$!
}
# stop_paced: ends paced's traffic after the packet it is in
stop_paced() {
	# it may have ended by itself (its far end gone: QEMU killed): nothing to stop then
	kill -TERM "$simpid" 2>/dev/null || true
	wait "$simpid" || true
	simpid=
}
lpt_bytes() { stat -c %s "$run/lpt.out" 2>/dev/null || echo 0; }
# qmp JSON: one command (its JSON object) on QEMU's monitor (QMP); the answer in qmp.log
qmp() {
	echo "qmp: $1"
	printf '{"execute":"qmp_capabilities"}\n%s\n' "$1" |
		socat -t 2 - UNIX-CONNECT:"$run/qmp.sock" >>"$run/qmp.log" 2>&1
}

# guest_up LIMIT WHAT: the guest's answer to the boot (WHAT: MARK, GO, READY after the
# install; REBOOT, READY on a boot of an image that has booted before)
guest_up() {
	local r=0
	if [ "$2" = first ]; then
		# the guest says MARK before it starts the daemon with the test's config: what
		# reached lpt.out until then (the kernel probing the port) is not the strobe's
		expect "*TEST MARK*" "$1" || r=$?
		if [ $r = 0 ]; then
			lpt0=$(lpt_bytes)
			send GO
			expect "*TEST READY*" 200 || r=$?
		fi
	else
		expect "*TEST REBOOT*" "$1" || r=$?
		[ $r != 0 ] || expect "*TEST READY*" 200 || r=$?
	fi
	[ $r = 0 ] && return 0
	# QEMU gone without a word from the guest: it cannot run here
	[ $r = 2 ] && ! grep -q . "$run/console.log" && skip "QEMU cannot run here"
	if [ -n "$reply" ] && [ "${reply#*TEST NOTREADY}" != "$reply" ]; then
		# the guest saw the service fail: wait for its power-off, then report what it saw
		wait "$qpid" 2>/dev/null || true
		qpid=
		debugfs -R "rdump /var/tmp/vmtest $run" "$run/rootfs.img" >/dev/null 2>&1 || true
		echo "--- the package's install"; cat "$run/vmtest/pkg-install.txt" 2>/dev/null || true
		echo "--- systemctl show portlogd"; cat "$run/vmtest/show.txt" 2>/dev/null || true
		echo "--- journal of portlogd (last 15 lines, without --check-config's printout)"
		grep -Ev 'portlogd\[[0-9]+\]: ([a-z_0-9]+ = |\[|# )' "$run/vmtest/journal.txt" 2>/dev/null |
			tail -15 || true
		fail "check service-active: portlogd did not become active within 120 s of the guest test" \
			"starting (${reply#*TEST NOTREADY }): no READY=1 from the daemon, or it failed"
	fi
	fail "boot: no VMTEST ${2/first/MARK and} READY from the guest within $1 + 200 s"
}

# --- the scenarios. scn_NAME runs NAME in the booted guest; chk_NAME, if there is one,
# checks what it left once the guest is off ($run/vmtest: the guest's /var/tmp/vmtest).
# A scenario that powers the guest off sets off=1; a failed check sets r=1.

# traffic: packets into ttyS1 at most as fast as 115200 baud allows, fragmented, 8-12 ms
# apart (the guest's gap_us is 3 ms); the log rotated in the middle; then the running
# service's state collected (COLLECT)
scn_traffic() {
	echo "seed $seed, $packets packets"
	sim "$packets" "$run/sent1.txt" "$seed" &
	simpid=$!
	sleep $((packets / 250 + 1))       # about a third of the way
	send ROTATE
	expect "*TEST ROTATE*" 60 || fail "traffic: no answer to ROTATE"
	case $reply in *"TEST ROTATE rc=0 "*) ;; *) fail "check rotate: logrotate -f in the guest: $reply" ;; esac
	# a failed or stuck simulator (nobody reads ttyS1 in the guest) is reported, and the
	# checks still run on what the guest has
	wait "$simpid" || { cat "$run/sim.log"; echo "traffic: portlogd-sim failed or timed out"; simfail=1; }
	simpid=
	echo "sent $(wc -l <"$run/sent1.txt") packets"
	sleep 1                            # the flusher writes every 100 ms
	send COLLECT
	expect "*TEST COLLECT*" 120 || fail "traffic: no answer to COLLECT"
	std_sent="--sent $run/sent1.txt"
	std_open=1
}
# watchdog: the guest SIGSTOPs the daemon, systemd's watchdog kills and restarts it; 200
# more packets to the new daemon
scn_watchdog() {
	[ -n "$std_sent" ] || fail "watchdog: needs traffic before it (PORTLOGD_VM_ONLY=traffic,watchdog)"
	send WATCHDOG
	# by its fields: ci22's ttyS2 lost this line's first 25 bytes (the console had it whole)
	expect "*stopped_pid=*" 120 || fail "watchdog: no answer to WATCHDOG"
	sim 200 "$run/sent2.txt" $((seed + 1)) ||
		{ cat "$run/sim.log"; echo "traffic: portlogd-sim (after the restart) failed"; simfail=1; }
	std_sent="$std_sent --sent $run/sent2.txt"
	sleep 1
}
# collect (after traffic and watchdog, before anything else): the journal, the service
# stopped (lpt.out then holds all its strobes), the logs copied
std_done() {
	[ "$std_open" = 1 ] || return 0
	send DONE
	expect "*TEST DONE" 120 || fail "collect: no answer to DONE"
	lpt1=$(lpt_bytes)
	echo "lpt.out: $lpt0 bytes before the test's daemon started, $((lpt1 - lpt0)) while it ran"
	std_open=0
	phase "$name:collect"
}
# package: the user re-enables and starts the service, then upgrade, remove, purge; the
# guest powers off
scn_package() {
	send PACKAGE
	expect "*TEST PACKAGE*" 300 || fail "package: no answer to PACKAGE"
	off=1
}
# apparmor: the guest reports the profile's state and tries what it must deny
scn_apparmor() {
	send APPARMOR
	expect "*TEST APPARMOR*" 180 || fail "apparmor: no answer to APPARMOR"
}
# chk_apparmor: enforce mode, the service confined by it, no denial in the scenarios
# before, and each denial case refused with its DENIED line in the kernel log
chk_apparmor() {
	local f=$run/vmtest/apparmor.txt t=$run/vmtest/apparmor-test.txt v
	[ -f "$f" ] || { echo "FAIL apparmor: no apparmor.txt from the guest"; r=1; return; }
	echo "[apparmor]"; cat "$f"; echo "[apparmor-test]"; cat "$t"; echo
	aa_v() { sed -n "s/^$1[= ]//p" "$f"; }
	[ "$(aa_v enabled)" = Y ] || { echo "FAIL apparmor: not enabled in the guest's kernel"; r=1; }
	[ "$(aa_v mode)" = enforce ] || { echo "FAIL apparmor: the profile's mode is '$(aa_v mode)', not enforce"; r=1; }
	[ "$(aa_v service_label)" = "/usr/sbin/portlogd (enforce)" ] ||
		{ echo "FAIL apparmor: the service ran as '$(aa_v service_label)'"; r=1; }
	grep -Eq '^OK +apparmor +.*enforce' "$run/vmtest/checksys.txt" ||
		{ echo "FAIL apparmor: --check-system's apparmor row:"; grep apparmor "$run/vmtest/checksys.txt"; r=1; }
	[ "$(aa_v audit_dropped)" = 0 ] && [ "$(aa_v audit_dropped_after)" = 0 ] ||
		{ echo "FAIL apparmor: the kernel dropped audit lines (printk limit exceeded): denials may be uncounted"; r=1; }
	[ "$(aa_v denied_before)" = 0 ] ||
		{ echo "FAIL apparmor: $(aa_v denied_before) DENIED lines of portlogd in the scenarios:"
		  cat "$run/vmtest/apparmor-denied.txt"; r=1; }
	# refused: a non-zero status, and the kernel's DENIED line for each
	for v in exec_sh shadow logdir; do
		case $(sed -n "s/^$v //p" "$f") in ''|0) echo "FAIL apparmor: $v was not refused"; r=1 ;; esac
	done
	grep -q 'operation="exec".*name="/usr/bin/dash"\|operation="exec".*name="/bin/dash"' "$t" ||
		{ echo "FAIL apparmor: no DENIED exec of the shell"; r=1; }
	grep -q 'name="/etc/shadow"' "$t" || { echo "FAIL apparmor: no DENIED read of /etc/shadow"; r=1; }
	grep -q 'name="/var/lib/portlogd-denied.log"' "$t" ||
		{ echo "FAIL apparmor: no DENIED open of the log in /var/lib"; r=1; }
	grep -q 'exists=no' "$t" || { echo "FAIL apparmor: the log in /var/lib was made"; r=1; }
	[ "$(sed -n 's/^allowed \([0-9]*\).*/\1/p' "$f")" = 0 ] || { echo "FAIL apparmor: --export of the log was refused"; r=1; }
	[ $r = 0 ] && echo "apparmor: enforce, the service confined, 0 denials in the scenarios," \
		"$(aa_v denied_test) in the denial test (exec, /etc/shadow, a log outside its directory)"
	return 0
}
# the standard checks (traffic, and watchdog and package if they ran): vm_check. The
# watchdog: systemd kills the stopped daemon WatchdogSec after its last WATCHDOG=1, then
# RestartSec=2s, then the start up to READY=1 (seconds under TCG): WatchdogSec + 15 s. The
# interrupt thread of line1: auto is its reader's 70 + 1. The strobe's pulses are counted
# only where no daemon was killed (no watchdog).
chk_traffic() {
	# shellcheck disable=SC2086
	"$build/tests/vm_check" --dir "$run/vmtest" $std_sent --kernel "$kver" --model "$model" \
		--prio plog-timer=90 --prio plog-lpt0=80 --prio plog-line1=70 \
		--prio plog-flush=10 --irq-want 71 --user portlogd --groups dialout,lp --max-exposure 2.0 \
		$(has "$list" watchdog && echo "--watchdog-margin 15" || echo "--no-watchdog --lpt-pulses $((lpt1 - lpt0))") \
		$(has "$list" package || echo "--no-package") || r=1
	[ $simfail = 0 ] || { echo "FAIL traffic: portlogd-sim could not play every packet into ttyS1"; r=1; }
}

# trial ID BAUD TRIG USER NAME=SOCKET...: the guest runs the daemon with its default config
# (gap_us = auto, rx_trigger = auto; $trial_keys "KEY=VALUE ..." added to each port, as
# rx_trigger=keep) on its ports NAME (ttyS1, ttyS4..7, usb0: the adapter's by-id link) at
# BAUD as USER, rx_trig_bytes set to TRIG first (-: left as it is); the host paces
# $wire_packets packets of 5 and 20 bytes in turn into each at the baud (a write a byte at
# its wire time: portlogd-sim --pace), 15-25 character times apart and at least 2-3 of
# the gaps the daemon says it resolves there (EV open gap_us=: an FTDI adapter's is 4 ms,
# 46 characters at 115200), its hand-overs judged at that gap; then the guest stops the
# daemon. chk_trials reads the logs.
wire_packets=${PORTLOGD_VM_WIRE_PACKETS:-120}
trials= ntrial=0 trial_keys= trial_sim= trial_during= trial_want= trial_load=
# with trial_during=FUNC the host plays packets until FUNC ID (run meanwhile: the stall
# made on purpose) returns, not $wire_packets; trial_sim: more of portlogd-sim's options;
# trial_want: more of vm_wire's (a comma list; @ID@ the trial's ID); trial_load: the
# trial's load, for the tty table (none)
trial() {
	local id=$1 baud=$2 trig=$3 user=$4 names="" conn="" nc gap lo hi rc=0 t0 n=$wire_packets
	shift 4
	t0=$(date +%s.%N)
	# a run asked for twice gets an ID of its own
	case " $trials " in *" $id:"*) id=$id-$ntrial ;; esac
	for nc in "$@"; do names="$names,${nc%%=*}"; conn="$conn --connect $nc"; done
	names=${names#,}
	send "TRIAL $id $baud $trig $user $names${trial_keys:+ $trial_keys}"
	expect "*TEST TRIAL $id *" 120 || fail "$id: no answer to TRIAL"
	case $reply in
	*"TEST TRIAL $id ready"*) ;;
	*) echo "FAIL $id: the guest could not start the daemon: $reply"; r=1; return 0 ;;
	esac
	# a silence of half the daemon's gap inside a packet, as the guest's UART saw it (the
	# simulator's writes, or QEMU's reads, late) could be a boundary: such a packet is
	# unclean and not judged (3.5 characters where EV open says no gap_us)
	gap=$(echo "$reply" | sed -n 's/.* gap_us=\([0-9]*\).*/\1/p')
	[ -n "$gap" ] || gap=$(((35000000 + baud - 1) / baud))
	# the silence between packets: 15-25 characters, and 2-3 gaps where that is more (a
	# packet's silences must exceed 1.5 gaps for it to be judged)
	lo=$((gap * baud * 2 / 10000000 + 1)) hi=$((gap * baud * 3 / 10000000 + 1))
	[ $lo -ge 15 ] || lo=15
	[ $hi -ge 25 ] || hi=25
	mkdir -p "$run/trials"
	[ -z "$trial_during" ] || n=0
	# shellcheck disable=SC2086
	timeout $(((n ? n : 600) * (hi + 20) * 20 / baud + 60)) "$build/tests/portlogd-sim" $conn --pace \
		-b "$baud" --lens 5,20 --gap-chars $lo-$hi -n "$n" -G "$gap" -s $((seed + ntrial)) $trial_sim \
		-o "$run/trials/$id.sent" >"$run/trials/$id.sim" 2>&1 &
	simpid=$!
	if [ -n "$trial_during" ]; then
		"$trial_during" "$id"
		kill -TERM "$simpid" 2>/dev/null || true
	fi
	wait "$simpid" || rc=$?
	simpid=
	# SIGTERM ends the simulator's packet and its traffic: its exit then is 143 or 0
	[ -z "$trial_during" ] || [ $rc != 143 ] || rc=0
	sed -n "s/^# /  $id /p" "$run/trials/$id.sent"
	[ $rc = 0 ] || { cat "$run/trials/$id.sim"; echo "FAIL $id: portlogd-sim failed ($rc)"; r=1; }
	# the guest stops the daemon once its UARTs have received what was written
	send "TRIALEND $id$(for nc in "$@"; do awk -v p="${nc%%=*}" '$1 == p { n += $3 }
		END { printf " %s=%d", p, n }' "$run/trials/$id.sent"; done)"
	expect "*TEST TRIALEND $id *" 60 || fail "$id: no answer to TRIALEND"
	trials="$trials $id:$baud:$names:$user:$(case " $trial_keys " in *" rx_trigger=keep "*) echo keep ;; *) echo auto ;; esac)"
	trials="$trials:$(echo "${trial_want:--}" | sed "s/@ID@/$id/g"):$(echo "${trial_load:-none}" | tr ' ' +)"
	ntrial=$((ntrial + 1))
	echo "$id: $(secs "$t0" "$(date +%s.%N)") s"
}
# chk_open ID NAME USER RXT: what the port's EV open says of what stands between its wire
# and read(), and the UART's trigger level after the daemon's stop (issue 21). A UART:
# delivery=fifo; with rx_trigger = auto run as root or as the service (the udev rule gives
# it rx_trig_bytes) rx_trigger=1 and rx_trigger_found= the level it had; as another user
# (refused: EV rt-missing item=rx_trigger) or with keep, rx_trigger= the level it had and
# no rx_trigger_found; after the stop the level it had. The adapter: delivery=usb
# usb=ftdi_sio and its hold_us=.
chk_open() {
	local id=$1 n=$2 user=$3 rxt=$4 d=$run/vmtest/trials/$1 open trig after want="" no="" w miss=""
	open=$(grep -m1 " $n EV open " "$d/portlogd.log")
	trig=$(sed -n "s/^$n trig=\([^ ]*\).*/\1/p" "$d/info.txt")
	after=$(sed -n "s/^$n trig=\([^ ]*\).*/\1/p" "$d/after.txt")
	case $n-$rxt-$user in
	usb*) want="delivery=usb usb=ftdi_sio hold_us=" ;;
	*-auto-root | *-auto-service) want="delivery=fifo rx_trigger=1 rx_trigger_found=$trig" ;;
	*-auto-*)
		want="delivery=fifo rx_trigger=$trig" no="rx_trigger_found="
		grep -q " $n EV rt-missing .*item=rx_trigger" "$d/portlogd.log" ||
			miss=" (no EV rt-missing item=rx_trigger)" ;;
	*) want="delivery=fifo rx_trigger=$trig" no="rx_trigger_found=" ;;
	esac
	for w in $want; do
		# KEY= wants the key with any value, KEY=VALUE that value
		case $w in *=) pat=" $w" ;; *) pat=" $w " ;; esac
		case " ${open#* EV open } " in *"$pat"*) ;; *) miss="$miss $w" ;; esac
	done
	for w in $no; do case " $open" in *" $w"*) miss="$miss (not $w)" ;; esac; done
	# the level found is put back at the stop, except by the service: its unit keeps
	# the port in systemd's store (FDSTORE), and a daemon stopping cannot tell a stop
	# from a restart, in which writing the level would empty the FIFO (8250's
	# rx_trig_bytes clears it) of bytes the next daemon reads: it stays as set
	local back=$trig
	case $n-$rxt-$user in *-auto-service) back=1 ;; esac
	case $n in usb*) ;; *) [ "$after" = "$back" ] || miss="$miss (rx_trig_bytes $after after the stop, not $back)" ;; esac
	if [ -z "$miss" ]; then
		echo "ok $id $n open: ${open#* EV open }; rx_trig_bytes $trig before, ${after:-none} after the stop"
	else
		echo "FAIL $id $n: want$miss; EV open ${open#* EV open }"
		r=1
	fi
}
# the trials' checks, one vm_wire run a port (every byte once, in order; no wrong
# boundary without its mark; at 2400 baud and below, short and long packets dated alike
# within a character), the EV open and trigger level (chk_open), and a table of the
# figures (issue 21's columns)
chk_trials() {
	local t id baud names n user rxt more load want trig gap open
	[ -n "$trials" ] || return 0
	: >"$run/trials/rows.txt"
	for t in $trials; do
		IFS=: read -r id baud names user rxt more load <<<"$t"
		want="--want-bytes --want-no-unmarked"
		[ "$baud" -gt 2400 ] || want="$want --max-bias-chars 1"
		[ "$more" = - ] || want="$want ${more//,/ }"
		tty_row "$id" "${load//+/ }" "$run/vmtest/trials/$id/portlogd.log"
		for n in ${names//,/ }; do
			# shellcheck disable=SC2086
			"$build/tests/vm_wire" --log "$run/vmtest/trials/$id/portlogd.log" --sent "$run/trials/$id.sent" \
				--port "$n" --baud "$baud" --label "$id" \
				$want >"$run/trials/$id.$n.txt" 2>&1 ||
				{ echo "FAIL $id: vm_wire on $n (the lines above)"; r=1; }
			grep -v '^vm_wire ' "$run/trials/$id.$n.txt"
			chk_open "$id" "$n" "$user" "$rxt"
			# the trigger level the daemon ran at and its gap (EV open rx_trigger=, gap_us=)
			open=$(grep -m1 " $n EV open " "$run/vmtest/trials/$id/portlogd.log")
			trig=$(echo "$open" | sed -n 's/.* rx_trigger=\([^ ]*\).*/\1/p')
			gap=$(echo "$open" | sed -n 's/.* gap_us=\([^ ]*\).*/\1/p')
			sed -n "s/^vm_wire /trig=${trig:--} gap_us=${gap:--} /p" "$run/trials/$id.$n.txt" >>"$run/trials/rows.txt"
		done
	done
	echo "--- the runs (first-byte error: against the long packets' median; bias in character times)"
	awk 'BEGIN { print "| run | port | rx_trig | gap us | packets (clean) | one line | wrong, marked | wrong, unmarked | not whole | unclean: one line / not | bytes written / logged / missing / extra | short p50 / p99 us | long p99 us | bias short-long |"
		print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" }
		{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		  printf "| %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s / %s | %s / %s / %s / %s | %s / %s | %s | %s us = %s chars |\n",
			v["label"], v["port"], v["trig"], v["gap_us"], v["packets"], v["clean"], v["one"], v["marked"],
			v["unmarked"], v["broken"], v["unclean_one"], v["unclean_wrong"], v["written"],
			v["logged"], v["missing"], v["extra"], v["short_p50_us"], v["short_p99_us"],
			v["long_p99_us"], v["bias_us"], v["bias_chars"] }' \
		"$run/trials/rows.txt"
}

# wire: issue 21's runs on ttyS1: each BAUD:TRIG of PORTLOGD_VM_WIRE as each user of
# PORTLOGD_VM_WIRE_USERS with the default config (rx_trigger = auto), then each of
# PORTLOGD_VM_WIRE_KEEP as root with rx_trigger = keep (the level set by hand stays: the
# rule, not the fix, under test)
scn_wire() {
	local bt u b t
	for u in ${PORTLOGD_VM_WIRE_USERS:-root service nobody}; do
		for bt in ${PORTLOGD_VM_WIRE:-2400:8 9600:8}; do
			b=${bt%:*} t=${bt#*:}
			# wire-2400-root: the level as Linux left it; wire-2400-t8-root: 8 set first
			trial "wire-$b$([ "$t" = - ] || echo "-t$t")-$u" "$b" "$t" "$u" ttyS1="$run/ser1.sock"
		done
	done
	for bt in ${PORTLOGD_VM_WIRE_KEEP-2400:4 2400:14 9600:4 9600:14}; do
		b=${bt%:*} t=${bt#*:}
		trial_keys=rx_trigger=keep trial "wire-$b-t$t-keep-root" "$b" "$t" root ttyS1="$run/ser1.sock"
	done
}
chk_wire() { chk_trials; trials=; }
# pci4x: the four UARTs of pci-serial-4x at once, 9600 baud, the default config, as root
# (each at trigger 1) and as nobody (each at Linux's 8)
scn_pci4x() {
	local u
	for u in root nobody; do
		trial "pci4x-9600-$u" 9600 8 "$u" ttyS4="$run/pci0.sock" ttyS5="$run/pci1.sock" \
			ttyS6="$run/pci2.sock" ttyS7="$run/pci3.sock"
	done
}
chk_pci4x() { chk_trials; trials=; }
# pci16 (issue 31): the sixteen UARTs of four pci-serial-4x cards at once, 2400 baud, the
# default config, as root
scn_pci16() {
	local i ports=""
	for i in $(seq 0 15); do ports="$ports ttyS$((4 + i))=$run/pci$i.sock"; done
	# shellcheck disable=SC2086
	trial pci16-2400-root 2400 8 root $ports
}
# the trial's checks, and the interrupts the guest's UARTs had (info.txt: irq=): shared
chk_pci16() {
	local info=$run/vmtest/trials/pci16-2400-root/info.txt n lines
	n=$(grep -c '^ttyS' "$info" 2>/dev/null || echo 0)
	lines=$(sed -n 's/.* irq=\([0-9]*\).*/\1/p' "$info" | sort -u | tr '\n' ' ')
	if [ "$n" = 16 ] && [ "$(echo $lines | wc -w)" -lt 16 ]; then
		echo "ok pci16: 16 UARTs on the interrupt lines $lines"
	else
		echo "FAIL pci16: $n UARTs (want 16) on the interrupt lines $lines (want them shared)"
		r=1
	fi
	chk_trials
	trials=
}
# usb: the FTDI adapter at 115200 (its by-id link), the default config, as root
scn_usb() { trial usb-115200-root 115200 - root usb0="$run/usb0.in"; }

# calibrate: --calibrate on ttyS1 at triggers 1, 8, 14 and on the adapter, the host's
# vm_echo looping each port back; the answers in $run/calibrate.txt for chk_calibrate
scn_calibrate() {
	local baud=${PORTLOGD_VM_CALIBRATE_BAUD:-9600} t id
	: >"$run/calibrate.txt"
	"$build/tests/vm_echo" --baud "$baud" --socket "$run/ser1.sock" >"$run/echo-ser1.log" 2>&1 &
	simpid=$!
	for t in 1 8 14; do
		id=ttyS1-t$t
		send "CALIBRATE $id ttyS1 $baud $t"
		expect "*TEST CALIBRATE $id *" 660 || fail "calibrate: no answer to CALIBRATE $id"
		echo "$id ${reply#*TEST CALIBRATE $id }" >>"$run/calibrate.txt"
	done
	kill -TERM "$simpid"; wait "$simpid" || true
	cat "$run/echo-ser1.log"
	send "USBDEV present"
	expect "*TEST USBDEV *" 60 || fail "calibrate: no answer to USBDEV"
	"$build/tests/vm_echo" --baud "$baud" --fifo "$run/usb0.out" "$run/usb0.in" \
		>"$run/echo-usb0.log" 2>&1 &
	simpid=$!
	send "CALIBRATE usb0 usb0 $baud -"
	expect "*TEST CALIBRATE usb0 *" 660 || fail "calibrate: no answer to CALIBRATE usb0"
	echo "usb0 ${reply#*TEST CALIBRATE usb0 }" >>"$run/calibrate.txt"
	kill -TERM "$simpid"; wait "$simpid" || true
	simpid=
	cat "$run/echo-usb0.log"
}
# what --calibrate printed, against what QEMU's devices do
chk_calibrate() {
	local id rest want line f
	while read -r id rest; do
		f=$run/vmtest/calibrate-$id.txt
		echo "--- calibrate $id: $rest"
		sed 's/^/  /' "$f" 2>/dev/null || true
		line=$(sed -n 's/.*delivery = //p' "$f" 2>/dev/null)
		case $id in
		ttyS1-t1) want="direct" ;;
		ttyS1-t*) want="fifo:${id#ttyS1-t}" ;;
		*) want=usb ;;
		esac
		case $id-$line in
		ttyS1-*-"$want") echo "ok calibrate-$id: delivery = $line (QEMU's 16550A at trigger ${id#ttyS1-t})" ;;
		usb0-) grep -q 'bursts, .* bytes back' "$f" &&
			echo "ok calibrate-usb0: no line (QEMU's usb-serial hands over at each poll, no timer): $(grep '^reads of' "$f")" ||
			{ echo "FAIL calibrate-usb0: not every burst came back"; r=1; } ;;
		usb0-usb:*/*) echo "FAIL calibrate-usb0: delivery = $line: QEMU's usb-serial has no receive timeout"; r=1 ;;
		usb0-usb:*) echo "ok calibrate-usb0: delivery = $line (every byte alone: QEMU's usb-serial answers each poll)" ;;
		*) echo "FAIL calibrate-$id: delivery = ${line:-none}, want $want"; r=1 ;;
		esac
	done <"$run/calibrate.txt"
}
chk_usb() { chk_trials; trials=; }

# sensors LOG: the tty path and the CPUs as the daemon's stall sensors measured them
# over the run of LOG (its last STAT sensor lines, the stop's round): "PROBES LATE P50
# P99 MAX CPU_STALLS CPU_MAX" (us; LATE: probes later than a quarter period), or nothing
sensors() {
	awk '/ portlogd STAT sensor / {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		c = v["cpu"]; pr[c] = v["tty_probes"]; ts[c] = v["tty_stalls"]; tm[c] = v["tty_max_us"]
		st[c] = v["stalls"]; sm[c] = v["stall_max_us"]
		if ("tty_p50_us" in v) { p50 = v["tty_p50_us"]; p99 = v["tty_p99_us"] }
		delete v }
		END { for (c in pr) { n++; P += pr[c]; T += ts[c]; S += st[c]
			if (tm[c] + 0 > M) M = tm[c] + 0; if (sm[c] + 0 > SM) SM = sm[c] + 0 }
		if (n > 0) print P, T, (p50 == "" ? "-" : p50), (p99 == "" ? "-" : p99), M, S, SM }' "$1" 2>/dev/null
}
# tty_row ID LOAD LOG: sensors' figures, a row of the run's table ($work/tty.txt,
# printed at the end)
tty_row() {
	local f
	f=$(sensors "$3")
	[ -z "$f" ] || echo "$name $1 $2 $f" | awk '{ n = NF; printf "| %s | %s | %s", $1, $2, $3
		for (i = 4; i <= n - 7; i++) printf " %s", $i
		p99 = $(n-3) == 10240 ? ">= 10240" : $(n-3)     # the last bin: 10.24 ms or more
		printf " | %s | %s | %s / %s / %s | %s | %s |\n", $(n-6), $(n-5), $(n-4), p99, $(n-2), $(n-1), $n }' \
		>>"$work/tty.txt"
}

# pause: the whole guest stopped and started again through QEMU's monitor
# PORTLOGD_VM_PAUSES times (stop, cont 20-200 ms later, 250-500 ms of running between)
# while the host paces bytes at 9600 into ttyS1 and the four UARTs of pci-serial-4x
# (pci4x's devices) at once; --hold 0: what the guest does not take waits in the
# sockets (and arrives back to back at cont), none is lost on the wire. The guest's
# clock stands still while it is stopped: only the wire's baud can tell the daemon.
pauses_n=${PORTLOGD_VM_PAUSES:-10}
scn_pause() {
	trial_sim="--hold 0" trial_during=pauser trial_load="VM paused" \
		trial_want="--want-marked,--pauses,$run/trials/@ID@.pauses" \
		trial pause-9600-root 9600 8 root ttyS1="$run/ser1.sock" ttyS4="$run/pci0.sock" \
		ttyS5="$run/pci1.sock" ttyS6="$run/pci2.sock" ttyS7="$run/pci3.sock"
}
# qmp_do JSON: one command on the QMP connection of the coprocess QMP, then its answer
# (the greeting and events skipped); 1 on an error or no answer within 10 s
qmp_do() {
	local line=""
	printf '%s\n' "$1" >&"${QMP[1]:-}" || { echo "FAIL pause: no QMP connection"; r=1; return 1; }
	while read -r -t 10 line <&"${QMP[0]:-}"; do
		echo "$line" >>"$run/qmp.log"
		case $line in *'"return"'*) return 0 ;; *'"error"'*) break ;; esac
	done
	echo "FAIL pause: QMP $1: ${line:-no answer}"
	r=1
	return 1
}
# pauser ID: the pauses, on one QMP connection; "N STOP_SENT STOP_ACKED CONT_SENT
# CONT_ACKED" (the host's CLOCK_REALTIME) a line in trials/ID.pauses (vm_wire --pauses)
pauser() {
	local f=$run/trials/$1.pauses j a b c d fd
	: >"$f"
	coproc QMP { socat - UNIX-CONNECT:"$run/qmp.sock" 2>>"$run/qmp.log"; }
	if qmp_do '{"execute":"qmp_capabilities"}'; then
		RANDOM=$((seed + 400))
		sleep 0.3
		for j in $(seq 1 "$pauses_n"); do
			a=$EPOCHREALTIME
			qmp_do '{"execute":"stop"}' || break
			b=$EPOCHREALTIME
			sleep "0.$(printf %03d $((20 + RANDOM % 181)))"
			c=$EPOCHREALTIME
			# the guest must run again whatever happened: one more try
			qmp_do '{"execute":"cont"}' || qmp_do '{"execute":"cont"}' || fail "pause: the guest not continued"
			d=$EPOCHREALTIME
			echo "$j $a $b $c $d" >>"$f"
			sleep "0.$(printf %03d $((250 + RANDOM % 251)))"
		done
	fi
	# closing its input ends socat
	fd=${QMP[1]:-}
	[ -z "$fd" ] || exec {fd}>&-
	wait "${QMP_PID:-}" 2>/dev/null || true
}
# the pauses as made (the trial's checks: chk_trials; vm_wire --want-marked: a wrong
# boundary marked on each port, or the pauses decided nothing there)
chk_pause() {
	local f
	for f in "$run"/trials/pause-*.pauses; do
		if [ "$(grep -c . "$f" 2>/dev/null)" -ge 10 ]; then
			echo "ok pause-made: $(grep -c . "$f") pauses, stopped for (ms, stop acknowledged to" \
				"cont sent): $(awk '{ printf "%s%.0f", (NR > 1 ? " " : ""), ($4 - $3) * 1000 }' "$f")"
		else
			echo "FAIL pause-made: $(grep -c . "$f" 2>/dev/null) pauses made (want $pauses_n, at least 10)"
			r=1
		fi
	done
	chk_trials
	trials=
}

# vcpustop: the guest's second vCPU stopped alone by the host (see the list above)
vcpustop_s=${PORTLOGD_VM_VCPUSTOP_S:-12}
# vcpu_threads: the host threads of the guest's vCPUs, by index (QMP query-cpus-fast)
vcpu_threads() {
	printf '{"execute":"qmp_capabilities"}\n{"execute":"query-cpus-fast"}\n' |
		socat -t 2 - UNIX-CONNECT:"$run/qmp.sock" 2>>"$run/qmp.log" | tee -a "$run/qmp.log" |
		python3 -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line).get("return")
    if isinstance(r, list):
        print(" ".join(str(c["thread-id"]) for c in sorted(r, key=lambda c: c["cpu-index"])))'
}
scn_vcpustop() {
	vcpu_tids=$(vcpu_threads)
	if [ "$(nproc)" -lt 2 ] || [ "${vcpu_tids%% *}" = "${vcpu_tids##* }" ]; then
		echo "SKIP vcpustop: no vCPU stops alone here (host CPUs $(nproc), vCPU threads ${vcpu_tids:-?})"
		return 0
	fi
	mkdir -p "$run/trials"
	send "IRQCPU ttyS1 1"
	expect "*TEST IRQCPU *" 30 || fail "vcpustop: no answer to IRQCPU"
	echo "${reply#*TEST IRQCPU }" >"$run/trials/vcpustop.irq"
	trial_sim="--hold 0" trial_during=vcpu_stopper trial_load="vCPU 1 stopped" \
		trial_want="--want-marked,--pauses,$run/trials/@ID@.pauses" \
		trial vcpustop-9600-root 9600 8 root ttyS1="$run/ser1.sock"
	send "IRQCPU ttyS1 0-1"
	expect "*TEST IRQCPU *" 30 || fail "vcpustop: no answer to IRQCPU"
	echo "${reply#*TEST IRQCPU }" >>"$run/trials/vcpustop.irq"
}
# vcpu_stopper ID: QEMU's threads on host CPU 0 but the second vCPU's (vcpu_tids, as
# scn_vcpustop found them), alone on CPU 1, where portlogd-stall's loop takes the CPU from
# it now and then; all of QEMU's CPUs after
vcpu_stopper() {
	if taskset -a -p -c 0 "$qpid" >/dev/null && taskset -p -c 1 "${vcpu_tids##* }" >/dev/null; then
		PORTLOGD_SEED=$((seed + 600)) "$build/tests/portlogd-stall" --mode cpu:1 --min-ms 30 \
			--max-ms 200 --pause-ms 300-1000 --log "$run/trials/$1.pauses" -- sleep "$vcpustop_s" \
			2>"$run/trials/$1.load" ||
			{ echo "FAIL vcpustop: portlogd-stall: $(cat "$run/trials/$1.load")"; r=1; }
	else
		echo "FAIL vcpustop: QEMU's threads not pinned (taskset)"
		r=1
	fi
	taskset -a -p -c "0-$(($(nproc) - 1))" "$qpid" >/dev/null || true
}
# the trial's checks; ten stops or more and the trial's interrupts mostly on the second
# vCPU (IRQCPU's counts before and after), else the stops decided nothing
chk_vcpustop() {
	local f n d
	for f in "$run"/trials/vcpustop-*.load; do
		[ -f "$f" ] || continue
		n=$(sed -n 's/^portlogd-stall: \([0-9]*\) stalls.*/\1/p' "$f")
		# the interrupts during the trial on CPU 0 and CPU 1
		d=$(sed -n 's/.* counts=\([0-9]*\),\([0-9]*\).*/\1 \2/p' "$run/trials/vcpustop.irq" |
			awk 'NR == 1 { a = $1; b = $2 } NR == 2 { print $1 - a, $2 - b }')
		if [ "${n:-0}" -ge 10 ] && [ -n "$d" ] && [ "${d#* }" -gt "${d% *}" ]; then
			echo "ok vcpustop-made: $(sed -n 's/^portlogd-stall: \([0-9]* stalls\)/\1/p' "$f");" \
				"ttyS1's interrupts on" \
				"CPU 0, CPU 1 meanwhile: $d"
		else
			echo "FAIL vcpustop-made: $(cat "$f" 2>/dev/null); ttyS1's interrupts on CPU 0," \
				"CPU 1 meanwhile: ${d:-?} (want 10 stops or more, most interrupts on CPU 1)"
			r=1
		fi
	done
	chk_trials
	trials=
}

# rtload: ttyS1 at 9600 as root, quiet, then under a SCHED_FIFO 50 busy loop on every
# guest CPU (RTLOAD: PORTLOGD_VM_RTLOAD bursts of 30-200 ms, all CPUs at once, 150-400
# ms apart: under RT throttling's 950 ms a second) below the daemon's readers and
# sensors (97): the kernel's tty worker (SCHED_OTHER) waits behind it
rtload_n=${PORTLOGD_VM_RTLOAD:-12}
scn_rtload() {
	trial_load=none trial rtload-quiet-9600-root 9600 8 root ttyS1="$run/ser1.sock"
	trial_during=rtload_during trial_load="SCHED_FIFO 50" trial_want=--want-marked \
		trial rtload-fifo50-9600-root 9600 8 root ttyS1="$run/ser1.sock"
}
# rtload_during ID: the guest's bursts (their plan from the seed), answered when done
rtload_during() {
	local i len off=300 plan="" longest=0
	RANDOM=$((seed + 500))
	for i in $(seq 1 "$rtload_n"); do
		len=$((30 + RANDOM % 171))
		plan="$plan $off:$len"
		off=$((off + len + 150 + RANDOM % 251))
		[ $len -le $longest ] || longest=$len
	done
	send "RTLOAD $1$plan"
	expect "*TEST RTLOAD $1 *" 120 || fail "$1: no answer to RTLOAD"
	echo "$1: ${reply#*TEST RTLOAD $1 } longest_ms=$longest" >"$run/trials/$1.load"
}
# the trials' checks, and the load's: the tty probe late by at least half the longest
# burst (a probe written in a burst comes back when it ends: the worker starved; half,
# for the CPUs' bursts beginning apart), else the load decided nothing
chk_rtload() {
	local f id max want
	cat "$run"/trials/rtload-fifo50-*.load 2>/dev/null || true
	chk_trials
	trials=
	for f in "$run"/trials/rtload-fifo50-*.load; do
		id=$(basename "$f" .load)
		max=$(sensors "$run/vmtest/trials/$id/portlogd.log" | cut -d' ' -f5)
		want=$(($(sed -n 's/.* longest_ms=\([0-9]*\).*/\1/p' "$f" 2>/dev/null || echo 0) * 500))
		if [ -n "$max" ] && [ "$want" -gt 0 ] && [ "$max" -ge "$want" ]; then
			echo "ok rtload-tty $id: the tty probe came back up to $max us late under the load" \
				"(want >= $want: half its longest burst)"
		else
			echo "FAIL rtload-tty $id: the tty probe came back at most ${max:-?} us late under the load" \
				"(want >= ${want:-?} us, half its longest burst): the load decided nothing"
			r=1
		fi
	done
}

# usbplug: the service logs the adapter (usb0) and ttyS1; PORTLOGD_VM_USBPLUG times: 40
# packets paced into the adapter at 9600 baud, a pause for the daemon to read them, the
# adapter unplugged and plugged in again (the guest says what it sees after each: USBDEV
# waits up to 30 s for the state asked), and the daemon's next EV open of usb0 (USBOPENS:
# its descriptors, threads, restarts, and the new device's latency_timer)
usbplug_sent=
scn_usbplug() {
	local i n=$usbplug_n rc
	mkdir -p "$run/usbplug"
	: >"$run/usbplug.txt"
	send "SERVICE usbplug 9600 usb"
	expect "*TEST SERVICE*" 120 || fail "usbplug: no answer to SERVICE"
	send "USBOPENS 1"
	expect "*TEST USBOPENS*" 60 || fail "usbplug: no answer to USBOPENS"
	echo "0 ${reply#*TEST USBOPENS }" >"$run/usbplug/proc.txt"
	for i in $(seq 1 "$n"); do
		rc=0
		timeout 120 "$build/tests/portlogd-sim" --connect usb0="$run/usb0.in" --pace -b 9600 \
			--lens 20 --gap-chars 5-5 -n 40 -G 4000 -s $((seed + 300 + i)) \
			-o "$run/usbplug/$i.sent" >"$run/usbplug/$i.sim" 2>&1 || rc=$?
		[ $rc = 0 ] || { cat "$run/usbplug/$i.sim"; echo "FAIL usbplug: portlogd-sim ($rc)"; }
		usbplug_sent="$usbplug_sent --sent $run/usbplug/$i.sent"
		sleep 0.5                          # read, its packet ended (gap), flushed
		qmp '{"execute":"device_del","arguments":{"id":"ftdi0"}}'
		send "USBDEV absent"
		expect "*TEST USBDEV*" 60 || fail "usbplug: no answer to USBDEV absent"
		echo "$i ${reply#*TEST USBDEV }" >>"$run/usbplug.txt"
		qmp "{\"execute\":\"device_add\",\"arguments\":{$usb_dev}}"
		send "USBDEV present"
		expect "*TEST USBDEV*" 60 || fail "usbplug: no answer to USBDEV present"
		echo "$i ${reply#*TEST USBDEV }" >>"$run/usbplug.txt"
		send "USBOPENS $((i + 1))"
		expect "*TEST USBOPENS*" 60 || fail "usbplug: no answer to USBOPENS"
		echo "$i ${reply#*TEST USBOPENS }" >>"$run/usbplug/proc.txt"
	done
	send "COPYLOG usbplug"
	expect "*TEST COPYLOG*" 120 || fail "usbplug: no answer to COPYLOG"
}
# every byte sent logged (those QEMU did not take, lost on the wire, aside), the link gone
# after each device_del and the same one back after each device_add, one EV close and one
# EV open a cycle, latency_timer 1 on each new adapter, descriptors and threads as at the
# start, the same main PID and no restart
chk_usbplug() {
	local n=$usbplug_n f0 f1 bad=0 links
	# shellcheck disable=SC2086
	"$build/tests/vm_wire" --windows --log "$run/vmtest/usbplug/portlogd.log" $usbplug_sent \
		--port usb0 --baud 9600 --label usbplug >"$run/usbplug/vm_wire.txt" 2>&1 ||
		{ cat "$run/usbplug/vm_wire.txt"; echo "FAIL usbplug: vm_wire"; r=1; return 0; }
	grep -v '^vm_w' "$run/usbplug/vm_wire.txt" | grep -v '^  window' | grep -v '^    '
	grep '^vm_window ' "$run/usbplug/vm_wire.txt" | awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		s += v["sent"]; w += v["written"]; l += v["logged"]; lw += v["lost_wire"]; m += v["missing"]
		if (v["missing"] > 0) printf "FAIL usbplug cycle %d: %d bytes written, %d logged\n", v["window"], v["written"], v["logged"] }
		END { printf "%s usbplug-bytes: %d cycles: %d bytes sent, %d written (%d lost on the wire), %d logged, %d written but not logged\n", (m > 0 ? "FAIL" : "ok"), NR, s, w, lw, l, m
		exit m > 0 }' || r=1
	# the link: gone after each device_del, the same back after each device_add
	links=$(sed -n 's/.* byid=\([^ ]*\).*/\1/p' "$run/usbplug.txt" | sort | uniq -c | tr -s ' ' | tr '\n' ';')
	if [ "$(grep -c 'byid=none' "$run/usbplug.txt")" = "$n" ] &&
		[ "$(grep -v 'byid=none' "$run/usbplug.txt" | sed -n 's/.* byid=\([^ ]*\).*/\1/p' | sort -u | wc -l)" = 1 ]; then
		echo "ok usbplug-link: after each of $n device_del no by-id link, after each device_add the same one ($links)"
	else
		echo "FAIL usbplug-link: $links (want none after each device_del, one and the same after each device_add)"; r=1
	fi
	# the daemon: one open a cycle, latency_timer 1, descriptors and threads as at start
	f0=$(head -1 "$run/usbplug/proc.txt") f1=$(tail -1 "$run/usbplug/proc.txt")
	kv() { echo "$1" | sed -n "s/.* $2=\([^ ]*\).*/\1/p"; }
	for k in pid fds threads nrestarts; do
		[ "$(kv "$f0" $k)" = "$(kv "$f1" $k)" ] || bad=1
	done
	[ "$(kv "$f1" opens)" = $((n + 1)) ] && [ "$(kv "$f1" closes)" = "$n" ] || bad=1
	[ "$(grep -c 'latency_timer=1$' "$run/usbplug/proc.txt")" = $((n + 1)) ] || bad=1
	if [ $bad = 0 ]; then
		echo "ok usbplug-daemon: start: $f0; end: $f1; latency_timer=1 on all $((n + 1)) devices"
	else
		echo "FAIL usbplug-daemon: start: $f0; end: $f1 (want the same pid, fds, threads and" \
			"nrestarts, $((n + 1)) opens and $n closes, latency_timer=1 each time):"
		cat "$run/usbplug/proc.txt"; r=1
	fi
	echo "usbplug: the log's usb0 events: $(grep -c ' usb0 EV open ' "$run/vmtest/usbplug/portlogd.log") open," \
		"$(grep -c ' usb0 EV close ' "$run/vmtest/usbplug/portlogd.log") close, $(grep ' usb0 EV open ' \
		"$run/vmtest/usbplug/portlogd.log" | grep -c 'latency_timer=1') with latency_timer=1"
}

# restarts: the service on ttyS1 at 9600 (the test's config) while bytes flow in, one
# window of traffic per kind of restart: 3 s before it, the restart (the guest answers
# once the new daemon has opened the port), 3 s after
restart_sent=
restart_kinds=${PORTLOGD_VM_RESTARTS:-restart reload upgrade watchdog kill9 stopstart}
scn_restarts() {
	local k n=0
	mkdir -p "$run/restarts"
	send "RESTARTS begin"
	expect "*TEST RESTARTS begin*" 180 || fail "restarts: no answer to RESTARTS begin"
	for k in $restart_kinds; do
		paced line1 "$run/restarts/$k.sent" $((seed + 100 + n))
		sleep 3
		send "RESTART $k"
		expect "*TEST RESTART $k *" 180 || fail "restarts: no answer to RESTART $k"
		echo "$k ${reply#*TEST RESTART $k }" >>"$run/restarts/guest.txt"
		sleep 3
		stop_paced
		sed -n 's/^# /  '"$k"' /p' "$run/restarts/$k.sent"
		restart_sent="$restart_sent --sent $run/restarts/$k.sent"
		n=$((n + 1))
	done
	send "RESTARTS end"
	expect "*TEST RESTARTS end*" 120 || fail "restarts: no answer to RESTARTS end"
}
# each window's bytes: sent (written, and lost on the wire while nobody emptied the UART),
# logged, lost, held (issue 22's table). The service keeps its ports in systemd's file
# descriptor store: every kind that restarts it (all but stopstart, whose stop empties the
# store, and reload, which restarts nothing) loses nothing it had not read and says what it
# held; kill9 (and watchdog, whose SIGABRT kills) loses what the killed daemon had read but
# not written, one hole at most
chk_restarts() {
	local out=$run/restarts/vm_wire.txt
	# shellcheck disable=SC2086
	"$build/tests/vm_wire" --windows --log "$run/vmtest/restarts/portlogd.log" $restart_sent \
		--port line1 --baud 9600 --label restarts >"$out" 2>&1 || { cat "$out"; echo "FAIL restarts: vm_wire"; r=1; return 0; }
	grep -v '^vm_w' "$out"
	echo "--- what the guest did in each (seconds from the command; main PIDs; descriptors in the store)"
	cat "$run/restarts/guest.txt"
	echo "--- issue 22's table (bytes; on the wire: the host's bytes the guest's UART did not take)"
	echo "| restart | sent | lost on the wire | logged | written, not logged (holes) | held, marked | store |"
	echo "|---|---|---|---|---|---|---|"
	while read -r line; do
		local w k st
		w=$(echo "$line" | sed -n 's/.* window=\([0-9]*\).*/\1/p')
		k=$(echo $restart_kinds | cut -d' ' -f"$w")
		st=$(sed -n "s/^$k .* fdstore=\([^ ]*\).*/\1/p" "$run/restarts/guest.txt")
		echo "$line" | awk -v k="$k" -v st="$st" '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			printf "| %s | %d | %d | %d | %d (%d) | %d | %s |\n", k, v["sent"], v["lost_wire"], v["logged"],
				v["missing"], v["holes"], v["held"], st }'
		case $k in
		restart | upgrade | reload)
			echo "$line" | grep -q ' missing=0 ' || { echo "FAIL restarts $k: bytes written but not logged"; r=1; } ;;
		watchdog | kill9)
			echo "$line" | grep -Eq ' holes=[01] ' || { echo "FAIL restarts $k: more than one hole"; r=1; } ;;
		esac
		case $k in
		restart | upgrade | watchdog | kill9)
			echo "$line" | grep -Eq ' held=0( |$)' && { echo "FAIL restarts $k: nothing held across it (want the port kept open, its bytes marked)"; r=1; } ;;
		esac
	done < <(grep '^vm_window ' "$out")
}

# powercut: bytes paced into ttyS1 while the service logs them, QEMU SIGKILLed at a moment
# at random, the image booted again (the kernel replays ext4's journal; the service starts
# at boot and appends to the same log), PORTLOGD_VM_POWERCUTS times; the log copied
scn_powercut() {
	local c n=$powercut_n
	mkdir -p "$run/powercut"
	: >"$run/powercut/cuts.txt"
	send "SERVICE powercut 9600"
	expect "*TEST SERVICE*" 120 || fail "powercut: no answer to SERVICE"
	for c in $(seq 1 "$n"); do
		paced line1 "$run/powercut/sent$c" $((seed + 200 + c))
		sleep "$((3 + RANDOM % 6)).$((RANDOM % 10))"
		kill -KILL "$qpid"
		echo "$c $(date +%s.%N)" >>"$run/powercut/cuts.txt"
		wait "$qpid" 2>/dev/null || true
		qpid=
		stop_paced
		dumpe2fs -h "$run/rootfs.img" 2>/dev/null | grep -E '^(Filesystem state|Filesystem features):' \
			>"$run/powercut/fs-after-cut$c.txt"
		echo "powercut $c: QEMU killed; the image: $(tr '\n' ' ' <"$run/powercut/fs-after-cut$c.txt")"
		phase "$name:powercut$c-cut"
		mv "$run/console.log" "$run/console-$c.log"
		boot_qemu
		guest_up "$boot_limit" again
		phase "$name:powercut$c-boot"
	done
	send "COPYLOG powercut"
	expect "*TEST COPYLOG*" 120 || fail "powercut: no answer to COPYLOG"
}
# the log after the cuts: no line the log's reader refuses (a torn one: EV repair cuts it at
# the next start), every cut's loss one hole at the end of its window, of bytes sent at
# most sync_interval_ms + flush_interval_ms (the test's config: 1000 + 100) before the cut,
# and a second of margin for a guest under TCG, whose vCPUs stall for hundreds of ms on a
# loaded host (the bound tells a sync every interval from none: ext4 alone commits every
# 5 s); the image's check by e2fsck
chk_powercut() {
	local torn c sent="" out=$run/powercut/vm_wire.txt
	for c in $(cut -d' ' -f1 "$run/powercut/cuts.txt"); do sent="$sent --sent $run/powercut/sent$c"; done
	# shellcheck disable=SC2086
	"$build/tests/vm_wire" --windows --log "$run/vmtest/powercut/portlogd.log" $sent \
		--port line1 --baud 9600 --label powercut >"$out" 2>"$run/powercut/vm_wire.err" ||
		{ echo "FAIL powercut: vm_wire"; r=1; }
	grep -v '^vm_w' "$out"
	torn=$(grep -c . "$run/powercut/vm_wire.err" || true)
	echo "| cut | bytes sent | lost on the wire | logged | lost (holes) | packets lost | first lost sent before the cut | bound |"
	echo "|---|---|---|---|---|---|---|---|"
	for c in $(cut -d' ' -f1 "$run/powercut/cuts.txt"); do
		local at line hole
		at=$(sed -n "s/^$c //p" "$run/powercut/cuts.txt")
		line=$(grep "^vm_window .* window=$c " "$out")
		# the window's last hole: its bytes and the host time of its first packet's write
		hole=$(awk -v w="$c" '/^  window / { n = $2 + 0 }
			n == w && /hole of/ { b = $3; for (i = 1; i <= NF; i++) if ($i == "at") t = $(i + 1) }
			END { print b + 0, (t == "" ? 0 : t) }' "$out")
		echo "$line $hole" | awk -v c="$c" -v cut="$at" '{ for (i = 2; i <= NF - 2; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			b = $(NF - 1); t = $NF; ms = t > 0 ? (cut - t) * 1000 : 0
			printf "| %d | %d | %d | %d | %d (%d) | %d | %.0f ms | 1100 ms |\n", c, v["sent"], v["lost_wire"], v["logged"],
				v["missing"], v["holes"], (v["missing"] + 19) / 20, ms
			if (v["holes"] > 1 || ms > 2100) { printf "FAIL powercut %d: %d holes, the first lost byte sent %.0f ms before the cut (want one hole at the end, within 1100 ms + 1000 ms for TCG)\n", c, v["holes"], ms; exit 1 } }' || r=1
	done
	echo "powercut: $torn line(s) the log's reader refused; $(grep -c ' EV repair ' \
		"$run/vmtest/powercut/portlogd.log") EV repair line(s): $(grep ' EV repair ' \
		"$run/vmtest/powercut/portlogd.log" | tr '\n' ' ')"
	[ "$torn" = 0 ] || { echo "FAIL powercut: the log's reader refused $torn line(s) (a torn line left)"; r=1; }
	echo "powercut: the guest's kernel: $(tr '\n' ' ' <"$run/vmtest/powercut/dmesg.txt" 2>/dev/null)"
	if e2fsck -fn "$run/rootfs.img" >"$run/powercut/e2fsck.txt" 2>&1; then
		echo "ok powercut-fsck: e2fsck -fn after the last boot: $(tail -1 "$run/powercut/e2fsck.txt")"
	else
		echo "FAIL powercut-fsck: e2fsck -fn after the last boot:"; cat "$run/powercut/e2fsck.txt"; r=1
	fi
}

# boot_test NAME KVER MODEL LIST: one boot of the guest on kernel KVER, the scenarios of
# LIST in it, and their checks. A failed check adds NAME to $failed (the next kernel still
# boots); a guest that does not answer ends the whole test (fail).
boot_test() {
	local name=$1 kver=$2 model=$3 list=$4 s r=0 t_run off=0 boot_limit
	local std_sent="" std_open=0 simfail=0 lpt0=0 lpt1=0
	t_run=$(date +%s.%N)
	run=$work/$name
	where="kernel $kver ($model)"
	mkdir -p "$run"
	echo "=== kernel $kver ($model): $list"

	# --- image: an ext4 file system made from the tree, the chosen kernel beside it
	local size
	size=$(du -sm "$root" | cut -f1)
	truncate -s $((size + 700))M "$run/rootfs.img"
	mkfs.ext4 -q -F -L root -d "$root" "$run/rootfs.img" || fail "image: mkfs.ext4 -d failed"
	cp "$root/boot/vmlinuz-$kver" "$run/vmlinuz" && cp "$root/boot/initrd.img-$kver" "$run/initrd"
	phase "$name:image"

	mkfifo "$run/ctl.in" "$run/ctl.out"
	exec 4<>"$run/ctl.out"
	devices "$list"
	boot_qemu
	echo "qemu pid $qpid, accel=$accel, disk cache=$disk_cache${dev_args:+, ${dev_args[*]}}"
	boot_limit=$([ "$accel" = tcg ] && echo 400 || echo 200)
	guest_up "$boot_limit" first
	phase "$name:boot"

	for s in $list; do
		case $s in traffic | watchdog) ;; *) std_done ;; esac
		"scn_$s"
		phase "$name:$s"
	done
	std_done

	# --- the guest's power-off (package's, or asked here), then what it collected
	[ $off = 1 ] || send POWEROFF
	local end=$((SECONDS + 120))
	while kill -0 "$qpid" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
	kill -0 "$qpid" 2>/dev/null && fail "poweroff: the guest did not power off within 120 s"
	wait "$qpid" || true
	qpid=
	exec 4>&-
	debugfs -R "rdump /var/tmp/vmtest $run" "$run/rootfs.img" >"$run/debugfs.log" 2>&1
	[ -f "$run/vmtest/pkg-install.txt" ] || { cat "$run/debugfs.log"; fail "collect: nothing read from the image"; }
	phase "$name:poweroff"

	# --- checks
	echo "--- collected in the guest ($name)"
	for f in virt uname pkg-install show ps irq user status_reg watchdog show-after pkg; do
		[ -f "$run/vmtest/$f.txt" ] || continue
		echo "[$f]"; cat "$run/vmtest/$f.txt"; echo
	done
	grep -E '^(OK|WARN|FAIL) +(kernel-rt|port:)|exit=' "$run/vmtest/checksys.txt" 2>/dev/null || true
	grep -i 'overall exposure' "$run/vmtest/security.txt" 2>/dev/null || true
	echo "---"
	for s in $list; do
		if declare -F "chk_$s" >/dev/null; then "chk_$s"; fi
	done
	[ "${PORTLOGD_VM_KEEP:-0}" = 1 ] || rm -f "$run/rootfs.img"
	if [ $r != 0 ]; then
		echo "--- journal (last 20 lines)"; tail -20 "$run/vmtest/journal.txt" 2>/dev/null || true
		echo "FAIL $where: the checks marked FAIL above; what the guest collected: $run/vmtest"
		failed="$failed $name"
	fi
	phase "$name:checks"
	timings="$timings $name=$(secs "$t_run" "$(date +%s.%N)")s"
	echo "=== kernel $kver: $(secs "$t_run" "$(date +%s.%N)") s"
}

failed=
list=$first_list
for kv in $runs; do
	kver=${kv%:*}
	# named by its flavour: amd64, rt-amd64
	boot_test "$(echo "$kver" | sed 's/^[0-9.]*-[0-9]*-//')" "$kver" "${kv#*:}" "$list"
	list=$other_list
done
rm -rf "$root"
if [ -s "$work/tty.txt" ]; then
	echo "--- the tty path by the stall sensors' probe (each trial's daemon, at its stop; us)"
	echo "| kernel | trial | load | probes | late (> 1/4 period) | p50 / p99 / max | CPU stalls | CPU stall max |"
	echo "|---|---|---|---|---|---|---|---|"
	cat "$work/tty.txt"
fi
echo "timings:$timings total=$(secs "$t_all" "$(date +%s.%N)")s"
where=''
run=$work
[ -z "$failed" ] || fail "checks failed in the boot(s) on:$failed (each listed above under \"=== kernel\")"
echo "vm: all checks passed"
