#!/usr/bin/env bash
# bench/init_measure.sh: what measuring the machine at init costs a job, and the figures it
# gives (docs/tuning.md). For each n in NS, ROUNDS times, each build in turn (so builds can be
# compared as ratios under the same load): one job with an empty machine cache (cold: rank 0
# measures) and one right after it with the cache that job wrote (cached). Each prints
#   LABEL n=N cold|cached init_s=SLOWEST_RANK load=1MIN [figures of the cache file] # [breakdown]
# the breakdown being rank 0's TUTTI_DEBUG=info lines of where the measuring time went (builds
# before them print none).
# bench/init_measure_summary.py summarises the output: medians per build, n and figure.
# Usage: bench/init_measure.sh                      (this checkout's build/)
#        BUILDS="old:/tmp/old/build new:build" bench/init_measure.sh   (LABEL:BUILD_DIR ...)
set -u
BUILDS=${BUILDS:-"tutti:build"}
NS=${NS:-2 4}
ROUNDS=${ROUNDS:-5}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
for bb in $BUILDS; do
  lab=${bb%%:*}; lib=$(cd "${bb#*:}/lib" && pwd) || exit 1
  cc -O2 -Iinclude bench/init_time.c -o "$DIR/it_$lab" -L"$lib" -ltutti -Wl,-rpath,"$lib" || exit 1
done
for n in $NS; do
  for _ in $(seq 1 "$ROUNDS"); do
    for bb in $BUILDS; do
      lab=${bb%%:*}; root=${bb#*:}
      rm -rf "$DIR/xdg"; mkdir "$DIR/xdg"
      for mode in cold cached; do
        out=$(XDG_CACHE_HOME="$DIR/xdg" TUTTI_DEBUG=info TUTTI_DEBUG_SUBSYS=tune TUTTI_TIMEOUT=60 \
              "$root/bin/tutti-run" -n "$n" "$DIR/it_$lab" 2>&1)
        init=$(echo "$out" | awk '/init_time rank/ { for (k = 1; k < NF; k++)
                 if ($k == "init_s" && $(k + 1) > m) m = $(k + 1) } END { print m }')
        figs="" br=""
        if [ "$mode" = cold ]; then
          figs=$(awk '/_gbps |_us |measure_ms / { printf "%s=%s ", $1, $2 }' "$DIR/xdg/tutti/machine")
          br=$(echo "$out" | grep -E "measuring memory|measured in" | sed 's/.*tune: //' | tr '\n' ' ')
        fi
        echo "$lab n=$n $mode init_s=$init load=$(cut -d' ' -f1 /proc/loadavg) $figs# $br"
      done
    done
  done
done
