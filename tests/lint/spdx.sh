#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lint/spdx.sh SRC [--add] - every source file git tracks in SRC starts with the
# project's license line, in its language's comment:
#   C (.c, .h)                  line 1: /* SPDX-License-Identifier: GPL-2.0-or-later */
#   a script (#! on line 1)     line 2: # SPDX-License-Identifier: GPL-2.0-or-later
#   man pages (config/man/*.N)  line 1: .\" SPDX-License-Identifier: GPL-2.0-or-later
#   CMake, shell sourced, conf, YAML, systemd and udev files, debian/ files with # comments
#                               line 1: # SPDX-License-Identifier: GPL-2.0-or-later
# Not source files, so left alone: test data (tests/data/, whose first line is the
# expectation; tests/fuzz/corpus/), Markdown, images, LICENSE, .gitignore, JSON (no
# comments: the Grafana dashboard), and the debian/ files whose format has no comments
# (changelog, copyright, which is itself the license statement, source/format).
# Without --add: lists every file that lacks its line, or is of a kind this script
# does not know (add it to kind() below), and exits 1 if there is one.
# With --add: puts the line into every file that lacks it (run it after a merge).
set -eu
src=$(cd "$1" && pwd)
add=${2:-}
tag='SPDX-License-Identifier: GPL-2.0-or-later'
git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "SKIP: $src is not a git checkout"; exit 77; }

# kind FILE: c, roff, hash (line 1), shebang (line 2), skip, or unknown
kind() {
	case $1 in
	tests/data/* | tests/fuzz/corpus/* | *.md | LICENSE | .gitignore | *.json | \
		*.png | *.jpg | *.jpeg | *.gif | *.svg | \
		debian/changelog | debian/copyright | debian/source/format) echo skip; return ;;
	*.c | *.h) echo c; return ;;
	config/man/*.[1-9]) echo roff; return ;;
	esac
	if head -c 2 "$src/$1" | grep -q '^#!'; then
		echo shebang
		return
	fi
	case $1 in
	CMakeLists.txt | */CMakeLists.txt | *.cmake | *.sh | *.conf | *.logrotate | *.service | *.yml | \
		*.sysusers | *.tmpfiles | *.rules | debian/control | debian/*.docs | \
		debian/*lintian-overrides | debian/*.install | config/apparmor/* | debian/source/options | \
		debian/tests/control) echo hash ;;
	*) echo unknown ;;
	esac
}

missing=0 unknown=0 n=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$src" ls-files >"$tmp/list"
while IFS= read -r f; do
	[ -f "$src/$f" ] || continue        # deleted, not yet committed
	k=$(kind "$f")
	case $k in
	skip) continue ;;
	unknown) echo "unknown kind of file (tell tests/lint/spdx.sh what it is): $f"; unknown=$((unknown + 1)); continue ;;
	c) want="/* $tag */" line=1 ;;
	roff) want=".\\\" $tag" line=1 ;;
	hash) want="# $tag" line=1 ;;
	shebang) want="# $tag" line=2 ;;
	esac
	n=$((n + 1))
	[ "$(sed -n "${line}p" "$src/$f")" = "$want" ] && continue
	if [ "$add" = --add ]; then
		if [ $line = 1 ]; then
			{ printf '%s\n' "$want"; cat "$src/$f"; } >"$tmp/new"
		else
			{ head -n 1 "$src/$f"; printf '%s\n' "$want"; tail -n +2 "$src/$f"; } >"$tmp/new"
		fi
		cat "$tmp/new" >"$src/$f"     # keeps the file's mode
		echo "added: $f"
	else
		echo "no '$want' on line $line: $f"
		missing=$((missing + 1))
	fi
done <"$tmp/list"
echo "spdx: $n source files, $missing without the line, $unknown of an unknown kind"
[ $missing = 0 ] && [ $unknown = 0 ]
