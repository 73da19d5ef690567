#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lint/man_keys.sh BUILD SRC - the documentation against the code:
# - every config key of the daemon's key table (--list-keys) is documented in its section
#   of portlogd.conf(5), with its default ("Default: X.", "Required.", "Not set by
#   default"), its words and its range;
# - every option of --help and of --export's and --replay's help is in portlogd(8);
# - every KIND and every EV name of daemon/fmt.c's tables has its entry in portlogd-log(5);
# - README.md's short config example is a config the daemon accepts (--check-config), and
#   every line of its recipes is a line of a recipe in portlogd-log(5) (which
#   tests/e2e/e2e_recipes.c runs);
# - every page in config/man/ is installed by CMakeLists.txt and renders without a
#   warning (groff -ww, and man --warnings as lintian runs it).
set -eu
build=$1 src=$2
command -v groff >/dev/null || { echo "SKIP: no groff"; exit 77; }
bin=$build/portlogd
man=$src/config/man
man5=$man/portlogd.conf.5
log5=$man/portlogd-log.5
readme=$src/README.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# FILE SECTION TAG: the entry under .SH SECTION (quoted or not) whose .TP tag line is TAG
# or starts with TAG and a space (text up to the next .TP or .SH), roff's \- as -
entry() {
	SECT=$2 TAG=$3 awk '
		/^\.SH/ { in_s = ($0 == ".SH \"" ENVIRON["SECT"] "\"" || $0 == ".SH " ENVIRON["SECT"])
			  in_k = 0; next }
		/^\.TP/ { in_k = 0; tp = in_s; next }
		tp && ($0 == ENVIRON["TAG"] || index($0, ENVIRON["TAG"] " ") == 1) { in_k = 1 }
		{ tp = 0 }
		in_k { print }' "$1" | sed 's/\\-/-/g'
}
# the text of a README block: the fenced block after the line "<!-- MARK -->"
readme_block() {
	awk -v mark="<!-- $1 -->" '
		$0 == mark { on = 1; next }
		on && /^```/ { if (in_b) exit; in_b = 1; next }
		in_b { print }' "$readme"
}
# roff source of a man page's example line to what a reader types (as e2e_recipes.c)
unroff() {
	sed -e "s/\\\\(aq/'/g" -e 's/\\(dq/"/g' -e 's/\\-/-/g' -e 's/\\e/\\/g' -e 's/\\&//g'
}

# --- config keys against portlogd.conf(5)
"$bin" --list-keys >"$tmp/keys"
n=$(wc -l <"$tmp/keys")
[ "$n" -gt 0 ] || { echo "no keys from --list-keys"; exit 1; }
while IFS='	' read -r sect key def words range; do
	e=$(entry "$man5" "$sect" ".B $key")
	[ -n "$e" ] || { echo "portlogd.conf.5: $sect $key is not documented (.SH \"$sect\", .TP, .B $key)"; fail=1; continue; }
	case $def in
	"(required)") want="Required." ;;
	"(none)") want="Not set by default" ;;
	*) want="Default: $def." ;;
	esac
	echo "$e" | grep -q "^$(printf '%s' "$want" | sed 's/[].[*^$\\/]/\\&/g')" ||
		{ echo "portlogd.conf.5: $sect $key: no line '$want'"; fail=1; }
	if [ "$words" != - ]; then
		for w in $(echo "$words" | tr '|' ' '); do
			echo "$e" | grep -qwF -- "$w" ||
				{ echo "portlogd.conf.5: $sect $key does not name '$w'"; fail=1; }
		done
	fi
	if [ "$range" != - ]; then
		echo "$e" | grep -qF -- "$range" ||
			{ echo "portlogd.conf.5: $sect $key does not give the range $range"; fail=1; }
	fi
done <"$tmp/keys"

# --- long options of --help (-c, --config FILE ...) and of --export's and --replay's help
opts=$( { "$bin" --help; "$bin" --export pcapng --help; "$bin" --replay --help; } | grep -o -- '--[a-z-]*' | sort -u)
for o in $opts; do
	roff=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
	grep -q -- "$roff" "$man/portlogd.8" ||
		{ echo "portlogd.8: option $o is not documented"; fail=1; }
done

# --- every KIND and EV name of the formatter's tables in portlogd-log(5)
kinds=$(sed -n 's/^[[:space:]]*\[REC_[A-Z_]*\] = { "\([A-Z]*\)".*/\1/p' "$src/daemon/fmt.c")
events=$(sed -n 's/^[[:space:]]*\[EV_[A-Z_]*\] = { "\([a-z-]*\)".*/\1/p' "$src/daemon/fmt.c")
[ "$(echo "$kinds" | wc -w)" -ge 8 ] && [ "$(echo "$events" | wc -w)" -ge 19 ] ||
	{ echo "daemon/fmt.c: cannot read the KIND and EV tables ($kinds / $events)"; fail=1; }
for k in $kinds; do
	[ -n "$(entry "$log5" KINDS ".BI $k")" ] ||
		{ echo "portlogd-log.5: KIND $k has no entry under KINDS (.TP, .BI $k ...)"; fail=1; }
done
for ev in $events; do
	roff=$(printf '%s' "$ev" | sed 's/-/\\-/g')
	[ -n "$(entry "$log5" EVENTS ".B $roff")" ] ||
		{ echo "portlogd-log.5: EV $ev has no entry under EVENTS (.TP, .B $ev)"; fail=1; }
done

# --- README: the short config parses; each recipe line is one of portlogd-log(5)'s
readme_block "man_keys: config" >"$tmp/readme.conf"
if [ ! -s "$tmp/readme.conf" ]; then
	echo "README.md: no config example after <!-- man_keys: config -->"; fail=1
elif ! "$bin" -c "$tmp/readme.conf" --check-config >"$tmp/out" 2>&1; then
	echo "README.md: the config example is refused:"; cat "$tmp/out"; fail=1
fi
readme_block "man_keys: recipes" | grep -v '^#' | grep -v '^$' >"$tmp/readme.recipes" || true
unroff <"$log5" >"$tmp/log5.txt"
[ -s "$tmp/readme.recipes" ] || { echo "README.md: no recipes after <!-- man_keys: recipes -->"; fail=1; }
while IFS= read -r line; do
	grep -qxF -- "$line" "$tmp/log5.txt" ||
		{ echo "README.md: recipe line not in portlogd-log.5: $line"; fail=1; }
done <"$tmp/readme.recipes"

# --- every page installed, and rendered without warnings
pages=0
for p in "$man"/*.[1-9]; do
	page=${p##*/}
	pages=$((pages + 1))
	grep -q "install(FILES config/man/$page " "$src/CMakeLists.txt" ||
		{ echo "$page: not installed by CMakeLists.txt"; fail=1; }
	warn=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
	[ -z "$warn" ] || { echo "$page: groff warnings:"; echo "$warn"; fail=1; }
	if command -v man >/dev/null; then
		# lintian's groff-message check
		warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$p" 2>&1 >/dev/null)
		[ -z "$warn" ] || { echo "$page: man --warnings:"; echo "$warn"; fail=1; }
	fi
done
[ $fail -eq 0 ] && echo "man_keys: $n config keys, $(echo $opts | wc -w) options," \
	"$(echo $kinds | wc -w) kinds and $(echo $events | wc -w) events documented;" \
	"$(wc -l <"$tmp/readme.recipes") README recipe lines; $pages pages render"
exit $fail
