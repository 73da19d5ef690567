# SPDX-License-Identifier: GPL-2.0-or-later
# tests/deps.sh - sourced by demo.sh and check.sh: installs missing Debian packages.
# PORTLOGD_BUILD_PACKAGES: what the build needs (cmocka: the tests' directory is configured
# with the rest), all tests/demo.sh installs; PORTLOGD_PACKAGES: those and the tests' tools.
# apt-get waits for the package manager's lock (unattended-upgrades holds it on a fresh
# machine) up to 10 minutes, instead of failing.
# systemd, man-db: systemd-analyze (verify looks up Documentation= man pages);
# dpkg-dev, file: the Debian package and its test (tests/pkg/deb.sh); groff-base: the man
# page tests; logrotate: its config's test; clang: the libFuzzer targets (tests/fuzz/fuzz.sh);
# zlib1g-dev: --export reads .gz; tshark, sigrok-cli, gtkwave (vcd2fst): e2e_export reads what --export writes (tshark
# asks whether non-root users may capture: DEBIAN_FRONTEND=noninteractive takes the default, no);
# rsyslog, rsyslog-relp: the central-collection test (e2e_fleet, label fleet); mbpoll, socat,
# python3-pymodbus, python3-serial-asyncio (which --no-install-recommends leaves out): e2e_pass's
# Modbus master and slave through pass = PATH; socat also for tests/bench/bench_relay.c;
# gpsd, gpsd-clients (gpspipe): e2e_replay's application for a replayed NMEA log (run by hand on
# loopback, never as the system's service); rt-tests: cyclictest beside tests/bench/bench_replay.c;
# prometheus-node-exporter, prometheus (promtool): e2e_metrics serves metrics_file and checks
# it, the alert rules and the dashboard's names (label metrics)
PORTLOGD_BUILD_PACKAGES="cmake make gcc libc6-dev pkg-config libserialport-dev libieee1284-3-dev
libsystemd-dev libcmocka-dev zlib1g-dev"
PORTLOGD_PACKAGES="$PORTLOGD_BUILD_PACKAGES libck-dev systemd man-db dpkg-dev file groff-base logrotate
clang tshark sigrok-cli gtkwave rsyslog rsyslog-relp mbpoll socat python3-pymodbus
python3-serial-asyncio gpsd gpsd-clients rt-tests prometheus-node-exporter prometheus"

# the Debian package (tests/pkg/deb.sh, ctest -L deb; tests/pkg/autopkgtest.sh): debhelper for
# dpkg-buildpackage, lintian, autopkgtest; python3 and man-db for debian/tests; dh-apparmor
# (a Build-Depends), apparmor's apparmor_parser parses the shipped profile.
# Install: portlogd_deps $PORTLOGD_DEB_PACKAGES
PORTLOGD_DEB_PACKAGES="debhelper lintian autopkgtest python3 man-db dh-apparmor apparmor"

# the other architectures (tests/pkg/arch.sh, a tests/check.sh stage): a chroot made by
# mmdebstrap, qemu-user for arm64 and armhf through binfmt_misc (binfmt-support's
# update-binfmts). Install: portlogd_deps $PORTLOGD_ARCH_PACKAGES
PORTLOGD_ARCH_PACKAGES="mmdebstrap qemu-user-static binfmt-support"

# the guest test (tests/vm/run.sh, ctest -L vm): QEMU, a Debian guest made by debootstrap,
# its ext4 image (mkfs.ext4 -d) read back with debugfs (e2fsck, dumpe2fs after a power cut);
# socat talks to QEMU's monitor (usbplug). Install: portlogd_deps $PORTLOGD_VM_PACKAGES
PORTLOGD_VM_PACKAGES="qemu-system-x86 debootstrap e2fsprogs socat"

# The Debian mirror of this machine's apt sources (not the security suite's), for a guest
# or a chroot of its own: tests/vm/run.sh, tests/pkg/arch.sh.
portlogd_mirror() {
	m=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null |
		grep -v security | head -1)
	echo "${m:-http://deb.debian.org/debian}"
}

# Up to 10 minutes for the lock: apt-get install waits for dpkg's itself
# (DPkg::Lock::Timeout); apt-get update's lists lock is waited for here as well.
PORTLOGD_APT_LOCK_S=600

portlogd_apt_update() {
	end=$(( $(date +%s) + PORTLOGD_APT_LOCK_S ))
	while :; do
		out=$($sudo apt-get -o DPkg::Lock::Timeout=$PORTLOGD_APT_LOCK_S update -q 2>&1) && return 0
		case $out in
		*"Could not get lock"*|*"Unable to lock"*) ;;
		*) printf '%s\n' "$out" >&2; return 1 ;;
		esac
		if [ "$(date +%s)" -ge "$end" ]; then
			printf '%s\n' "$out" >&2
			echo "portlogd: the package manager's lock is still held after" \
				"$PORTLOGD_APT_LOCK_S s (see: ps -C apt-get,apt,unattended-upgr,dpkg)" >&2
			return 1
		fi
		echo "portlogd: another package manager holds its lock (unattended-upgrades?): waiting"
		sleep 5
	done
}

# Installs the missing packages of PORTLOGD_PACKAGES and of the arguments.
portlogd_deps() {
	portlogd_install $PORTLOGD_PACKAGES "$@"
}

# Installs the missing packages of the arguments only.
portlogd_install() {
	missing=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	echo "portlogd: installing missing packages:$missing"
	if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo=sudo; else
		echo "portlogd: run as root, or install:$missing" >&2
		return 1
	fi
	# Installing rsyslog or prometheus-node-exporter would start the system's daemon
	# (invoke-rc.d, or deb-systemd-invoke under systemd); the tests run their own. A policy-rc.d that
	# exits 101 ("action forbidden") stops that, for this install only.
	policy=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null &&
			$sudo chmod 755 /usr/sbin/policy-rc.d && policy=/usr/sbin/policy-rc.d
	fi
	rc=0
	portlogd_apt_update && DEBIAN_FRONTEND=noninteractive $sudo apt-get \
		-o DPkg::Lock::Timeout=$PORTLOGD_APT_LOCK_S install -y -q --no-install-recommends \
		$missing || rc=$?
	[ -z "$policy" ] || $sudo rm -f "$policy"
	return $rc
}
