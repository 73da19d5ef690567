#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lint/metrics_names.sh BUILD SRC - the metrics file's names (portlogd --list-metrics,
# which e2e_metrics proves are the names the daemon writes) against what uses them: each is
# in portlogd(8)'s METRICS section; the Grafana dashboard and the alert rules use no other
# portlogd_ name; the rules pass promtool check rules and their unit tests
# (metrics_rules.test.yml); every query of the dashboard is PromQL that promtool accepts.
# Exit 77 when promtool or python3 is missing (tests/deps.sh installs them).
set -eu
build=$1 src=$2
bin=$build/portlogd
man8=$src/config/man/portlogd.8
dash=$src/config/grafana/portlogd.json
rules=$src/config/prometheus/portlogd.rules.yml
for t in promtool python3; do
	command -v $t >/dev/null || { echo "SKIP: no $t (tests/deps.sh installs it)"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

"$bin" --list-metrics >"$tmp/list"
[ -s "$tmp/list" ] || { echo "no names from --list-metrics"; exit 1; }
# the names a query may use: each family's, and a histogram's series
while IFS='	' read -r name type; do
	echo "$name"
	[ "$type" != histogram ] || printf '%s_bucket\n%s_sum\n%s_count\n' "$name" "$name" "$name"
done <"$tmp/list" | sort -u >"$tmp/names"

# portlogd(8): the METRICS section names each (.SH METRICS up to the next .SH)
awk '/^\.SH/ { on = ($0 == ".SH METRICS") } on' "$man8" | sed 's/\\-/-/g; s/\\_/_/g' >"$tmp/man"
[ -s "$tmp/man" ] || { echo "portlogd.8: no .SH METRICS section"; fail=1; }
cut -f1 "$tmp/list" | while read -r name; do
	grep -qw -- "$name" "$tmp/man" || { echo "portlogd.8: METRICS does not name $name"; exit 1; }
done || fail=1

# the dashboard and the rules: no portlogd_ name the daemon does not write
for f in "$dash" "$rules"; do
	grep -o 'portlogd_[a-z0-9_]*' "$f" | sort -u | while read -r name; do
		grep -qx -- "$name" "$tmp/names" ||
			{ echo "$(basename "$f"): $name is no name of portlogd --list-metrics"; exit 1; }
	done || fail=1
done

out=$(promtool check rules "$rules" 2>&1) || { echo "promtool check rules:"; echo "$out"; fail=1; }
out=$(cd "$src/tests/lint" && promtool test rules metrics_rules.test.yml 2>&1) ||
	{ echo "promtool test rules:"; echo "$out"; fail=1; }

# the dashboard: valid JSON; each query (Grafana's variables replaced by values) checked
# as a recording rule by promtool
python3 - "$dash" >"$tmp/dash.rules.yml" <<'EOF' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
exprs += [a["expr"] for a in d["annotations"]["list"] if "expr" in a]
if not exprs:
    sys.exit("no queries in the dashboard")
print("groups:\n  - name: dashboard\n    rules:")
for i, e in enumerate(exprs):
    for var, value in (("$__rate_interval", "5m"), ("$__range", "6h"), ("$instance", ".*")):
        e = e.replace(var, value)
    print("      - record: dashboard:query_%d\n        expr: %s" % (i, json.dumps(e)))
EOF
out=$(promtool check rules "$tmp/dash.rules.yml" 2>&1) ||
	{ echo "the dashboard's queries:"; echo "$out"; fail=1; }

[ $fail -eq 0 ] && echo "metrics_names: $(wc -l <"$tmp/list") metrics documented; the dashboard's" \
	"$(grep -c 'record:' "$tmp/dash.rules.yml") queries and the rules use only them and parse"
exit $fail
