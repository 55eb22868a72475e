#!/bin/sh
# Every data command and format with s3:// paths (npm s3rver; boto3 writes the fixtures and reads
# back what rectrain wrote): `data stats` / `data check` / `data cache` / `data convert` (both
# ends) / `eval --data` over TSV (criteo), CSV, libsvm, Parquet, sample cache and IDX objects
# give what the same local files give.
# Usage: data_s3_test.sh RECTRAIN
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
S3DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_s3_data_XXXXXX")
. "$S3DIR/lib.sh"
trap 'kill -9 ${S3_PID:-} 2>/dev/null || true; rm -rf "$W"' EXIT
cd "$W"
export RECTRAIN_TRACKING_STORE="$W/tracking.db"
start_s3rver
use_store "$S3_URL"

mkdir -p local
"$B" data gen --rows 5000 --out local/a.tsv --seed 1 >/dev/null 2>&1
"$B" data gen --rows 3000 --out local/b.tsv --seed 2 >/dev/null 2>&1
rm local/*.prob
/usr/bin/python3 - <<'PY'
import gzip, struct
# CSV with a header, libsvm, and a tiny IDX image set (gzip images, plain labels).
with open("local/c.csv", "w") as f:
    f.write("label,x,y,cat\n")
    for i in range(500):
        f.write("%d,%d,%.3f,k%d\n" % (i % 2, i % 17, i / 7.0, i % 23))
with open("local/d.libsvm", "w") as f:
    for i in range(500):
        f.write("%d 1:%d %d:1 %d:1\n" % (i % 2, i % 9, 10 + i % 13, 40 + i % 5))
with gzip.open("local/t10k-images-idx3-ubyte.gz", "wb") as f:
    f.write(struct.pack(">IIII", 0x803, 64, 4, 4) + bytes((i * 7) % 256 for i in range(64 * 16)))
with gzip.open("local/t10k-labels-idx1-ubyte.gz", "wb") as f:
    f.write(struct.pack(">II", 0x801, 64) + bytes(i % 10 for i in range(64)))
PY
cp "$S3DIR/../parquet_fixtures/duckdb_zstd_v2.parquet" local/e.parquet
boto sync-up local data in

stats() {  # stats OUT ARGS...: `data stats --json` without the file paths
  out=$1; shift
  "$B" data stats "$@" --json 2>"$out.err" | /usr/bin/python3 -c "
import json,sys
j = json.load(sys.stdin)
def strip(x):
    if isinstance(x, dict): return {k: strip(v) for k, v in x.items() if k not in ('path', 'files', 'seconds')}
    if isinstance(x, list): return [strip(v) for v in x]
    return x
print(json.dumps(strip(j), sort_keys=True))" > "$out" || { cat "$out.err"; fail "data stats $*"; }
}
for spec in "a.tsv b.tsv|--format criteo" "c.csv|--format csv --header" "d.libsvm|--format libsvm" \
            "e.parquet|--format parquet" "t10k-images-idx3-ubyte.gz|"; do
  names=${spec%%|*}; flags=${spec#*|}
  l=""; r=""
  for n in $names; do l="$l local/$n"; r="$r s3://data/in/$n"; done
  # shellcheck disable=SC2086
  stats local.json $l $flags
  # shellcheck disable=SC2086
  stats remote.json $r $flags
  cmp -s local.json remote.json || { diff local.json remote.json | head; fail "data stats of $names differ between local and s3"; }
done
stats glob.json 's3://data/in/*.tsv' --format criteo
stats both.json local/a.tsv local/b.tsv --format criteo
cmp -s glob.json both.json || fail "data stats over a glob in the bucket differs"
"$B" data stats s3://data/in/ --format criteo --progress >/dev/null 2>progress.txt || fail "data stats over a prefix"
grep -q "profiled 7/7 files" progress.txt || fail "no progress over the prefix's 7 objects: $(cat progress.txt)"
echo "ok: data stats of TSV, CSV, libsvm, Parquet and IDX objects (paths, a glob) equal the local files'"

cat > cfg.yaml <<'CFG'
seed: 3
deterministic: true
threads: 1
data: {train: "s3://data/in/*.tsv", valid: s3://data/in/b.tsv, format: criteo, batch_size: 256, cache_dir: cache}
model: {type: fm, embedding_dim: 4}
train: {epochs: 1}
monitoring: {enabled: false}
CFG
"$B" data check cfg.yaml >check.txt 2>&1 || { cat check.txt; fail "data check with s3 paths"; }
"$B" data cache cfg.yaml --split train >cache.txt 2>&1 || { cat cache.txt; fail "data cache with s3 paths"; }
ls cache/*.rtc >/dev/null || fail "no sample cache written"
"$B" data convert s3://data/in/a.tsv --to tsv --out s3://data/conv/a.tsv >/dev/null 2>&1 || fail "convert s3 -> s3 tsv"
"$B" data convert local/a.tsv --to tsv --out local-a.tsv >/dev/null 2>&1 || fail "convert local tsv"
[ "$(boto md5 data conv/a.tsv)" = "$(md5sum < local-a.tsv | cut -d' ' -f1)" ] || fail "convert to the bucket differs from local"
"$B" data convert s3://data/in/a.tsv --to cache --out s3://data/conv/a.rtc >/dev/null 2>&1 || fail "convert to a cache in the bucket"
"$B" data convert local/a.tsv --to cache --out local-a.rtc >/dev/null 2>&1 || fail "convert to a local cache"
stats rtc-remote.json s3://data/conv/a.rtc
stats rtc-local.json local-a.rtc
cmp -s rtc-remote.json rtc-local.json || fail "the sample cache in the bucket reads differently"
"$B" train cfg.yaml --run-dir run --quiet >/dev/null 2>&1 || fail "training with s3 data and a cache"
"$B" eval run --data s3://data/in/b.tsv --predictions e1.txt >/dev/null 2>&1 || fail "eval --data s3://"
"$B" eval run --data local/b.tsv --predictions e2.txt >/dev/null 2>&1 || fail "eval --data local"
cmp -s e1.txt e2.txt || fail "eval --data from the bucket differs from local"
echo "ok: data check, data cache, data convert (both ends, tsv and cache), eval --data with s3:// paths"
