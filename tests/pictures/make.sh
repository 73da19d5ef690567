#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/pictures/make.sh [BUILD] - the README's screenshots of --export, made with the real programs.
#
# Runs the daemon (BUILD/portlogd, default build-plain) on the simulator: Modbus RTU
# on a pty (portlogd-sim plc:modbus) and the sim parallel port's status pins
# walked by this script; exports the log to VCD and pcapng; opens them in
# Debian's GTKWave and Wireshark under Xvfb and saves screenshots (ImageMagick's
# import) as tests/pictures/gtkwave.png and wireshark.png. Not run in CI: rerun it
# by hand after a change of the export formats, look at the PNGs, commit them.
set -eu
cd "$(dirname "$0")/../.."
build=${1:-build-plain}
. tests/deps.sh
portlogd_deps xvfb wireshark-qt imagemagick x11-utils
[ -x "$build/portlogd" ] && [ -x "$build/tests/portlogd-sim" ] || {
	echo "make.sh: build first: cmake -S . -B $build && cmake --build $build" >&2
	exit 1
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/portlogd-pictures.XXXXXX")
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

cat > "$dir/portlogd.conf" <<EOF
[logger]
log_file = $dir/portlogd.log
flush_interval_ms = 50
stat_interval_s = 0

[serial plc]
device = $dir/plc
baud = 19200
format = 8E1

[timer]
period_us = 1000

[parallel lpt0]
driver = sim
device = $dir/lpt0.sim
read = status
mask = 0xf8
EOF

# the simulator plays request/response pairs; the pins walk meanwhile
"$build/tests/portlogd-sim" -d "$dir" -n 24 -F 1 -g 40000-60000 -s 7 plc:modbus >/dev/null &
sim=$!
pids="$sim"
for i in $(seq 50); do [ -e "$dir/plc" ] && break; sleep 0.1; done
"$build/portlogd" -f -c "$dir/portlogd.conf" 2>"$dir/stderr" &
daemon=$!
pids="$pids $daemon"
for v in 128 192 200 72 88 80 112 240 248 120 56 184 152 136 128; do
	sleep 0.1
	printf "$(printf '\\%03o' "$v")" | dd of="$dir/lpt0.sim" bs=1 seek=0 conv=notrunc status=none
done
wait "$sim" || true
sleep 0.3
kill -TERM "$daemon"
wait "$daemon" || true

"$build/portlogd" --export vcd -o "$dir/pins.vcd" "$dir/portlogd.log"
"$build/portlogd" --export pcapng --source plc -o "$dir/plc.pcapng" "$dir/portlogd.log"

# a private X display
display=:$(( 90 + $$ % 9 ))
Xvfb "$display" -screen 0 1280x720x24 -nolisten tcp >/dev/null 2>&1 &
pids="$pids $!"
export DISPLAY="$display"
for i in $(seq 50); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.1; done

shot() {        # shot NAME: the screen, reduced to keep the PNG small
	import -window root "$dir/$1.raw.png"
	convert "$dir/$1.raw.png" -trim +repage -resize "1000x>" -colors 64 "tests/pictures/$1.png"
	echo "tests/pictures/$1.png: $(wc -c < "tests/pictures/$1.png") bytes"
}

# GTKWave: every wire, the whole time range
{
	echo 'set n [gtkwave::getNumFacs]'
	echo 'set all {}'
	echo 'for {set i 0} {$i < $n} {incr i} { lappend all [gtkwave::getFacName $i] }'
	echo 'gtkwave::addSignalsFromList $all'
	echo 'gtkwave::/Time/Zoom/Zoom_Full'
} > "$dir/show.tcl"
gtkwave -S "$dir/show.tcl" "$dir/pins.vcd" >/dev/null 2>&1 &
gtk=$!
pids="$pids $gtk"
sleep 5
shot gtkwave
kill "$gtk" 2>/dev/null || true

# Wireshark: the payload as Modbus RTU, a response selected
HOME=$dir wireshark -d rtacser.data,mbrtu -o mbrtu.crc_verification:TRUE -g 4 \
	-r "$dir/plc.pcapng" >/dev/null 2>&1 &
ws=$!
pids="$pids $ws"
sleep 10
shot wireshark
kill "$ws" 2>/dev/null || true
