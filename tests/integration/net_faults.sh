#!/usr/bin/env bash
# net_faults: tcp across two network namespaces joined by a veth pair, with packet loss, a
# partition and rate shaping made by nftables and tc inside the namespaces.
#
# Usage: net_faults.sh NET_CHECK   (the net_check program)
# Needs root, `ip netns`, nft and tc; without them it prints why and exits 77 (ctest SKIP).
#
# Ranks 0 and 1 run in namespace A, ranks 2 and 3 in namespace B, over TUTTI_TRANSPORT=tcp
# with TUTTI_SOCKET_IFNAME set to each side's veth and the rendezvous at A's veth address
# (tutti_comm_init_env with TUTTI_ADDR/TUTTI_RANK/TUTTI_WORLD_SIZE/TUTTI_SECRET). Cases:
#   loss       1% of the packets into each namespace dropped at random (nft numgen): every
#              all-reduce bit-exact, no failure ("peer dead" or otherwise).
#   blip       B drops everything from the veth for 2 s, then the rule is lifted (shorter than
#              TUTTI_TIMEOUT=10): the job finishes bit-exact.
#   partition  the same drop for 12 s, longer than TUTTI_TIMEOUT=4: every rank fails with a
#              timeout or remote error naming a peer, within its deadline + 5 s; none hangs.
#   shaped     tbf rate shaping (200 Mbit/s, up to 400 ms of queueing) on both veth ends
#              (this kernel has no netem): every all-reduce bit-exact.
# The namespaces (and so the veth pair and the rules) have names unique to this run and are
# deleted by an EXIT trap, whatever happens; every rank runs under `timeout`.
set -u

