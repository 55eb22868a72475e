#!/bin/sh
# The dense data-parallel workload (ctest label "mpi"): examples/fashion_mnist_mlp.yaml on 1
# process and on 2 and 4 MPI ranks reaches >= 88% test accuracy, the same on every rank count
# (within 0.2%: float sums in other orders). Skips (77) without Debian's dataset-fashion-mnist.
# Usage: mpi_fashion_mnist_test.sh RECTRAIN MPIEXEC [MPIEXEC FLAGS...]
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
MPIEXEC=$2
shift 2
FLAGS="$*"
SRC=$(cd "$(dirname "$0")/.." && pwd)
[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
  { echo "SKIP: dataset-fashion-mnist is not installed (scripts/install_deps.sh installs it)"; exit 77; }
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_fmnist_XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"
S="--set tracking.enabled=false --set monitoring.enabled=false --quiet"
field() { /usr/bin/python3 -c "import json; s=json.load(open('$1/summary.json')); print($2)"; }
fail() { echo "FAIL: $*"; exit 1; }
"$B" train "$SRC/examples/fashion_mnist_mlp.yaml" --run-dir one $S >/dev/null || fail "1 process"
$MPIEXEC $FLAGS -np 2 "$B" train "$SRC/examples/fashion_mnist_mlp.yaml" --run-dir two --set threads=1 $S >/dev/null ||
  fail "2 ranks"
$MPIEXEC $FLAGS -np 4 "$B" train "$SRC/examples/fashion_mnist_mlp.yaml" --run-dir four --set threads=1 $S >/dev/null ||
  fail "4 ranks"
for r in one two four; do
  echo "$r: accuracy $(field $r "s['valid']['accuracy']"), $(field $r "round(s['train']['samples_per_sec'])") samples/s"
  /usr/bin/python3 -c "import sys; sys.exit(0 if $(field $r "s['valid']['accuracy']") >= 0.88 else 1)" ||
    fail "$r: accuracy below 88%"
done
A1=$(field one "s['valid']['accuracy']")
for r in two four; do
  A=$(field $r "s['valid']['accuracy']")
  /usr/bin/python3 -c "import sys; sys.exit(0 if abs($A-$A1) <= 0.002 else 1)" || fail "$r: accuracy $A vs $A1 on one process"
done
echo PASS
