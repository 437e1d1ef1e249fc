/*
 * Hierarchical all-reduce: a ring reduce-scatter among the ranks of each host leaves each
 * local rank the host's sum of its slices (the vector cut into L slices, L the largest
 * host's size); a ring all-reduce of each slice among the ranks that cover it, one per host,
 * makes it the global sum (every local rank drives the network at once, each with 1/L of the
 * data); a ring all-gather within each host gives every rank every slice. A host link then
 * carries 2(H-1)/H of the vector each way, against the flat ring's 2(n-1)/n.
 */
#include "algo/hier.h"

/* Each slice, reduced across hosts, goes back to every member of its index group. */
static tutti_result_t slice_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                      const tutti_group_t *g, char *slice, size_t len,
                                      void *ctx) {
  (void)ctx;
  tutti_ring_layout_t il = {len, 0, g->n, NULL, NULL, NULL, NULL, NULL};
  return tutti__ring_group_allgather(comm, a, g, &il, slice);
}

static tutti_result_t run(struct tutti_comm *comm, const tutti_coll_args_t *a, tutti_hier_t *h,
                          char *tmp) {
  char *w = a->recvbuf;
  TRY(tutti__hier_reduce_slices(comm, a, h, w, tmp, slice_allgather, NULL));
  if (h->nlocal == 1) return TUTTI_SUCCESS;
  tutti_ring_layout_t l;
  tutti__hier_local_slices(h, a->count, &l);
  return tutti__ring_group_allgather(comm, a, &h->local_group, &l, w);
}

tutti_result_t tutti__hier_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  tutti_hier_t h;
  TRY(tutti__hier_begin(comm, &h));
  if (tutti__hier_small(&h, a->count * a->esize)) return tutti__hier_small_allreduce(comm, a, &h);
  void *tmp;
  TRY(tutti__scratch(comm, tutti__chunk_elems(comm, a->esize) * a->esize, &tmp));
  return run(comm, a, &h, tmp);
}
