#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/bench/bench_sensors.sh - what the stall sensors cost: wake-ups and CPU, idle and under traffic.
# Not a test: it prints a table and never fails on time.
# Usage: sh tests/bench/bench_sensors.sh [BUILD_DIR] [SECONDS] [PERIODS] [OLD_PORTLOGD]
#
# The daemon on 3 simulator ptys (no traffic, then packets 10-20 ms apart), for SECONDS
# (20) each, at each sensor_period_us of PERIODS ("250 500 1000 2000"): per run, the
# sensor threads' (plog-cpuN) wake-ups a second (their context switches, from
# /proc/PID/task/TID/status), their CPU (utime + stime), the whole daemon's CPU, and the
# machine's busy share (/proc/stat: what the kernel's tty worker and interrupts add
# too). With OLD_PORTLOGD (a daemon built before the sensors), the same two runs of it
# first: the difference is the sensors' cost. Run it on a quiet machine (no other
# daemon, no benchmark); needs root for SCHED_FIFO.
set -eu
build=${1:-build}
secs=${2:-20}
periods=${3:-250 500 1000 2000}
old=${4:-}
hz=$(getconf CLK_TCK)
[ -x "$build/portlogd" ] && [ -x "$build/tests/portlogd-sim" ] ||
	{ echo "bench_sensors.sh: build $build first (portlogd, tests/portlogd-sim)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'kill $(cat "$dir"/pids 2>/dev/null) 2>/dev/null; rm -rf "$dir"' EXIT

busy() {   # the machine's busy and total jiffies
	awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat
}
# Sums over the daemon's threads whose name starts with $2: "switches ticks".
threads() {
	for t in /proc/"$1"/task/*; do
		case $(cat "$t/comm" 2>/dev/null) in "$2"*) ;; *) continue ;; esac
		sw=$(awk '/ctxt_switches/ { s += $2 } END { print s }' "$t/status")
		ti=$(awk '{ print $14 + $15 }' "$t/stat")
		echo "$sw $ti"
	done | awk '{ s += $1; t += $2 } END { printf "%d %d\n", s, t }'
}

# One run: $1 the daemon, $2 the period ("" for the old daemon), $3 traffic or idle.
run() {
	bin=$1 period=$2 what=$3
	rm -rf "$dir/run" && mkdir -p "$dir/run"
	{
		printf '[logger]\nlog_file = %s/run/portlogd.log\n' "$dir"
		[ -z "$period" ] || printf 'sensor_period_us = %s\n' "$period"
		for port in a b c; do printf "[serial %s]\ndevice = %s/run/%s\ngap_us = 3000\n" "$port" "$dir" "$port"; done
	} > "$dir/run/conf"
	# idle: one packet, then a pause longer than the run (the ptys stay open)
	g=$([ "$what" = idle ] && echo 600000000-600000001 || echo 10000-20000)
	"$build/tests/portlogd-sim" -d "$dir/run" -n 0 -g "$g" -G 3000 -s 1 \
		a:binary b:binary c:binary > /dev/null 2>&1 &
	echo $! > "$dir/pids"
	sleep 0.3
	"$bin" -f -c "$dir/run/conf" 2> "$dir/run/stderr" &
	pid=$!
	echo "$! $(cat "$dir/pids")" > "$dir/pids"
	sleep 2
	kill -0 "$pid" 2> /dev/null || { echo "the daemon ended:" >&2; cat "$dir/run/stderr" >&2; exit 1; }
	set -- $(busy) $(threads "$pid" plog-cpu) $(awk '{ print $14 + $15 }' /proc/"$pid"/stat)
	b0=$1 t0=$2 s0=$3 c0=$4 d0=$5
	sleep "$secs"
	set -- $(busy) $(threads "$pid" plog-cpu) $(awk '{ print $14 + $15 }' /proc/"$pid"/stat)
	kill "$pid" 2> /dev/null || cat "$dir/run/stderr" >&2
	wait "$pid" 2> /dev/null || true
	kill -9 $(cat "$dir/pids") 2> /dev/null || true
	awk -v w="$what" -v p="${period:-before}" -v s="$secs" -v hz="$hz" \
	    -v db=$(($1 - b0)) -v dt=$(($2 - t0)) -v ds=$(($3 - s0)) -v dc=$(($4 - c0)) -v dd=$(($5 - d0)) \
	    'BEGIN { printf "| %s | %s | %.0f | %.2f %% | %.2f %% | %.2f %% |\n", p, w, ds / s,
		     100 * dc / hz / s, 100 * dd / hz / s, 100 * db / dt }'
}

echo "bench_sensors: 3 ptys, $secs s a run, $(nproc) CPUs; CPU as a share of one CPU, busy of all"
echo
echo "| sensor_period_us | traffic | sensor wake-ups/s | sensors' CPU | daemon's CPU | machine busy |"
echo "|---|---|---|---|---|---|"
if [ -n "$old" ]; then
	run "$old" "" idle
	run "$old" "" traffic
fi
for p in $periods; do
	run "$build/portlogd" "$p" idle
	run "$build/portlogd" "$p" traffic
done
