#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/pkg/logrotate.sh BUILD SRC - the shipped logrotate config, run by the real logrotate
# against the real daemon: the file is renamed (nocreate: logrotate makes no new file),
# and after the postrotate SIGHUP the daemon makes the new file itself, 0640 even under
# umask 077, starting with EV reopen, and writes on into it.
# Only what cannot work here is rewritten: the path (a scratch directory) and the
# postrotate command (no systemd).
set -eu
build=$1 src=$2
command -v logrotate >/dev/null || { echo "SKIP: no logrotate"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
log=$tmp/portlogd.log

# waits (at most 15 s) until file $1 has a line matching $2
wait_for() {
	i=0
	while ! grep -q -- "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 1500 ] || { echo "no '$2' in $1"; return 1; }
		sleep 0.01
	done
}

cat >"$tmp/portlogd.conf" <<CONF
[logger]
log_file = $log
flush_interval_ms = 20
[parallel p]
driver = sim
device = $tmp/p.sim
priority = other
[timer]
priority = other
cpu_dma_latency = off
CONF
# the mode of the files the daemon makes must not depend on the umask
(umask 077; exec env -u NOTIFY_SOCKET "$build/portlogd" -f -c "$tmp/portlogd.conf" 2>"$tmp/stderr") &
pid=$!
wait_for "$log" " portlogd EV start "

[ "$(stat -c %a "$log")" = 640 ] || { echo "first file mode $(stat -c %a "$log"), not 640"; exit 1; }
grep -q '^[[:space:]]*nocreate$' "$src/config/portlogd.logrotate" &&
	grep -q 'systemctl reload portlogd.service' "$src/config/portlogd.logrotate" ||
	{ echo "the shipped config changed: update this test"; exit 1; }
sed -e "s|^/var/log/portlogd/\*.log|$tmp/*.log|" \
	-e "s|systemctl reload portlogd.service|kill -HUP $pid|" \
	"$src/config/portlogd.logrotate" >"$tmp/logrotate.conf"
logrotate -f -s "$tmp/state" "$tmp/logrotate.conf"

fail=0
[ -f "$log.1" ] || { echo "not rotated: no $log.1"; ls -l "$tmp"; exit 1; }
# the postrotate HUP runs before logrotate returns, so the daemon may already have
# made the new file; if not, none may be there yet (logrotate made none)
wait_for "$log" " portlogd EV reopen file=$log"
[ "$(stat -c %a "$log")" = 640 ] || { echo "new file mode $(stat -c %a "$log"), not 640"; fail=1; }
head -1 "$log" | grep -q " portlogd EV reopen file=$log\$" ||
	{ echo "the new file does not start with EV reopen:"; head -3 "$log"; fail=1; }
grep -q " portlogd EV start " "$log.1" && ! grep -q " EV reopen " "$log.1" ||
	{ echo "the rotated file is not the old one:"; cat "$log.1"; fail=1; }
kill -TERM "$pid"
wait "$pid" || { echo "the daemon did not exit 0"; cat "$tmp/stderr"; fail=1; }
pid=
grep -q " portlogd EV stop reason=SIGTERM" "$log" || { echo "no EV stop in the new file"; fail=1; }
[ $fail -eq 0 ] && echo "logrotate: rotated (nocreate), new file made 0640 by the daemon under umask 077, starting with EV reopen, daemon wrote on"
exit $fail
