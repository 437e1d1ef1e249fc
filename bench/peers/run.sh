#!/bin/sh
# bench/peers/run.sh — tutti against Open MPI, MPICH and torch gloo on this machine
# (`make bench-peers`). Installs what is missing (apt-get), builds the harnesses, runs the same
# sweep with every program, alternating them (tutti, ompi, mpich, gloo, tutti, ...) so that the
# machine's slow drifts in load hit all of them alike, then writes bench/results/peers.md and
# bench/results/peers_busbw.png from the medians over the rounds.
#
# Every harness times the same way (tutti-bench's: a barrier, back-to-back calls, the slowest
# rank's time) and prints the same JSON lines; see bench/peers/mpi_bench.c. Each round also
# measures two physical references: the latency floor (bench/peers/shm_floor.c) and raw
# loopback TCP (bench/peers/tcp_loopback.c); and tutti at n = 2 on registered buffers
# (tutti_mem_alloc, `tutti-bench -R 1`), for the roofline only: the MPIs' harness has none.
#
# Overrides (environment):
#   ROUNDS=5                        rounds; each round runs every program at every n once
#   SIZES=8,1k,64k,1M,16M,64M       sizes (bytes; k, M, G are powers of 1024), increasing
#   NS="2 4 8"                      rank counts
#   COLLS=allreduce,allgather,reduce_scatter,broadcast
#   PROGRAMS="tutti ompi mpich gloo"
#   OUT=bench/results  BUILD=build  RUN_TIMEOUT=900 (seconds per program run)
#   NO_INSTALL=1                    never call apt-get
# shellcheck disable=SC2086 # CFLAGS_B and TB are word lists, split on purpose
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
ROUNDS=${ROUNDS:-5}
SIZES=${SIZES:-8,1k,64k,1M,16M,64M}
NS=${NS:-2 4 8}
COLLS=${COLLS:-allreduce,allgather,reduce_scatter,broadcast}
PROGRAMS=${PROGRAMS:-tutti ompi mpich gloo}
OUT=${OUT:-bench/results}
BUILD=${BUILD:-build}
RUN_TIMEOUT=${RUN_TIMEOUT:-900}
PY=/usr/bin/python3 # the pyenv python3 on PATH has no torch
RAW=$OUT/raw
BIN=$BUILD/bench

