#!/bin/sh
# A hung rank under a real launcher (ctest label "mpi"). A rank stopped with SIGSTOP is not a dead
# one: OpenMPI does not notice it, so only the job's own deadline (dist.timeout_s) can end the
# job. Stopped in each kind of collective — the per-step agreement, inside a step, the
# checkpoint's agreement, the publication of the model — the job must end within the deadline
# plus a few seconds (12 here: mpirun's own teardown takes 2, and ctest runs other tests beside),
# every rank gone, with an error naming the silent rank; when rank 0 is the
# one that hangs, the survivor prints that error itself before the job is aborted.
# RECTRAIN_TEST_HANG_AT=RANK:PHASE (cli/train_cmd.cc) stops RANK when it enters a collective of
# that phase.
# Usage: mpi_hang_test.sh RECTRAIN MPIEXEC [MPIEXEC FLAGS...]
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
MPIEXEC=$2
shift 2
FLAGS="$*"
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_hang_XXXXXX")
cleanup() {
  # A failed case may leave a stopped rank behind: wake and end every process of this test.
  for p in $(pgrep -f "$W/run_" 2>/dev/null || true); do kill -CONT "$p" 2>/dev/null || true; kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$W"
}
trap cleanup EXIT
cd "$W"
fail() { echo "FAIL: $*"; exit 1; }
"$B" data gen --rows 6000 --out train.tsv --seed 1 >/dev/null 2>&1
"$B" data gen --rows 600 --out valid.tsv --seed 2 >/dev/null 2>&1
TIMEOUT=3
cat > cfg.yaml <<CFG
seed: 7
threads: 1
data: {train: train.tsv, valid: valid.tsv, batch_size: 256, shuffle: false}
model: {type: deepfm, embedding_dim: 4, hidden: [16]}
train: {epochs: 1, log_every_steps: 5, checkpoint_every_steps: 10}
dist: {timeout_s: $TIMEOUT}
tracking: {enabled: false}
monitoring: {enabled: false}
CFG

# hang NAME RANK PHASE: runs 2 ranks with rank RANK stopped at PHASE; checks how the job ends.
hang() {
  name=$1 silent=$2 phase=$3
  RECTRAIN_TEST_HANG_AT="$silent:$phase" $MPIEXEC $FLAGS -np 2 "$B" train cfg.yaml --run-dir "$W/run_$name" \
    --no-progress >"$name.txt" 2>&1 &
  job=$!
  # The moment the rank stops (state T in /proc), then the end of the job, each with a deadline.
  i=0 stopped=""
  while [ -z "$stopped" ]; do
    for p in $(pgrep -P "$job" 2>/dev/null || true); do
      [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" = T ] && stopped=$p
    done
    kill -0 "$job" 2>/dev/null || { cat "$name.txt"; fail "$name: the job ended before rank $silent stopped at '$phase'"; }
    i=$((i + 1)); [ $i -lt 1200 ] || { cat "$name.txt"; fail "$name: rank $silent never reached '$phase'"; }
    sleep 0.05
  done
  start=$(date +%s.%N)
  i=0
  while kill -0 "$job" 2>/dev/null; do
    i=$((i + 1))
    [ $i -lt 1200 ] || { cat "$name.txt"; fail "$name: the job still runs 60 s after rank $silent hung at '$phase'"; }
    sleep 0.05
  done
  elapsed=$(/usr/bin/python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$start" "$(date +%s.%N)")
  rc=0; wait "$job" || rc=$?
  [ "$rc" -ne 0 ] || { cat "$name.txt"; fail "$name: exit 0 although rank $silent hung"; }
  /usr/bin/python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) + 12 else 1)" "$elapsed" "$TIMEOUT" ||
    { cat "$name.txt"; fail "$name: the job took ${elapsed}s to end after rank $silent hung (dist.timeout_s $TIMEOUT)"; }
  [ -z "$(pgrep -f "$W/run_$name" || true)" ] || fail "$name: a rank process outlived the job"
  grep -q "no message from rank $silent" "$name.txt" || { cat "$name.txt"; fail "$name: no error names the silent rank $silent"; }
  echo "ok: rank $silent hung at '$phase': the job ended ${elapsed}s later (exit $rc)"
}

hang agreement 1 "the start of step 5 "
hang step 1 "step 7"
hang checkpoint 1 "the checkpoint at step 10 (writing"
hang publish 1 "the publication of the model"
hang lead 0 "step 7"
# The survivor (rank 1) reported the error itself, naming rank 0, before it aborted the job (mpirun
# may print its own MPI_ABORT note before the rank's forwarded stderr).
grep -q "rectrain train (rank 1 of 2): error: .*no message from rank 0" lead.txt ||
  { cat lead.txt; fail "rank 1 did not print the error naming rank 0"; }
echo PASS
