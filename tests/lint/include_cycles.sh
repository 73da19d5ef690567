#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lint/include_cycles.sh SRC [DIR...] - fails when the project's own modules include
# each other in a circle; tests/lint/include_cycles.sh --self-test - shows that it fails on
# a planted circle and passes without it, of includes and of calls.
#
# The graph: one node per module, a module being a file's name without .c or .h, so that
# x.c and x.h are one node (x.c including x.h is no edge) and a .c file without a header
# is a module of its own; an edge from a module to y for every `#include "y.h"` in one of
# its files whose y.h is itself one of the files checked (<...> includes are the system's).
# The files: every .c and .h below SRC/DIR (default: daemon and drivers, subfolders
# included). Two headers of one name in different folders would make an include ambiguous:
# that fails too. The walk is coreutils' tsort, which names the modules of a loop.
#
# tests/lint/include_cycles.sh --calls LIB MODULE... - fails when the files of one module
# call each other in a circle. A module's files are M.c and M_*.c (conf: conf_read.c,
# conf_check.c...), read as the members M.c.o and M_*.c.o of the static library LIB (nm:
# what the compiler made of them, calls through a header's inline function included); an
# edge from file A to file B for every symbol A uses and B defines (a call, or the address
# of a function or a table). The includes cannot show this: a module's files share one
# internal header. (The members carry no folder: drivers/serial_sp.c counts as a file of
# serial too, which can only add calls, never hide one.)
set -eu

NM=${NM:-nm}

# calls LIB MODULE...: the circle check of the calls between a module's files
calls() {
	lib=$1
	shift
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	# MEMBER TYPE SYMBOL for every global symbol defined (T D R B...) or used (U)
	"$NM" -A "$lib" | awk '{ n = split($1, a, ":"); m = a[n - 1]; sub(/\.c\.o$/, "", m) }
		NF == 3 && $2 ~ /^[TDRBCGSVW]$/ { print m, "D", $3 }
		NF == 3 && $2 == "U" { print m, "U", $3 }' >"$tmp/syms"
	rc=0
	for mod in "$@"; do
		awk -v mod="$mod" '$1 == mod || index($1, mod "_") == 1' "$tmp/syms" >"$tmp/mod"
		if ! grep -q . "$tmp/mod"; then
			echo "include_cycles --calls: no file of module $mod in $lib"
			rc=1
			continue
		fi
		# FROM TO for each symbol FROM uses and TO defines; every file also FROM FROM
		awk '$2 == "D" { def[$3] = $1 } { files[$1] = 1; if ($2 == "U") use[$1 " " $3] = 1 }
			END { for (f in files) print f, f
			      for (k in use) { split(k, u, " "); if (u[2] in def) print u[1], def[u[2]] } }' \
			"$tmp/mod" | sort -u >"$tmp/edges"
		files=$(cut -d' ' -f1 "$tmp/edges" | sort -u | wc -l)
		edges=$(awk '$1 != $2' "$tmp/edges" | wc -l)
		if ! tsort "$tmp/edges" >/dev/null 2>"$tmp/loop"; then
			echo "include_cycles --calls: the files of $mod call each other in a circle; these are on it:"
			sed -n 's/^tsort: \([^:]*\)$/  \1.c/p' "$tmp/loop" | sort -u
			echo "(move what they both need into a file that calls neither, as conf_err.c)"
			rc=1
			continue
		fi
		echo "include_cycles --calls: $files files of $mod, $edges calls between them, no circle"
	done
	return $rc
}

