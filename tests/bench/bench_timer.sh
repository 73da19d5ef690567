#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/bench/bench_timer.sh - the timer thread against cyclictest, same machine, same run.
# Not a test: it prints both latency tables and their ratio and never fails on time.
# Usage: sh tests/bench/bench_timer.sh [BUILD_DIR] [PERIOD_US] [SECONDS] [PAIRS]
# cyclictest -m -p 99 -i P -D Ns, then portlogd with period P for N s, alternately.
# Both hold /dev/cpu_dma_latency at 0 (cyclictest does by default, portlogd too).
# BENCH_TIMER_CPU=N pins the timer thread (and cyclictest, -a N); BENCH_SAMPLER_CPU=N
# pins the sampler thread that the timer wakes every period.
set -eu
build=${1:-build}
period=${2:-1000}
secs=${3:-20}
pairs=${4:-3}
command -v cyclictest >/dev/null || { echo "needs cyclictest: apt-get install rt-tests" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || echo "warning: not root, SCHED_FIFO 99 may be refused" >&2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/bench.conf" <<CONF
[logger]
log_file = $dir/bench.log
timestamp = epoch
stat_interval_s = 0
[timer]
period_us = $period
priority = 99
warmup_ms = 1000
cpu_dma_latency = 0
${BENCH_TIMER_CPU:+cpu = $BENCH_TIMER_CPU}
[parallel sim0]
driver = sim
device = $dir/sim0
${BENCH_SAMPLER_CPU:+cpu = $BENCH_SAMPLER_CPU}
CONF

# p50 p99 p99.9 max and missed periods, from a cyclictest -h histogram. Missed periods
# are counted as the daemon counts them: a wake-up L us late lost floor(L / period)
# periods (cyclictest, like the daemon, skips them and records one latency, so the
# number of late wake-ups would undercount a long stall). An overflow (> 100 ms) counts
# as the maximum latency.
cyc_stats() {
	awk -v period="$period" '
		/^[0-9]/ { n = $2 + 0; c[$1 + 0] += n; total += n; late += n * int(($1 + 0) / period) }
		/^# Max Latencies/ { max = $4 + 0 }
		/^# Histogram Overflows/ { over = $4 + 0 }
		END {
			total += over; late += over * int(max / period)
			split("50 99 99.9", ps, " ")
			for (k = 1; k <= 3; k++) {
				want = ps[k] / 100 * total; seen = 0
				for (i = 0; i < 100000; i++) { seen += c[i]; if (seen >= want) break }
				v[k] = i
			}
			printf "%d %d %d %d %d\n", v[1], v[2], v[3], max, late
		}'
}

printf '%-6s %-11s %7s %7s %7s %7s %7s\n' pair who p50_us p99_us p999_us max_us missed
sum=""
for i in $(seq "$pairs"); do
	c=$(cyclictest -m -p 99 ${BENCH_TIMER_CPU:+-a $BENCH_TIMER_CPU} -i "$period" -D "${secs}s" -q -h 100000 2>/dev/null | cyc_stats)
	"$build/portlogd" -f -c "$dir/bench.conf" 2>/dev/null &
	pid=$!
	sleep "$secs"
	kill -TERM "$pid"
	wait "$pid"
	d=$(grep ' portlogd STAT timer ' "$dir/bench.log" | tail -1 | awk '{
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		printf "%d %d %d %d %d\n", f["p50_us"], f["p99_us"], f["p999_us"], f["max_us"], f["missed"] }')
	rm -f "$dir/bench.log"
	echo "$c" | awk -v i="$i" '{ printf "%-6s %-11s %7d %7d %7d %7d %7d\n", i, "cyclictest", $1, $2, $3, $4, $5 }'
	echo "$d" | awk -v i="$i" '{ printf "%-6s %-11s %7d %7d %7d %7d %7d\n", i, "portlogd", $1, $2, $3, $4, $5 }'
	sum="$sum$c $d
"
done
printf '%s' "$sum" | awk '
	{ for (k = 1; k <= 4; k++) { cs[k] += $k; ds[k] += $(k + 5) } cm += $5; dm += $10; n++ }
	END {
		printf "ratio portlogd/cyclictest over %d pairs (sums): p50 %.2f  p99 %.2f  p99.9 %.2f  max %.2f  missed %d vs %d\n",
			n, ds[1] / (cs[1] ? cs[1] : 1), ds[2] / (cs[2] ? cs[2] : 1), ds[3] / (cs[3] ? cs[3] : 1),
			ds[4] / (cs[4] ? cs[4] : 1), dm, cm
	}'
