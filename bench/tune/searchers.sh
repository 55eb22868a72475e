#!/bin/sh
# The searcher benchmark (docs/benchmarks.md "Hyperparameter search"): the same 30-trial study
# (searchers_study.yaml) with the random and the TPE searcher, 5 seeds each, then the trials each
# needed to reach a target AUC (median over the seeds). Run from the repository root:
#   sh bench/tune/searchers.sh [build/release/rectrain] [SEEDS (default "1 2 3 4 5")]
set -eu
B=${1:-build/release/rectrain}
SEEDS=${2:-1 2 3 4 5}
D=bench/tune/data
mkdir -p $D
[ -f $D/s_train.tsv ] || "$B" data gen --rows 100000 --out $D/s_train.tsv --seed 11 --shape criteo
[ -f $D/s_valid.tsv ] || "$B" data gen --rows 20000 --out $D/s_valid.tsv --seed 12 --shape criteo
for searcher in random tpe; do
  for seed in $SEEDS; do
    s=$D/searchers-$searcher-$seed
    [ -f $s/best.yaml ] && continue
    rm -rf $s
    sed "s/SEARCHER/$searcher/g; s/SEED/$seed/g" bench/tune/searchers_study.yaml > bench/tune/.study-$searcher-$seed.yaml
    "$B" tune bench/tune/.study-$searcher-$seed.yaml --study-dir $s --no-table --no-metrics > $s.out 2> $s.err
    rm -f bench/tune/.study-$searcher-$seed.yaml
  done
done
python3 - "$D" "$SEEDS" <<'PY'
import json, statistics, sys
d, seeds = sys.argv[1], sys.argv[2].split()
def values(searcher, seed):
    v = {}
    for line in open(f"{d}/searchers-{searcher}-{seed}/journal.jsonl"):
        e = json.loads(line)
        if e.get("ev") == "rung" and e.get("value") is not None:
            v[e["trial"]] = e["value"]
    return [v.get(i) for i in range(30)]
runs = {(s, k): values(s, k) for s in ("random", "tpe") for k in seeds}
best = max(x for r in runs.values() for x in r if x is not None)
print(f"best valid.auc over all {len(runs) * 30} trials: {best:.5f}")
def needed(r, target):
    for i, x in enumerate(r):
        if x is not None and x >= target:
            return i + 1
    return None  # not reached in 30
print("| target | searcher | trials needed per seed (" + ", ".join(seeds) + ") | median |")
print("|---|---|---|---|")
for gap in (0.002, 0.005, 0.010):
    target = best - gap
    for s in ("random", "tpe"):
        n = [needed(runs[(s, k)], target) for k in seeds]
        med = statistics.median([x if x is not None else 31 for x in n])
        shown = ", ".join(str(x) if x is not None else ">30" for x in n)
        print(f"| {target:.5f} (best - {gap}) | {s} | {shown} | {'>30' if med > 30 else f'{med:g}'} |")
print()
print("| searcher | best after 10 / 20 / 30 trials (median over seeds) | trials within 0.01 of the best, of 30 (median) |")
print("|---|---|---|")
for s in ("random", "tpe"):
    b = [statistics.median(max(x for x in runs[(s, k)][:n] if x is not None) for k in seeds) for n in (10, 20, 30)]
    good = statistics.median(sum(1 for x in runs[(s, k)] if x is not None and x >= best - 0.01) for k in seeds)
    print(f"| {s} | {b[0]:.5f} / {b[1]:.5f} / {b[2]:.5f} | {good:g} |")
PY