if [ "${1:-}" = --calls ]; then
	shift
	[ $# -ge 2 ] || { echo "usage: include_cycles.sh --calls LIB MODULE..." >&2; exit 2; }
	calls "$@"
	exit
fi

if [ "${1:-}" = --self-test ]; then
	self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
	# named OUT NOT ON...: the failed run's OUT names each of ON on a line, never NOT
	named() {
		out=$1
		not=$2
		shift 2
		for m in "$@"; do
			printf '%s\n' "$out" | grep -qx "  $m" \
				|| { echo "FAIL: $m, on the circle, not named: $out"; exit 1; }
		done
		! printf '%s\n' "$out" | grep -qx "  $not" || { echo "FAIL: $not is named: $out"; exit 1; }
		printf '%s\n' "$out"
	}
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	# a circle of three through a header (a.h -> b, b.c -> c, c.c -> a), a module on
	# the side that includes into it (d), a header that is not ours, a self-include
	mkdir -p "$tmp/daemon/sub" "$tmp/drivers"
	printf '#include "b.h"\n#include <stdio.h>\n' >"$tmp/daemon/a.h"
	printf '#include "a.h"\n' >"$tmp/daemon/a.c"
	printf '#include "b.h"\n  #  include "c.h"\n' >"$tmp/daemon/sub/b.c"
	: >"$tmp/daemon/b.h"
	printf '#include "c.h"\n#include "a.h"\n' >"$tmp/drivers/c.c"
	printf '#include "cmocka_only.h"\n' >"$tmp/drivers/c.h"
	printf '#include "a.h"\n' >"$tmp/drivers/d.c"
	out=$(sh "$self" "$tmp" 2>&1) && { echo "FAIL: a planted circle passed: $out"; exit 1; }
	named "$out" d a b c
	# the same tree with the circle cut (c no longer includes a) passes
	printf '#include "c.h"\n' >"$tmp/drivers/c.c"
	out=$(sh "$self" "$tmp" 2>&1) || { echo "FAIL: no circle, yet: $out"; exit 1; }
	printf '%s\n' "$out"
	# a second b.h in another folder is refused
	: >"$tmp/drivers/b.h"
	out=$(sh "$self" "$tmp" 2>&1) && { echo "FAIL: two b.h passed: $out"; exit 1; }
	printf '%s\n' "$out"
	echo "self-test: a planted circle fails, naming a b c; without it the tree passes"
	# the calls: m_a.c calls m_b.c, whose header's inline function calls m_c.c, which
	# calls m_a.c (conf's old circle through conf_internal.h); a module beside it (mx.c,
	# not a file of m) calls into the circle; then m_c.c no longer calls m_a.c
	cc=${CC:-cc}
	ar=${AR:-ar}
	mkdir "$tmp/calls"
	cd "$tmp/calls"
	printf 'int m_c(void);\nstatic inline int b_inl(void) { return m_c(); }\n' >m.h
	printf '#include "m.h"\nint m_b(void);\nint m_a(void) { return m_b(); }\n' >m_a.c
	printf '#include "m.h"\nint m_b(void) { return b_inl(); }\n' >m_b.c
	printf 'int m_a(void);\nint m_c(void) { return m_a(); }\n' >m_c.c
	printf 'int m_a(void);\nint mx(void) { return m_a(); }\n' >mx.c
	for f in m_a m_b m_c mx; do "$cc" -O2 -c $f.c -o $f.c.o; done
	"$ar" rc libm.a m_a.c.o m_b.c.o m_c.c.o mx.c.o
	out=$(sh "$self" --calls libm.a m 2>&1) && { echo "FAIL: a planted call circle passed: $out"; exit 1; }
	named "$out" mx.c m_a.c m_b.c m_c.c
	printf 'int m_c(void) { return 0; }\n' >m_c.c
	"$cc" -O2 -c m_c.c -o m_c.c.o
	rm libm.a
	"$ar" rc libm.a m_a.c.o m_b.c.o m_c.c.o mx.c.o
	out=$(sh "$self" --calls libm.a m 2>&1) || { echo "FAIL: no call circle, yet: $out"; exit 1; }
	printf '%s\n' "$out"
	cd - >/dev/null
	echo "self-test: a planted call circle through a header's inline function fails, naming m_a m_b m_c; without it the module passes"
	exit 0
fi

src=${1:?usage: include_cycles.sh SRC [DIR...] | --self-test}
shift
[ $# -gt 0 ] || set -- daemon drivers
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for d in "$@"; do
	find "$src/$d" -type f \( -name '*.c' -o -name '*.h' \)
done | sort >"$tmp/files"
sed 's,.*/,,' "$tmp/files" | grep '\.h$' | sort | uniq -d >"$tmp/dups"
if [ -s "$tmp/dups" ]; then
	echo "include_cycles: two headers of one name (an include of it is ambiguous):"
	while IFS= read -r h; do grep "/$h\$" "$tmp/files" | sed 's,^,  ,'; done <"$tmp/dups"
	exit 1
fi
sed -n 's,.*/\(.*\)\.h$,\1,p' "$tmp/files" >"$tmp/ours"

# FROM TO for each quoted include of one of our headers; every module also FROM FROM, so
# that tsort knows it (a pair of one node is no loop)
while IFS= read -r f; do
	m=$(basename "$f")
	m=${m%.*}
	echo "$m $m"
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)\.h".*/\1/p' "$f" \
		| sed 's,.*/,,' | grep -Fx -f "$tmp/ours" | sed "s,^,$m ," || true
done <"$tmp/files" | sort -u >"$tmp/edges"

modules=$(cut -d' ' -f1 "$tmp/edges" | sort -u | wc -l)
edges=$(awk '$1 != $2' "$tmp/edges" | wc -l)
if ! tsort "$tmp/edges" >/dev/null 2>"$tmp/loop"; then
	echo "include_cycles: the includes of $* form a circle; these modules are on it:"
	sed -n 's/^tsort: \([^:]*\)$/  \1/p' "$tmp/loop"
	echo "(a module is x.c with x.h; make one of them not include the other)"
	exit 1
fi
echo "include_cycles: $modules modules of $*, $edges includes between them, no circle"
