#!/bin/sh
# netns_agent.sh: Open MPI's launch agent (--mca plm_rsh_agent) for the namespace cluster of
# tests/cluster/cluster.sh, in place of ssh. mpirun calls it as `netns_agent.sh [ssh options]
# HOST COMMAND...`, HOST a name from the hostfile (hN); it runs COMMAND, a shell command line as
# ssh would pass it, on that host: in namespace ${CLUSTER_TAG}hN, in a UTS namespace of its own
# named hN. CLUSTER_TAG comes from the environment of mpirun.
while [ $# -gt 0 ]; do
  case $1 in
  -*) shift ;; # ssh-style options (-x, ...) mean nothing here
  *) break ;;
  esac
done
host=$1
shift
: "${CLUSTER_TAG:?netns_agent.sh: CLUSTER_TAG is not set}"
# shellcheck disable=SC2016 # the script is literal: sh expands it
exec ip netns exec "${CLUSTER_TAG}$host" unshare -u sh -c 'hostname "$0" && eval "$*"' "$host" "$@"
