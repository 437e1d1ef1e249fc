/*
 * Hierarchical all-reduce: a ring reduce-scatter among the ranks of each host leaves each
 * local rank the host's sum of its slices (the vector cut into L slices, L the largest
 * host's size); a reduce-scatter and all-gather of each slice among the ranks that cover it,
 * one per host, makes it the global sum (every local rank drives the network at once, each
 * with 1/L of the data); a ring all-gather within each host gives every rank every slice. A
 * host link then carries 2(H-1)/H of the vector each way, against the flat ring's 2(n-1)/n.
 * The vector goes through in pieces so that the network phase of one overlaps the local
 * phases of the others (hier_pipe.c); small vectors take the latency path (hier_small.c).
 */
#include "algo/hier.h"

tutti_result_t tutti__hier_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  tutti_hier_t h;
  TRY(tutti__hier_begin(comm, &h));
  if (tutti__hier_small(&h, a->count * a->esize)) return tutti__hier_small_allreduce(comm, a, &h);
  return tutti__hier_pipe_allreduce(comm, a, &h);
}
