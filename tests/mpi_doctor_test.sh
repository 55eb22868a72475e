#!/bin/sh
# rectrain doctor on one process and under mpiexec (ctest label "mpi"): a ready allocation exits
# 0 with a table of every rank and the links from rank 0; a rank that cannot read the data (MPMD
# launch with another config on rank 1) and a memory budget above what a rank has are problems
# (exit 1, naming the rank); so is a rank started with another config. embedding.memory_budget
# counts once per embedding table (DeepFM has one for its 26 fields), not once per field.
# Usage: mpi_doctor_test.sh RECTRAIN MPIEXEC [MPIEXEC FLAGS...]
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
MPIEXEC=$2
shift 2
FLAGS="$*"
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_doctor_XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"
fail() { echo "FAIL: $*"; cat out.txt 2>/dev/null; exit 1; }
"$B" data gen --rows 1000 --out train.tsv --seed 1 >/dev/null 2>&1
printf 'data: {train: train.tsv}\n' > ok.yaml
printf 'data: {train: /nonexistent/part-*.tsv}\n' > missing.yaml

"$B" doctor ok.yaml >out.txt 2>&1 || fail "single process: exit $?"
grep -q "1 rank(s) over single" out.txt || fail "single process: no header"
grep -q "ok: ready" out.txt || fail "single process: not ready"

# 26 categorical fields, one DeepFM table: 1 GiB once, not 26 GiB (above this machine's memory).
printf 'data: {train: train.tsv, memory_cache_bytes: 256MiB}\nmodel: {type: deepfm}\nembedding: {memory_budget: 1GiB}\n' > deepfm.yaml
"$B" doctor deepfm.yaml >out.txt 2>&1 || fail "deepfm with a 1 GiB budget: exit $?"
grep -q "(1 embedding table(s))" out.txt || fail "deepfm: the budget is not counted once for its one table"

$MPIEXEC $FLAGS -np 2 "$B" doctor ok.yaml >out.txt 2>&1 || fail "2 ranks: exit $?"
grep -q "2 rank(s) over mpi" out.txt || fail "2 ranks: no header"
grep -Eq "^1 .* us .* GB/s" out.txt || fail "2 ranks: no latency/bandwidth for rank 1"
grep -q "ok: ready" out.txt || fail "2 ranks: not ready"
echo "ok: $(grep '^1 ' out.txt | tr -s ' ')"

rc=0
$MPIEXEC $FLAGS -np 1 "$B" doctor ok.yaml : -np 1 "$B" doctor missing.yaml >out.txt 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "a rank without the data: exit 0"
grep -q "problem: rank 1 (.*) cannot read the data" out.txt || fail "a rank without the data is not named"

rc=0
$MPIEXEC $FLAGS -np 1 "$B" doctor ok.yaml : -np 1 "$B" doctor ok.yaml --set seed=9 >out.txt 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "ranks with different configs: exit 0"
grep -q "problem: rank 1 (.*) was started with another configuration than rank 0" out.txt ||
  fail "a rank with another config is not named"

rc=0
$MPIEXEC $FLAGS -np 2 "$B" doctor ok.yaml --set data.memory_cache_bytes=1000TiB >out.txt 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "a budget above the memory: exit 0"
grep -q "problem: rank 0 (.*) has .* available but the config may hold" out.txt || fail "the memory problem is not named"
echo PASS
