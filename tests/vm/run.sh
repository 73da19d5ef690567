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
# One debootstrap holds every kernel of PORTLOGD_VM_KERNEL (Debian's standard one and its
# PREEMPT_RT one, linux-image-rt-amd64); each boots its own image made from that tree
# (QEMU's -kernel/-initrd choose the kernel), so every run starts from the same fresh
# guest. The first kernel's run does all of the above; the others' runs (the real-time
# kernel) do what depends on the kernel: the install under systemd, the traffic and the
# rotation, the threads and the ports' interrupt threads (irq_priority), --check-system,
# the ADC strobe's pulses counted on the host, a clean stop; not the watchdog nor the
# package's upgrade, removal and purge (systemd's and dpkg's work, the same on any kernel).
#
# Needs root (debootstrap, chroot), qemu-system-x86_64, debootstrap, mkfs.ext4, debugfs.
# KVM when /dev/kvm can be used, TCG otherwise. Exit 77 only when a tool is missing or
# QEMU cannot run at all; any failed check exits 1 and says which.
#
# Environment:
#   PORTLOGD_VM_DEB=FILE    the package to test (tests/check.sh passes the one tests/pkg/deb.sh
#                           built); without it, tests/pkg/deb-build.sh builds one from SRC
#   PORTLOGD_VM_KERNEL="PKG..."  the guest's kernel packages, each booted in turn, the first
#                           with everything (default "linux-image-amd64 linux-image-rt-amd64")
#   PORTLOGD_VM_CACHE=DIR   keep the debootstrapped rootfs in DIR and reuse it while it
#                           holds every package listed below (development; CI builds it anew)
#   PORTLOGD_VM_REQUIRE=1   a skip (a tool missing, QEMU unable to start) fails instead
#                           (tests/check.sh: CI installs the tools, so a skip is a fault)
#   PORTLOGD_VM_PACKETS=N   packets played before the watchdog (default 3000)
#   PORTLOGD_VM_BREAK=unit|ready|irq|strobe[,...]  break the service on purpose, to see
#                           the test fail:
#                           unit: a drop-in with PrivateDevices=yes (hides /dev/ttyS1);
#                           ready: the daemon runs without NOTIFY_SOCKET (never READY=1);
#                           irq: irq_priority = off (the interrupt thread stays at 50,
#                           nothing said); strobe: strobe_level = high (the pin's rest
#                           level at open is a pulse to QEMU: one byte more than samples)
#   PORTLOGD_VM_KEEP=1      keep the work directory (it is printed)
#   PORTLOGD_VM_MIRROR=URL  the Debian mirror (default: the host's apt sources)
set -eu
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
packets=${PORTLOGD_VM_PACKETS:-3000}
seed=${PORTLOGD_SEED:-$(date +%s)}
kernel_pkgs=$(echo ${PORTLOGD_VM_KERNEL:-linux-image-amd64 linux-image-rt-amd64} | tr ',' ' ')
# the guest's packages (the daemon's libraries: dpkg -i in the guest resolves nothing);
# the cache is reused only while it holds all of this list
include=systemd,systemd-sysv,udev,kmod,$(echo $kernel_pkgs | tr ' ' ','),libieee1284-3,libserialport0,libinih1,libsystemd0,procps,util-linux,logrotate

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
	elif [ "$1" != 0 ] && [ "$1" != 77 ] && ls -d "$work"/*/vmtest >/dev/null 2>&1; then
		# a failure: keep what the guest collected, the packets sent and the console
		rm -rf "$work/rootfs" "$work/deb" "$work/upgrade" "$work/portlogd-upgrade.deb" \
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
sed -i "s/^Version: .*/Version: $version+vmtest1/" "$work/upgrade/DEBIAN/control"
dpkg-deb -b "$work/upgrade" "$work/portlogd-upgrade.deb" >/dev/null
rm -rf "$work/upgrade"
echo "package $(basename "$deb"), upgrade $(dpkg-deb -f "$work/portlogd-upgrade.deb" Version)"
phase deb

