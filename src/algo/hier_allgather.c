/*
 * Hierarchical all-gather: each index group (one rank per host, hier.h) gathers its members'
 * blocks with a ring across the hosts, all local ranks at once; then a ring within each host
 * shares what each local rank gathered. A host link carries (H-1)/H of the result each way,
 * against the flat ring's (n-1)/n, and the result is NCCL's (rank r's block at r * count).
 */
#include "algo/hier.h"

static tutti_result_t run(struct tutti_comm *comm, const tutti_coll_args_t *a, tutti_hier_t *h) {
  char *w = a->recvbuf;
  tutti_ring_layout_t l;
  TUTTI_HIER_FOR_INDEX(h, j) {
    tutti_group_t g;
    tutti__hier_index_group(h, j, &g);
    tutti__hier_index_blocks(h, j, a->count, &l);
    TRY(tutti__ring_group_allgather(comm, a, &g, &l, w));
  }
  tutti__hier_local_blocks(h, a->count, &l);
  return tutti__ring_group_allgather(comm, a, &h->local_group, &l, w);
}

tutti_result_t tutti__hier_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t bytes = a->count * a->esize;
  tutti__copy_if_apart((char *)a->recvbuf + (size_t)comm->rank * bytes, a->sendbuf, bytes);
  tutti_hier_t h;
  TRY(tutti__hier_begin(comm, &h));
  return run(comm, a, &h);
}
