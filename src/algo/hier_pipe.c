/*
 * The hierarchical all-reduce's bandwidth path (hier.h, tutti__hier_pipe_allreduce): the
 * vector is cut into pieces, and the cross-host phase of a piece runs while this rank does
 * the local phases of the next ones, so on a network 10-100x slower than shared memory the
 * local phases hide behind it instead of adding to it.
 *
 * Per piece: a ring reduce-scatter among the host's ranks leaves each local rank the host's
 * sum of the piece's slices it covers (hier.h); for each covered slice, its index group (one
 * rank per host) reduce-scatters it and all-gathers it back with direct exchanges (every
 * member sends each other member that member's block at once), which post in one go and so
 * need no attention while the local phases run; a ring all-gather in the host finishes.
 * A host link carries 2(H-1)/H of the vector each way, as the ring form.
 *
 * Schedule, step t = 0 .. P+1 on every rank alike: the local reduce-scatter of piece t and
 * the posting of its cross-host reduce-scatter; the completion of piece t-1's (each block
 * folded at its owner only) and the posting of its all-gather; the completion of piece t-2's
 * all-gather and its local all-gather. Waiting for the local phases drives every transport,
 * so the posted cross-host transfers move meanwhile. Everything a step waits for was posted
 * by its peers in this or an earlier step, and every rank posts to a peer in the same order
 * (step, then index, then reduce-scatter before all-gather), so the waits cannot form a
 * cycle and the per-peer streams stay matched.
 */
#include "algo/hier.h"
#include "algo/patterns.h"
#include "kernels/kernels.h"

typedef tutti_hier_pair_t pair_t;

typedef struct {
  struct tutti_comm *comm;
  const tutti_coll_args_t *a;
  tutti_hier_t *h;
  int pieces, ncover;
  size_t es, max_block; /* elements of the largest block of any index group */
  char *w;              /* the result, built in place */
  char *tmp;            /* one chunk, for the local ring */
  pair_t *rs[2], *ag[2]; /* per piece parity: ncover * nhosts exchanges each */
  char *in[2];          /* per parity: ncover * nhosts blocks received for the fold */
} pipe_t;

static void piece(const pipe_t *s, int p, size_t *off, size_t *len) {
  tutti__block_range(s->a->count, s->pieces, p, off, len);
}

/* The slice of index j of piece p (elements from the vector's start), and member q's block
 * of it. */
static void block(const pipe_t *s, int p, int j, int q, size_t *off, size_t *len) {
  size_t po, pl, so, sl, bo;
  piece(s, p, &po, &pl);
  tutti__block_range(pl, s->h->max_local, j, &so, &sl);
  tutti__block_range(sl, s->h->nhosts, q, &bo, len);
  *off = po + so + bo;
}

static tutti_result_t local_reduce_scatter(pipe_t *s, int p) {
  size_t po, pl, es = s->es;
  piece(s, p, &po, &pl);
  const char *in = (const char *)s->a->sendbuf + po * es;
  if (s->h->nlocal == 1) {
    tutti__copy_if_apart(s->w + po * es, in, pl * es);
    return TUTTI_SUCCESS;
  }
  tutti_ring_layout_t l;
  tutti__hier_local_slices(s->h, pl, &l);
  return tutti__ring_group_reduce_scatter(s->comm, s->a, &s->h->local_group, &l, in,
                                          s->w + po * es, s->tmp);
}

static tutti_result_t local_allgather(pipe_t *s, int p) {
  if (s->h->nlocal == 1) return TUTTI_SUCCESS;
  size_t po, pl;
  piece(s, p, &po, &pl);
  tutti_ring_layout_t l;
  tutti__hier_local_slices(s->h, pl, &l);
  return tutti__ring_group_allgather(s->comm, s->a, &s->h->local_group, &l, s->w + po * s->es);
}

/* Posts piece p's cross-host reduce-scatter: block q of each covered slice to member q, and
 * every other member's copy of this member's block into s->in. */
static tutti_result_t post_reduce_scatter(pipe_t *s, int p) {
  tutti_hier_t *h = s->h;
  int H = h->nhosts, c = 0;
  pair_t *x = s->rs[p & 1];
  char *in = s->in[p & 1];
  TUTTI_HIER_FOR_INDEX(h, j) {
    size_t mo, ml;
    block(s, p, j, h->host, &mo, &ml);
    for (int d = 1; d < H; d++) {
      int q = (h->host + d) % H, peer = tutti__hier_cover(h, q, j);
      pair_t *e = &x[c * H + q];
      size_t off, len;
      block(s, p, j, q, &off, &len);
      e->received = ml > 0;
      e->sent = len > 0;
      if (e->received)
        TRY(tutti__irecv(s->comm, &e->recv, peer, in + ((size_t)c * H + q) * s->max_block * s->es,
                         ml * s->es));
      if (e->sent) TRY(tutti__isend(s->comm, &e->send, peer, s->w + off * s->es, len * s->es));
    }
    c++;
  }
  return TUTTI_SUCCESS;
}

