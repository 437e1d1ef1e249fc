/*
 * TUTTI_DETERMINISTIC=1: every reduction folds the ranks' contributions in rank order,
 * ((x0 op x1) op x2) ... op x(n-1), element by element, so a result does not depend on the
 * algorithm the tuner would have picked, the number of chunks, the size of the call or how a
 * group fused it. The vector is cut into n blocks; the owner of each block receives every
 * rank's piece of it (a chunk at a time, all n-1 pieces posted at once) and folds them in
 * rank order; all-reduce then copies the blocks to every rank, reduce sends them to the root.
 * The price is n-1 messages per chunk into each owner instead of a pipeline. Where the
 * transports allow it, the owner folds each piece as it arrives, straight out of the queue
 * (fold_arriving): n = 4 on 2 CPUs, 16 MiB all-reduce, alternating runs: 9.8-11.3 ms with
 * every piece copied to a slot first, 8.4-8.7 ms so.
 */
#include "algo/algo.h"
#include "algo/patterns.h"
#include "kernels/kernels.h"

/* Block b of the input lies at off(b) with len(b) elements. */
typedef struct blocks {
  const size_t *offs, *lens; /* the v-variant arrays, or NULL */
  size_t count, per;         /* else per elements each (per > 0), or count split evenly */
  int n;
} blocks_t;

static void block(const blocks_t *l, int b, size_t *off, size_t *len) {
  if (l->lens) {
    *off = l->offs[b];
    *len = l->lens[b];
  } else if (l->per) {
    *off = (size_t)b * l->per;
    *len = l->per;
  } else {
    tutti__block_range(l->count, l->n, b, off, len);
  }
}

static size_t piece(size_t len, size_t c, size_t ce) {
  size_t at = c * ce;
  return at < len ? (len - at < ce ? len - at : ce) : 0;
}

/* One chunk slot per rank, in scratch: rank i's piece is at base + i * stride. */
typedef struct slots {
  char *base;
  size_t stride;
  tutti_xfer_t *xs; /* 2n transfers: receives from i at i, sends to i at n + i */
} slots_t;

static char *slot(const slots_t *s, int i) { return s->base + (size_t)i * s->stride; }

static tutti_result_t slots_get(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                slots_t *s) {
  int n = comm->nranks;
  s->stride = tutti__chunk_elems(comm, a->esize) * a->esize;
  size_t xoff = ((size_t)n * s->stride + 63) & ~(size_t)63;
  TRY(tutti__scratch(comm, xoff + 2 * (size_t)n * sizeof(tutti_xfer_t), (void **)&s->base));
  s->xs = (tutti_xfer_t *)(s->base + xoff);
  return TUTTI_SUCCESS;
}

/* dst = slot 0 op slot 1 op ... op slot n-1, left to right. */
static void fold(const tutti_coll_args_t *a, char *dst, const slots_t *s, int n, size_t elems) {
  if (n == 1) {
    tutti__copy_if_apart(dst, slot(s, 0), elems * a->esize);
    return;
  }
  tutti__reduce(dst, slot(s, 0), slot(s, 1), elems, a->dtype, a->op);
  for (int i = 2; i < n; i++) tutti__reduce(dst, dst, slot(s, i), elems, a->dtype, a->op);
}

/* The fold of one chunk (elems elements into dst) as the pieces arrive, in rank order: rank
 * 0's piece received into dst (or this rank's own, from its slot), every later one reduced
 * into dst straight out of the queue (tutti__sendrecv_reduce; one at a time, so each element
 * folds in rank order), this rank's own from its slot. The senders' pieces wait in their
 * queues meanwhile: every send of the chunk was posted before any of these receives. */
static tutti_result_t fold_arriving(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                    char *dst, const slots_t *s, size_t elems) {
  int n = comm->nranks, r = comm->rank;
  size_t bytes = elems * a->esize;
  if (r == 0)
    tutti__copy_if_apart(dst, slot(s, 0), bytes);
  else
    TRY(tutti__recv(comm, 0, dst, bytes, a->deadline));
  for (int i = 1; i < n; i++) {
    if (i == r)
      tutti__reduce(dst, dst, slot(s, r), elems, a->dtype, a->op);
    else
      TRY(tutti__sendrecv_reduce(comm, a, -1, NULL, 0, i, dst, dst, 1, slot(s, i), elems));
  }
  return TUTTI_SUCCESS;
}

/* Every rank's piece of this rank's block reaches it and is folded in rank order into out
 * (len(rank) elements). The input is read, never written, except this rank's own block when
 * out is there (in place): that piece is copied to its slot before the fold writes. */
