#!/bin/sh
# Several hosts on one machine (ctest label "mpi"): two network namespaces joined by veth pairs
# to a bridge, OpenMPI launching one rank in each (its rsh agent is `ip netns exec`), MPI over
# TCP between them (no shared memory). rectrain doctor measures the link; a 2-host job trains the
# same model as one process. Skips (exit 77) where namespaces cannot be made (not root, no
# iproute2, no CAP_NET_ADMIN).
# Usage: netns_train_test.sh RECTRAIN MPIEXEC
set -u
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
MPIEXEC=$2
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null 2>&1 || skip "needs iproute2 (ip)"
TAG=$(( $$ % 200 + 20 ))            # a per-run subnet and names, so parallel runs do not collide
NET=10.$TAG.77
H1=rth${TAG}a H2=rth${TAG}b BR=rtbr$TAG
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_netns_XXXXXX")
cleanup() {
  ip netns del "$H1" 2>/dev/null; ip netns del "$H2" 2>/dev/null; ip link del "$BR" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
ip netns add "$H1" 2>/dev/null || skip "cannot create a network namespace here (ip netns add failed)"
ip netns add "$H2" && ip link add "$BR" type bridge && ip link set "$BR" up && ip addr add "$NET.1/24" dev "$BR" ||
  skip "cannot build the bridge"
i=0
for H in "$H1" "$H2"; do
  i=$((i + 1))
  ip link add "v$H" type veth peer name "p$H" && ip link set "p$H" netns "$H" && ip link set "v$H" master "$BR" &&
    ip link set "v$H" up && ip netns exec "$H" ip addr add "$NET.1$i/24" dev "p$H" &&
    ip netns exec "$H" ip link set "p$H" up && ip netns exec "$H" ip link set lo up || skip "cannot wire $H"
done
set -e
# OpenMPI's rsh agent: "HOST command..." runs the command in HOST's namespace.
cat > "$W/agent.sh" <<AGENT
#!/bin/sh
host=\$1
shift
case "\$host" in
  $NET.11) ns=$H1 ;;
  $NET.12) ns=$H2 ;;
  *) echo "netns agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x "$W/agent.sh"
cd "$W"
fail() { echo "FAIL: $*"; head -20 out.txt 2>/dev/null; echo ...; tail -10 out.txt 2>/dev/null; exit 1; }
# OpenMPI's remote daemon (orted) sometimes crashes in orte_init (rtc component selection) before
# any rank starts, also with no other job running. launch OUT CMD... runs CMD on both hosts with
# output to OUT and retries that launch failure (and only that) up to twice, each time from a
# fresh run directory "two".
launch() {
  out=$1
  shift
  for attempt in 1 2 3; do
    [ "$attempt" = 1 ] || echo "note: orted failed to start (orte_init); launch $attempt"
    $MPI "$@" >"$out" 2>&1 && return 0
    grep -q "orte_init" "$out" || return 1
    [ ! -f two/summary.json ] || return 1  # a run that finished was launched: not this failure
    rm -rf two
  done
  return 1
}
MPI="$MPIEXEC --allow-run-as-root --bind-to none -H $NET.11,$NET.12 -np 2 --mca plm_rsh_agent $W/agent.sh
     --mca btl tcp,self --mca btl_tcp_if_include $NET.0/24 --mca oob_tcp_if_include $NET.0/24"
"$B" data gen --rows 20000 --out train.tsv --seed 1 >/dev/null 2>&1
"$B" data gen --rows 3000 --out valid.tsv --seed 2 >/dev/null 2>&1
cat > cfg.yaml <<'CFG'
seed: 5
deterministic: true
threads: 1
data: {train: train.tsv, valid: valid.tsv, batch_size: 512, shuffle: true}
model: {type: deepfm, embedding_dim: 8, hidden: [32, 16]}
embedding: {optimizer: {type: adagrad, lr: 0.05}}
optimizer: {type: adam, lr: 0.002}
train: {epochs: 1, log_every_steps: 10}
dist: {timeout_s: 30}
tracking: {enabled: false}
monitoring: {enabled: false}
CFG
# The ranks really are in two namespaces with their own addresses.
launch ns.txt sh -c 'echo "$OMPI_COMM_WORLD_RANK $(readlink /proc/self/ns/net) $(ip -4 -o addr show | grep -o "'"$NET"'\.[0-9]*")"' ||
  { cat ns.txt; fail "mpirun across the namespaces"; }
[ "$(grep -c "net:" ns.txt)" = 2 ] && [ "$(grep "net:" ns.txt | awk '{print $2}' | sort -u | wc -l)" = 2 ] ||
  { cat ns.txt; fail "the two ranks do not run in two network namespaces"; }
launch out.txt "$B" doctor cfg.yaml || fail "doctor across the namespaces"
echo "link (TCP over veth): $(grep '^1 ' out.txt | awk '{print $(NF-3), $(NF-2), $(NF-1), $NF}')"
"$B" train cfg.yaml --run-dir one --quiet >/dev/null 2>&1 || fail "single-process run"
launch out.txt "$B" train cfg.yaml --run-dir two --quiet || fail "2-host run"
field() { /usr/bin/python3 -c "import json; s=json.load(open('$1/summary.json')); print($2)"; }
[ "$(field two "s['dist']['transport']")" = mpi ] || fail "the 2-host run did not use MPI"
A1=$(field one "s['valid']['auc']") A2=$(field two "s['valid']['auc']")
/usr/bin/python3 -c "import sys; sys.exit(0 if abs($A1-$A2) <= 2e-4 else 1)" || fail "AUC $A2 on 2 hosts vs $A1 on one"
echo "ok: one host auc $A1, two hosts over TCP auc $A2, $(field two "s['dist']['ranks'][1]['bytes_sent']") bytes sent by rank 1"
echo PASS
