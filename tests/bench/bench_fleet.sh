#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/bench/bench_fleet.sh [BUILD] [LINES] - what one central rsyslogd takes over loopback RELP,
# with the shipped configs: LINES lines (200000) from 1 and from 4 forwarders, each
# following its own copy of a log the real daemon wrote. Prints lines/s and MB/s at the
# centre, the forwarders' CPU seconds per forwarded MB, the centre's per received MB,
# and portlogd's own CPU seconds per logged MB (4 simulated ports as fast as the
# simulator plays). A benchmark: it prints numbers, it never passes or fails. Run it on a
# quiet machine. Needs rsyslog and rsyslog-relp (tests/deps.sh).
set -eu
build=${1:-build-plain}
lines=${2:-200000}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$build" && pwd)
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
hz=$(getconf CLK_TCK)

# user + system CPU ticks of a process
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
now() { date +%s.%N; }

# 1. portlogd's own cost, and a sample of its lines
mkdir -p "$tmp/p"
cat >"$tmp/p/portlogd.conf" <<EOF
[logger]
log_file = $tmp/p/portlogd.log
[timer]
priority = other
idle_latency = off
EOF
for i in 0 1 2 3; do
	printf '[serial p%s]\ndevice = %s/p/p%s\npriority = other\n' "$i" "$tmp" "$i" >>"$tmp/p/portlogd.conf"
done
"$build/tests/portlogd-sim" -d "$tmp/p" -n 20000 -g 0-200 -l 4-200 p0 p1 p2 p3 >/dev/null &
sim=$!
pids="$pids $sim"
sleep 0.3
env -u NOTIFY_SOCKET "$build/portlogd" -f -c "$tmp/p/portlogd.conf" 2>/dev/null &
pl=$!
pids="$pids $pl"
wait $sim || true
sleep 0.5
t=$(ticks $pl)
kill -TERM $pl
wait $pl || true
bytes=$(wc -c <"$tmp/p/portlogd.log")
awk -v t="$t" -v hz="$hz" -v b="$bytes" -v n="$(wc -l <"$tmp/p/portlogd.log")" 'BEGIN {
	printf "portlogd: %d lines, %.1f MB logged, %.2f CPU s, %.3f CPU s per logged MB\n",
		n, b / 1e6, t / hz, (t / hz) / (b / 1e6) }'

if [ "$(grep -c ' RX ' "$tmp/p/portlogd.log")" -lt 1000 ]; then
	echo "bench_fleet: portlogd logged too few RX lines to stand for a PC's log (the simulator's ports?)" >&2
	exit 1
fi
# the forwarders' input: the sample, repeated to LINES lines
sample=$tmp/p/portlogd.log
: >"$tmp/input.log"
while [ "$(wc -l <"$tmp/input.log")" -lt "$lines" ]; do cat "$sample" >>"$tmp/input.log"; done
head -n "$lines" "$tmp/input.log" >"$tmp/in.log"
mb=$(awk -v b="$(wc -c <"$tmp/in.log")" 'BEGIN { print b / 1e6 }')

port=$(awk 'BEGIN { srand(); print 30000 + int(rand() * 20000) }')
run() {  # run N: N forwarders into one centre
	n=$1 d=$tmp/run$1
	mkdir -p "$d/ctr/work" "$d/central"
	sed -e "s|^\([[:space:]]*port=\)\"[0-9]*\"|\1\"$port\"|" \
		-e "s|/var/log/portlogd-central|$d/central|" \
		"$src/config/rsyslog/portlogd-central.conf" >"$d/ctr/central.conf"
	printf 'global(workDirectory="%s/ctr/work")\ninclude(file="%s/ctr/central.conf")\n' "$d" "$d" >"$d/ctr/top.conf"
	rsyslogd -n -f "$d/ctr/top.conf" -i "$d/ctr/pid" 2>"$d/ctr/err" &
	ctr=$!
	pids="$pids $ctr"
	sleep 1
	fw=""
	t0=$(now)
	for k in $(seq 1 "$n"); do
		f=$d/f$k
		mkdir -p "$f/work"
		cp "$tmp/in.log" "$f/portlogd.log"
		sed -e "s|^\([[:space:]]*target=\)\"[^\"]*\"|\1\"127.0.0.1\"|" \
			-e "s|^\([[:space:]]*port=\)\"[0-9]*\"|\1\"$port\"|" \
			-e "s|/var/log/portlogd/portlogd.log|$f/portlogd.log|" \
			-e "s|/var/log/portlogd-resend/|$f/resend/|" \
			"$src/config/rsyslog/portlogd-forward.conf" >"$f/forward.conf"
		printf 'global(workDirectory="%s/work" localHostname="pc%s")\ninclude(file="%s/forward.conf")\n' \
			"$f" "$k" "$f" >"$f/top.conf"
		rsyslogd -n -f "$f/top.conf" -i "$f/pid" 2>"$f/err" &
		fw="$fw $!"
		pids="$pids $!"
	done
	want=$((lines * n))
	while :; do
		got=$(cat "$d"/central/*/portlogd.log 2>/dev/null | wc -l)
		[ "$got" -ge "$want" ] && break
		sleep 0.2
	done
	t1=$(now)
	ft=0
	for p in $fw; do ft=$((ft + $(ticks "$p"))); done
	ct=$(ticks $ctr)
	for p in $fw $ctr; do kill -TERM "$p"; wait "$p" || true; done
	awk -v n="$n" -v l="$want" -v mb="$mb" -v s="$(echo "$t1 - $t0" | bc)" -v ft="$ft" \
		-v ct="$ct" -v hz="$hz" 'BEGIN {
		printf "%d forwarder(s) -> 1 centre: %d lines, %.1f MB in %.1f s: %.0f lines/s, %.2f MB/s; " \
			"forwarders %.3f CPU s per forwarded MB, centre %.3f CPU s per received MB\n",
			n, l, mb * n, s, l / s, mb * n / s, (ft / hz) / (mb * n), (ct / hz) / (mb * n) }'
}
run 1
port=$((port + 1))
run 4
