#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/demo.sh - install, build, and run portlogd on two simulated serial devices and a simulated parallel port.
# DEMO_SECONDS=N runs N seconds (default 10); Ctrl-C stops earlier.
set -eu
cd "$(dirname "$0")/.."
. tests/deps.sh
# the build's packages only: the demo runs the daemon and the simulator, no test tool
portlogd_install $PORTLOGD_BUILD_PACKAGES
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target portlogd portlogd-sim >/dev/null
dir=/tmp/portlogd-demo
rm -rf "$dir"
mkdir -p "$dir"
build/tests/portlogd-sim -d "$dir" -g 20000-300000 gps:nmea plc:binary &
sim=$!
# the simulator makes the device links at once; wait for them (bounded)
for i in $(seq 50); do [ -e "$dir/gps" ] && [ -e "$dir/plc" ] && break; sleep 0.1; done
build/portlogd -f -c config/demo.conf &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null || true' INT TERM
echo "portlogd runs (pid $daemon); stopping in ${DEMO_SECONDS:-10} s, or press Ctrl-C"
# drive the simulated parallel port's status pins: a walking bit, 4 steps a second
end=$(( $(date +%s) + ${DEMO_SECONDS:-10} ))
bit=1
while [ "$(date +%s)" -lt "$end" ] && kill -0 "$daemon" 2>/dev/null; do
	printf "$(printf '\\%03o' "$bit")" |
		dd of="$dir/lpt0.sim" bs=1 seek=0 conv=notrunc status=none 2>/dev/null || true
	bit=$(( bit * 2 )); [ "$bit" -gt 128 ] && bit=1
	sleep 0.25 || break
done
kill -TERM "$daemon" 2>/dev/null || true
wait "$daemon" || true
kill -TERM "$sim" 2>/dev/null || true
wait "$sim" 2>/dev/null || true
echo
echo "== $dir/portlogd.log: $(wc -l < "$dir/portlogd.log") lines, the last 20 =="
tail -n 20 "$dir/portlogd.log"
echo
echo "Try: grep ' gps RX ' $dir/portlogd.log | head"
echo "     grep ' lpt0 IN ' $dir/portlogd.log | head"
