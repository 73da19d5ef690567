#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/bench/bench_idle.sh - [timer] idle_latency against the first-byte timestamp error and the
# CPUs' idle residency. Not a test: it prints the table and never fails on time.
# Usage: sh tests/bench/bench_idle.sh [BUILD_DIR] [SECONDS] [ROUNDS]
#
# For each setting: the daemon on 3 simulator ptys (portlogd-sim, one write per packet,
# 20-40 ms apart so that the CPUs go idle in between), for SECONDS; the first-byte error
# of every packet that is exactly one RX line (the line's TIME minus the simulator's
# clock just before its write), p50 and p99; and each CPU's residency in each idle state
# (cpuidle stateN/time deltas over the run). Settings, ROUNDS times round-robin:
#   global:0            /dev/cpu_dma_latency at 0 (the default until issue 30: every CPU polls)
#   auto                the default since: the first idle state that halts (C1) may be used,
#                       no deeper one (global:L here, L its exit latency: nothing is pinned)
#   global:L            at each idle state's exit latency L > 0 (stateN/latency)
#   off                 nothing held
#   global:0 pinned     the three readers pinned to the last CPU, every CPU held
#   pinned:0 pinned     the same pinning, only that CPU held (the auto rule's choice until issue 30)
#   auto pinned         the same pinning, the default: that CPU held at C1's exit latency
# Each setting is compared with global:0 of the same pinning: within 1.1x on p50 and p99?
# The last lines name the setting that stays within 1.1x while the most CPUs halt. A round in
# which another process held /dev/cpu_dma_latency is left out (the row says how many it used).
# Needs root (/dev/cpu_dma_latency, pm_qos_resume_latency_us). Run it on a quiet machine:
# another process that holds /dev/cpu_dma_latency (another portlogd, say) makes every
# CPU poll whatever a row sets; the script names it in a warning.
set -eu
build=${1:-build}
secs=${2:-20}
rounds=${3:-1}
cpu=/sys/devices/system/cpu
[ "$(id -u)" -eq 0 ] || { echo "bench_idle.sh: needs root" >&2; exit 2; }
[ -x "$build/portlogd" ] && [ -x "$build/tests/portlogd-sim" ] ||
	{ echo "bench_idle.sh: build $build first (portlogd, tests/portlogd-sim)" >&2; exit 2; }
[ -d $cpu/cpu0/cpuidle ] || echo "warning: no cpuidle states: residency cannot be shown" >&2
dir=$(mktemp -d)
trap 'kill $(cat "$dir"/pids 2>/dev/null) 2>/dev/null; rm -rf "$dir"' EXIT
pin=$(sed 's/.*[-,]//' $cpu/online)     # the last online CPU
packets=$((secs * 33))

