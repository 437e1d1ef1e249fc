#!/usr/bin/env bash
# bench/cluster/run.sh — tutti against gloo and Open MPI across network-namespace "hosts" on
# this machine (`make bench-cluster`); the hosts come from tests/cluster/cluster.sh: 3 hosts,
# each with one veth into a bridge, tbf-shaped to RATE on both ends.
#
# Per round, per rate, per placement, every program runs once, one after the other (the order
# rotates each round, so slow drifts of the machine's load hit all of them alike); then
# bench/cluster/summarize.py writes $OUT/cluster.md and $OUT/cluster_busbw.png from the medians
# over rounds, with each cell's host-link bound (derived in cluster.md) and the % reached.
#   tutti_ALGO   tutti-bench with TUTTI_ALGO=ALGO, for each ALGO in TUTTI_ALGOS
#   gloo         bench/peers/gloo_bench.py over torch.distributed gloo, GLOO_SOCKET_IFNAME=eth0
#   ompi         bench/peers/mpi_bench.c under Open MPI's mpirun, started on h0; its daemons
#                reach the other hosts through bench/cluster/netns_agent.sh (plm_rsh_agent)
#   ompi_yield   the same with --mca mpi_yield_when_idle 1
#   link         (every round and rate) one raw TCP stream h0 -> h1: what the shaped link gives
# Every harness times as tutti-bench does (see bench/peers/mpi_bench.c) and prints its JSON.
#
# Overrides (environment):
#   ROUNDS=3  SIZES=8,64k,1M,16M  RATES="1gbit 10gbit"  SPECS="block:3x2 cyclic:3x2 block:3x1"
#   COLLS=allreduce,allgather,reduce_scatter,broadcast
#   TUTTI_ALGOS="auto ring hier"   the tutti algorithm axis (auto: the tuner's pick)
#   PROGRAMS="tutti gloo ompi ompi_yield"
#   OUT=bench/results  BUILD=build  RUN_TIMEOUT=900 (seconds per program run)
#   WARMUP=5                       untimed calls per size and program (every harness's -w)
#   NOTE="..."                     a line at the top of cluster.md (e.g. what the run was for)
#   NO_INSTALL=1                   never call apt-get
# Needs root (network namespaces); exits 77 with the reason otherwise.
# shellcheck disable=SC2086 # word lists are split on purpose
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
ROUNDS=${ROUNDS:-3}
SIZES=${SIZES:-8,64k,1M,16M}
RATES=${RATES:-1gbit 10gbit}
SPECS=${SPECS:-block:3x2 cyclic:3x2 block:3x1}
COLLS=${COLLS:-allreduce,allgather,reduce_scatter,broadcast}
TUTTI_ALGOS=${TUTTI_ALGOS:-auto ring hier}
PROGRAMS=${PROGRAMS:-tutti gloo ompi ompi_yield}
OUT=${OUT:-bench/results}
BUILD=${BUILD:-build}
RUN_TIMEOUT=${RUN_TIMEOUT:-900}
WARMUP=${WARMUP:-5}
NOTE=${NOTE:-}
PY=/usr/bin/python3 # the python3 on PATH may have no torch
RAW=$OUT/cluster_raw
BIN=$BUILD/bench

log() { printf '%s bench-cluster: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# shellcheck source=tests/cluster/cluster.sh
. tests/cluster/cluster.sh

# ---- install and build ---------------------------------------------------------------------
need=""
case " $PROGRAMS " in *" ompi"*) command -v mpicc.openmpi >/dev/null 2>&1 ||
  need="$need openmpi-bin libopenmpi-dev" ;;
esac
case " $PROGRAMS " in *" gloo "*) $PY -c 'import torch.distributed' >/dev/null 2>&1 ||
  need="$need python3-torch" ;;
esac
command -v gnuplot >/dev/null 2>&1 || need="$need gnuplot-nox"
for c in ip tc unshare; do command -v $c >/dev/null 2>&1 || need="$need iproute2 util-linux"; done
if [ -n "$need" ]; then
  if [ -n "${NO_INSTALL:-}" ] || [ "$(id -u)" != 0 ]; then
    log "missing packages:$need (NO_INSTALL is set, or not root)"
  else
    log "installing:$need"
    apt-get update >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >/dev/null
  fi
