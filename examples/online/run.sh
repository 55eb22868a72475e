#!/bin/sh
# Online training end to end on one machine (docs/online.md): a private redis-server, a file
# replayed into it at a steady rate by `rectrain data produce`, and `rectrain train` learning
# from the stream with progressive validation until --until, publishing to $WORK/models every 2 s;
# then a resume from the checkpoint.
# Usage: examples/online/run.sh [RECTRAIN_BINARY] [ROWS] [RATE] [SECONDS] [WORK_DIR]
set -eu
bin=${1:-build/release/rectrain}
rows=${2:-200000}
rate=${3:-20000}
secs=${4:-30}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=${5:-$(mktemp -d)}
mkdir -p "$work"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --logfile "$work/redis.log" &
redis=$!
producer=
cleanup() { [ -n "$producer" ] && kill "$producer" 2>/dev/null; kill "$redis" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT
url=redis://127.0.0.1:$port/events
[ -f "$work/train.tsv" ] || "$bin" data gen --rows "$rows" --out "$work/train.tsv" --seed 1
i=0
until redis-cli -p "$port" ping >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "redis-server did not start" >&2; exit 1; }; sleep 0.1
done
"$bin" data produce "$work/train.tsv" --to "$url" --rate "$rate" --quiet &
producer=$!
export RECTRAIN_TRACKING_STORE="$work/tracking.db"
"$bin" train "$src/examples/online/deepfm_stream.yaml" --run-dir "$work/run" --no-progress \
  --set data.stream.url="$url" --set data.stream.start=earliest --set train.publish.to="$work/models" --until "${secs}s"
echo "--- resuming from the checkpoint's stream position for another ${secs}s"
"$bin" train --resume "$work/run" --no-progress --until "${secs}s"
grep -E "online auc" "$work/run/train.log" | tail -n 3
echo "run directory: $work/run (train.log, summary.json: \"online\"); published versions: $(ls "$work/models" | grep -c '^[0-9]*$') in $work/models (rectrain serve $work/models)"
