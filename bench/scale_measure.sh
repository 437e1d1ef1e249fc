#!/bin/sh
# Measured all-reduce times for docs/scale.md: tutti-bench through tutti-run at n = 2, 4, 8
# over shm and tcp, the ring and recursive doubling forced, 8 B and 1 MiB (out-of-place
# column), next to the tuner's prediction (tutti-info --explain). BUILD overrides the build.
BUILD=${BUILD:-build}
for tp in shm tcp; do
  for n in 2 4 8; do
    for algo in ring recursive_doubling; do
      out=$(TUTTI_TRANSPORT=$tp TUTTI_ALGO=$algo timeout 120 "$BUILD/bin/tutti-run" -n $n \
            "$BUILD/bin/tutti-bench" allreduce -b 8 -e 1M -f 131072 -c 0 -w 20 2>&1)
      for size in 8 1048576; do
        t=$(echo "$out" | awk -v s=$size '$2 == s {print $7}')
        arg=$size; [ $size = 1048576 ] && arg=1M
        m=$("$BUILD/bin/tutti-info" --explain allreduce $arg $n $tp | awk -v a=$algo '$1 == a {print $2}')
        echo "$tp n=$n $algo ${size}B measured_us=$t model_us=$m"
      done
    done
  done
done
