#!/usr/bin/env bash
# bench/init_time.sh: init time of the slowest rank at n = NS (default 8 32 64), ROUNDS times
# each, and where it goes: "rendezvous" (from tutti_comm_init_env until this rank has the
# table: mostly waiting for the last rank to start) and "transports" (shm segment, tcp mesh),
# from the INFO boot lines; "last rank's rendezvous" is the smallest rendezvous time, that of
# the rank that came last, i.e. the bootstrap's own cost.
# Usage: BUILD=build bench/init_time.sh
set -u
BUILD=${BUILD:-build}
NS=${NS:-8 32 64}
ROUNDS=${ROUNDS:-3}
BIN=$(mktemp -d)/init_time
trap 'rm -rf "$(dirname "$BIN")"' EXIT
cc -O2 -Iinclude bench/init_time.c -o "$BIN" -L"$BUILD/lib" -ltutti -Wl,-rpath,"$PWD/$BUILD/lib" || exit 1
for n in $NS; do
  for _ in $(seq 1 "$ROUNDS"); do
    TUTTI_TIMEOUT=120 TUTTI_DEBUG=info TUTTI_DEBUG_SUBSYS=boot \
      "$BUILD/bin/tutti-run" -n "$n" "$BIN" 2>&1 | awk -v n="$n" '
      /rendezvous [0-9.]+ s, transports/ {
        for (i = 1; i <= NF; i++) { if ($i == "rendezvous") a = $(i + 1); if ($i == "transports") b = $(i + 1) }
        if (a > ma) ma = a; if (b > mb) mb = b; if (mn == "" || a < mn) mn = a }
      /init_time rank/ { for (i = 1; i <= NF; i++) if ($i == "init_s" && $(i + 1) > mi) mi = $(i + 1); c++ }
      END { printf "n=%d ranks=%d slowest init %.3f s; rendezvous max %.3f s, last rank'"'"'s %.3f s; transports max %.3f s\n", n, c, mi, ma, mn, mb }'
  done
done
