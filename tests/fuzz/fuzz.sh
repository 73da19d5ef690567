#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/fuzz/fuzz.sh [SECONDS] - build the libFuzzer targets with clang (build-fuzz/) and run
# each for SECONDS (60) on a copy of its seed corpus in tests/fuzz/corpus/, so the
# repository does not grow. Prints executions and coverage per target; exits 1 if a
# target crashed, hung (one input over 60 s: check.sh runs it at SCHED_IDLE, where a busy
# machine may hold it for seconds) or failed an assertion, naming the saved input.
set -eu
cd "$(dirname "$0")/../.."
seconds=${1:-60}
. tests/deps.sh
portlogd_deps
CC=clang cmake -S . -B build-fuzz -DPORTLOGD_FUZZ=ON -DPORTLOGD_WERROR=ON >/dev/null
cmake --build build-fuzz -j2 --target fuzz_conf fuzz_reasm fuzz_fmt fuzz_logline fuzz_replay
work=$(mktemp -d "${TMPDIR:-/tmp}/portlogd-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p build-fuzz/crashes
failed=0
for t in conf reasm fmt logline replay; do
	cp -r "tests/fuzz/corpus/$t" "$work/$t"
	log="build-fuzz/fuzz_$t.log"
	echo "=== fuzz_$t: $seconds s ==="
	rc=0
	build-fuzz/tests/fuzz/fuzz_$t -max_total_time="$seconds" -timeout=60 \
		-print_final_stats=1 -artifact_prefix="build-fuzz/crashes/fuzz_$t-" \
		"$work/$t" >"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	cov=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)[[:space:]]+cov:' "$log" | tail -n 1 |
		sed 's/.* cov: \([0-9]*\) ft: \([0-9]*\) corp: \([0-9]*\).*/cov \1, ft \2, corpus \3/')
	echo "fuzz_$t: ${execs:-?} execs, ${cov:-no coverage line} (log $log)"
	if [ "$rc" -ne 0 ]; then
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*fuzz_[a-z]+\.c:[0-9]+: )' "$log" | head -n 5 || true
		input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
		echo "fuzz_$t: FAILED (exit $rc); the input is ${input:-not saved}; replay:" \
			"build-fuzz/tests/fuzz/fuzz_$t ${input:-FILE}"
		failed=1
	fi
done
exit $failed
