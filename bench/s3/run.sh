#!/bin/sh
# Object-storage benchmarks (docs/storage.md "Measured"), all against npm's s3rver on loopback
# (tests/s3/node_modules, installed by the build), beside the same files on local disk, in the
# same run:
#  1. the store's own ceiling: whole-object GET throughput measured by boto3 (one stream);
#  2. DeepFM (bench/specs/criteo_deepfm.yaml) from PARTS Parquet objects (written by DuckDB from
#     npm) vs the same local files: train samples/s, alternating local / store, PAIRS pairs
#     (median ratio);
#  3. `data stats` over N_SMALL (10,000) small objects vs the same local files, and boto3's time
#     to list and GET them (the store's ceiling);
#  4. projection: bytes read from the store when the config uses all 40 columns of the criteo
#     Parquet files, then 10 of them, as a share of the objects' size.
# Usage: sh bench/s3/run.sh [WORK_DIR]   (from the repository root, after the release build)
#   ROWS=2000000 PARTS=4 PAIRS=3 N_SMALL=10000 SECTIONS="1 2 3 4" sh bench/s3/run.sh
set -eu
R=$(pwd)
B=$R/build/release/rectrain
S3DIR=$R/tests/s3
W=$(cd "$(mkdir -p "${1:-bench-s3}" && echo "${1:-bench-s3}")" && pwd)
ROWS=${ROWS:-2000000}
PAIRS=${PAIRS:-3}
N_SMALL=${N_SMALL:-10000}
SECTIONS=${SECTIONS:-1 2 3 4}
want() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
. "$S3DIR/lib.sh"
trap 'kill -9 ${S3_PID:-} 2>/dev/null || true' EXIT
cd "$W"
export RECTRAIN_TRACKING_STORE="$W/tracking.db"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores," \
     "$(grep -o 'avx512[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"
rm -rf s3data
start_s3rver
use_store "$S3_URL"

# Data: criteo-shape rows as PARTS Parquet objects written by DuckDB (npm, tests/parquet_fixtures:
# an independent writer, snappy, dictionary-encoded categoricals), and N_SMALL small TSVs.
PARTS=${PARTS:-4}
PQ_NPM=$R/tests/parquet_fixtures
[ -d "$PQ_NPM/node_modules/@duckdb" ] || (cd "$PQ_NPM" && npm ci --no-audit --no-fund --loglevel=error) >/dev/null ||
  fail "npm ci in tests/parquet_fixtures (DuckDB writes the Parquet files)"
[ -f train.tsv ] || "$B" data gen --rows "$ROWS" --out train.tsv --seed 1 >/dev/null 2>&1
[ -f valid.tsv ] || "$B" data gen --rows 100000 --out valid.tsv --seed 2 >/dev/null 2>&1
if [ ! -d pq ]; then
  mkdir pq.tmp
  split -d -a 2 -n "l/$PARTS" train.tsv pq.tmp/part-
  for f in pq.tmp/part-??; do
    node "$PQ_NPM/make_criteo_parquet.mjs" "$f" "$f.parquet" >/dev/null && rm "$f" || fail "DuckDB writing $f.parquet"
  done
  node "$PQ_NPM/make_criteo_parquet.mjs" valid.tsv pq.tmp/valid.parquet >/dev/null || fail "DuckDB writing valid.parquet"
  mv pq.tmp/valid.parquet valid.parquet
  mv pq.tmp pq
fi
boto sync-up pq data pq
PQ_BYTES=$(du -cb pq/*.parquet | tail -1 | cut -f1)
echo "data: $ROWS rows in $(ls pq | wc -l) Parquet objects, $PQ_BYTES bytes"

CFG="$R/bench/specs/criteo_deepfm.yaml"
DENSE=$(seq -s, -f 'I%g' 1 13) SPARSE=$(seq -s, -f 'C%g' 1 26)
# train NAME TRAIN_PATHS [--set ...]: one epoch (no data check: it reads the data once more);
# prints the run's train samples/s.
train() {
  name=$1 paths=$2; shift 2
  rm -rf "r-$name"
  "$B" train "$CFG" --run-dir "r-$name" --quiet --set data.format=parquet --set "data.train=$paths" \
    --set "data.valid=$W/valid.parquet" --set "data.dense=[$DENSE]" --set "data.sparse=[$SPARSE]" \
    --set tracking.enabled=false --set train.eval_every_steps=0 --set train.checkpoint_every_steps=0 --skip-data-check "$@" \
    >"r-$name.txt" 2>&1 || { cat "r-$name.txt" >&2; echo "FAIL: training $name" >&2; exit 1; }
  json "r-$name/summary.json" "j['train']['samples_per_sec']"
}

if want 1; then
echo "== 1. the store's GET throughput (boto3, the independent client)"
first=$(ls pq | head -1)
echo "boto3, 1 stream: $(boto get-throughput data "pq/$first" 3) MB/s"
fi

if want 2; then
echo "== 2. DeepFM from Parquet: local files vs the store"
rm -f pairs.txt
for i in $(seq "$PAIRS"); do
  l=$(train local "$W/pq/*.parquet")
  s=$(train s3 "s3://data/pq/")
  echo "pair $i: local $l samples/s, store $s samples/s, ratio $(/usr/bin/python3 -c "print('%.3f' % ($s / $l))")"
  echo "$l $s" >> pairs.txt
done
/usr/bin/python3 -c "
import statistics
r = [float(s) / float(l) for l, s in (x.split() for x in open('pairs.txt'))]
print('median store/local ratio over %d pairs: %.3f (range %.3f-%.3f)' % (len(r), statistics.median(r), min(r), max(r)))"
echo "store traffic of the last run: $(json r-s3/summary.json "j['object_store']")"
fi

if want 3; then
echo "== 3. data stats over $N_SMALL small objects"
if [ ! -d small ]; then
  mkdir small
  head -200 train.tsv > small/one.tsv
  /usr/bin/python3 -c "
import shutil
for i in range($N_SMALL): shutil.copyfile('small/one.tsv', 'small/part-%05d.tsv' % i)"
  rm small/one.tsv
fi
boto put-many data small/part- "$N_SMALL" small/part-00000.tsv
timeit() {  # timeit ARGS...: wall seconds of `rectrain data stats ARGS`
  /usr/bin/python3 -c "
import subprocess, sys, time
t = time.time()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print('%.2f' % (time.time() - t))" "$B" data stats "$@" --format criteo
}
for i in 1 2 3; do
  l=$(timeit "$W/small/*")
  s=$(timeit s3://data/small/)
  echo "run $i: local $l s, store $s s, ratio $(/usr/bin/python3 -c "print('%.2f' % ($s / $l))")"
done
"$B" data stats s3://data/small/ --format criteo --progress 2>&1 >/dev/null | tr '\r' '\n' | tail -2
echo "the store's ceiling: boto3 lists and GETs the $N_SMALL objects in $(boto get-many data small/ 16) s (16 threads)"
fi

if want 4; then
echo "== 4. projection: all 40 columns (all), then 10 of them (proj)"
train all s3://data/pq/ >/dev/null
train proj s3://data/pq/ --set 'data.dense=[I1, I2, I3, I4]' --set 'data.sparse=[C1, C2, C3, C4, C5]' >/dev/null
for r in all proj; do
  read_bytes=$(json "r-$r/summary.json" "j['object_store']['bytes_read']")
  echo "$r: $read_bytes bytes read from the store of $PQ_BYTES ($(/usr/bin/python3 -c "print('%.1f%%' % (100.0 * $read_bytes / $PQ_BYTES))"))"
done
fi
