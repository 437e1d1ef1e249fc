# shellcheck shell=bash disable=SC2015,SC2016,SC2034
# (A && B || fail is meant; the sh -c scripts are literal; CLUSTER_* variables are for callers)
# tests/cluster/cluster.sh — a cluster of network-namespace "hosts" on one machine (bash
# library: `. tests/cluster/cluster.sh`). Used by tests/cluster/cluster_test.sh and
# bench/cluster/run.sh.
#
#   cluster_up H [RATE] [LOSS_PCT]   H hosts h0..h{H-1}: one namespace each plus a bridge
#                                    namespace; a veth from each host into the bridge; host i is
#                                    10.77.0.(i+1)/24 on its eth0. RATE (tc tbf, e.g. 1gbit) shapes
#                                    both ends of every veth (CLUSTER_BURST: tbf's burst);
#                                    LOSS_PCT (nft numgen) drops that percentage of the packets
#                                    into every host. Nothing is made
#                                    in the calling namespace: every address and rule lives in
#                                    the run's own namespaces.
#   cluster_down                     kills what cluster_run started and deletes the namespaces
#                                    (installed by cluster_up as the EXIT/INT/TERM trap, so it
#                                    runs on any exit; it calls CLUSTER_ON_EXIT first if set)
#   cluster_placement SPEC N         prints the host of each of N ranks, one a line. SPEC is
#                                    block:HxR, cyclic:HxR, block:A+B+C or cyclic:A+B+C (ranks
#                                    per host; cyclic deals ranks round robin over the hosts
#                                    that still have room)
#   cluster_exec HOST CMD...         runs CMD on HOST: in its network namespace and in a UTS
#                                    namespace of its own whose hostname is hHOST
#   cluster_run JOB SPEC CMD...      starts one rank of CMD per rank of the placement in the
#                                    background with TUTTI_RANK, TUTTI_WORLD_SIZE, TUTTI_ADDR (rank
#                                    0's host, a fresh port) and TUTTI_SECRET (one per run), and
#                                    torchrun's RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
#                                    MASTER_ADDR, MASTER_PORT; output in $CLUSTER_TMP/JOB.RANK;
#                                    CLUSTER_ENV (words VAR=value) is added to every rank's env
#   cluster_wait [LIMIT_S]           waits for the ranks of the last job (killing them all after
#                                    LIMIT_S, default 300); sets CLUSTER_RC[rank]; returns 0 if
#                                    every rank exited 0
#   cluster_running                  0 while a rank of the last job still runs
#   cluster_partition HOST on|off    nft drop of everything in and out of HOST's eth0
#   cluster_loss HOST PCT            random loss into HOST (nft numgen); PCT 0 lifts it
#   cluster_link_down HOST           ip link set eth0 down in HOST
#   cluster_host_ip HOST             10.77.0.(HOST+1)
#
# Names carry the creating shell's pid and a random tag, so parallel runs never collide; and
# cluster_up deletes the namespaces of runs whose shell is gone (killed before its trap). The
# script needs root, iproute2 (ip netns), util-linux (unshare) and, for RATE and LOSS, tc and nft;
# cluster_up returns 77 with CLUSTER_WHY set when the machine refuses any of it.

CLUSTER_TAG=${CLUSTER_TAG:-tc$$x$((RANDOM % 1000))}
CLUSTER_NET=10.77.0
CLUSTER_HOSTS=0
CLUSTER_PIDS=()
CLUSTER_RC=()
# Below the kernel's ephemeral range (32768-60999 by default), where the ranks' own listeners
# (port 0) land: a job's fixed rendezvous port must never be taken by a previous job's rank.
# Each job takes 100 ports (cluster_run), so a run of up to ~100 jobs stays below 32768.
CLUSTER_PORT=${CLUSTER_PORT:-$((12000 + RANDOM % 10000))}
CLUSTER_TMP=""
CLUSTER_WHY=""
CLUSTER_JOB=""
CLUSTER_NRANKS=0

cluster_ns() { echo "${CLUSTER_TAG}h$1"; }
cluster_host_ip() { echo "$CLUSTER_NET.$(($1 + 1))"; }

