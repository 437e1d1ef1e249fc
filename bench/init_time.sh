#!/usr/bin/env bash
# bench/init_time.sh: init time of the slowest rank at n = NS (default 8 32 64), ROUNDS times
# each, and where it goes, from the INFO lines of subsystems boot and tune (max over ranks):
#   start       launch of tutti-run until the last rank reached main (process start)
#   rdv         the rendezvous: connect, hello, until the server's answer (mostly waiting for
#               the last rank to start); "last" is the smallest, that of the rank that came
#               last, i.e. the rendezvous's own cost
#   tree        the server's answer until the rank holds the table and has handed it to its
#               children (bootstrap tree; absent in builds before it: "-")
#   transports  shm segment and tcp set-up (comm.c's "transports" less the agreement)
#   agree       the tuning-model agreement (src/tune/agree.c: rank 0 obtains, all receive)
# The load (uptime) is printed before each n. With BUILDS="build other/build" the builds take
# turns round by round, so their figures can be compared as ratios under the same load.
# Usage: BUILD=build bench/init_time.sh     or: BUILDS="build /tmp/old/build" bench/init_time.sh
set -u
BUILDS=${BUILDS:-${BUILD:-build}}
NS=${NS:-8 32 64}
ROUNDS=${ROUNDS:-3}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
i=0
for b in $BUILDS; do
  lib=$(cd "$b/lib" && pwd) || exit 1
  cc -O2 -Iinclude bench/init_time.c -o "$DIR/init_time.$i" -L"$lib" -ltutti -Wl,-rpath,"$lib" || exit 1
  i=$((i + 1))
done
for n in $NS; do
  echo "# n=$n load: $(uptime | sed 's/.*load average/load average/')"
  for _ in $(seq 1 "$ROUNDS"); do
    i=0
    for b in $BUILDS; do
      t0=$(date +%s.%N)
      TUTTI_TIMEOUT=120 TUTTI_DEBUG=info TUTTI_DEBUG_SUBSYS=boot,tune \
        "$b/bin/tutti-run" -n "$n" "$DIR/init_time.$i" 2>&1 | awk -v n="$n" -v b="$b" -v t0="$t0" '
        function num(key,   k) { for (k = 1; k < NF; k++) if ($k == key) return $(k + 1) + 0; return -1 }
        /joined: .* rendezvous [0-9.]+ s, transports/ {
          a = num("rendezvous"); tr[$1] = num("transports")
          if (a > ra) ra = a; if (rn == "" || a < rn) rn = a }
        /has the address table/ { t = num("tree"); if (t > mt) mt = t; seen_tree = 1 }
        /agreement [0-9.]+ s/ { for (k = 1; k < NF; k++) if ($k == "agreement") ag[$1] = $(k + 1) + 0 }
        /init_time rank/ { v = num("init_s"); if (v > mi) mi = v; s = num("main_at") - t0; if (s > ms) ms = s; c++ }
        END {
          for (p in tr) { x = tr[p] - (p in ag ? ag[p] : 0); if (x > mx) mx = x; if (ag[p] > ma) ma = ag[p] }
          printf "n=%d ranks=%d %s: slowest init %.3f s; start %.3f s, rdv max %.3f last %.3f, tree %s, transports %.3f, agree %.3f\n",
            n, c, b, mi, ms, ra, rn, seen_tree ? sprintf("%.3f", mt) : "-", mx, ma }'
      i=$((i + 1))
    done
  done
done
