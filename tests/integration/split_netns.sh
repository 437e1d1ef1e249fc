#!/usr/bin/env bash
# split_netns: tutti_comm_split across two network namespaces (two "hosts" joined by a veth
# pair) without TUTTI_SOCKET_IFNAME. The new communicators' rendezvous must listen where the
# peers already reach its leader (its data listener's address), not on loopback, which the
# other namespace cannot reach (issue 14 item 5).
#
# Usage: split_netns.sh SPLIT_CHECK
# Ranks 0 and 1 in namespace A, ranks 2 and 3 in B, tcp, rendezvous at A's veth address; the
# program is split_check (its evens/odds and rank % 3 splits put ranks of both namespaces in
# one group). Every rank must print PASS. Needs root and `ip netns` (else exit 77, SKIP).
set -u
PROG=${1:?usage: split_netns.sh SPLIT_CHECK}
skip() {
  echo "split_netns: SKIP: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces"
for c in ip timeout od; do command -v "$c" >/dev/null 2>&1 || skip "$c is not installed"; done
ID=$$
NSA=tsn${ID}a
NSB=tsn${ID}b
SUB=10.232.$((ID % 250))
IPA=$SUB.1
IPB=$SUB.2
TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  ip netns del "$NSA" 2>/dev/null
  ip netns del "$NSB" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
in_a() { ip netns exec "$NSA" "$@"; }
in_b() { ip netns exec "$NSB" "$@"; }
ip netns add "$NSA" 2>/dev/null || skip "ip netns add is not usable here"
ip netns add "$NSB" 2>/dev/null || skip "ip netns add is not usable here"
ip link add "$NSA" type veth peer name "$NSB" 2>/dev/null || skip "cannot create a veth pair"
ip link set "$NSA" netns "$NSA" && ip link set "$NSB" netns "$NSB" || skip "cannot move the veth"
in_a ip addr add "$IPA/24" dev "$NSA" && in_a ip link set "$NSA" up && in_a ip link set lo up &&
  in_b ip addr add "$IPB/24" dev "$NSB" && in_b ip link set "$NSB" up && in_b ip link set lo up ||
  skip "cannot configure the veth pair"
SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
PORT=$((29500 + ID % 400))
for r in 0 1 2 3; do
  ns=$NSA
  [ "$r" -ge 2 ] && ns=$NSB
  # No TUTTI_SOCKET_IFNAME: data listeners take the route to the rendezvous.
  ip netns exec "$ns" env -u TUTTI_SOCKET_IFNAME TUTTI_RANK=$r TUTTI_WORLD_SIZE=4 \
    TUTTI_ADDR="$IPA:$PORT" TUTTI_SECRET="$SECRET" TUTTI_TRANSPORT=tcp TUTTI_TIMEOUT=20 \
    TUTTI_INIT_TIMEOUT=10 timeout -k 2 90 "$PROG" >"$TMP/rank.$r" 2>&1 &
  PIDS+=($!)
done
failures=0
for r in 0 1 2 3; do
  wait "${PIDS[$r]}"
  rc=$?
  sed "s/^/  [rank $r] /" "$TMP/rank.$r" | grep -v " TRACE \| INFO " | tail -4
  if [ "$rc" -ne 0 ] || ! grep -q PASS "$TMP/rank.$r"; then
    echo "split_netns: FAIL: rank $r exited with status $rc"
    failures=$((failures + 1))
  fi
done
[ "$failures" -eq 0 ] && { echo "split_netns: PASS"; exit 0; }
exit 1