PROG=${1:?usage: net_faults.sh NET_CHECK}
skip() {
  echo "net_faults: SKIP: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
for c in ip nft tc timeout od; do
  command -v "$c" >/dev/null 2>&1 || skip "$c is not installed"
done
[ -x "$PROG" ] || { echo "net_faults: FAIL: $PROG is not an executable"; exit 1; }

ID=$$
NSA=tnf${ID}a
NSB=tnf${ID}b
VA=tnf${ID}a # the veth end in A (interface names live in their namespace)
VB=tnf${ID}b
SUB=10.231.$((ID % 250))
IPA=$SUB.1
IPB=$SUB.2
TMP=$(mktemp -d)
JOB_PIDS=()
failures=0

cleanup() {
  for p in "${JOB_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  ip netns del "$NSA" 2>/dev/null
  ip netns del "$NSB" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

in_a() { ip netns exec "$NSA" "$@"; }
in_b() { ip netns exec "$NSB" "$@"; }
fail() {
  echo "net_faults: FAIL: $*"
  failures=$((failures + 1))
}

ip netns add "$NSA" 2>/dev/null || skip "ip netns add is not usable here"
ip netns add "$NSB" 2>/dev/null || skip "ip netns add is not usable here"
ip link add "$VA" type veth peer name "$VB" 2>/dev/null || skip "cannot create a veth pair"
ip link set "$VA" netns "$NSA" && ip link set "$VB" netns "$NSB" || skip "cannot move the veth"
in_a ip addr add "$IPA/24" dev "$VA" && in_a ip link set "$VA" up && in_a ip link set lo up &&
  in_b ip addr add "$IPB/24" dev "$VB" && in_b ip link set "$VB" up && in_b ip link set lo up ||
  skip "cannot configure the veth pair"
for ns in "$NSA" "$NSB"; do
  ip netns exec "$ns" nft add table inet t 2>/dev/null &&
    ip netns exec "$ns" nft add chain inet t in '{ type filter hook input priority 0; }' \
      2>/dev/null || skip "nft is not usable in a namespace"
done
SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
echo "net_faults: namespaces $NSA ($IPA, ranks 0 1) and $NSB ($IPB, ranks 2 3)"

# start_job NAME TIMEOUT_S LIMIT_S ARGS...: starts the 4 ranks in the background.
PORT=29400
start_job() {
  local name=$1 tmo=$2 limit=$3
  shift 3
  PORT=$((PORT + 1))
  JOB_PIDS=()
  JOB_NAME=$name
  JOB_START=$(date +%s%N)
  for r in 0 1 2 3; do
    local ns=$NSA ifname=$VA
    if [ "$r" -ge 2 ]; then ns=$NSB ifname=$VB; fi
    ip netns exec "$ns" env TUTTI_RANK=$r TUTTI_WORLD_SIZE=4 TUTTI_ADDR="$IPA:$PORT" \
      TUTTI_SECRET="$SECRET" TUTTI_TRANSPORT=tcp TUTTI_SOCKET_IFNAME="$ifname" \
      TUTTI_TIMEOUT="$tmo" NET_CHECK_WATCHDOG=$((limit - 5)) \
      timeout -k 2 "$limit" "$PROG" "$@" >"$TMP/$name.$r" 2>&1 &
    JOB_PIDS+=($!)
  done
}

# 1 while any rank of the job runs.
job_running() {
  for p in "${JOB_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
  return 1
}

# finish_job: waits for the ranks; each must exit 0 with a PASS line.
finish_job() {
  local r=0 rc
  for p in "${JOB_PIDS[@]}"; do
    wait "$p"
    rc=$?
    sed "s/^/  [$JOB_NAME $r] /" "$TMP/$JOB_NAME.$r" | grep -v " TRACE \| INFO " | tail -4
    if [ "$rc" -ne 0 ] || ! grep -q "PASS" "$TMP/$JOB_NAME.$r"; then
      fail "$JOB_NAME: rank $r exited with status $rc"
    fi
    r=$((r + 1))
  done
  JOB_PIDS=()
  echo "net_faults: $JOB_NAME took $((($(date +%s%N) - JOB_START) / 1000000)) ms"
}

flush_rules() {
  in_a nft flush chain inet t in
  in_b nft flush chain inet t in
}

# --- loss: 1% random drop into both namespaces ------------------------------------------
echo "net_faults: case loss"
in_a nft add rule inet t in numgen random mod 100 '<' 1 drop
in_b nft add rule inet t in numgen random mod 100 '<' 1 drop
start_job loss 20 90 --mib 8 --iters 12
finish_job
flush_rules

# --- blip: a partition shorter than TUTTI_TIMEOUT ----------------------------------------
echo "net_faults: case blip"
start_job blip 10 90 --mib 8 --seconds 6
sleep 1.5
job_running || fail "blip: the job ended before the partition (make it longer)"
in_b nft add rule inet t in iifname "$VB" drop
sleep 2
job_running || fail "blip: the job ended during the partition: it cannot have crossed it"
flush_rules
finish_job

# --- partition: longer than TUTTI_TIMEOUT -------------------------------------------------
echo "net_faults: case partition"
start_job partition 4 60 --mib 8 --expect-fail
sleep 1.5
job_running || fail "partition: the job ended before the partition"
in_b nft add rule inet t in iifname "$VB" drop
for _ in $(seq 1 24); do job_running || break; sleep 0.5; done
job_running && fail "partition: ranks still running 12 s into a partition with TUTTI_TIMEOUT=4"
flush_rules
finish_job

# --- shaped: tbf rate shaping on both ends ------------------------------------------------
echo "net_faults: case shaped"
in_a tc qdisc add dev "$VA" root tbf rate 200mbit burst 64kb latency 400ms &&
  in_b tc qdisc add dev "$VB" root tbf rate 200mbit burst 64kb latency 400ms ||
  fail "shaped: tc tbf refused"
start_job shaped 30 120 --mib 4 --iters 4
finish_job

if [ "$failures" -eq 0 ]; then
  echo "net_faults: all cases passed"
  exit 0
fi
echo "net_faults: $failures check(s) failed"
exit 1
