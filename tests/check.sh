#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/check.sh - install, build warning-free, and run every test: plain, ASan+UBSan, TSan.
# CHECK_BUILDS="plain asan tsan noieee1284" picks builds; PORTLOGD_SEED repeats a random run.
# In the plain build, after its ctest: the end-to-end tests again beside the stall injector
# (BUILD/tests/portlogd-stall --mode mix: SCHED_FIFO busy loops on one or every CPU, or a
# process of the run stopped, for 30-200 ms every 0.3-2 s; what holds only on a quiet
# machine fails here first; CHECK_STALL_SKIP leaves out e2e_stall, which runs its own
# injector, e2e_serial, whose boundaries e2e_stall and e2e_wire judge, and
# e2e_replay_modbus, whose replay counts answers until a fixed linger ends;
# CHECK_STALL_E2E_SKIP (PORTLOGD_E2E_SKIP) single cases; CHECK_STALL=0 skips it, a skip of
# its own fails); the central-collection test (label fleet: two rsyslogds; CHECK_FLEET=0);
# the long tests (1000 rotations; CHECK_LONG=0); the Debian package (tests/pkg/deb.sh via
# ctest -L deb, then tests/pkg/autopkgtest.sh; CHECK_DEB=0); the guest test (tests/vm/run.sh:
# that package under systemd in a QEMU guest on Debian's standard and PREEMPT_RT kernels;
# its debootstrap kept in PORTLOGD_VM_CACHE, /var/cache/portlogd-vm, for a week; CHECK_VM=0;
# a skip of its own fails). Then the sanitizer builds' ctest (3000 packets end to end).
# The work that only needs CPU runs meanwhile in the background at SCHED_IDLE (chrt
# --idle: it takes only what the tests, which mostly wait on the wire, leave idle): the
# other builds, fuzzing (tests/fuzz/fuzz.sh, FUZZ_SECONDS a target: 60; 0 skips it), and
# the other Debian architectures (tests/pkg/arch.sh for CHECK_ARCHES, "arm64 armhf i386":
# cross-built in chroots kept in /var/cache/portlogd-arch, unit tests under qemu-user;
# CHECK_ARCH=0 skips them, a skip of their own fails). Its output is printed when
# it ends (build-bg.log); CHECK_BG=0 runs it here instead, after the rest. The noieee1284
# build runs its unit tests only (an optional dependency is optional in the tests too).
set -eu
cd "$(dirname "$0")/.."
. tests/deps.sh
jobs=$(nproc)
builds=${CHECK_BUILDS:-plain asan tsan noieee1284}

build() {
	case $1 in
	plain) opts="" ;;
	asan) opts="-DPORTLOGD_ASAN=ON" ;;
	tsan) opts="-DPORTLOGD_TSAN=ON" ;;
	noieee1284) opts="-DPORTLOGD_IEEE1284=OFF" ;;
	*) echo "unknown build $1" >&2; exit 2 ;;
	esac
	echo "=== $1 build ==="
	cmake -S . -B "build-$1" -DPORTLOGD_WERROR=ON $opts >/dev/null
	cmake --build "build-$1" -j"$jobs"
}

tests_of() {
	labels="-LE long|vm|fleet|deb" env=""
	case $1 in
	asan|tsan) env="PORTLOGD_E2E_PACKETS=3000" ;;
	noieee1284) labels="-L unit" ;;
	esac
	echo "=== $1 build: ctest ==="
	env $env ctest --test-dir "build-$1" --output-on-failure --timeout 900 $labels
}

# stage NAME COMMAND...: runs it and says how long it took
stage() {
	name=$1
	shift
	t0=$(date +%s)
	"$@"
	echo "=== $name: $(($(date +%s) - t0)) s"
}

if [ "${1:-}" = --background ]; then
	for b in $builds; do
		[ "$b" = plain ] || stage "$b build" build "$b"
	done
	: >build-bg.built
	if [ "${FUZZ_SECONDS:-60}" != 0 ]; then
		stage fuzz sh tests/fuzz/fuzz.sh "${FUZZ_SECONDS:-60}"
	fi
	# last: their unit tests time things, and the plain ctest's e2e_serial sets the
	# system clock (clock_step) in its first minutes
	if [ "${CHECK_ARCH:-1}" != 0 ]; then
		echo "=== other architectures: ${CHECK_ARCHES:-arm64 armhf i386} ==="
		t0=$(date +%s)
		for a in ${CHECK_ARCHES:-arm64 armhf i386}; do
			rc=0
			sh tests/pkg/arch.sh "$a" . build-plain/arch || rc=$?
			[ $rc -eq 0 ] || { [ $rc -eq 77 ] && echo "FAIL arch: $a skipped"; exit 1; }
		done
		echo "=== other architectures: $(($(date +%s) - t0)) s"
	fi
	exit 0