static tutti_result_t reduce_blocks(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                    const blocks_t *l, char *out) {
  int n = comm->nranks, r = comm->rank;
  size_t es = a->esize, ce = tutti__chunk_elems(comm, es), maxlen = 0;
  const char *in = a->sendbuf;
  slots_t sl;
  TRY(slots_get(comm, a, &sl));
  tutti_xfer_t *xs = sl.xs;
  for (int b = 0; b < n; b++) {
    size_t off, len;
    block(l, b, &off, &len);
    if (len > maxlen) maxlen = len;
  }
  size_t myoff, mylen;
  block(l, r, &myoff, &mylen);
  int arriving = 1; /* every peer's transport reduces where the bytes arrive */
  for (int i = 0; i < n; i++)
    if (i != r && !tutti__can_recv_reduce(comm, i)) arriving = 0;
  for (size_t c = 0, nc = tutti__nchunks(maxlen, ce); c < nc; c++) {
    size_t mine = piece(mylen, c, ce);
    for (int k = 1; k < n && mine && !arriving; k++) { /* first: no send waits on a full queue */
      int from = tutti__mod(r - k, n);
      TRY(tutti__irecv(comm, &xs[from], from, slot(&sl, from), mine * es));
    }
    for (int k = 1; k < n; k++) { /* every other owner's piece of chunk c */
      int to = tutti__mod(r + k, n);
      size_t off, len;
      block(l, to, &off, &len);
      size_t p = piece(len, c, ce);
      if (p) TRY(tutti__isend(comm, &xs[n + to], to, in + (off + c * ce) * es, p * es));
    }
    if (mine) memcpy(slot(&sl, r), in + (myoff + c * ce) * es, mine * es);
    if (mine && arriving) TRY(fold_arriving(comm, a, out + c * ce * es, &sl, mine));
    for (int k = 1; k < n; k++) {
      int from = tutti__mod(r - k, n), to = tutti__mod(r + k, n);
      size_t off, len;
      block(l, to, &off, &len);
      if (mine && !arriving) TRY(tutti__wait(comm, &xs[from], a->deadline));
      if (piece(len, c, ce)) TRY(tutti__wait(comm, &xs[n + to], a->deadline));
    }
    if (mine && !arriving) fold(a, out + c * ce * es, &sl, n, mine);
  }
  if (a->op == TUTTI_AVG && mylen) tutti__avg_finish(out, mylen, a->dtype, n);
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__det_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, r = comm->rank;
  size_t es = a->esize;
  char *out = a->recvbuf;
  blocks_t l = {NULL, NULL, a->count, 0, n};
  size_t myoff, mylen;
  block(&l, r, &myoff, &mylen);
  TRY(reduce_blocks(comm, a, &l, out + myoff * es));
  /* Every block to every rank: the input's other blocks have all been sent by now, so in
   * place they may be overwritten. */
  for (int k = 1; k < n; k++) {
    int to = tutti__mod(r + k, n), from = tutti__mod(r - k, n);
    size_t fo, fl;
    block(&l, from, &fo, &fl);
    TRY(tutti__sendrecv(comm, to, out + myoff * es, mylen * es, from, out + fo * es, fl * es,
                        a->deadline));
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__det_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  blocks_t l = {NULL, NULL, 0, a->count, comm->nranks};
  return reduce_blocks(comm, a, &l, a->recvbuf);
}

tutti_result_t tutti__det_reduce_scatterv(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  blocks_t l = {a->displs, a->counts, 0, 0, comm->nranks};
  return reduce_blocks(comm, a, &l, a->recvbuf);
}

/* The root receives every rank's chunk and folds them in rank order. */
tutti_result_t tutti__det_reduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, r = comm->rank;
  size_t es = a->esize, ce = tutti__chunk_elems(comm, es);
  const char *in = a->sendbuf;
  if (r != a->root) {
    tutti_sendq_t q;
    tutti__sendq_init(&q);
    for (size_t c = 0, nc = tutti__nchunks(a->count, ce); c < nc; c++) {
      int slot;
      TRY(tutti__sendq_acquire(comm, &q, a->deadline, &slot));
      TRY(tutti__sendq_post(comm, &q, slot, a->root, in + c * ce * es,
                            piece(a->count, c, ce) * es));
    }
    return tutti__sendq_drain(comm, &q, a->deadline);
  }
  slots_t sl;
  TRY(slots_get(comm, a, &sl));
  tutti_xfer_t *xs = sl.xs;
  char *out = a->recvbuf;
  for (size_t c = 0, nc = tutti__nchunks(a->count, ce); c < nc; c++) {
    size_t p = piece(a->count, c, ce);
    for (int i = 0; i < n; i++)
      if (i != r) TRY(tutti__irecv(comm, &xs[i], i, slot(&sl, i), p * es));
    memcpy(slot(&sl, r), in + c * ce * es, p * es);
    for (int i = 0; i < n; i++)
      if (i != r) TRY(tutti__wait(comm, &xs[i], a->deadline));
    fold(a, out + c * ce * es, &sl, n, p);
  }
  if (a->op == TUTTI_AVG) tutti__avg_finish(out, a->count, a->dtype, n);
  return TUTTI_SUCCESS;
}
