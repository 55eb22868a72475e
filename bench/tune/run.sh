#!/bin/sh
# The tune benchmark (docs/benchmarks.md "Hyperparameter search"): generates 1M + 200k
# criteo-shape rows once, runs the 16-configuration DeepFM study with ASHA (2 trials x 1 thread)
# and the same 16 to completion one after another (2 threads each), and compares wall times
# and the best AUC. Run from the repository root: sh bench/tune/run.sh [build/release/rectrain]
set -eu
B=${1:-build/release/rectrain}
D=bench/tune/data
mkdir -p $D
[ -f $D/train.tsv ] || "$B" data gen --rows 1000000 --out $D/train.tsv --seed 1 --shape criteo
[ -f $D/valid.tsv ] || "$B" data gen --rows 200000 --out $D/valid.tsv --seed 2 --shape criteo
"$B" data cache bench/tune/deepfm_base.yaml > /dev/null
rm -rf $D/asha $D/serial
"$B" tune bench/tune/deepfm_asha.yaml --study-dir $D/asha --no-table > $D/asha.out 2> $D/asha.err
"$B" tune bench/tune/deepfm_serial.yaml --study-dir $D/serial --no-table > $D/serial.out 2> $D/serial.err
python3 - "$D" <<'PY'
import json, re, sys
d = sys.argv[1]
def wall(name):
    return float(re.search(r"wall ([0-9.]+) s", open(f"{d}/{name}.out").read()).group(1))
def overhead(name):
    return re.search(r"tuner overhead ([0-9.]+) s \(([0-9.]+)%\)", open(f"{d}/{name}.out").read()).groups()
def results(name):
    out = {}
    for line in open(f"{d}/{name}/journal.jsonl"):
        e = json.loads(line)
        if e.get("ev") == "rung":
            out[e["trial"]] = (e["budget"], e["value"])
    return out
a, s = results("asha"), results("serial")
full = max(v for b, v in s.values())
top = max(v for b, v in a.values() if b >= 243)
print(f"wall: asha {wall('asha'):.1f} s, serial {wall('serial'):.1f} s, ratio {wall('asha') / wall('serial'):.3f}")
print(f"best valid.auc: asha {top:.5f}, best of the 16 full runs {full:.5f}, gap {full - top:+.5f}")
print(f"tuner overhead: asha {overhead('asha')[0]} s ({overhead('asha')[1]}%), serial {overhead('serial')[0]} s ({overhead('serial')[1]}%)")
steps = sum(b for b, v in a.values())
print(f"steps trained: asha {steps} (in rungs), serial {sum(b for b, v in s.values())}")
ranked = sorted(s.items(), key=lambda kv: -kv[1][1])
print("full-run ranking (trial: auc):", ", ".join(f"t{t:03d}: {v:.5f}" for t, (b, v) in ranked))
PY
