#!/usr/bin/env bash
# bitcheck.sh OLD NEW [WORK] — are two rectrain binaries the same trainer, bit for bit?
#
# A structural change (a refactor, a move, typed config modes) must not change what rectrain
# computes. This runs the same deterministic jobs with both binaries and compares what they
# leave behind:
#   - `data gen` output (md5);
#   - for each model type (examples/, mlp, and din / mmoe on the converted real data sets):
#     summary.json with the timings taken out, and every byte
#     of the checkpoints and the final model (meta.json without its wall-clock fields);
#   - a resumed run (stopped by train.max_steps, then continued) against the uninterrupted one;
#   - a 2-rank sync job and a 3-rank async job under mpiexec (when mpiexec is present);
#   - `rectrain export` + `rectrain predict` scores on the validation rows;
#   - with CALLGRIND=1, the instructions of a short one-thread run (callgrind totals, both
#     binaries, and their ratio): the single-process benchmark must not move beyond noise.
# Prints one line per check (SAME / DIFF) and exits 1 if any differs.
#
# Usage: bench/structural/bitcheck.sh build-old/rectrain build/release/rectrain [/tmp/bitcheck]
#   e.g. git worktree add /tmp/old HEAD~1 && cmake --preset release -S /tmp/old && ... (the
#   parent commit's binary), then this script with the two binaries.
# Runs in about 2-4 minutes on 2 cores; only loopback MPI.
set -uo pipefail
OLD=$(readlink -f "$1"); NEW=$(readlink -f "$2")
WORK=${3:-/tmp/bitcheck}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
rm -rf "$WORK"; mkdir -p "$WORK"
cd "$WORK" || exit 2
mkdir -p data
fail=0
report() {  # report NAME STATUS(0 same)
  if [[ $2 == 0 ]]; then echo "SAME  $1"; else echo "DIFF  $1"; fail=1; fi
}

# Canonical JSON of summary.json / meta.json without wall-clock and speed fields.
cat > "$WORK/strip.py" <<'EOF'
import json, sys
# Wall-clock figures and paths: parts of a key (seconds, per_sec, ...), or whole keys.
DROP_PARTS = ("seconds", "per_sec", "rss", "wall", "unix")
DROP_KEYS = ("checkpoint", "model", "breakdown")
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items()
                if k not in DROP_KEYS and not k.endswith("_s")
                and not any(d in k for d in DROP_PARTS)}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
print(json.dumps(strip(json.load(open(sys.argv[1]))), sort_keys=True, indent=1))
EOF

# compare_runs NAME DIR_OLD DIR_NEW: summary + every checkpoint/model byte.
compare_runs() {
  local name=$1 a=$2 b=$3 st=0
  if [[ ! -f $a/summary.json || ! -f $b/summary.json ]]; then report "$name (no summary.json)" 1; return; fi
  diff <($PY strip.py "$a/summary.json") <($PY strip.py "$b/summary.json") > "$WORK/$name.summary.diff" || st=1
  report "$name summary.json" $st
  st=0
  local files; files=$(cd "$a" && find checkpoints model -type f 2>/dev/null | sort)
  [[ "$files" == "$(cd "$b" && find checkpoints model -type f 2>/dev/null | sort)" ]] || st=1
  for f in $files; do
    if [[ $f == *meta.json ]]; then
      diff -q <($PY strip.py "$a/$f") <($PY strip.py "$b/$f") >/dev/null || { st=1; echo "      $f"; }
    else
      cmp -s "$a/$f" "$b/$f" || { st=1; echo "      $f"; }
    fi
  done
  report "$name checkpoints+model ($(echo "$files" | wc -w) files)" $st
}

"$OLD" data gen --rows 24000 --out data/train.tsv --seed 1 >/dev/null 2>&1
"$OLD" data gen --rows 6000 --out data/valid.tsv --seed 2 >/dev/null 2>&1
"$NEW" data gen --rows 24000 --out gen-new.tsv --seed 1 >/dev/null 2>&1
cmp -s data/train.tsv gen-new.tsv; report "data gen" $?

COMMON=(--set deterministic=true --set threads=2 --set data.batch_size=512
        --set train.max_steps=30 --set train.eval_every_steps=10
        --set train.checkpoint_every_steps=10 --set train.keep_checkpoints=5
        --set train.log_every_steps=10)
run_both() {  # run_both NAME CONFIG [extra args...]
  local name=$1 cfg=$2; shift 2
  for v in old new; do
    local bin=$OLD; [[ $v == new ]] && bin=$NEW
    "$bin" train "$cfg" --run-dir "runs/$name-$v" "${COMMON[@]}" "$@" \
      > "logs-$name-$v.txt" 2>&1 || echo "      ($name: $v binary exited $?; see $WORK/logs-$name-$v.txt)"
  done
  compare_runs "$name" "runs/$name-old" "runs/$name-new"
}

mkdir -p runs
for m in deepfm dlrm dcn_v2 xdeepfm autoint fwfm wide_deep fm lr; do
  run_both "$m" "$REPO/examples/$m.yaml"
done
run_both mlp "$REPO/examples/deepfm.yaml" --set model.type=mlp
# din needs a behaviour sequence and mmoe a second label: the real data sets' converters give
# them (each skipped when ../shared/data lacks its set).
DATA=$REPO/../shared/data
if [[ -r $DATA/movietweetings-100k/ratings.dat ]]; then
  sh "$REPO/examples/movietweetings/convert.sh" "$DATA/movietweetings-100k" data/movietweetings 6000 >/dev/null
  run_both din "$REPO/examples/movietweetings/din.yaml"
else
  echo "skip  din (no $DATA/movietweetings-100k)"
