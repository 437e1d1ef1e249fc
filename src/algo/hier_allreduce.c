/*
 * Hierarchical all-reduce: a ring reduce-scatter among the ranks of each host leaves each
 * local rank the host's sum of its slices (the vector cut into L slices, L the largest
 * host's size); a ring all-reduce of each slice among the ranks that cover it, one per host,
 * makes it the global sum (every local rank drives the network at once, each with 1/L of the
 * data); a ring all-gather within each host gives every rank every slice. A host link then
 * carries 2(H-1)/H of the vector each way, against the flat ring's 2(n-1)/n.
 */
#include "algo/hier.h"
#include "algo/patterns.h"
#include "kernels/kernels.h"

static tutti_result_t run(struct tutti_comm *comm, const tutti_coll_args_t *a, tutti_hier_t *h,
                          char *tmp) {
  size_t es = a->esize;
  char *w = a->recvbuf;
  tutti_ring_layout_t l;
  if (h->nlocal == 1) {
    tutti__copy_if_apart(w, a->sendbuf, a->count * es);
  } else {
    tutti__hier_local_slices(h, a->count, &l);
    TRY(tutti__ring_group_reduce_scatter(comm, a, &h->local_group, &l, a->sendbuf, w, tmp));
  }
  TUTTI_HIER_FOR_INDEX(h, j) {
    size_t off, len;
    tutti__block_range(a->count, h->max_local, j, &off, &len);
    char *slice = w + off * es;
    tutti_group_t g;
    tutti__hier_index_group(h, j, &g);
    tutti_ring_layout_t il = {len, 0, g.n, NULL, NULL, NULL, NULL, NULL};
    TRY(tutti__ring_group_reduce_scatter(comm, a, &g, &il, slice, slice, tmp));
    if (a->op == TUTTI_AVG) {
      size_t so, sl;
      tutti__block_range(len, g.n, g.pos, &so, &sl);
      tutti__avg_finish(slice + so * es, sl, a->dtype, comm->nranks);
    }
    TRY(tutti__ring_group_allgather(comm, a, &g, &il, slice));
  }
  if (h->nlocal == 1) return TUTTI_SUCCESS;
  tutti__hier_local_slices(h, a->count, &l);
  return tutti__ring_group_allgather(comm, a, &h->local_group, &l, w);
}

tutti_result_t tutti__hier_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  void *tmp;
  TRY(tutti__scratch(comm, tutti__chunk_elems(comm, a->esize) * a->esize, &tmp));
  tutti_hier_t h;
  TRY(tutti__hier_begin(comm, &h));
  return run(comm, a, &h, tmp);
}
