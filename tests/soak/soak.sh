#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/soak/soak.sh [MINUTES] [BUILD] - weeks, compressed: the real daemon for MINUTES (60)
# with traffic on 8 simulated ports, and every minute what a long run meets:
#   - a rotation by the shipped logrotate config (its own state file; only the path,
#     the postrotate command and "rotate 8" rewritten: every file is kept to check);
#   - every 5 minutes, port p7 vanishes (its simulator stops, the pty and its link
#     go) and comes back 5 s later (a new simulator on the same link);
#   - once, half-way, the wall clock is stepped 2 s forward and, 5 s later, 2 s
#     back. This changes the machine's clock for everyone (it comes back within a
#     few ms of where it was);
#   - once, half-way, the log's file system (a 64 MiB tmpfs of its own) is filled
#     for 15 s and freed.
# Per minute it prints the daemon's RSS, open fds and threads, and the log's
# accounting from the latest STAT round. At the end it checks that from minute 2
# on RSS, fds and threads did not grow, that the STAT lines account for every
# record in every file, that the clock's EV lines are there, and that every
# packet was logged once (tests/soak/soak_check.c). Exit 0 when all hold.
# Root (mount, clock, SCHED_FIFO); runs in a mount namespace of its own, so the
# tmpfs goes with it. Not in ctest: it takes MINUTES. SOAK_KEEP=1 keeps the files;
# SOAK_IDLE=V sets [timer] idle_latency (off: a soak measures no latency).
set -eu
minutes=${1:-60}
build=${2:-build}
src=$(cd "$(dirname "$0")/../.." && pwd)
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
[ "$(id -u)" = 0 ] || { echo "soak: run as root (tmpfs, clock steps, SCHED_FIFO)"; exit 2; }
[ "$minutes" -ge 4 ] 2>/dev/null || { echo "soak: MINUTES must be 4 or more"; exit 2; }
for t in "$build/portlogd" "$build/tests/portlogd-sim" "$build/tests/soak_check"; do
	[ -x "$t" ] || { echo "soak: no $t (cmake --build $build)"; exit 2; }
done
command -v logrotate >/dev/null || { echo "soak: needs logrotate"; exit 2; }
if [ -z "${SOAK_NS:-}" ]; then
	# a mount namespace of our own: the tmpfs cannot outlive the run
	exec env SOAK_NS=1 unshare --mount --propagation private sh "$0" "$minutes" "$build"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/portlogd-soak.XXXXXX")
