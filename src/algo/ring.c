/*
 * Pipelined ring: reduce-scatter, all-gather, and all-reduce as reduce-scatter followed by
 * all-gather. Each step moves one block to the right neighbour in chunks, so the reduction
 * of one chunk overlaps the transfer of the next. Every block is reduced along one chain and
 * then copied, so all ranks end with bit-identical results.
 */
#include <string.h>

#include "algo/algo.h"
#include "algo/patterns.h"
#include "kernels/kernels.h"

/* Blocks of `per` elements each, or (per == 0) count split as evenly as possible. */
typedef struct layout {
  size_t count;
  size_t per;
  int n;
} layout_t;

static void block(const layout_t *l, int b, size_t *off, size_t *len) {
  if (l->per) {
    *off = (size_t)b * l->per;
    *len = l->per;
  } else {
    tutti__block_range(l->count, l->n, b, off, len);
  }
}

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }
static size_t chunk_len(size_t len, size_t c, size_t ce) {
  return c * ce < len ? min_sz(ce, len - c * ce) : 0;
}

/* On entry W holds this rank's block; on return it holds every block. */
static tutti_result_t allgather_phase(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                      const layout_t *l, char *w) {
  int n = comm->nranks, r = comm->rank;
  int right = tutti__ring_right(r, n), left = tutti__ring_left(r, n);
  size_t es = a->esize, ce = tutti__chunk_elems(comm, es);
  for (int s = 0; s < n - 1; s++) {
    size_t so, sl, ro, rl;
    block(l, tutti__mod(r - s, n), &so, &sl);
    block(l, tutti__mod(r - s - 1, n), &ro, &rl);
    size_t nc = tutti__nchunks(sl > rl ? sl : rl, ce);
    for (size_t c = 0; c < nc; c++) {
      size_t cs = chunk_len(sl, c, ce), cr = chunk_len(rl, c, ce);
      TRY(tutti__sendrecv(comm, right, w + (so + c * ce) * es, cs * es, left,
                          w + (ro + c * ce) * es, cr * es, a->deadline));
    }
  }
  return TUTTI_SUCCESS;
}

/* Where reduce-scatter keeps partial sums: in W at the block's own offset (all-reduce), or
 * alternating between two block-sized buffers and finally `final` (reduce-scatter, whose
 * input must not be written). */
typedef struct partials {
  char *w;
  char *buf[2];
  char *final;
} partials_t;

/* After step s of n-1, rank r has combined block (r - s - 2) from ranks r-s-1 .. r; after the
 * last step it holds the complete reduction of its own block r. */
static tutti_result_t reduce_scatter_phase(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                           const layout_t *l, const char *in,
                                           const partials_t *p, char *tmp) {
  int n = comm->nranks, r = comm->rank;
  int right = tutti__ring_right(r, n), left = tutti__ring_left(r, n);
  size_t es = a->esize, ce = tutti__chunk_elems(comm, es);
  for (int s = 0; s < n - 1; s++) {
    size_t so, sl, ro, rl;
    block(l, tutti__mod(r - s - 1, n), &so, &sl);
    block(l, tutti__mod(r - s - 2, n), &ro, &rl);
    const char *src = s == 0 ? in + so * es : p->w ? p->w + so * es : p->buf[(s - 1) & 1];
    char *dst = p->w ? p->w + ro * es : s == n - 2 ? p->final : p->buf[s & 1];
    const char *own = in + ro * es;
    size_t nc = tutti__nchunks(sl > rl ? sl : rl, ce);
    for (size_t c = 0; c < nc; c++) {
      size_t cs = chunk_len(sl, c, ce), cr = chunk_len(rl, c, ce), at = c * ce * es;
      TRY(tutti__sendrecv(comm, right, src + at, cs * es, left, tmp, cr * es, a->deadline));
      if (cr) tutti__reduce(dst + at, own + at, tmp, cr, a->dtype, a->op);
    }
  }
  return TUTTI_SUCCESS;
}

static void copy_if_apart(void *dst, const void *src, size_t bytes) {
  if (dst != src) memmove(dst, src, bytes);
}

tutti_result_t tutti__ring_allgather(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t bytes = a->count * a->esize;
  char *w = a->recvbuf;
  copy_if_apart(w + (size_t)comm->rank * bytes, a->sendbuf, bytes);
  if (comm->nranks == 1) return TUTTI_SUCCESS;
  layout_t l = {a->count * (size_t)comm->nranks, a->count, comm->nranks};
  return allgather_phase(comm, a, &l, w);
}

tutti_result_t tutti__ring_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  if (comm->nranks == 1) {
    copy_if_apart(a->recvbuf, a->sendbuf, a->count * a->esize);
    return TUTTI_SUCCESS;
  }
  void *tmp;
  TRY(tutti__scratch(comm, tutti__chunk_elems(comm, a->esize) * a->esize, &tmp));
  layout_t l = {a->count, 0, comm->nranks};
  partials_t p = {a->recvbuf, {NULL, NULL}, NULL};
  TRY(reduce_scatter_phase(comm, a, &l, a->sendbuf, &p, tmp));
  if (a->op == TUTTI_AVG) {
    size_t off, len;
    block(&l, comm->rank, &off, &len);
    tutti__avg_finish((char *)a->recvbuf + off * a->esize, len, a->dtype, comm->nranks);
  }
  return allgather_phase(comm, a, &l, a->recvbuf);
}

tutti_result_t tutti__ring_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  size_t bytes = a->count * a->esize;
  if (comm->nranks == 1) {
    copy_if_apart(a->recvbuf, a->sendbuf, bytes);
    return TUTTI_SUCCESS;
  }
  size_t tmp_bytes = tutti__chunk_elems(comm, a->esize) * a->esize;
  char *scratch;
  TRY(tutti__scratch(comm, tmp_bytes + 2 * bytes, (void **)&scratch));
  layout_t l = {a->count * (size_t)comm->nranks, a->count, comm->nranks};
  partials_t p = {NULL, {scratch + tmp_bytes, scratch + tmp_bytes + bytes}, a->recvbuf};
  TRY(reduce_scatter_phase(comm, a, &l, a->sendbuf, &p, scratch));
  if (a->op == TUTTI_AVG) tutti__avg_finish(a->recvbuf, a->count, a->dtype, comm->nranks);
  return TUTTI_SUCCESS;
}