# --- debootstrap: a minimal bookworm with a kernel and the daemon's libraries
. "$src/tests/deps.sh"          # portlogd_mirror
mirror=${PORTLOGD_VM_MIRROR:-$(portlogd_mirror)}
cache=${PORTLOGD_VM_CACHE:-}
# in_cache: the cached tree holds every package of $include (a tree made with both kernels
# serves a run that boots one of them)
in_cache() {
	[ -n "$cache" ] && [ -f "$cache/stamp" ] || return 1
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

# --- boot: ttyS0 console (a file), ttyS1 data (a socket), ttyS2 control (two fifos), lpt
# start_qemu ACCEL CPU: boots $run's image in the background
start_qemu() {
	: >"$run/console.log"
	qemu-system-x86_64 -machine pc,accel=$1 -cpu "$2" -smp 2 -m 768M \
		-kernel "$run/vmlinuz" -initrd "$run/initrd" \
		-append "console=ttyS0,115200 root=/dev/vda rw fsck.mode=skip loglevel=4" \
		-drive file="$run/rootfs.img",format=raw,if=virtio,cache=unsafe \
		-display none -no-reboot -monitor none -nic none \
		-serial file:"$run/console.log" \
		-chardev socket,id=ser1,path="$run/ser1.sock",server=on,wait=off -serial chardev:ser1 \
		-chardev pipe,id=ctl,path="$run/ctl" -serial chardev:ctl \
		-chardev file,id=lpt0,path="$run/lpt.out" -parallel chardev:lpt0 \
		>"$run/qemu.log" 2>&1 &
	qpid=$!
	accel=$1
}
# KVM when /dev/kvm opens and a guest kernel really runs under it (a nested KVM may
# answer the API yet fail on an MSR, or never get the kernel going): it must print
# "Linux version" within 20 s; otherwise TCG. Found out at the first boot, kept after.
accel=
kvm_probed=0
boot_qemu() {
	if [ $kvm_probed = 0 ]; then
		kvm_probed=1
		if [ -c /dev/kvm ] && { exec 5<>/dev/kvm; } 2>/dev/null; then
			exec 5>&-
			# no arch-capabilities: a nested KVM refuses that MSR
			start_qemu kvm max,-arch-capabilities
			local i=0
			until grep -q 'Linux version' "$run/console.log" || [ $i -ge 100 ] ||
				! kill -0 $qpid 2>/dev/null; do
				sleep 0.2
				i=$((i + 1))
			done
			grep -q 'Linux version' "$run/console.log" && return 0
			echo "KVM: no kernel output after $((i / 5)) s ($(head -c 300 "$run/qemu.log" | tr '\n' ' ')); using TCG"
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
lpt_bytes() { stat -c %s "$run/lpt.out" 2>/dev/null || echo 0; }

# boot_test NAME KVER MODEL FULL: one boot of the guest on kernel KVER and its checks;
# FULL=1 adds the watchdog and the package's upgrade, removal and purge. A failed check
# adds NAME to $failed (the next kernel still boots); a guest that does not answer ends
# the whole test (fail).
boot_test() {
	local name=$1 kver=$2 model=$3 full=$4 simfail=0 lpt0 lpt1 r=0 t_run
	t_run=$(date +%s.%N)
	run=$work/$name
	where="kernel $kver ($model)"
	mkdir -p "$run"
	echo "=== kernel $kver ($model$([ "$full" = 1 ] && echo ", everything" || echo ", the kernel's part"))"

	# --- image: an ext4 file system made from the tree, the chosen kernel beside it
	local size
	size=$(du -sm "$root" | cut -f1)
	truncate -s $((size + 700))M "$run/rootfs.img"
	mkfs.ext4 -q -F -L root -d "$root" "$run/rootfs.img" || fail "image: mkfs.ext4 -d failed"
	cp "$root/boot/vmlinuz-$kver" "$run/vmlinuz" && cp "$root/boot/initrd.img-$kver" "$run/initrd"
	phase "$name:image"

	mkfifo "$run/ctl.in" "$run/ctl.out"
	exec 4<>"$run/ctl.out"
	boot_qemu
	echo "qemu pid $qpid, accel=$accel"
	local boot_limit
	boot_limit=$([ "$accel" = tcg ] && echo 400 || echo 200)
	# the guest says MARK before it starts the daemon with the test's config: what reached
	# lpt.out until then (the kernel probing the port) is not the strobe's
	r=0
	expect "*TEST MARK*" "$boot_limit" || r=$?
	if [ $r = 0 ]; then
		lpt0=$(lpt_bytes)
		send GO
		expect "*TEST READY*" 200 || r=$?
	fi
	if [ $r != 0 ]; then
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
		fail "boot: no VMTEST MARK and READY from the guest within $boot_limit + 200 s"
	fi
	phase "$name:boot"

	# --- traffic: packets into ttyS1 at most as fast as 115200 baud allows, fragmented,
	# 8-12 ms apart (the guest's gap_us is 3 ms); the log rotated in the middle
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
	phase "$name:traffic"

	# --- collect: the running service's state; the watchdog and more packets to the new
	# daemon (FULL); the daemon stopped (lpt.out then holds all its strobes)
	send COLLECT
	expect "*TEST COLLECT*" 120 || fail "collect: no answer to COLLECT"
	local sent="--sent $run/sent1.txt"
	if [ "$full" = 1 ]; then
		send WATCHDOG
		expect "*TEST WATCHDOG*" 120 || fail "collect: no answer to WATCHDOG"
		sim 200 "$run/sent2.txt" $((seed + 1)) ||
			{ cat "$run/sim.log"; echo "traffic: portlogd-sim (after the restart) failed"; simfail=1; }
		sent="$sent --sent $run/sent2.txt"
		sleep 1
	fi
	send DONE
	expect "*TEST DONE" 120 || fail "collect: no answer to DONE"
	lpt1=$(lpt_bytes)
	echo "lpt.out: $lpt0 bytes before the test's daemon started, $((lpt1 - lpt0)) while it ran"
	phase "$name:collect"

	# --- package (FULL): the user re-enables and starts the service, then upgrade,
	# remove, purge; then the guest powers off
	if [ "$full" = 1 ]; then
		send PACKAGE
		expect "*TEST PACKAGE*" 300 || fail "package: no answer to PACKAGE"
	else
		send POWEROFF
	fi
	local end=$((SECONDS + 120))
	while kill -0 "$qpid" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
	kill -0 "$qpid" 2>/dev/null && fail "package: the guest did not power off within 120 s"
	wait "$qpid" || true
	qpid=
	exec 4>&-
	debugfs -R "rdump /var/tmp/vmtest $run" "$run/rootfs.img" >"$run/debugfs.log" 2>&1
	[ -f "$run/vmtest/show.txt" ] || { cat "$run/debugfs.log"; fail "collect: nothing read from the image"; }
	[ "${PORTLOGD_VM_KEEP:-0}" = 1 ] || rm -f "$run/rootfs.img"
	phase "$name:$([ "$full" = 1 ] && echo package || echo poweroff)"

	# --- checks
	echo "--- collected in the guest ($name)"
	for f in virt uname pkg-install show ps irq user status_reg watchdog show-after pkg; do
		[ -f "$run/vmtest/$f.txt" ] || continue
		echo "[$f]"; cat "$run/vmtest/$f.txt"; echo
	done
	grep -E '^(OK|WARN|FAIL) +(kernel-rt|port:)|exit=' "$run/vmtest/checksys.txt" || true
	grep -i 'overall exposure' "$run/vmtest/security.txt" || true
	echo "---"
	# the watchdog: systemd kills the stopped daemon WatchdogSec after its last WATCHDOG=1,
	# then RestartSec=2s, then the start up to READY=1 (seconds under TCG):
	# WatchdogSec + 15 s. The interrupt thread of line1: auto is its reader's 70 + 1.
	# The strobe's pulses are counted only where no daemon was killed (no watchdog).
	# shellcheck disable=SC2086
	"$build/tests/vm_check" --dir "$run/vmtest" $sent --kernel "$kver" --model "$model" \
		--gap-us 3000 --prio plog-timer=90 --prio plog-lpt0=80 --prio plog-line1=70 \
		--prio plog-flush=10 --irq-want 71 --user portlogd --groups dialout,lp --max-exposure 2.0 \
		$([ "$full" = 1 ] && echo "--watchdog-margin 15" || echo "--short --lpt-pulses $((lpt1 - lpt0))") ||
		r=1
	[ $simfail = 0 ] || { echo "FAIL traffic: portlogd-sim could not play every packet into ttyS1"; r=1; }
	if [ $r != 0 ]; then
		echo "--- journal (last 20 lines)"; tail -20 "$run/vmtest/journal.txt"
		echo "FAIL $where: the checks marked FAIL above; what the guest collected: $run/vmtest"
		failed="$failed $name"
	fi
	phase "$name:checks"
	timings="$timings $name=$(secs "$t_run" "$(date +%s.%N)")s"
	echo "=== kernel $kver: $(secs "$t_run" "$(date +%s.%N)") s"
}

failed=
first=1
for kv in $runs; do
	kver=${kv%:*}
	# named by its flavour: amd64, rt-amd64
	boot_test "$(echo "$kver" | sed 's/^[0-9.]*-[0-9]*-//')" "$kver" "${kv#*:}" $first
	first=0
done
rm -rf "$root"
echo "timings:$timings total=$(secs "$t_all" "$(date +%s.%N)")s"
where=''
run=$work
[ -z "$failed" ] || fail "checks failed in the boot(s) on:$failed (each listed above under \"=== kernel\")"
echo "vm: all checks passed"
