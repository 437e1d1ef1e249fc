/*
 * Hierarchical reduce-scatter: a ring reduce-scatter within each host leaves each local rank
 * the host's sum of the blocks of the ranks its indices stand for on every host (hier.h);
 * then each index group (one rank per host) reduce-scatters those blocks across the hosts,
 * all local ranks at once, so each rank ends with the global sum of its own block. A host
 * link carries (H-1)/H of the input each way, against the flat ring's (n-1)/n. Partial sums
 * live in a working copy of the whole input (scratch): the input is never written.
 *
 * Pipelined: every block is cut into pieces (tutti__hier_pipe_pieces of the input); piece
 * t's cross-host exchange is in flight while the host's ring reduces piece t+1. The exchange
 * is direct: each member sends every other member its host's partial of that member's own
 * block's piece, all at once, and folds the partials of its own block (its only place) into
 * the result. Every rank posts in the same order (piece, then index), so the per-peer
 * streams stay matched.
 */
#include "algo/hier.h"
#include "algo/patterns.h"
#include "kernels/kernels.h"

typedef struct {
  struct tutti_comm *comm;
  const tutti_coll_args_t *a;
  tutti_hier_t *h;
  int pieces, ncover;
  size_t max_piece;        /* elements */
  char *w, *tmp;           /* partial sums of the whole input; one chunk for the ring */
  tutti_hier_pair_t *x[2]; /* per piece parity: ncover * nhosts exchanges */
  char *in[2];             /* per parity: nhosts pieces received for the fold */
} rs_t;

static void piece(const rs_t *s, int p, size_t *off, size_t *len) {
  tutti__block_range(s->a->count, s->pieces, p, off, len);
}

static tutti_result_t local_phase(rs_t *s, int p) {
  size_t po, pl, es = s->a->esize, per = s->a->count;
  piece(s, p, &po, &pl);
  if (s->h->nlocal == 1) {
    for (int r = 0; r < s->comm->nranks; r++)
      memcpy(s->w + ((size_t)r * per + po) * es,
             (const char *)s->a->sendbuf + ((size_t)r * per + po) * es, pl * es);
    return TUTTI_SUCCESS;
  }
  tutti_ring_layout_t l;
  tutti__hier_local_block_parts(s->h, per, po, pl, &l);
  return tutti__ring_group_reduce_scatter(s->comm, s->a, &s->h->local_group, &l, s->a->sendbuf,
                                          s->w, s->tmp);
}

/* Posts piece p's exchange: to member q the host's partial of rank (q, j)'s piece, from
 * member q its partial of this rank's own piece (index j == this rank's local index only: a
 * stand-in index has no block of its own here). */
static tutti_result_t post(rs_t *s, int p) {
  tutti_hier_t *h = s->h;
  int H = h->nhosts, c = 0;
  size_t po, pl, es = s->a->esize, per = s->a->count;
  piece(s, p, &po, &pl);
  TUTTI_HIER_FOR_INDEX(h, j) {
    for (int d = 1; d < H && pl; d++) {
      int q = (h->host + d) % H, peer = tutti__hier_cover(h, q, j);
      tutti_hier_pair_t *e = &s->x[p & 1][c * H + q];
      e->received = j == h->local;
      e->sent = j < tutti__topo_nlocal(h->t, q);
      if (e->received)
        TRY(tutti__irecv(s->comm, &e->recv, peer, s->in[p & 1] + (size_t)q * s->max_piece * es,
                         pl * es));
      if (e->sent)
        TRY(tutti__isend(s->comm, &e->send, peer,
                         s->w + ((size_t)tutti__topo_rank(h->t, q, j) * per + po) * es,
                         pl * es));
    }
    c++;
  }
  return TUTTI_SUCCESS;
}

/* The own block's piece p: this host's partial, then the others' in host order. */
static void fold(rs_t *s, int p) {
  const tutti_coll_args_t *a = s->a;
  size_t po, pl, es = a->esize;
  piece(s, p, &po, &pl);
  char *out = (char *)a->recvbuf + po * es;
  memcpy(out, s->w + ((size_t)s->comm->rank * a->count + po) * es, pl * es);
  for (int q = 0; q < s->h->nhosts; q++)
    if (q != s->h->host)
      tutti__reduce(out, out, s->in[p & 1] + (size_t)q * s->max_piece * es, pl, a->dtype, a->op);
  if (a->op == TUTTI_AVG) tutti__avg_finish(out, pl, a->dtype, s->comm->nranks);
}

tutti_result_t tutti__hier_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t es = a->esize, bytes = a->count * es * (size_t)comm->nranks;
  tutti_hier_t h;
  TRY(tutti__hier_begin(comm, &h));
  rs_t s = {comm, a, &h, tutti__hier_pipe_pieces(bytes), 0, 0, NULL, NULL, {NULL, NULL},
            {NULL, NULL}};
  TUTTI_HIER_FOR_INDEX(&h, j) s.ncover++;
  s.max_piece = (a->count + (size_t)s.pieces - 1) / (size_t)s.pieces;
  size_t npairs = (size_t)s.ncover * (size_t)h.nhosts;
  size_t pair_bytes = (2 * npairs * sizeof(tutti_hier_pair_t) + 63) & ~(size_t)63;
  size_t in_bytes = (size_t)h.nhosts * s.max_piece * es;
  size_t tmp_bytes = tutti__chunk_elems(comm, es) * es;
  char *scratch;
  TRY(tutti__scratch(comm, pair_bytes + 2 * in_bytes + tmp_bytes + bytes, (void **)&scratch));
  memset(scratch, 0, 2 * npairs * sizeof(tutti_hier_pair_t));
  s.x[0] = (tutti_hier_pair_t *)scratch;
  s.x[1] = s.x[0] + npairs;
  s.in[0] = scratch + pair_bytes;
  s.in[1] = s.in[0] + in_bytes;
  s.tmp = s.in[1] + in_bytes;
  s.w = s.tmp + tmp_bytes;
  for (int t = 0; t <= s.pieces; t++) {
    if (t < s.pieces) {
      TRY(local_phase(&s, t));
      TRY(post(&s, t));
    }
    if (t >= 1) {
      TRY(tutti__hier_wait_pairs(comm, s.x[(t - 1) & 1], npairs, a->deadline));
      fold(&s, t - 1);
    }
  }
  return TUTTI_SUCCESS;
}
