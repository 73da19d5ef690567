#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lint/man_keys.sh BUILD SRC - every config key of the daemon's key table (--list-keys) is
# documented in its section of portlogd.conf(5) and of README.md's config table, with its
# default (README), its words and its range; every option of --help is in portlogd(8); and
# both man pages render without warnings.
set -eu
build=$1 src=$2
command -v groff >/dev/null || { echo "SKIP: no groff"; exit 77; }
bin=$build/portlogd
man5=$src/config/man/portlogd.conf.5
readme=$src/README.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# SECTION KEY: the man page's entry for the key (.TP, .B KEY, text up to the next .TP or .SH)
entry() {
	awk -v sect=".SH \"$1\"" -v key=".B $2" '
		/^\.SH/ { in_s = ($0 == sect); in_k = 0; next }
		/^\.TP/ { in_k = 0; tp = in_s; next }
		tp && $0 == key { in_k = 1 }
		{ tp = 0 }
		in_k { print }' "$man5" | sed 's/\\-/-/g'
}
# SECTION KEY: the key's row in README.md's config table (the section is named in its first row)
row() {
	awk -F ' [|] ' -v sect="\`$1\`" -v key="\`$2\`" '
		/^[|] / { s = substr($1, 3); if (s != "") cur = s; if (cur == sect && $2 == key) print }' \
		"$readme"
}

"$bin" --list-keys >"$tmp/keys"
n=$(wc -l <"$tmp/keys")
[ "$n" -gt 0 ] || { echo "no keys from --list-keys"; exit 1; }
while IFS='	' read -r sect key def words range; do
	e=$(entry "$sect" "$key")
	r=$(row "$sect" "$key")
	[ -n "$e" ] || { echo "portlogd.conf.5: $sect $key is not documented (.SH \"$sect\", .TP, .B $key)"; fail=1; }
	[ -n "$r" ] || { echo "README.md: $sect $key is missing from the config table"; fail=1; continue; }
	[ "$def" = "(required)" ] && want="(required)" || want="\`$def\`"
	echo "$r" | grep -qF "| $want |" ||
		{ echo "README.md: $sect $key: the default is $want: $r"; fail=1; }
	if [ "$words" != - ]; then
		for w in $(echo "$words" | tr '|' ' '); do
			echo "$e" | grep -qwF -- "$w" ||
				{ echo "portlogd.conf.5: $sect $key does not name '$w'"; fail=1; }
			echo "$r" | grep -qF -- "\`$w\`" ||
				{ echo "README.md: $sect $key does not name \`$w\`"; fail=1; }
		done
	fi
	if [ "$range" != - ]; then
		echo "$e" | grep -qF -- "$range" ||
			{ echo "portlogd.conf.5: $sect $key does not give the range $range"; fail=1; }
		echo "$r" | grep -qF -- "$range" ||
			{ echo "README.md: $sect $key does not give the range $range"; fail=1; }
	fi
done <"$tmp/keys"
# long options of --help: -c, --config FILE ...
opts=$("$bin" --help | grep -o -- '--[a-z-]*' | sort -u)
for o in $opts; do
	roff=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
	grep -q -- "$roff" "$src/config/man/portlogd.8" ||
		{ echo "portlogd.8: option $o is not documented"; fail=1; }
done
for page in portlogd.8 portlogd.conf.5 portlogd-fleet.1; do
	warn=$(groff -man -Tutf8 -ww -z "$src/config/man/$page" 2>&1)
	[ -z "$warn" ] || { echo "$page: groff warnings:"; echo "$warn"; fail=1; }
done
[ $fail -eq 0 ] && echo "man_keys: $n config keys and $(echo $opts | wc -w) options documented"
exit $fail
