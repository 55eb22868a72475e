#!/bin/sh
# deploy/prometheus/alerts.yml through Debian's promtool (docs/alerts.md): the rules and the
# shipped prometheus.yml that loads them are valid, every unit test of alerts_test.yml passes,
# and every rule has a firing case (exp_alerts listed) and a non-firing one (exp_alerts: []).
# Usage: alerts_rules_test.sh SOURCE_DIR. Exit 77 (skipped) when promtool is not installed.
set -eu
SRC=$1
PROMTOOL=${PROMTOOL:-/usr/bin/promtool}
if [ ! -x "$PROMTOOL" ]; then
  echo "SKIP: $PROMTOOL not found (apt-get install prometheus, or scripts/install_deps.sh)"
  exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
cd "$SRC/deploy/prometheus"
"$PROMTOOL" check rules alerts.yml || fail "promtool check rules alerts.yml"
"$PROMTOOL" check config prometheus.yml || fail "promtool check config prometheus.yml"
"$PROMTOOL" test rules alerts_test.yml || fail "promtool test rules alerts_test.yml"
rules=$(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' alerts.yml)
[ -n "$rules" ] || fail "no rules found in alerts.yml"
# Which alertnames have a firing and a non-firing case (alertname: X, then exp_alerts: ...).
cases=$(awk '/^ *alertname:/ { a = $2 }
             /^ *exp_alerts: *\[\] *$/ { print a " quiet" }
             /^ *exp_alerts: *$/ { print a " fires" }' alerts_test.yml)
n=0
for r in $rules; do
  echo "$cases" | grep -qx "$r fires" || fail "$r has no firing case in alerts_test.yml"
  echo "$cases" | grep -qx "$r quiet" || fail "$r has no non-firing case in alerts_test.yml"
  n=$((n + 1))
done
echo "ok: $n rules, each with a firing and a non-firing case; promtool test rules passed"