cluster_down() {
  local rc=$? p h
  trap - EXIT INT TERM
  if [ -n "${CLUSTER_ON_EXIT:-}" ]; then "$CLUSTER_ON_EXIT"; fi
  for p in "${CLUSTER_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for p in "${CLUSTER_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  CLUSTER_PIDS=()
  # Anything still inside a namespace (a rank's child) would keep the namespace alive after
  # its name is gone: kill it by the namespace it is in.
  for ((h = 0; h < CLUSTER_HOSTS; h++)); do
    for p in $(ip netns pids "$(cluster_ns "$h")" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip netns del "$(cluster_ns "$h")" 2>/dev/null
  done
  ip netns del "${CLUSTER_TAG}br" 2>/dev/null
  CLUSTER_HOSTS=0
  [ -n "$CLUSTER_TMP" ] && [ -z "${CLUSTER_KEEP_TMP:-}" ] && rm -rf "$CLUSTER_TMP"
  return $rc
}

# Namespaces of runs that died without their EXIT trap (SIGKILL, e.g. a ctest timeout): a name
# of this library's form whose creating shell is gone.
cluster_sweep() {
  local ns pid p
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^tc[0-9]+x[0-9]+(h[0-9]+|br)$'); do
    pid=${ns#tc}
    pid=${pid%%x*}
    kill -0 "$pid" 2>/dev/null && continue
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null && echo "cluster: deleted $ns, left by a run that is gone" >&2
  done
}

cluster_refuse() {
  CLUSTER_WHY=$*
  cluster_down
  return 77
}

cluster_up() {
  local nh=$1 rate=${2:-} loss=${3:-} h ns br=${CLUSTER_TAG}br c
  CLUSTER_WHY=""
  [ "$(id -u)" = 0 ] || { CLUSTER_WHY="needs root to create network namespaces"; return 77; }
  for c in ip unshare timeout od; do
    command -v "$c" >/dev/null 2>&1 || { CLUSTER_WHY="$c is not installed"; return 77; }
  done
  [ -z "$rate" ] || command -v tc >/dev/null 2>&1 || { CLUSTER_WHY="tc is missing"; return 77; }
  [ -z "$loss" ] || command -v nft >/dev/null 2>&1 || { CLUSTER_WHY="nft is missing"; return 77; }
  # tbf's bucket: 1 ms at the rate, at least 64 KiB (CLUSTER_BURST overrides). Measured on a
  # loaded 2-core machine at 1 Gbit/s, 1+1 hosts, 16 MiB broadcast: a 32 KiB bucket gives 40%
  # of the rate (tbf's timer fires late), 128 KiB 93%; 512 KiB lets a 1 MiB message pass
  # faster than the rate (120%).
  local burst=${CLUSTER_BURST:-}
  if [ -n "$rate" ] && [ -z "$burst" ]; then
    local bps
    case $rate in
    *gbit) bps=$((${rate%gbit} * 1000000000)) ;;
    *mbit) bps=$((${rate%mbit} * 1000000)) ;;
    *) CLUSTER_WHY="rate $rate: give it in mbit or gbit"; return 2 ;;
    esac
    burst=$((bps / 8 / 1000))
    [ "$burst" -ge 65536 ] || burst=65536
  fi
  cluster_sweep
  CLUSTER_TMP=$(mktemp -d "${TMPDIR:-/tmp}/${CLUSTER_TAG}.XXXX")
  CLUSTER_SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  trap cluster_down EXIT
  trap 'exit 130' INT TERM
  ip netns add "$br" 2>/dev/null || { cluster_refuse "ip netns add is refused here"; return 77; }
  CLUSTER_HOSTS=$nh
  ip -n "$br" link add br0 type bridge && ip -n "$br" link set br0 up &&
    ip -n "$br" link set lo up || { cluster_refuse "cannot create a bridge"; return 77; }
  for ((h = 0; h < nh; h++)); do
    ns=$(cluster_ns "$h")
    ip netns add "$ns" 2>/dev/null || { cluster_refuse "ip netns add is refused here"; return 77; }
    # Made inside the bridge namespace and moved straight into the host's: no name ever
    # appears in the caller's namespace.
    ip -n "$br" link add "vh$h" type veth peer name eth0 netns "$ns" 2>/dev/null &&
      ip -n "$br" link set "vh$h" master br0 && ip -n "$br" link set "vh$h" up &&
      ip -n "$ns" addr add "$(cluster_host_ip "$h")/24" dev eth0 &&
      ip -n "$ns" link set eth0 up && ip -n "$ns" link set lo up ||
      { cluster_refuse "cannot create or configure a veth pair"; return 77; }
    if [ -n "$rate" ]; then
      ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 50ms &&
        ip netns exec "$br" tc qdisc add dev "vh$h" root tbf rate "$rate" burst "$burst" \
          latency 50ms || { cluster_refuse "tc tbf is refused"; return 77; }
    fi
    ip netns exec "$ns" nft add table inet tc 2>/dev/null &&
      ip netns exec "$ns" nft add chain inet tc in '{ type filter hook input priority 0; }' &&
      ip netns exec "$ns" nft add chain inet tc out '{ type filter hook output priority 0; }' ||
      { [ -z "$loss" ] || { cluster_refuse "nft is refused in a namespace"; return 77; }; }
    if [ -n "$loss" ]; then
      ip netns exec "$ns" nft add rule inet tc in numgen random mod 100 '<' "$loss" drop ||
        { cluster_refuse "nft numgen is refused"; return 77; }
    fi
  done
  return 0
}

