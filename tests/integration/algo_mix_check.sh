#!/usr/bin/env bash
# algo_mix_check: rank 1 runs all-reduces of 16-64 bytes through its queues (TUTTI_TUNE) while
# rank 0 runs them one-shot, after 300 agreed one-shot calls of 8 bytes (so the mailbox cells
# have wrapped twice). Both ranks must fail at the first such call with invalid usage and a
# sentence saying the ranks disagree on the call (mbox.c's mbox_conflict looks for the peer's
# post near its own one-shot count), never hang or return success.
# Usage: algo_mix_check.sh TUTTI_RUN TUTTI_BENCH
set -u
RUN=$1
BENCH=$2
wrap=$(mktemp)
trap 'rm -f "$wrap"' EXIT
cat >"$wrap" <<WRAP
#!/bin/sh
if [ "\${TUTTI_RANK:-}" = 1 ]; then export TUTTI_TUNE="allreduce:16-64:ring"; fi
"$BENCH" allreduce -b 8 -e 16 -w 300 -n 10 -c 0
echo "algo_mix rank \${TUTTI_RANK:-} exit \$?"
exit 0 # tutti-run stops the other ranks when one fails: each must report for itself
WRAP
chmod +x "$wrap"
out=$(TUTTI_TRANSPORT=shm TUTTI_TIMEOUT=30 TUTTI_TUNE_ONLINE=0 "$RUN" --timeout 120 -n 2 "$wrap" 2>&1)
rc=$?
# The first 16-byte all-reduce may be tutti-bench's own (of its two timing doubles).
fails=$(grep -c "tutti-bench: rank [01]: .* failed: invalid usage" <<<"$out")
said=$(grep -c "the ranks disagree on call #[0-9]*: rank [01] .* runs it \(one-shot\|through its queues\)" <<<"$out")
exits=$(grep -c "algo_mix rank [01] exit 1" <<<"$out")
if [ $rc = 0 ] && [ "$exits" = 2 ] && [ "$fails" = 2 ] && [ "$said" -ge 1 ]; then
  echo "algo_mix_check: both ranks failed with: $(grep -m1 -o 'the ranks disagree.*' <<<"$out")"
  exit 0
fi
echo "algo_mix_check: FAILED (tutti-run status $rc, $exits ranks exited 1, $fails failed with invalid usage, $said sentences):"
tail -n 20 <<<"$out"
exit 1
