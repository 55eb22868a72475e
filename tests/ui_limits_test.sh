#!/bin/sh
# `rectrain ui`'s server (rectrain_ui_server, the same ServeUi call) under hostile clients:
# tests/http_limits_probe.py holds 500 idle and slow connections while asking /healthz, sends a
# chunked body over the limit, ambiguous framing, a POST without a length and pipelined requests
# (docs/ui.md "Limits").
# Usage: ui_limits_test.sh RECTRAIN_UI_SERVER
set -eu
S=$1
PROBE=$(cd "$(dirname "$0")" && pwd)/http_limits_probe.py
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_ui_limits_XXXXXX")
trap 'kill $PID 2>/dev/null || true; rm -rf "$W"' EXIT
mkdir -p "$W/static" && echo '<html></html>' > "$W/static/index.html"
"$S" --store "$W/t.db" --port 0 --static-dir "$W/static" > "$W/out.txt" 2>&1 &
PID=$!
for i in $(seq 100); do grep -q "serving" "$W/out.txt" 2>/dev/null && break; sleep 0.1; done
U=$(sed -n 's/^rectrain ui: serving .* at \(http:[^/]*\/\/[^/]*\)\/.*/\1/p' "$W/out.txt")
[ -n "$U" ] || { cat "$W/out.txt"; echo "FAIL: rectrain_ui_server did not start"; exit 1; }
python3 "$PROBE" "$U" --post /api/runs --max-body 1048576 --pid $PID
echo "ui_limits_test: OK"
