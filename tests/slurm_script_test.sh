#!/bin/sh
# deploy/slurm/rectrain-train.sbatch without a Slurm cluster: a stand-in `srun` on PATH runs the
# command as one task (srun's own options dropped). Checks what the script is for: doctor runs
# first; Slurm's --signal=B:TERM (sent to the batch shell only) reaches the trainer, which
# checkpoints and exits 143; resubmitting with the same run directory resumes to completion.
# Usage: slurm_script_test.sh RECTRAIN SOURCE_DIR
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$2
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_slurm_XXXXXX")
trap 'pkill -KILL -f "$W/run" 2>/dev/null || true; rm -rf "$W"' EXIT
cd "$W"
fail() { echo "FAIL: $*"; tail -20 job.out 2>/dev/null; exit 1; }
mkdir bin
cat > bin/srun <<'SRUN'
#!/bin/sh
# Stand-in for srun: drop srun's options, run the task (signals go straight to it, as srun
# forwards them), and note each launch.
while [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done
echo "srun: $2" >> "$SRUN_LOG"
exec "$@"
SRUN
chmod +x bin/srun
"$B" data gen --rows 400000 --out train.tsv --seed 1 >/dev/null 2>&1
cat > cfg.yaml <<'CFG'
data: {train: train.tsv, batch_size: 512}
model: {type: deepfm, embedding_dim: 8, hidden: [64, 32]}
train: {epochs: 1, log_every_steps: 10}
tracking: {enabled: false}
monitoring: {enabled: false}
CFG
export PATH="$W/bin:$PATH" SRUN_LOG="$W/srun.log" RECTRAIN="$B" SLURM_CPUS_ON_NODE=2
bash "$SRC/deploy/slurm/rectrain-train.sbatch" cfg.yaml "$W/run" >job.out 2>&1 &
JOB=$!
i=0
while ! grep -q "step" run/train.log 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 1200 ] || fail "training did not start"; sleep 0.05
  kill -0 $JOB 2>/dev/null || fail "the batch script ended before training started"
done
kill -TERM $JOB
rc=0; wait $JOB || rc=$?
[ $rc -eq 143 ] || fail "SIGTERM to the batch shell: exit $rc, expected 143 (checkpointed and stopped)"
field() { /usr/bin/python3 -c "import json; s=json.load(open('run/summary.json')); print($1)"; }
[ "$(field "s['status']")" = interrupted ] || fail "status $(field "s['status']") after SIGTERM"
[ "$(sed -n 1p srun.log)" = "srun: doctor" ] || fail "doctor did not run first: $(cat srun.log)"
ls run/checkpoints | grep -qv tmp || fail "no checkpoint after SIGTERM"
echo "ok: SIGTERM to the batch shell checkpointed at step $(field "s['train']['steps']")"
bash "$SRC/deploy/slurm/rectrain-train.sbatch" cfg.yaml "$W/run" >job.out 2>&1 || fail "resubmission: exit $?"
[ "$(field "s['status']")" = completed ] || fail "the resubmitted job did not complete"
[ "$(field "s['train']['rows_read']")" -ge 400000 ] || fail "the resumed run read $(field "s['train']['rows_read']") rows"
echo "ok: resubmitted, resumed and completed ($(field "s['train']['steps']") steps)"
echo PASS