log() { printf '%s bench-peers: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# ---- install -----------------------------------------------------------------------------
need=""
command -v mpicc.openmpi >/dev/null 2>&1 || need="$need openmpi-bin libopenmpi-dev"
command -v mpicc.mpich >/dev/null 2>&1 || need="$need mpich libmpich-dev"
$PY -c 'import torch.distributed' >/dev/null 2>&1 || need="$need python3-torch"
command -v gnuplot >/dev/null 2>&1 || need="$need gnuplot-nox"
if [ -n "$need" ]; then
  if [ -n "${NO_INSTALL:-}" ]; then
    log "missing packages:$need (NO_INSTALL is set)"
    exit 1
  fi
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  log "installing:$need"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $need
fi

# ---- build -------------------------------------------------------------------------------
log "building tutti and the harnesses"
make -s BUILD="$BUILD" all >/dev/null
mkdir -p "$BIN" "$RAW"
CFLAGS_B="-O2 -std=c11 -Wall -Wextra -Werror"
mpicc.openmpi $CFLAGS_B -o "$BIN/mpi_bench_openmpi" bench/peers/mpi_bench.c
mpicc.mpich $CFLAGS_B -o "$BIN/mpi_bench_mpich" bench/peers/mpi_bench.c
cc $CFLAGS_B -o "$BIN/tcp_loopback" bench/peers/tcp_loopback.c
cc $CFLAGS_B -o "$BIN/shm_floor" bench/peers/shm_floor.c
rm -f "$RAW"/*.jsonl "$RAW"/*.err "$RAW"/failures.txt

# ---- the machine -------------------------------------------------------------------------
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
  echo "memory: $(free -g | awk '/^Mem:/ {print $2}') GiB"
  echo "kernel: $(uname -r)"
  # shellcheck source=/dev/null
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "tutti: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "compiler: $(cc --version | head -1)"
  dpkg-query -W -f='package ${Package}: ${Version}\n' openmpi-bin mpich python3-torch \
    2>/dev/null || true
  echo "rounds: $ROUNDS"
  echo "sizes: $SIZES"
  echo "ns: $NS"
  echo "collectives: $COLLS"
  echo "programs: $PROGRAMS"
  echo "command: ROUNDS=$ROUNDS SIZES=$SIZES NS=\"$NS\" make bench-peers"
} >"$RAW/sysinfo.txt"

# ---- the sweep ---------------------------------------------------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TB="$BUILD/bin/tutti-bench $COLLS --sizes $SIZES --json -c 1"

# run NAME N COMMAND...: one program at one n; keeps its JSON lines, never stops the sweep.
run() {
  name=$1 n=$2
  shift 2
  f="$RAW/r${round}_${name}_n${n}"
  t0=$(date +%s)
  if timeout "$RUN_TIMEOUT" "$@" >"$f.out" 2>"$f.err"; then
    status=0
  else
    status=$?
    echo "round $round $name n=$n: exit status $status (see $(basename "$f").err)" >>"$RAW/failures.txt"
  fi
  # tutti-run prefixes "[rank] "; every harness's data lines are JSON objects.
  sed -n 's/^\[[0-9]*\] //; /^{/p' "$f.out" >"$f.jsonl"
  rm -f "$f.out"
  [ -s "$f.err" ] || rm -f "$f.err"
  cells_done=$((cells_done + 1))
  local left=$((cells_total - cells_done)) spent=$(($(date +%s) - start))
  log "cell $cells_done/$cells_total (round $round/$ROUNDS $name n=$n): $(wc -l <"$f.jsonl") rows, $(($(date +%s) - t0)) s, status $status; $left left, about $((spent * left / cells_done / 60)) min $((spent * left / cells_done % 60)) s to go"
}

start=$(date +%s)
# Progress: every run is one cell (a program at one n, the latency floor, the registered
# run, or one of the two tcp runs of a round).
cells_total=$((ROUNDS * ($(echo $NS | wc -w) * $(echo $PROGRAMS | wc -w) + 4)))
cells_done=0
log "$cells_total cells: $ROUNDS rounds x (n in $NS x $PROGRAMS, + latency floor, tutti registered, tutti tcp and raw tcp)"
round=1
while [ "$round" -le "$ROUNDS" ]; do
  # The floor of the n = 2 latency cells (one cache-line exchange between two processes),
  # measured next to them: on a VM it moves with the vCPUs' placement from round to round.
  run shm_floor 2 "$BIN/shm_floor" 200000 5
  for n in $NS; do
    for p in $PROGRAMS; do
      case $p in
      tutti) run tutti "$n" "$BUILD/bin/tutti-run" -n "$n" $TB --outofplace --roofline ;;
      ompi) run ompi "$n" mpirun.openmpi --allow-run-as-root --oversubscribe -n "$n" \
        "$BIN/mpi_bench_openmpi" "$COLLS" --sizes "$SIZES" --json --outofplace ;;
      mpich) run mpich "$n" mpiexec.mpich -n "$n" \
        "$BIN/mpi_bench_mpich" "$COLLS" --sizes "$SIZES" --json --outofplace ;;
      # gloo: torch's own form of each call (in place for all_reduce and broadcast, out of
      # place for all_gather: torch has no other), which is also gloo's faster one.
      gloo) run gloo "$n" $PY bench/peers/gloo_bench.py -N "$n" "$COLLS" --sizes "$SIZES" \
        --json --natural ;;
      *) log "unknown program $p" && exit 2 ;;
      esac
    done
  done
  # The roofline again on registered buffers, where peers read each other's data in place.
  run tutti_reg 2 "$BUILD/bin/tutti-run" -n 2 $TB --outofplace --roofline -R 1
  # The TCP target: tutti's tcp transport at n = 2 against raw loopback TCP, same round.
  run tutti_tcp 2 env TUTTI_TRANSPORT=tcp "$BUILD/bin/tutti-run" -n 2 \
    "$BUILD/bin/tutti-bench" allreduce --sizes "$SIZES" --json -c 1 --outofplace
  run tcp_loopback 2 "$BIN/tcp_loopback" 512 64 3
  round=$((round + 1))
done
echo "sweep: $(($(date +%s) - start)) s" >>"$RAW/sysinfo.txt"

log "writing $OUT/peers.md and $OUT/peers_busbw.png"
$PY bench/peers/summarize.py "$RAW" "$OUT"
log "done in $(($(date +%s) - start)) s"
