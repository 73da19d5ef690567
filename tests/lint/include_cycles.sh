#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lint/include_cycles.sh SRC [DIR...] - fails when the project's own modules include
# each other in a circle; tests/lint/include_cycles.sh --self-test - shows that it fails on
# a planted circle and passes without it.
#
# The graph: one node per module, a module being a file's name without .c or .h, so that
# x.c and x.h are one node (x.c including x.h is no edge) and a .c file without a header
# is a module of its own; an edge from a module to y for every `#include "y.h"` in one of
# its files whose y.h is itself one of the files checked (<...> includes are the system's).
# The files: every .c and .h below SRC/DIR (default: daemon and drivers, subfolders
# included). Two headers of one name in different folders would make an include ambiguous:
# that fails too. The walk is coreutils' tsort, which names the modules of a loop.
set -eu

if [ "${1:-}" = --self-test ]; then
	self=$0
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
	for m in a b c; do
		printf '%s\n' "$out" | grep -q "^  $m\$" \
			|| { echo "FAIL: module $m of the circle not named: $out"; exit 1; }
	done
	! printf '%s\n' "$out" | grep -q '^  d$' || { echo "FAIL: d is named: $out"; exit 1; }
	printf '%s\n' "$out"
	# the same tree with the circle cut (c no longer includes a) passes
	printf '#include "c.h"\n' >"$tmp/drivers/c.c"
	out=$(sh "$self" "$tmp" 2>&1) || { echo "FAIL: no circle, yet: $out"; exit 1; }
	printf '%s\n' "$out"
	# a second b.h in another folder is refused
	: >"$tmp/drivers/b.h"
	out=$(sh "$self" "$tmp" 2>&1) && { echo "FAIL: two b.h passed: $out"; exit 1; }
	printf '%s\n' "$out"
	echo "self-test: a planted circle fails, naming a b c; without it the tree passes"
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
