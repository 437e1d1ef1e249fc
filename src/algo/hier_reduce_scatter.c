/*
 * Hierarchical reduce-scatter: a ring reduce-scatter within each host leaves each local rank
 * the host's sum of the blocks of the ranks its indices stand for on every host (hier.h);
 * then each index group (one rank per host) reduce-scatters those blocks across the hosts,
 * all local ranks at once, so each rank ends with the global sum of its own block. A host
 * link carries (H-1)/H of the input each way, against the flat ring's (n-1)/n. Partial sums
 * live in a working copy of the whole input (scratch): the input is never written.
 */
#include "algo/hier.h"
#include "kernels/kernels.h"

static tutti_result_t run(struct tutti_comm *comm, const tutti_coll_args_t *a, tutti_hier_t *h,
                          char *w, char *tmp) {
  size_t bytes = a->count * a->esize;
  tutti_ring_layout_t l;
  if (h->nlocal == 1) {
    memcpy(w, a->sendbuf, bytes * (size_t)comm->nranks);
  } else {
    tutti__hier_local_blocks(h, a->count, &l);
    TRY(tutti__ring_group_reduce_scatter(comm, a, &h->local_group, &l, a->sendbuf, w, tmp));
  }
  TUTTI_HIER_FOR_INDEX(h, j) {
    tutti_group_t g;
    tutti__hier_index_group(h, j, &g);
    tutti__hier_index_blocks(h, j, a->count, &l);
    TRY(tutti__ring_group_reduce_scatter(comm, a, &g, &l, w, w, tmp));
  }
  /* The index this rank covers first is its own local index: its block is complete. */
  memmove(a->recvbuf, w + (size_t)comm->rank * bytes, bytes);
  if (a->op == TUTTI_AVG) tutti__avg_finish(a->recvbuf, a->count, a->dtype, comm->nranks);
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__hier_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t bytes = a->count * a->esize * (size_t)comm->nranks;
  size_t tmp_bytes = tutti__chunk_elems(comm, a->esize) * a->esize;
  char *scratch;
  TRY(tutti__scratch(comm, tmp_bytes + bytes, (void **)&scratch));
  tutti_hier_t h;
  TRY(tutti__hier_begin(comm, &h));
  return run(comm, a, &h, scratch + tmp_bytes, scratch);
}
