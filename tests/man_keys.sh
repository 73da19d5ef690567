#!/bin/sh
# tests/man_keys.sh BUILD SRC - every config key the daemon prints (--check-config) is
# documented in portlogd.conf(5) and README.md, every option of --help in portlogd(8),
# and both man pages render without warnings.
set -eu
build=$1 src=$2
command -v groff >/dev/null || { echo "SKIP: no groff"; exit 77; }
bin=$build/portlogd
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

cat >"$tmp/all.conf" <<CONF
[logger]
log_file = $tmp/portlogd.log
[timer]
[serial a]
device = /dev/null
lines = on
[parallel b]
driver = sim
device = $tmp/b.sim
CONF
"$bin" --check-config -c "$tmp/all.conf" >"$tmp/effective"
keys=$(sed -n 's/^\([a-z_0-9]*\) = .*/\1/p' "$tmp/effective" | sort -u)
[ -n "$keys" ] || { echo "no keys in --check-config output"; exit 1; }
n=0
for k in $keys; do
	n=$((n + 1))
	grep -qx "\.B $k" "$src/config/man/portlogd.conf.5" ||
		{ echo "portlogd.conf.5: key '$k' is not documented (.B $k)"; fail=1; }
	grep -q "| \`$k\` |" "$src/README.md" ||
		{ echo "README.md: key '$k' is missing from the config table"; fail=1; }
done
# long options of --help: -c, --config FILE ...
opts=$("$bin" --help | grep -o -- '--[a-z-]*' | sort -u)
for o in $opts; do
	roff=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
	grep -q -- "$roff" "$src/config/man/portlogd.8" ||
		{ echo "portlogd.8: option $o is not documented"; fail=1; }
done
for page in portlogd.8 portlogd.conf.5; do
	warn=$(groff -man -Tutf8 -ww -z "$src/config/man/$page" 2>&1)
	[ -z "$warn" ] || { echo "$page: groff warnings:"; echo "$warn"; fail=1; }
done
[ $fail -eq 0 ] && echo "man_keys: $n config keys and $(echo $opts | wc -w) options documented"
exit $fail