cluster_placement() {
  local kind=${1%%:*} shape=${1#*:} n=$2 h r i
  local -a per=()
  if [[ $shape == *x* ]]; then
    for ((h = 0; h < ${shape%x*}; h++)); do per+=("${shape#*x}"); done
  else
    IFS=+ read -r -a per <<<"$shape"
  fi
  local total=0
  for i in "${per[@]}"; do total=$((total + i)); done
  [ "$total" = "$n" ] || { echo "cluster_placement: $1 has $total ranks, not $n" >&2; return 2; }
  if [ "$kind" = block ]; then
    for ((h = 0; h < ${#per[@]}; h++)); do
      for ((i = 0; i < per[h]; i++)); do echo "$h"; done
    done
  elif [ "$kind" = cyclic ]; then
    local -a left=("${per[@]}")
    r=0 h=0
    while [ "$r" -lt "$n" ]; do
      if [ "${left[h]}" -gt 0 ]; then
        echo "$h"
        left[h]=$((left[h] - 1))
        r=$((r + 1))
      fi
      h=$(((h + 1) % ${#per[@]}))
    done
  else
    echo "cluster_placement: unknown placement $kind (block or cyclic)" >&2
    return 2
  fi
}

# The number of ranks of a placement spec.
cluster_spec_ranks() {
  local shape=${1#*:} t=0 i
  if [[ $shape == *x* ]]; then echo $((${shape%x*} * ${shape#*x})); return; fi
  IFS=+ read -r -a parts <<<"$shape"
  for i in "${parts[@]}"; do t=$((t + i)); done
  echo "$t"
}

cluster_exec() {
  local h=$1
  shift
  # unshare -u: a UTS namespace for this process tree only; tutti's host identity is the
  # hostname and the boot id, so ranks with different hostnames are on different hosts.
  ip netns exec "$(cluster_ns "$h")" unshare -u sh -c 'hostname "$0" && exec "$@"' "h$h" "$@"
}

cluster_run() {
  local job=$1 spec=$2 n r
  shift 2
  n=$(cluster_spec_ranks "$spec")
  local -a hosts
  mapfile -t hosts < <(cluster_placement "$spec" "$n") || return 2
  # A job may use a range of ports from its own (cluster_check: one per algorithm).
  CLUSTER_PORT=$((CLUSTER_PORT + 100))
  CLUSTER_JOB=$job
  CLUSTER_NRANKS=$n
  CLUSTER_PIDS=()
  CLUSTER_RC=()
  CLUSTER_ADDR="$(cluster_host_ip "${hosts[0]}"):$CLUSTER_PORT"
  local -a local_rank=() local_size=()
  for ((r = 0; r < n; r++)); do
    local_rank[r]=$((local_size[hosts[r]] + 0))
    local_size[hosts[r]]=$((local_size[hosts[r]] + 1))
  done
  for ((r = 0; r < n; r++)); do
    # torchrun's variables too, for torch.distributed programs (gloo).
    # shellcheck disable=SC2086 # CLUSTER_ENV is a word list
    cluster_exec "${hosts[r]}" env TUTTI_RANK=$r TUTTI_WORLD_SIZE=$n TUTTI_ADDR="$CLUSTER_ADDR" \
      TUTTI_SECRET="$CLUSTER_SECRET" RANK=$r WORLD_SIZE=$n LOCAL_RANK=${local_rank[r]} \
      LOCAL_WORLD_SIZE=${local_size[hosts[r]]} MASTER_ADDR="${CLUSTER_ADDR%:*}" \
      MASTER_PORT=$CLUSTER_PORT CLUSTER_HOST="${hosts[r]}" ${CLUSTER_ENV:-} "$@" \
      >"$CLUSTER_TMP/$job.$r" 2>&1 &
    CLUSTER_PIDS+=($!)
  done
}

cluster_running() {
  local p
  for p in "${CLUSTER_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
  return 1
}

cluster_wait() {
  local limit=${1:-300} t=0 r p all=0
  while cluster_running && [ "$t" -lt $((limit * 10)) ]; do
    sleep 0.1
    t=$((t + 1))
  done
  if cluster_running; then
    echo "cluster: job $CLUSTER_JOB still running after ${limit} s: killing it" >&2
    for p in "${CLUSTER_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  fi
  r=0
  for p in "${CLUSTER_PIDS[@]}"; do
    wait "$p"
    CLUSTER_RC[r]=$?
    [ "${CLUSTER_RC[r]}" = 0 ] || all=1
    r=$((r + 1))
  done
  CLUSTER_PIDS=()
  return $all
}

cluster_partition() {
  local ns h=$1
  ns=$(cluster_ns "$h")
  if [ "$2" = on ]; then
    ip netns exec "$ns" nft add rule inet tc in iifname eth0 drop &&
      ip netns exec "$ns" nft add rule inet tc out oifname eth0 drop
  else
    ip netns exec "$ns" nft flush chain inet tc in &&
      ip netns exec "$ns" nft flush chain inet tc out
  fi
}

# cluster_loss HOST PCT: drops PCT% of the packets into HOST at random (nft numgen); PCT 0
# lifts every input rule of HOST (a partition's too).
cluster_loss() {
  local ns
  ns=$(cluster_ns "$1")
  if [ "$2" = 0 ]; then
    ip netns exec "$ns" nft flush chain inet tc in
  else
    ip netns exec "$ns" nft add rule inet tc in numgen random mod 100 '<' "$2" drop
  fi
}

cluster_link_down() { ip -n "$(cluster_ns "$1")" link set eth0 down; }
