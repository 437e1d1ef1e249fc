/*
 * Hierarchical broadcast: a pipelined chain across the hosts' leaders (the root on its host,
 * the lowest rank elsewhere), starting at the root's host, in which each leader also passes
 * every chunk on to the other ranks of its host as it arrives. Each host link carries the
 * vector once, and the local copies overlap the chain instead of following it.
 */
#include "algo/hier.h"
#include "algo/patterns.h"

/* The leader of host at chain position p (hosts in order from the root's). */
static int leader(const tutti_hier_t *h, int root, int root_host, int p) {
  int host = (root_host + p) % h->nhosts;
  return host == root_host ? root : tutti__topo_rank(h->t, host, 0);
}

tutti_result_t tutti__hier_broadcast(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  tutti_hier_t h;
  TRY(tutti__hier_begin(comm, &h));
  int root_host = h.t->host_of[a->root];
  int p = tutti__mod(h.host - root_host, h.nhosts);
  int me_leader = leader(&h, a->root, root_host, p) == comm->rank;
  int parent = -1, nchildren = 0;
  int *children = h.children;
  if (me_leader) {
    if (p > 0) parent = leader(&h, a->root, root_host, p - 1);
    if (p < h.nhosts - 1) children[nchildren++] = leader(&h, a->root, root_host, p + 1);
    for (int i = 0; i < h.nlocal; i++) {
      int r = tutti__topo_rank(h.t, h.host, i);
      if (r != comm->rank) children[nchildren++] = r;
    }
  } else {
    parent = leader(&h, a->root, root_host, p);
  }
  size_t es = a->esize, ce = tutti__chunk_elems(comm, es);
  char *out = a->recvbuf;
  const char *in = comm->rank == a->root ? (const char *)a->sendbuf : out;
  tutti_sendq_t q;
  tutti__sendq_init(&q);
  for (size_t c = 0, nc = tutti__nchunks(a->count, ce); c < nc; c++) {
    size_t off = c * ce * es, len = (c * ce + ce <= a->count ? ce : a->count - c * ce) * es;
    if (parent >= 0) TRY(tutti__recv(comm, parent, out + off, len, a->deadline));
    for (int k = 0; k < nchildren; k++) {
      int slot;
      TRY(tutti__sendq_acquire(comm, &q, a->deadline, &slot));
      TRY(tutti__sendq_post(comm, &q, slot, children[k], in + off, len));
    }
    /* The root's own copy runs while its chunk is on the way. */
    if (in != out) memcpy(out + off, in + off, len);
  }
  return tutti__sendq_drain(comm, &q, a->deadline);
}