fi
log "building tutti and the harnesses"
make -s BUILD="$BUILD" all >/dev/null || exit 1
mkdir -p "$BIN" "$RAW"
if command -v mpicc.openmpi >/dev/null 2>&1; then
  mpicc.openmpi -O2 -std=c11 -Wall -Wextra -Werror -o "$BIN/mpi_bench_openmpi" \
    bench/peers/mpi_bench.c || exit 1
fi
rm -f "$RAW"/*.jsonl "$RAW"/*.err "$RAW"/failures.txt

progs=""
for p in $PROGRAMS; do
  if [ "$p" = tutti ]; then
    for a in $TUTTI_ALGOS; do progs="$progs tutti_$a"; done
  else
    progs="$progs $p"
  fi
done

# ---- the machine ---------------------------------------------------------------------------
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
  echo "memory: $(free -g | awk '/^Mem:/ {print $2}') GiB"
  lscpu | grep -i 'cache' | sed 's/^/cache: /; s/  */ /g'
  # The machine's copy speed as tutti measures it (a fresh measurement, not the cache).
  TUTTI_TUNE_MEASURE=force "$BUILD/bin/tutti-info" --explain allreduce 1M 2 2>/dev/null |
    sed -n 's/^ *copy /memcpy (tutti-info, measured now): copy /p'
  echo "uptime at start: $(uptime)"
  echo "kernel: $(uname -r)"
  # shellcheck source=/dev/null
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "tutti: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  dpkg-query -W -f='package ${Package}: ${Version}\n' openmpi-bin python3-torch 2>/dev/null || true
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "rounds: $ROUNDS"
  echo "warmup: $WARMUP"
  echo "sizes: $SIZES"
  echo "rates: $RATES"
  echo "placements: $SPECS"
  echo "collectives: $COLLS"
  echo "programs:$progs"
  echo "command: ROUNDS=$ROUNDS SIZES=$SIZES RATES=\"$RATES\" SPECS=\"$SPECS\" TUTTI_ALGOS=\"$TUTTI_ALGOS\" WARMUP=$WARMUP make bench-cluster"
  [ -z "$NOTE" ] || echo "note: $NOTE"
} >"$RAW/sysinfo.txt"

# ---- one program run -----------------------------------------------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CLUSTER_TAG # the agent needs the tag

# ompi_hostfile SPEC FILE: "hN slots=K" for each host of the placement.
ompi_hostfile() {
  local n
  n=$(cluster_spec_ranks "$1")
  cluster_placement "$1" "$n" | sort -n | uniq -c | awk '{print "h" $2 " slots=" $1}' >"$2"
}

