#!/usr/bin/env bash
# Launchers other than tutti-run start the same program with no tutti variable beyond an
# address where the launcher gives none: mpirun.mpich (PMI_RANK/PMI_SIZE, MPI_LOCALRANKID),
# mpirun.openmpi (OMPI_COMM_WORLD_*), a Slurm-style environment (SLURM_PROCID/NTASKS/LOCALID,
# the address derived from SLURM_STEP_NODELIST and SLURM_STEP_RESV_PORTS). Also: a job
# without TUTTI_SECRET warns once, from rank 0; a local rank that contradicts the hosts the
# rendezvous found fails on every rank with the same sentence; TUTTI_DEBUG_FILE expands
# %h/%p and TUTTI_DEBUG=info writes the one-line banner. An MPI that is not installed is
# skipped with a message (.ci/run installs both).
#   launch_check.sh BIN_DIR
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "launch_check: FAIL: $*" >&2; exit 1; }
bench=("$bin/all_reduce_perf" -b 8 -e 64k -f 8 -n 2 -w 1)
port() { echo $((20000 + RANDOM % 10000)); }

ok_run() { # name, log: the bench's summary says 0 wrong on 2 ranks
  grep -q '# Out of bounds values : 0 OK' "$2" || { cat "$2" >&2; fail "$1: no clean summary"; }
  grep -q 'nranks 2' "$2" || { cat "$2" >&2; fail "$1: not 2 ranks"; }
  [ "$(grep -c 'TUTTI_SECRET is not set' "$2")" -eq 1 ] ||
    { cat "$2" >&2; fail "$1: the missing-secret warning is not printed exactly once"; }
  echo "launch_check: $1: ok"
}

if command -v mpirun.mpich >/dev/null; then
  env -u TUTTI_SECRET TUTTI_ADDR=127.0.0.1:$(port) mpirun.mpich -n 2 "${bench[@]}" >"$tmp/mpich" 2>&1 ||
    { cat "$tmp/mpich" >&2; fail "mpirun.mpich failed"; }
  ok_run mpich "$tmp/mpich"
else
  echo "launch_check: SKIP mpich: no mpirun.mpich (apt-get install mpich)"
fi

if command -v mpirun.openmpi >/dev/null; then
  # As root Open MPI wants both variables; --oversubscribe: the CI machine may have 1-2 cores.
  env -u TUTTI_SECRET OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_btl_vader_single_copy_mechanism=none \
    mpirun.openmpi --oversubscribe -n 2 -x TUTTI_ADDR=127.0.0.1:$(port) "${bench[@]}" \
    >"$tmp/ompi" 2>&1 || { cat "$tmp/ompi" >&2; fail "mpirun.openmpi failed"; }
  ok_run openmpi "$tmp/ompi"
else
  echo "launch_check: SKIP openmpi: no mpirun.openmpi (apt-get install openmpi-bin)"
fi

# Slurm-style: what srun sets for 2 tasks of one step on this node; no tutti variable.
p=$(port)
for r in 0 1; do
  env -u TUTTI_SECRET -u TUTTI_ADDR -u TUTTI_RANK -u TUTTI_WORLD_SIZE -u RANK -u WORLD_SIZE \
    -u LOCAL_RANK -u MASTER_ADDR -u MASTER_PORT \
    SLURM_PROCID=$r SLURM_NTASKS=2 SLURM_LOCALID=$r SLURM_JOB_ID=77 SLURM_STEP_ID=0 \
    SLURM_STEP_NODELIST="localhost,node[02-03]" SLURM_STEP_RESV_PORTS="$p-$((p + 3))" \
    "${bench[@]}" >"$tmp/slurm$r" 2>&1 &
done
wait %1 && wait %2 || { cat "$tmp"/slurm* >&2; fail "the Slurm-style launch failed"; }
cat "$tmp/slurm0" "$tmp/slurm1" >"$tmp/slurm"
ok_run slurm "$tmp/slurm"

# A local rank that contradicts the rendezvous (both ranks on this host claim local rank 0):
# every rank fails, with the same sentence.
p=$(port)
for r in 0 1; do
  TUTTI_RANK=$r TUTTI_WORLD_SIZE=2 TUTTI_ADDR=127.0.0.1:$p LOCAL_RANK=0 TUTTI_TIMEOUT=20 \
    "${bench[@]}" >"$tmp/mis$r" 2>&1 &
done
wait %1; a=$?; wait %2; b=$?
[ $a -ne 0 ] && [ $b -ne 0 ] || { cat "$tmp"/mis* >&2; fail "a local-rank mismatch did not fail every rank"; }
for r in 0 1; do
  grep -q 'rank 1 (pid [0-9]* on .*) was started as local rank 0 by its launcher' "$tmp/mis$r" ||
    { cat "$tmp/mis$r" >&2; fail "rank $r does not name the mismatch"; }
done
echo "launch_check: local-rank mismatch: ok"

# TUTTI_DEBUG_FILE with %h and %p; the banner at info, once, from rank 0.
TUTTI_DEBUG=info TUTTI_DEBUG_FILE="$tmp/log.%h.%p" "$bin/tutti-run" -n 2 "${bench[@]}" >/dev/null ||
  fail "the TUTTI_DEBUG_FILE run failed"
n=$(ls "$tmp"/log.* 2>/dev/null | wc -l)
[ "$n" -eq 2 ] || fail "expected one log file per rank, found $n"
ls "$tmp"/log.* | grep -q "log\.$(hostname)\.[0-9][0-9]*$" || fail "%h/%p are not expanded: $(ls "$tmp")"
[ "$(cat "$tmp"/log.* | grep -c 'tutti 0\.[0-9.]*: 2 ranks (2 on this host), transport')" -eq 1 ] ||
  { cat "$tmp"/log.*; fail "no single version/transport banner"; }
echo "launch_check: debug file and banner: ok"
echo "launch_check: ok"