fi
if [[ -r $DATA/uci-census-income-kdd-sample/census-income.sample ]]; then
  sh "$REPO/examples/census/convert.sh" "$DATA/uci-census-income-kdd-sample/census-income.sample" data/census >/dev/null
  run_both mmoe "$REPO/examples/census/mmoe.yaml"
else
  echo "skip  mmoe (no $DATA/uci-census-income-kdd-sample)"
fi
run_both deepfm-bf16 "$REPO/examples/deepfm.yaml" --set model.precision=bf16
run_both deepfm-ftrl "$REPO/examples/deepfm.yaml" --set embedding.optimizer.type=ftrl \
  --set optimizer.type=sgd --set optimizer.lr=0.05

# Resume: 30 steps in one go vs 15 + resume to 30, per binary, then across binaries.
for v in old new; do
  bin=$OLD; [[ $v == new ]] && bin=$NEW
  "$bin" train "$REPO/examples/deepfm.yaml" --run-dir "runs/resume-$v" "${COMMON[@]}" \
    --set train.max_steps=15 >/dev/null 2>&1
  "$bin" train --resume "runs/resume-$v" "${COMMON[@]}" >/dev/null 2>&1
done
cmp -s runs/resume-new/model/dense.bin runs/deepfm-new/model/dense.bin; report "resume = uninterrupted (new)" $?
compare_runs resume "runs/resume-old" "runs/resume-new"

# Export + predict.
for v in old new; do
  bin=$OLD; [[ $v == new ]] && bin=$NEW
  "$bin" export "runs/deepfm-$v" --out "models-$v/1" >/dev/null 2>&1
  "$bin" predict "models-$v/1" --data data/valid.tsv --out "scores-$v.txt" >/dev/null 2>&1
done
cmp -s scores-old.txt scores-new.txt && [[ -s scores-old.txt ]]; report "export + predict scores" $?

# A tune study: grid search, FIFO, one trial at a time (so the order of results is fixed).
cat > study.yaml <<EOF
name: bitcheck
base: $REPO/examples/deepfm.yaml
sets: [deterministic=true, threads=2, data.batch_size=512, train.early_stopping.patience=0,
       train.checkpoint_every_steps=0, train.eval_every_steps=10, data.train=$WORK/data/train.tsv,
       data.valid=$WORK/data/valid.tsv]
metric: valid.auc
space:
  optimizer.lr: {grid: [0.001, 0.003]}
searcher: {type: grid}
scheduler: {type: fifo, max: 20}
trial_threads: 2
total_threads: 2
data_cache: false
EOF
for v in old new; do
  bin=$OLD; [[ $v == new ]] && bin=$NEW
  timeout 300 "$bin" tune study.yaml --study-dir "runs/tune-$v" >"logs-tune-$v.txt" 2>&1
done
st=0
for t in $(cd runs/tune-old/trials 2>/dev/null && ls); do
  diff -q <($PY strip.py "runs/tune-old/trials/$t/summary.json") \
          <($PY strip.py "runs/tune-new/trials/$t/summary.json") >/dev/null 2>&1 || st=1
done
[[ -n $(ls runs/tune-old/trials 2>/dev/null) ]] || st=1
diff -q <(grep -v "^#" runs/tune-old/best.yaml) <(grep -v "^#" runs/tune-new/best.yaml) >/dev/null 2>&1 || st=1
report "tune: trial summaries and best.yaml" $st

# MPI jobs.
if command -v mpiexec >/dev/null; then
  MPI=(mpiexec --allow-run-as-root --oversubscribe --bind-to none)
  for v in old new; do
    bin=$OLD; [[ $v == new ]] && bin=$NEW
    timeout 300 "${MPI[@]}" -n 2 "$bin" train "$REPO/examples/deepfm.yaml" --run-dir "runs/mpi2-$v" \
      "${COMMON[@]}" --set threads=1 >"logs-mpi2-$v.txt" 2>&1
    timeout 300 "${MPI[@]}" -n 3 "$bin" train "$REPO/examples/deepfm.yaml" --run-dir "runs/async-$v" \
      "${COMMON[@]}" --set threads=1 --set dist.mode=async --set dist.servers=1 \
      --set train.eval_every_steps=0 --set train.checkpoint_every_steps=0 \
      --set train.early_stopping.patience=0 >"logs-async-$v.txt" 2>&1
  done
  compare_runs mpi2 runs/mpi2-old runs/mpi2-new
  # Async workers race by design: only the shape of what they leave is compared.
  diff <(cd runs/async-old && find model -type f | sort) <(cd runs/async-new && find model -type f | sort) >/dev/null
  report "async 3 ranks: same files" $?
fi

if [[ ${CALLGRIND:-0} == 1 ]] && command -v valgrind >/dev/null; then
  for v in old new; do
    bin=$OLD; [[ $v == new ]] && bin=$NEW
    OMP_NUM_THREADS=1 RECTRAIN_KEEP_OMP_ENV=1 valgrind --tool=callgrind --callgrind-out-file="cg-$v.out" "$bin" train \
      "$REPO/examples/deepfm.yaml" --run-dir "runs/cg-$v" "${COMMON[@]}" --set threads=1 \
      --set data.reader_threads=1 --set train.max_steps=6 --set data.valid="" \
      --set train.eval_every_steps=0 --set train.early_stopping.patience=0 \
      >/dev/null 2>"cg-$v.log"
  done
  o=$(grep -m1 -oP 'Collected : \K[0-9]+' cg-old.log); n=$(grep -m1 -oP 'Collected : \K[0-9]+' cg-new.log)
  echo "INFO  callgrind instructions: old $o, new $n, new/old $($PY -c "print(f'{$n/$o:.4f}')")"
fi

exit $fail