# run PROG SPEC FILE: runs PROG at placement SPEC; its JSON lines go to FILE. Returns its status.
run() {
  local prog=$1 spec=$2 file=$3 n status=0 r
  n=$(cluster_spec_ranks "$spec")
  case $prog in
  tutti_*)
    CLUSTER_ENV="TUTTI_ALGO=${prog#tutti_} TUTTI_TIMEOUT=$RUN_TIMEOUT" cluster_run "$prog" "$spec" \
      "$BUILD/bin/tutti-bench" "$COLLS" --sizes "$SIZES" --json -c 1 --outofplace -w "$WARMUP"
    ;;
  gloo)
    # torch's own form of each call (in place for all_reduce and broadcast); no reduce_scatter
    # in torch 1.13's gloo.
    CLUSTER_ENV="GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1" cluster_run "$prog" "$spec" \
      $PY bench/peers/gloo_bench.py "$COLLS" --sizes "$SIZES" --json --natural -w "$WARMUP"
    ;;
  ompi | ompi_yield)
    local hf=$CLUSTER_TMP/hostfile map=slot extra=""
    ompi_hostfile "$spec" "$hf"
    [ "${spec%%:*}" = cyclic ] && map=node
    [ "$prog" = ompi_yield ] && extra="--mca mpi_yield_when_idle 1"
    CLUSTER_NRANKS=1
    CLUSTER_JOB=$prog
    cluster_exec 0 timeout "$RUN_TIMEOUT" mpirun.openmpi --hostfile "$hf" -n "$n" --map-by "$map" \
      --bind-to none --mca plm_rsh_agent "$ROOT/bench/cluster/netns_agent.sh" $extra \
      "$BIN/mpi_bench_openmpi" "$COLLS" --sizes "$SIZES" --json --outofplace -w "$WARMUP" \
      >"$CLUSTER_TMP/$prog.0" 2>&1 &
    CLUSTER_PIDS=($!)
    ;;
  *)
    log "unknown program $prog"
    return 2
    ;;
  esac
  cluster_wait "$RUN_TIMEOUT" || status=1
  grep '^{' "$CLUSTER_TMP/$prog.0" >"$file"
  if [ "$status" != 0 ] || [ ! -s "$file" ]; then
    status=1
    for ((r = 0; r < CLUSTER_NRANKS; r++)); do
      sed "s/^/[$r rc ${CLUSTER_RC[r]:-?}] /" "$CLUSTER_TMP/$prog.$r"
    done | grep -v '^\[[0-9]* rc [0-9?]*\] {' >"${file%.jsonl}.err"
  fi
  return $status
}

# link_check RATE FILE: one TCP stream h0 -> h1, about a second's worth of the rate.
link_check() {
  local mib
  case $1 in
  *gbit) mib=$((${1%gbit} * 120)) ;;
  *) mib=64 ;;
  esac
  cluster_exec 1 timeout 120 $PY bench/cluster/link_check.py recv 29999 "$mib" >"$2" 2>&1 &
  local recv_pid=$!
  CLUSTER_PIDS=("$recv_pid")
  cluster_exec 0 timeout 120 $PY bench/cluster/link_check.py send "$(cluster_host_ip 1)" 29999 \
    "$mib" >/dev/null 2>&1
  wait "$recv_pid"
  CLUSTER_PIDS=()
}

# ---- the sweep -----------------------------------------------------------------------------
start=$(date +%s)
set -- $progs
nprogs=$#
for ((round = 1; round <= ROUNDS; round++)); do
  for rate in $RATES; do
    cluster_up 3 "$rate"
    case $? in
    0) ;;
    77) log "SKIP: $CLUSTER_WHY"; exit 77 ;;
    *) log "cluster_up 3 $rate failed: $CLUSTER_WHY"; exit 1 ;;
    esac
    link_check "$rate" "$RAW/r${round}_${rate}_link.jsonl"
    log "round $round/$ROUNDS $rate: link $(cat "$RAW/r${round}_${rate}_link.jsonl")"
    for spec in $SPECS; do
      # The programs in rotated order: round k starts with the k-th.
      for ((i = 0; i < nprogs; i++)); do
        j=$(((i + round - 1) % nprogs + 1))
        prog=${!j}
        f="$RAW/r${round}_${rate}_${spec/:/-}_${prog}.jsonl"
        t0=$(date +%s)
        if run "$prog" "$spec" "$f"; then st=0; else
          st=1
          echo "round $round $rate $spec $prog: failed (see $(basename "${f%.jsonl}").err)" >>"$RAW/failures.txt"
        fi
        log "round $round/$ROUNDS $rate $spec $prog: $(wc -l <"$f") rows, $(($(date +%s) - t0)) s, status $st"
      done
    done
    cluster_down
  done
done
{
  echo "sweep: $(($(date +%s) - start)) s"
  echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$RAW/sysinfo.txt"
if ip netns list | grep -q "^$CLUSTER_TAG"; then log "namespaces left behind!"; fi

log "writing $OUT/cluster.md and $OUT/cluster_busbw.png"
$PY bench/cluster/summarize.py "$RAW" "$OUT"
log "done in $(($(date +%s) - start)) s"