logdir=$work/log simdir=$work/dev sent=$work/sent
mkdir -p "$logdir" "$simdir" "$sent"
mount -t tmpfs -o size=64m,mode=0755 portlogd-soak "$logdir"
log=$logdir/portlogd.log
pid= sims=
cleanup() {
	for p in $sims $pid; do kill "$p" 2>/dev/null || true; done
	umount "$logdir" 2>/dev/null || true
	[ "${SOAK_KEEP:-0}" = 1 ] && echo "soak: kept $work" || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# seconds since boot (CLOCK_MONOTONIC-like: the clock steps below do not move it)
mono() { cut -d. -f1 /proc/uptime; }

cat >"$work/portlogd.conf" <<CONF
# tests/soak/soak.sh
[logger]
log_file = $log
timestamp = epoch
[timer]
# a soak measures no latency; global:0 would keep this shared machine's CPUs polling
idle_latency = ${SOAK_IDLE:-off}
CONF
for i in 0 1 2 3 4 5 6 7; do
	printf '[serial p%s]\ndevice = %s/p%s\nbaud = 115200\ngap_us = 4000\nmax_packet = 512\n' \
		"$i" "$simdir" "$i" >>"$work/portlogd.conf"
done

# one simulator per port, so that one port can vanish alone: binary packets of
# 1-64 bytes in up to 3 writes, 40-80 ms apart (about 16 a second a port)
seg=0
start_sim() {       # start_sim PORT: a new simulator on DIR/PORT, its list in $sent
	seg=$((seg + 1))
	"$build/tests/portlogd-sim" -d "$simdir" -n 0 -l 1-64 -F 3 -i 300 -g 40000-80000 -G 4000 \
		-s $((seg * 7919 + $(date +%s))) -o "$sent/$(printf '%03d' $seg)-$1" "$1" >/dev/null &
	eval "sim_$1=$!"
	sims="$sims $!"
}
stop_sim() {        # stop_sim PORT: ends after the packet it is writing, lists what it sent
	eval "p=\$sim_$1"
	kill -TERM "$p"
	wait "$p" || true
}
for i in 0 1 2 3 4 5 6 7; do start_sim p$i; done
sleep 0.3

env -u NOTIFY_SOCKET "$build/portlogd" -f -c "$work/portlogd.conf" 2>"$work/stderr" &
pid=$!
t0=$(mono)
at() {              # at SECONDS: sleeps until that long after the start
	now=$(mono)
	[ $((t0 + $1)) -le "$now" ] || sleep $((t0 + $1 - now))
}

sed -e "s|^/var/log/portlogd/\*.log|$logdir/*.log|" \
	-e "s|systemctl reload portlogd.service|kill -HUP $pid|" \
	-e "s|^\([[:space:]]*\)rotate 8$|\1rotate 100000|" \
	"$src/config/portlogd.logrotate" >"$work/logrotate.conf"
grep -q 'rotate 100000' "$work/logrotate.conf" && grep -q "kill -HUP $pid" "$work/logrotate.conf" ||
	{ echo "soak: the shipped logrotate config changed: update this script"; exit 1; }

# the schedule, in seconds from the start: a rotation and a sample every minute,
# half a minute after the daemon's STAT round (so that the file just rotated
# holds it); port p7 gone for 5 s every 5 minutes; once, in the middle of the
# run, the clock stepped and the disk full: none of them at the same time
d=$((minutes / 2))
[ $d -ge 3 ] || d=3
{
	m=1
	while [ $m -le "$minutes" ]; do echo "$((m * 60 + 30)) minute $m"; m=$((m + 1)); done
	k=1
	while [ $((k * 300 - 165)) -lt $((minutes * 60)) ]; do
		echo "$((k * 300 - 165)) vanish"
		echo "$((k * 300 - 160)) return"
		k=$((k + 1))
	done
	echo "$((d * 60 + 5)) step +2000000"
	echo "$((d * 60 + 10)) step -2000000"
	echo "$((d * 60 + 40)) diskfull"
	echo "$((d * 60 + 55)) diskfree"
} | sort -n -k1,1 >"$work/schedule"

echo "soak: $minutes minutes, 8 ports, rotation every minute, p7 gone for 5 s every 5 minutes" \
	"(from $((300 - 165)) s), clock stepped +2 s and back at $((d * 60 + 5)) s, disk full at" \
	"$((d * 60 + 40)) s for 15 s"
echo "minute   rss_kB  fds threads  records    drops accounted  in_ring    lines files"
samples=$work/samples
: >"$samples"
fail=0
while read -r t what arg; do
	at "$t"
	kill -0 "$pid" 2>/dev/null || { echo "soak: the daemon died"; cat "$work/stderr"; exit 1; }
	case $what in
	minute)
		logrotate -f -s "$work/logrotate.state" "$work/logrotate.conf" ||
			{ echo "soak: logrotate failed at minute $arg"; fail=1; }
		rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
		thr=$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status")
		fds=$(ls "/proc/$pid/fd" | wc -l)
		echo "$arg $rss $fds $thr" >>"$samples"
		# the latest STAT round, 30 s ago: in the file just rotated
		stat=$(cat "$log.1" "$log" 2>/dev/null | grep ' portlogd STAT ' | tail -n 9 | awk '
			/ STAT flusher / { for (i = 4; i <= NF; i++) if ($i ~ /^lines=/) l = substr($i, 7); next }
			{ for (i = 4; i <= NF; i++) {
				if ($i ~ /^records=/) r += substr($i, 9)
				if ($i ~ /^drops=/) d += substr($i, 7)
				if ($i ~ /^accounted=/) a += substr($i, 11) } }
			END { printf "%8d %8d %9d %8d %8d", r, d, a, r + d - a, l }')
		printf '%6s %8s %4s %7s %s %5s\n' "$arg" "$rss" "$fds" "$thr" "$stat" \
			"$(ls "$logdir" | wc -l)"
		;;
	vanish) stop_sim p7; echo "       p7 gone at $t s" ;;
	return) start_sim p7; echo "       p7 back at $t s" ;;
	diskfull)
		dd if=/dev/zero of="$logdir/filler" bs=1M 2>/dev/null || true
		echo "       log file system full at $t s ($(df -k "$logdir" | awk 'NR == 2 { print $4 }') kB free)"
		;;
	diskfree) rm -f "$logdir/filler"; echo "       log file system freed at $t s" ;;
	step)
		"$build/tests/soak_check" step "$arg" || fail=1
		echo "       clock stepped $arg us at $t s"
		;;
	esac
done <"$work/schedule"

for i in 0 1 2 3 4 5 6 7; do stop_sim p$i; done
sims=
sleep 1
kill -TERM "$pid"
wait "$pid" || { echo "soak: the daemon did not exit 0"; cat "$work/stderr"; fail=1; }
pid=

# nothing grows from minute 2 on (RSS within 64 kB: pages the kernel may move)
awk -v fail=0 '$1 == 2 { r = $2; f = $3; t = $4 } $1 > 2 && r != "" {
	if ($2 > r + 64) { print "FAIL RSS grew from " r " kB at minute 2 to " $2 " kB at minute " $1; fail = 1 }
	if ($3 > f) { print "FAIL open fds grew from " f " at minute 2 to " $3 " at minute " $1; fail = 1 }
	if ($4 > t) { print "FAIL threads grew from " t " at minute 2 to " $4 " at minute " $1; fail = 1 } }
	END { if (!fail) print "ok   RSS, open fds and threads did not grow from minute 2 to " $1; exit fail }' \
	"$samples" || fail=1

# every file, oldest first, uncompressed
mkdir -p "$work/files"
files=
for f in $(ls "$logdir" | sed -n 's/^portlogd\.log\.\([0-9]*\).*/\1/p' | sort -rn); do
	if [ -f "$log.$f.gz" ]; then
		zcat "$log.$f.gz" >"$work/files/$f"
	else
		cp "$log.$f" "$work/files/$f"
	fi
	files="$files $work/files/$f"
done
cp "$log" "$work/files/current"
# shellcheck disable=SC2086
"$build/tests/soak_check" check 512 $files "$work/files/current" -- "$sent"/* || fail=1
[ $fail -eq 0 ] && echo "soak: PASSED ($minutes minutes)" || echo "soak: FAILED"
exit $fail
