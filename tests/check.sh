#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/check.sh - install, build warning-free, and run every test: plain, ASan+UBSan, TSan.
# CHECK_BUILDS="plain asan tsan" picks builds; PORTLOGD_SEED repeats a random run.
# The tests labelled "long" (1000 rotations) run once, in the plain build; CHECK_LONG=0 skips them.
# The Debian package runs once, after the plain build's tests: tests/pkg/deb.sh (ctest -L deb:
# dpkg-buildpackage from a copy of the tree, lintian with no error or warning, its contents),
# then tests/pkg/autopkgtest.sh (debian/tests on the installed package, null runner, no network;
# it installs and then purges the package here). CHECK_DEB=0 skips both.
# The guest test (tests/vm/run.sh: that package under systemd in a QEMU guest, installed,
# upgraded, removed and purged; then again on Debian's PREEMPT_RT kernel; 9-14 min under
# TCG) runs once, after them, printing its phase timings and checks (-V); CHECK_VM=0
# skips it. Here a skip of its own counts as a failure.
# After the plain build's tests, its end-to-end tests run again beside the stall injector
# (BUILD/tests/portlogd-stall --mode mix: SCHED_FIFO busy loops on one or every CPU, or a
# process of the run stopped, for 30-200 ms every 0.3-2 s), printing the stalls' summary:
# what holds only on a quiet machine fails here first; the tests that judge packet
# boundaries (e2e_wire, e2e_faults' garbage) hold every boundary proven or marked through
# it. Left out (CHECK_STALL_SKIP): e2e_stall (it runs its own injector), e2e_serial (its
# boundaries are e2e_stall's and e2e_wire's to judge; 3 min here), and e2e_replay_modbus,
# whose replay counts the answers that came back only until a fixed linger ends (the
# replay's to change); PORTLOGD_E2E_SKIP (CHECK_STALL_E2E_SKIP) leaves out single cases.
# ~3 min; CHECK_STALL=0 skips it; a skip of its own (no SCHED_FIFO) counts as a failure.
# The central-collection test (label fleet: two rsyslogds, the daemon, logrotate; ~2 min)
# runs once, in the plain build; CHECK_FLEET=0 skips it.
# The build "noieee1284" (-DPORTLOGD_IEEE1284=OFF) runs its unit tests only (ctest -L unit).
# Then the fuzz targets run FUZZ_SECONDS (60) each, or not at all with FUZZ_SECONDS=0.
# Last, the other Debian architectures, CHECK_ARCHES ("arm64 armhf i386"; CHECK_ARCH=0
# skips them): tests/pkg/arch.sh cross-builds the package for each in a bookworm chroot
# (mmdebstrap; kept in /var/cache/portlogd-arch) with Debian's flags and -Werror, and runs
# its unit tests under qemu-user (arm64, armhf) or natively (i386). About 1 minute each
# with the chroot there, 2 without; a skip of its own counts as a failure here.
set -eu
cd "$(dirname "$0")/.."
. tests/deps.sh
portlogd_deps
jobs=$(nproc)
for b in ${CHECK_BUILDS:-plain asan tsan noieee1284}; do
	labels="-LE long|vm|fleet|deb"
	case $b in
	plain) opts="" ; env="" ;;
	asan) opts="-DPORTLOGD_ASAN=ON" ; env="PORTLOGD_E2E_PACKETS=3000" ;;
	tsan) opts="-DPORTLOGD_TSAN=ON" ; env="PORTLOGD_E2E_PACKETS=3000" ;;
	# an optional dependency is optional in the tests too: the unit tests without it
	noieee1284) opts="-DPORTLOGD_IEEE1284=OFF" ; env="" ; labels="-L unit" ;;
	*) echo "unknown build $b" >&2; exit 2 ;;
	esac
	echo "=== $b build ==="
	cmake -S . -B "build-$b" -DPORTLOGD_WERROR=ON $opts >/dev/null
	cmake --build "build-$b" -j"$jobs"
	env $env ctest --test-dir "build-$b" --output-on-failure --timeout 900 $labels
	if [ "$b" = plain ] && [ "${CHECK_STALL:-1}" != 0 ]; then
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
	if [ "$b" = plain ] && [ "${CHECK_FLEET:-1}" != 0 ]; then
		echo "=== plain build: central collection (rsyslog) ==="
		ctest --test-dir build-plain -V --timeout 900 -L fleet
	fi
	if [ "$b" = plain ] && [ "${CHECK_LONG:-1}" != 0 ]; then
		echo "=== plain build: long tests ==="
		ctest --test-dir build-plain --output-on-failure --timeout 900 -L long
	fi
	if [ "$b" = plain ] && [ "${CHECK_DEB:-1}" != 0 ]; then
		echo "=== the Debian package: dpkg-buildpackage, lintian, autopkgtest ==="
		portlogd_deps $PORTLOGD_DEB_PACKAGES
		rm -rf build-plain/deb
		ctest --test-dir build-plain -V --timeout 900 -L deb
		# a skip would leave no package: the autopkgtest then fails
		sh tests/pkg/autopkgtest.sh build-plain/deb
	fi
	if [ "$b" = plain ] && [ "${CHECK_VM:-1}" != 0 ]; then
		echo "=== plain build: the guest test ==="
		# the package tests/pkg/deb.sh built, or (CHECK_DEB=0) one run.sh builds
		portlogd_deps $PORTLOGD_VM_PACKAGES $PORTLOGD_DEB_PACKAGES
		deb=$(ls "$PWD"/build-plain/deb/portlogd_*.deb 2>/dev/null || true)   # ctest runs it elsewhere
		PORTLOGD_VM_DEB=$deb PORTLOGD_VM_REQUIRE=1 ctest --test-dir build-plain -V --timeout 900 -L vm
	fi
done
if [ "${FUZZ_SECONDS:-60}" != 0 ]; then
	echo "=== fuzz ==="
	sh tests/fuzz/fuzz.sh "${FUZZ_SECONDS:-60}"
fi
if [ "${CHECK_ARCH:-1}" != 0 ]; then
	echo "=== other architectures: ${CHECK_ARCHES:-arm64 armhf i386} ==="
	portlogd_deps $PORTLOGD_ARCH_PACKAGES
	t0=$(date +%s)
	for a in ${CHECK_ARCHES:-arm64 armhf i386}; do
		rc=0
		sh tests/pkg/arch.sh "$a" . build-plain/arch || rc=$?
		[ $rc -eq 0 ] || { [ $rc -eq 77 ] && echo "FAIL arch: $a skipped"; exit 1; }
	done
	echo "=== other architectures: $(($(date +%s) - t0)) s"
fi