# The idle states: "cpu state name latency", names without blanks ("haltpoll idle").
idle_states() {
	for s in $cpu/cpu[0-9]*/cpuidle/state[0-9]*; do
		[ -r "$s/time" ] || continue
		c=${s#$cpu/cpu}; c=${c%%/*}; n=${s##*/state}
		printf '%s %s %s %s\n' "$c" "$n" "$(tr ' ' _ < "$s/name")" "$(cat "$s/latency")"
	done
}
snapshot() {   # cpu state time_us
	for s in $cpu/cpu[0-9]*/cpuidle/state[0-9]*; do
		[ -r "$s/time" ] || continue
		c=${s#$cpu/cpu}; c=${c%%/*}
		printf '%s %s %s\n' "$c" "${s##*/state}" "$(cat "$s/time")"
	done
}
# Who else holds /dev/cpu_dma_latency (another portlogd, cyclictest): while one
# does, every CPU polls whatever the run under test sets. $1: a pid to leave out.
holders() {
	find /proc/[0-9]*/fd -lname /dev/cpu_dma_latency 2> /dev/null | cut -d/ -f3 | sort -u |
	while read -r p; do
		[ "$p" = "${1:-}" ] || printf '%s(%s) ' "$p" "$(cat /proc/"$p"/comm 2> /dev/null)"
	done
}
idle_states > "$dir/states"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
settings="global:0/any auto/any"
for l in $(awk '$4 > 0 { print $4 }' "$dir/states" | sort -nu); do
	settings="$settings global:$l/any"
done
settings="$settings off/any global:0/$pin pinned:0/$pin auto/$pin"
qos_before=$(cat $cpu/cpu[0-9]*/power/pm_qos_resume_latency_us 2>/dev/null | tr '\n' ' ')

run() {   # setting (idle/cpu) round
	idle=${1%/*} where=${1#*/} out="$dir/$(echo "$1" | tr ':/' '__').$2"
	d="$dir/run"
	rm -rf "$d"; mkdir -p "$d"
	{
		printf '[logger]\nlog_file = %s/log\ntimestamp = epoch\nstat_interval_s = 0\n' "$d"
		printf '[timer]\nidle_latency = %s\n' "$idle"
		for p in p1 p2 p3; do
			printf '[serial %s]\ndevice = %s/%s\ngap_us = 2000\n' "$p" "$d" "$p"
			[ "$where" = any ] || printf 'cpu = %s\n' "$where"
		done
	} > "$d/conf"
	others=$(holders)
	"$build/tests/portlogd-sim" -d "$d" -n "$packets" -l 4-32 -F 1 -g 20000-40000 -G 2000 \
		-o "$d/sent" p1 p2 p3 > /dev/null &
	sim=$!
	"$build/portlogd" -f -c "$d/conf" 2> "$d/err" &
	daemon=$!
	echo "$sim $daemon" > "$dir/pids"
	sleep 1
	snapshot > "$d/before"; t0=$(date +%s%N)
	wait "$sim"
	snapshot > "$d/after"; t1=$(date +%s%N)
	others="$others$(holders "$daemon")"
	[ -z "$others" ] || { echo "warning: $1 round $2: /dev/cpu_dma_latency was held by $others" \
		"too: every CPU polled, whatever this row says; the round is left out" >&2
		: > "$out.tainted"; }
	kill -TERM "$daemon"; wait "$daemon" || true
	qos_after=$(cat $cpu/cpu[0-9]*/power/pm_qos_resume_latency_us 2>/dev/null | tr '\n' ' ')
	[ "$qos_after" = "$qos_before" ] ||
		echo "warning: $1: pm_qos_resume_latency_us '$qos_after', was '$qos_before'" >&2
	grep -h 'rt-missing' "$d/err" >&2 || true
	# the first-byte error of each packet that is one RX line (payload as sent)
	awk 'FNR == NR { k = $1 SUBSEP $4; if (!(k in t)) t[k] = $2; next }
	     $3 == "RX" { k = $2 SUBSEP $5; if (k in t) printf "%.1f\n", ($1 - t[k]) * 1e6 }' \
		"$d/sent" "$d/log" > "$out.err"
	# residency: cpu state ms; and the run's wall time in ms
	awk 'FNR == NR { b[$1 " " $2] = $3; next }
		{ printf "%s %s %.0f\n", $1, $2, ($3 - b[$1 " " $2]) / 1000 }' \
		"$d/before" "$d/after" > "$out.res"
	echo $(( (t1 - t0) / 1000000 )) > "$out.wall"
}

for r in $(seq "$rounds"); do
	for s in $settings; do
		echo "round $r: $s ..." >&2
		run "$s" "$r"
	done
done

echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
# One row per setting, all rounds together.
echo "idle states: $(awk '$1 == 0 { printf "%s%s (%s us)", sep, $3, $4; sep = ", " }' "$dir/states")"
echo "$(nproc) CPUs; 3 ports, $packets packets each per round, $rounds round(s); pinned: readers on CPU $pin"
printf '%-18s %7s %8s %8s  %s\n' setting packets p50_us p99_us "residency per CPU over the run: state ms (% of wall)"
# the rounds no other holder of /dev/cpu_dma_latency spoilt (all, when every one was)
rounds_of() {
	for x in "$dir/$1".*.err; do
		[ -e "${x%.err}.tainted" ] || echo "${x%.err}"
	done | grep . || for x in "$dir/$1".*.err; do echo "${x%.err}"; done
}
for s in $settings; do
	f=$(echo "$s" | tr ':/' '__')
	ok=$(rounds_of "$f")
	for r in $ok; do cat "$r.err"; done | sort -n > "$dir/$f.all"
	n=$(wc -l < "$dir/$f.all")
	p50=$(awk -v n="$n" 'NR == int(n * 0.50 + 0.5) { print; exit }' "$dir/$f.all")
	p99=$(awk -v n="$n" 'NR == int(n * 0.99 + 0.5) { print; exit }' "$dir/$f.all")
	wall=$(for r in $ok; do cat "$r.wall"; done | awk '{ w += $1 } END { print w }')
	res=$(for r in $ok; do cat "$r.res"; done | awk -v states="$dir/states" -v wall="$wall" '
		BEGIN { while ((getline l < states) > 0) { split(l, a, " "); name[a[1] " " a[2]] = a[3] } }
		{ ms[$1 " " $2] += $3; cpus[$1] = 1 }
		END {
			for (c = 0; c < 1024; c++) if (c in cpus) {
				printf "cpu%d:", c
				for (s = 0; s < 16; s++) {
					k = c " " s
					if (k in ms)
						printf " %s %d (%d%%)", name[k], ms[k],
							(wall > 0 ? 100 * ms[k] / wall : 0)
				}
				printf "; "
			}
		}' | sed 's/; $//')
	printf '%-18s %7d %8s %8s  %s\n' "$(echo "$s" | sed "s#/any##; s#/$pin# pinned#")($(echo "$ok" | wc -w))" "$n" \
		"${p50:--}" "${p99:--}" "$res"
	# for the verdict: how many CPUs halted, i.e. spent over a tenth of the run in an
	# idle state other than POLL (a CPU held at 0 spends none; how much of the rest a
	# CPU is idle depends on what else the machine runs)
	halted=$(for r in $ok; do cat "$r.res"; done | awk -v states="$dir/states" -v wall="$wall" '
		BEGIN { while ((getline l < states) > 0) { split(l, a, " "); name[a[1] " " a[2]] = a[3] } }
		{ cpus[$1] = 1 } name[$1 " " $2] != "POLL" { h[$1] += $3 }
		END { for (c in cpus) if (h[c] > wall / 10) k++; print k + 0 }')
	echo "$s ${p50:-0} ${p99:-0} $halted" >> "$dir/summary"
done
echo
awk -v pin="$pin" '
	{ split($1, a, "/"); set[NR] = $1; p50[NR] = $2; p99[NR] = $3; h[NR] = $4
	  if (a[1] == "global:0") { r50[a[2]] = $2; r99[a[2]] = $3 } }
	END {
		best = 0
		for (i = 1; i <= NR; i++) {
			split(set[i], a, "/")
			ok = r50[a[2]] > 0 && p50[i] <= 1.1 * r50[a[2]] && p99[i] <= 1.1 * r99[a[2]]
			printf "%-18s against global:0%-7s p50 %.2fx p99 %.2fx, CPUs halting: %d  %s\n",
				a[1] (a[2] == "any" ? "" : " pinned"), a[2] == "any" ? "" : " pinned",
				r50[a[2]] ? p50[i] / r50[a[2]] : 0, r99[a[2]] ? p99[i] / r99[a[2]] : 0,
				h[i], ok ? "within 1.1x" : "beyond 1.1x"
			if (ok && (best == 0 || h[i] > h[best]))
				best = i
		}
		if (best) {
			split(set[best], a, "/")
			printf "\nchoice: %s%s keeps the first-byte error within 1.1x of global:0 while %d CPU(s) halt\n",
				a[1], a[2] == "any" ? "" : " (threads pinned)", h[best]
		}
	}' "$dir/summary"
