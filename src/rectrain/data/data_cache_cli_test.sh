#!/bin/sh
# ctest data_cache_cli_test: the binary sample cache end to end through the CLI.
# - `rectrain data cache` builds both splits, and a second run reports them up to date.
# - train and eval read the caches and say so.
# - A changed setting is not served a stale cache.
# - A corrupt cache stops the run with DATA_LOSS naming the file and block.
# - `rectrain data convert --to cache` makes an .rtc file that trains as input, and an
#   eval-time mismatch (downsampling) is an error naming the setting.
# Usage: data_cache_cli_test.sh RECTRAIN_BINARY
set -eu
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$tmp"
"$bin" data gen --rows 6000 --out tr.tsv --shape easy --seed 1 > /dev/null
"$bin" data gen --rows 2000 --out va.tsv --shape easy --seed 2 > /dev/null
cat > c.yaml <<'YAML'
data: {train: tr.tsv, valid: va.tsv, batch_size: 512, cache_dir: cache}
model: {type: fm, embedding_dim: 8}
tracking: {enabled: false}
monitoring: {enabled: false}
YAML
"$bin" data cache c.yaml > cache1.txt 2>&1 || { cat cache1.txt; fail "data cache"; }
grep -q '^data.train: wrote cache/samples-[0-9a-f]*.rtc: 6000 rows' cache1.txt || fail "train cache: $(cat cache1.txt)"
grep -q '^data.valid: wrote cache/samples-[0-9a-f]*.rtc: 2000 rows' cache1.txt || fail "valid cache: $(cat cache1.txt)"
"$bin" data cache c.yaml --split train > cache2.txt 2>&1 || fail "data cache again"
grep -q '^data.train: up to date: ' cache2.txt || fail "second build: $(cat cache2.txt)"
[ "$(wc -l < cache2.txt)" -eq 1 ] || fail "--split train built more: $(cat cache2.txt)"

"$bin" train c.yaml --run-dir run > train.txt 2>&1 || { cat train.txt; fail "train"; }
grep -q '^data.train: reading the sample cache cache/samples-.*(6000 rows)' train.txt || { cat train.txt; fail "train cache line"; }
grep -q '^data.valid: reading the sample cache cache/samples-.*(2000 rows)' train.txt || { cat train.txt; fail "valid cache line"; }
grep -q '(2000 rows)' train.txt || fail "valid rows"
"$bin" eval run --data va.tsv > eval.txt 2>&1 || { cat eval.txt; fail "eval"; }
grep -q '^data  *sample cache cache/samples-' eval.txt || { cat eval.txt; fail "eval data line"; }
grep -q '^rows  *2000 ' eval.txt || { cat eval.txt; fail "eval rows"; }

# Another hash seed: other ids, so the caches do not match.
"$bin" train c.yaml --run-dir run2 --set features.hash_seed=5 --set train.max_steps=2 > t2.txt 2>&1 || { cat t2.txt; fail "train 2"; }
grep -q '^data.train: no sample cache matches (data.cache: auto)' t2.txt || { cat t2.txt; fail "stale cache used"; }

# Corrupt the training cache (a byte in the middle): a clear error, not a crash.
train_cache=$(sed -n 's/^data.train: up to date: \([^ ]*\) .*/\1/p' cache2.txt)
size=$(wc -c < "$train_cache")
printf 'X' | dd of="$train_cache" bs=1 seek=$((size / 2)) conv=notrunc 2> /dev/null
rc=0
"$bin" train c.yaml --run-dir run3 > t3.txt 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "a corrupt cache must stop the run"
grep -q "sample cache .*$train_cache is corrupt or truncated: block [0-9]*" t3.txt || { cat t3.txt; fail "corrupt message"; }
grep -q 'rectrain data cache CONFIG' t3.txt || fail "corrupt message hint"

# convert: criteo TSV -> one .rtc that trains as input (format auto by suffix). The data check
# before training profiles the cache's decoded rows (no --skip-data-check).
"$bin" data convert tr.tsv --to cache --out tr.rtc > conv.txt 2>&1 || { cat conv.txt; fail "convert"; }
grep -q '^convert: wrote tr.rtc: 6000 rows' conv.txt || fail "convert output: $(cat conv.txt)"
cat > r.yaml <<'YAML'
data: {train: tr.rtc, batch_size: 512, negative_downsampling: 0.5}
model: {type: fm, embedding_dim: 8}
tracking: {enabled: false}
monitoring: {enabled: false}
YAML
rc=0
"$bin" train r.yaml --run-dir run4 > t4.txt 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "a downsampling mismatch must be an error"
grep -q 'holds rows built with negative_downsampling = "1" but the config has "0.5"' t4.txt || { cat t4.txt; fail "mismatch message"; }
"$bin" train r.yaml --run-dir run5 --set data.negative_downsampling=1 > t5.txt 2>&1 || { cat t5.txt; fail "train from .rtc"; }
grep -q '^data check passed: data.train 6000 rows (label rate 0\.[0-9]*)' t5.txt || { cat t5.txt; fail "data check of .rtc input"; }
grep -q '"rows": 6000' run5/data_profile.json || { cat run5/data_profile.json; fail "data_profile.json of .rtc input"; }
# A violation in .rtc input stops the run like one in text (exit 6).
rc=0
"$bin" train r.yaml --run-dir run6 --set data.negative_downsampling=1 --set checks.min_rows=6001 > t6.txt 2>&1 || rc=$?
[ "$rc" -eq 6 ] || { cat t6.txt; fail "min_rows on .rtc input: rc $rc"; }
grep -q 'data.train: rows: 6000 is below checks.min_rows = 6001' t6.txt || { cat t6.txt; fail "min_rows message"; }
grep -q '^done: completed' t5.txt || { cat t5.txt; fail "train from .rtc done"; }
grep -q '^data.train: reading sample cache files' t5.txt || { cat t5.txt; fail "train from .rtc log line"; }
rc=0
"$bin" data convert tr.tsv --to orc --out x > bad.txt 2>&1 || rc=$?
[ "$rc" -ne 0 ] && grep -q -- '--to orc is not supported; use --to cache, tsv or parquet' bad.txt || fail "bad --to: $(cat bad.txt)"
echo ok