static tutti_result_t wait_pairs(pipe_t *s, pair_t *x) {
  return tutti__hier_wait_pairs(s->comm, x, (size_t)s->ncover * (size_t)s->h->nhosts,
                                s->a->deadline);
}

/* Completes piece p's reduce-scatter (this member's blocks folded here, their only place,
 * AVG divided) and posts its all-gather: each folded block to every other member, theirs
 * into place. The reduce-scatter's sends are complete first: the all-gather overwrites the
 * blocks they read. */
static tutti_result_t fold_and_post_allgather(pipe_t *s, int p) {
  tutti_hier_t *h = s->h;
  const tutti_coll_args_t *a = s->a;
  int H = h->nhosts, c = 0;
  TRY(wait_pairs(s, s->rs[p & 1]));
  pair_t *x = s->ag[p & 1];
  char *in = s->in[p & 1];
  TUTTI_HIER_FOR_INDEX(h, j) {
    size_t mo, ml;
    block(s, p, j, h->host, &mo, &ml);
    char *mine = s->w + mo * s->es;
    for (int q = 0; q < H && ml; q++)
      if (q != h->host)
        tutti__reduce(mine, mine, in + ((size_t)c * H + q) * s->max_block * s->es, ml, a->dtype,
                      a->op);
    if (a->op == TUTTI_AVG) tutti__avg_finish(mine, ml, a->dtype, s->comm->nranks);
    for (int d = 1; d < H; d++) {
      int q = (h->host + d) % H, peer = tutti__hier_cover(h, q, j);
      pair_t *e = &x[c * H + q];
      size_t off, len;
      block(s, p, j, q, &off, &len);
      e->received = len > 0;
      e->sent = ml > 0;
      if (e->received)
        TRY(tutti__irecv(s->comm, &e->recv, peer, s->w + off * s->es, len * s->es));
      if (e->sent) TRY(tutti__isend(s->comm, &e->send, peer, mine, ml * s->es));
    }
    c++;
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__hier_pipe_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                          tutti_hier_t *h) {
  pipe_t s = {comm, a, h, 0, 0, a->esize, 0, a->recvbuf, NULL, {NULL, NULL}, {NULL, NULL},
              {NULL, NULL}};
  s.pieces = tutti__hier_pipe_pieces(a->count * a->esize);
  TUTTI_HIER_FOR_INDEX(h, j) s.ncover++;
  /* The largest block: of the largest piece's largest slice. */
  size_t pe = (a->count + (size_t)s.pieces - 1) / (size_t)s.pieces;
  size_t se = (pe + (size_t)h->max_local - 1) / (size_t)h->max_local;
  s.max_block = (se + (size_t)h->nhosts - 1) / (size_t)h->nhosts;
  size_t npairs = (size_t)s.ncover * (size_t)h->nhosts;
  size_t pair_bytes = (4 * npairs * sizeof(pair_t) + 63) & ~(size_t)63; /* blocks aligned */
  size_t in_bytes = npairs * s.max_block * s.es;
  size_t tmp_bytes = tutti__chunk_elems(comm, s.es) * s.es;
  char *scratch;
  TRY(tutti__scratch(comm, pair_bytes + 2 * in_bytes + tmp_bytes, (void **)&scratch));
  pair_t *pairs = (pair_t *)scratch;
  memset(pairs, 0, 4 * npairs * sizeof(pair_t));
  for (int i = 0; i < 2; i++) {
    s.rs[i] = pairs + (size_t)i * npairs;
    s.ag[i] = pairs + (size_t)(2 + i) * npairs;
    s.in[i] = scratch + pair_bytes + (size_t)i * in_bytes;
  }
  s.tmp = scratch + pair_bytes + 2 * in_bytes;
  for (int t = 0; t < s.pieces + 2; t++) {
    if (t < s.pieces) {
      TRY(local_reduce_scatter(&s, t));
      TRY(post_reduce_scatter(&s, t));
    }
    if (t >= 1 && t <= s.pieces) TRY(fold_and_post_allgather(&s, t - 1));
    if (t >= 2) {
      TRY(wait_pairs(&s, s.ag[(t - 2) & 1]));
      TRY(local_allgather(&s, t - 2));
    }
  }
  return TUTTI_SUCCESS;
}
