#!/bin/sh
# The census target of the model zoo (docs/benchmarks.md "Model zoo"): MMoE on UCI Adult
# (examples/census/adult_mmoe.yaml: income and never married) against two separately trained
# single-task models with the same features, optimizers, epochs and a network as deep as one
# expert plus its tower (mlp, hidden = expert_hidden + tower_hidden). One line per seed, then
# the means and MMoE's difference per task.
# Usage: sh bench/zoo/census_mmoe.sh [WORK_DIR] [SEEDS...]   (repository root, release build)
#   EXTRA="--set train.epochs=10" sh bench/zoo/census_mmoe.sh   passes overrides to every run
#   SINGLE_HIDDEN="[256, 16]" sh bench/zoo/census_mmoe.sh   single-task networks as wide as all experts
set -eu
R=$(pwd)
B=$R/build/release/rectrain
W=${1:-bench-census}
[ $# -gt 0 ] && shift
SEEDS=${*:-1 2 3 4 5}
CFG=$R/examples/census/adult_mmoe.yaml
mkdir -p "$W"
[ -f "$W/data/valid.tsv" ] || sh "$R/examples/census/adult_convert.sh" "$R/../shared/data/uci-adult" "$W/data" >/dev/null
DENSE='[age, fnlwgt, education_num, capital_gain, capital_loss, hours_per_week]'
EXTRA=${EXTRA:-}
SINGLE_HIDDEN=${SINGLE_HIDDEN:-[64, 16]}
auc() {  # auc SUMMARY_JSON [TASK]
  python3 -c "import json, sys; v = json.load(open(sys.argv[1]))['valid']; t = sys.argv[2:]; print('%.5f' % (v['tasks'][t[0]]['auc'] if t else v['auc']))" "$@"
}
run() {  # run NAME SEED ARGS...
  name=$1 seed=$2; shift 2
  rm -rf "$W/$name-$seed"
  # shellcheck disable=SC2086
  "$B" train "$CFG" --run-dir "$W/$name-$seed" --set seed=$seed \
    --set "data.train=$W/data/train.tsv" --set "data.valid=$W/data/valid.tsv" \
    --set tracking.enabled=false --set monitoring.enabled=false "$@" $EXTRA > "$W/$name-$seed.log" 2>&1 ||
    { cat "$W/$name-$seed.log" >&2; exit 1; }
}
single() {  # single NAME SEED LABEL
  run "$1" "$2" --set model.type=mlp --set 'model.task_labels=[]' --set 'model.task_weights=[]' \
    --set "model.hidden=$SINGLE_HIDDEN" --set "data.dense=$DENSE" --set 'features.transforms={}' --set "data.label=$3"
}
echo "seed | mmoe income | single income | mmoe never_married | single never_married"
for s in $SEEDS; do
  run mmoe "$s"
  single income "$s" income
  single never "$s" never_married
  echo "$s | $(auc "$W/mmoe-$s/summary.json" income) | $(auc "$W/income-$s/summary.json") |" \
    "$(auc "$W/mmoe-$s/summary.json" never_married) | $(auc "$W/never-$s/summary.json")"
done | tee "$W/table.txt"
awk -F' [|] ' '{ for (i = 2; i <= 5; i++) m[i] += $i; n++ }
  END { printf "mean | %.5f | %.5f | %.5f | %.5f\n", m[2] / n, m[3] / n, m[4] / n, m[5] / n
        printf "MMoE - single: income %+.5f, never_married %+.5f\n", (m[2] - m[3]) / n, (m[4] - m[5]) / n }' "$W/table.txt"
