/*
 * Hierarchical all-gather: each index group (one rank per host, hier.h) gathers its
 * members' blocks across the hosts, all local ranks at once; then a ring within each host
 * shares what each local rank gathered. A host link carries (H-1)/H of the result each way,
 * against the flat ring's (n-1)/n, and the result is NCCL's (rank r's block at r * count).
 *
 * Pipelined: every block is cut into pieces (tutti__hier_pipe_pieces of the result), and
 * piece t+1's cross-host exchange is in flight while the host's ring shares piece t, so the
 * local phase hides behind the network. The exchange is direct: each member sends its own
 * block's piece to every other member at once (a member standing in for a rank its host
 * lacks has nothing to send). Every rank posts in the same order (piece, then index), so
 * the per-peer streams stay matched.
 */
#include "algo/hier.h"
#include "algo/patterns.h"

typedef struct {
  struct tutti_comm *comm;
  const tutti_coll_args_t *a;
  tutti_hier_t *h;
  int pieces, ncover;
  tutti_hier_pair_t *x[2]; /* per piece parity: ncover * nhosts exchanges */
} ag_t;

static void piece(const ag_t *s, int p, size_t *off, size_t *len) {
  tutti__block_range(s->a->count, s->pieces, p, off, len);
}

/* Posts piece p's exchange in every index group this rank covers. */
static tutti_result_t post(ag_t *s, int p) {
  tutti_hier_t *h = s->h;
  int H = h->nhosts, c = 0;
  size_t po, pl, es = s->a->esize, per = s->a->count * es;
  piece(s, p, &po, &pl);
  char *w = s->a->recvbuf;
  TUTTI_HIER_FOR_INDEX(h, j) {
    for (int d = 1; d < H && pl; d++) {
      int q = (h->host + d) % H, peer = tutti__hier_cover(h, q, j);
      tutti_hier_pair_t *e = &s->x[p & 1][c * H + q];
      /* Only a real rank (g, j) has a block: here, j == this rank's own index. */
      e->sent = j == h->local;
      e->received = j < tutti__topo_nlocal(h->t, q);
      if (e->received)
        TRY(tutti__irecv(s->comm, &e->recv, peer,
                         w + (size_t)tutti__topo_rank(h->t, q, j) * per + po * es, pl * es));
      if (e->sent)
        TRY(tutti__isend(s->comm, &e->send, peer, w + (size_t)s->comm->rank * per + po * es,
                         pl * es));
    }
    c++;
  }
  return TUTTI_SUCCESS;
}

static tutti_result_t share(ag_t *s, int p) {
  if (s->h->nlocal == 1) return TUTTI_SUCCESS;
  size_t po, pl;
  piece(s, p, &po, &pl);
  tutti_ring_layout_t l;
  tutti__hier_local_block_parts(s->h, s->a->count, po, pl, &l);
  return tutti__ring_group_allgather(s->comm, s->a, &s->h->local_group, &l, s->a->recvbuf);
}

tutti_result_t tutti__hier_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t bytes = a->count * a->esize;
  tutti__copy_if_apart((char *)a->recvbuf + (size_t)comm->rank * bytes, a->sendbuf, bytes);
  tutti_hier_t h;
  TRY(tutti__hier_begin(comm, &h));
  ag_t s = {comm, a, &h, tutti__hier_pipe_pieces(bytes * (size_t)comm->nranks), 0,
            {NULL, NULL}};
  TUTTI_HIER_FOR_INDEX(&h, j) s.ncover++;
  size_t npairs = (size_t)s.ncover * (size_t)h.nhosts;
  void *scratch;
  TRY(tutti__scratch(comm, 2 * npairs * sizeof(tutti_hier_pair_t), &scratch));
  memset(scratch, 0, 2 * npairs * sizeof(tutti_hier_pair_t));
  s.x[0] = scratch;
  s.x[1] = s.x[0] + npairs;
  for (int t = 0; t <= s.pieces; t++) {
    if (t < s.pieces) TRY(post(&s, t));
    if (t >= 1) {
      TRY(tutti__hier_wait_pairs(comm, s.x[(t - 1) & 1], npairs, a->deadline));
      TRY(share(&s, t - 1));
    }
  }
  return TUTTI_SUCCESS;
}
