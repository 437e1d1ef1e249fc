#!/usr/bin/env bash
# shm_small_check: 16 local ranks with a small /dev/shm (a container's 64 MiB, then 2 MiB) in a
# private mount namespace. Either every rank runs correctly (the segment shrank its queue
# pools to fit) or every rank fails init with the same sentence saying /dev/shm is too small;
# never a bus error (before the segment was reserved with posix_fallocate, 64 MiB killed
# n = 16 with SIGBUS). Needs root and unshare -m; otherwise prints why and is skipped (77).
# Usage: shm_small_check.sh TUTTI_RUN SHM_SCALE_CHECK
set -u
RUN=$1
PROG=$2
N=16
if [ "$(id -u)" != 0 ]; then echo "shm_small_check: skipped: needs root to mount a tmpfs"; exit 77; fi
if ! unshare -m true 2>/dev/null; then
  echo "shm_small_check: skipped: unshare -m is refused here"; exit 77
fi
status=0
for size in 64m 2m; do
  out=$(unshare -m bash -c 'mount --make-rprivate / 2>/dev/null; mount -t tmpfs -o size='$size' tmpfs /dev/shm || exit 77
        TUTTI_TRANSPORT=shm TUTTI_TIMEOUT=60 "$0" --timeout 300 -n '$N' "$1" --init-may-fail' "$RUN" "$PROG" 2>&1)
  rc=$?
  if [ $rc = 77 ]; then echo "shm_small_check: skipped: cannot mount a tmpfs on /dev/shm"; exit 77; fi
  ok=$(grep -c "shm_scale_check: n=$N ok" <<<"$out")
  refused=$(grep -c "init refused: .*does not fit in /dev/shm" <<<"$out")
  if [ $rc = 0 ] && [ "$ok" = 1 ] && [ "$refused" = 0 ]; then
    echo "shm_small_check: /dev/shm of $size: all $N ranks ran"
  elif [ $rc = 0 ] && [ "$refused" = $N ]; then
    echo "shm_small_check: /dev/shm of $size: all $N ranks refused: $(grep -m1 'init refused' <<<"$out")"
  else
    echo "shm_small_check: /dev/shm of $size: FAILED (tutti-run status $rc, $ok ok, $refused of $N refused):"
    tail -n 30 <<<"$out"
    status=1
  fi
done
exit $status