fi

portlogd_deps
[ "${CHECK_ARCH:-1}" = 0 ] || portlogd_deps $PORTLOGD_ARCH_PACKAGES
t_start=$(date +%s)
bg=""
rm -f build-bg.built build-bg.log
# the background, in a process group of its own (setsid) so that it ends with this script
bg_start() {
	if [ "${CHECK_BG:-1}" != 0 ]; then
		setsid chrt --idle 0 sh tests/check.sh --background >build-bg.log 2>&1 &
		bg=$!
		trap 'kill -TERM -- "-$bg" 2>/dev/null || true' EXIT
		echo "=== background (SCHED_IDLE, pid $bg): other builds, fuzzing, architectures; build-bg.log"
	fi
}
# waits for the background's builds (1) or its end (0); fails if it failed. Without a
# background (CHECK_BG=0) it runs it here, at its end.
bg_wait() {
	case $bg in
	done) return ;;
	"") [ "$1" = 1 ] || sh tests/check.sh --background; return ;;
	esac
	while { [ "$1" = 0 ] || [ ! -e build-bg.built ]; } && kill -0 "$bg" 2>/dev/null; do
		sleep 2
	done
	[ "$1" = 1 ] && [ -e build-bg.built ] && return 0
	rc=0
	wait "$bg" || rc=$?
	trap - EXIT
	bg=done
	echo "=== background: exit $rc; its output (build-bg.log):"
	cat build-bg.log
	[ $rc -eq 0 ] || exit 1
}

case " $builds " in *" plain "*) ;; *) bg_start ;; esac
for b in $builds; do
	case $b in
	plain) ;;
	*)
		# built in the background, or here without one
		if [ -z "$bg" ]; then build "$b"; else bg_wait 1; fi
		stage "$b ctest" tests_of "$b"
		continue ;;
	esac
	stage "plain build" build plain
	bg_start
	stage "plain ctest" tests_of plain
	if [ "${CHECK_STALL:-1}" != 0 ]; then
		echo "=== plain build: end-to-end tests beside the stall injector ==="
		t0=$(date +%s)
		rc=0
		PORTLOGD_E2E_SKIP=${CHECK_STALL_E2E_SKIP:-} \
		build-plain/tests/portlogd-stall --mode mix -- ctest --test-dir build-plain \
			--output-on-failure --timeout 900 -L e2e -LE 'long|vm|fleet|deb' \
			-E "^(${CHECK_STALL_SKIP:-e2e_stall|e2e_serial|e2e_replay_modbus})\$" || rc=$?
		[ $rc -eq 0 ] || { [ $rc -eq 77 ] && echo "FAIL stalls: skipped"; exit 1; }
		echo "=== stalls: $(($(date +%s) - t0)) s"
	fi
	if [ "${CHECK_FLEET:-1}" != 0 ]; then
		echo "=== plain build: central collection (rsyslog) ==="
		stage fleet ctest --test-dir build-plain -V --timeout 900 -L fleet
	fi
	if [ "${CHECK_LONG:-1}" != 0 ]; then
		echo "=== plain build: long tests ==="
		stage long ctest --test-dir build-plain --output-on-failure --timeout 900 -L long
	fi
	if [ "${CHECK_DEB:-1}" != 0 ]; then
		echo "=== the Debian package: dpkg-buildpackage, lintian, autopkgtest ==="
		portlogd_deps $PORTLOGD_DEB_PACKAGES
		rm -rf build-plain/deb
		stage deb ctest --test-dir build-plain -V --timeout 900 -L deb
		# a skip would leave no package: the autopkgtest then fails
		stage autopkgtest sh tests/pkg/autopkgtest.sh build-plain/deb
	fi
	if [ "${CHECK_VM:-1}" != 0 ]; then
		echo "=== plain build: the guest test ==="
		# the package tests/pkg/deb.sh built, or (CHECK_DEB=0) one run.sh builds
		portlogd_deps $PORTLOGD_VM_PACKAGES $PORTLOGD_DEB_PACKAGES
		deb=$(ls "$PWD"/build-plain/deb/portlogd_*.deb 2>/dev/null || true)   # ctest runs it elsewhere
		stage guest env PORTLOGD_VM_DEB="$deb" PORTLOGD_VM_REQUIRE=1 \
			PORTLOGD_VM_CACHE="${PORTLOGD_VM_CACHE-/var/cache/portlogd-vm}" \
			ctest --test-dir build-plain -V --timeout 900 -L vm
	fi
done
bg_wait 0
echo "=== check.sh: $(($(date +%s) - t_start)) s in all"
