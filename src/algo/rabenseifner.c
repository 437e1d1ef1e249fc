/*
 * Rabenseifner's all-reduce and reduce-scatter: recursive halving (each exchange sends half
 * of the current window and keeps and reduces the other half, log2 p steps, (p-1)/p of the
 * data in all), then for all-reduce recursive doubling to gather the reduced blocks back. The
 * non-power-of-two fold (fold.c) leaves p ranks, virtual rank v owning virtual block v.
 * Every block is reduced by one rank only, the lower group's partial first, and then copied,
 * so all ranks hold the same bits.
 */
#include "algo/algo.h"
#include "algo/patterns.h"
#include "kernels/kernels.h"

/* Where the p virtual blocks lie, in elements: all-reduce splits count evenly among them;
 * reduce-scatter gives virtual block v the real blocks (count elements each) of the ranks v
 * stands for, which are consecutive. */
typedef struct vblocks {
  size_t count;
  int p, rem, scatter;
} vblocks_t;

static size_t voff(const vblocks_t *b, int v) {
  if (b->scatter) return (size_t)tutti__fold_first(v, b->rem) * b->count;
  size_t off, len;
  if (v == b->p) return b->count;
  tutti__block_range(b->count, b->p, v, &off, &len);
  return off;
}

/* The window virtual rank v keeps after the first halving step, in elements. */
static void first_kept(const vblocks_t *b, int v, size_t *off, size_t *len) {
  int half = b->p / 2, klo = (v & half) ? half : 0;
  *off = voff(b, klo);
  *len = voff(b, klo + half) - *off;
}

/*
 * On return virtual block v holds the reduction over all ranks, at w + (voff(v) - wbase) * es.
 * The first step reads src (all blocks, never written); every step's kept window is reduced
 * into w, which holds the elements from wbase on: wbase 0 and w == src to work in place over
 * the whole buffer, or wbase = first_kept's offset so that w need only hold that window.
 * tmp holds first_kept's length.
 */
static tutti_result_t halving(struct tutti_comm *comm, const tutti_coll_args_t *a,
                              const vblocks_t *b, int v, const char *src, char *w, size_t wbase,
                              char *tmp) {
  size_t es = a->esize;
  const char *cur = src; /* where the current window's data is, from element curbase on */
  size_t curbase = 0;
  int lo = 0;
  for (int mask = b->p / 2; mask >= 1; mask >>= 1) {
    int pv = v ^ mask, peer = tutti__fold_rank(pv, b->rem), mid = lo + mask;
    int upper = (v & mask) != 0;
    int klo = upper ? mid : lo, slo = upper ? lo : mid;
    size_t ko = voff(b, klo), kl = voff(b, klo + mask) - ko;
    size_t so = voff(b, slo), sl = voff(b, slo + mask) - so;
    /* The lower half keeps its own first, the upper the peer's: the same order on both. */
    TRY(tutti__sendrecv_reduce(comm, a, peer, cur + (so - curbase) * es, sl * es, peer,
                               w + (ko - wbase) * es, cur + (ko - curbase) * es, !upper, tmp,
                               kl));
    cur = w;
    curbase = wbase;
    lo = klo;
  }
  return TUTTI_SUCCESS;
}

/* The inverse of halving: on return w holds every virtual block. */
static tutti_result_t doubling(struct tutti_comm *comm, const tutti_coll_args_t *a,
                               const vblocks_t *b, int v, char *w) {
  size_t es = a->esize;
  for (int mask = 1; mask < b->p; mask <<= 1) {
    int pv = v ^ mask, peer = tutti__fold_rank(pv, b->rem);
    int mine = v & ~(mask - 1), theirs = pv & ~(mask - 1);
    size_t mo = voff(b, mine), ml = voff(b, mine + mask) - mo;
    size_t to = voff(b, theirs), tl = voff(b, theirs + mask) - to;
    TRY(tutti__sendrecv(comm, peer, w + mo * es, ml * es, peer, w + to * es, tl * es,
                        a->deadline));
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__rab_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, r = comm->rank;
  size_t es = a->esize, bytes = a->count * es;
  char *w = a->recvbuf;
  tutti__copy_if_apart(w, a->sendbuf, bytes);
  if (n == 1) return TUTTI_SUCCESS;
  int p = tutti__pow2_floor(n), rem = n - p, v = tutti__fold_vrank(r, rem);
  char *tmp;
  TRY(tutti__scratch(comm, bytes, (void **)&tmp));
  TRY(tutti__fold_in(comm, a, w, w, a->count, tmp, rem));
  if (v >= 0) {
    vblocks_t b = {a->count, p, rem, 0};
    TRY(halving(comm, a, &b, v, w, w, 0, tmp));
    if (a->op == TUTTI_AVG) {
      size_t o = voff(&b, v);
      tutti__avg_finish(w + o * es, voff(&b, v + 1) - o, a->dtype, n);
    }
    TRY(doubling(comm, a, &b, v, w));
  }
  return tutti__fold_out(comm, a, w, bytes, rem);
}

/*
 * sendbuf holds n blocks of count elements and is never written (in place, recvbuf is its
 * block r, written last). The first halving step reads sendbuf itself and every later one
 * works in scratch that holds only the half kept after it, so scratch is the input's size
 * (two halves: the kept window and the received one) instead of twice it plus a copy. A rank
 * that absorbs a folded partner first receives the partner's input and combines it with its
 * own in that same memory (one input's size more). After halving, virtual rank v holds the
 * real blocks of the one or two ranks it stands for and hands the lower one to the rank that
 * sat out.
 */
tutti_result_t tutti__rab_reduce_scatter(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, r = comm->rank;
  size_t es = a->esize, bytes = a->count * es, total = bytes * (size_t)n;
  const char *in = a->sendbuf;
  if (n == 1) {
    tutti__copy_if_apart(a->recvbuf, in, bytes);
    return TUTTI_SUCCESS;
  }
  int p = tutti__pow2_floor(n), rem = n - p, v = tutti__fold_vrank(r, rem);
  if (v < 0) { /* sits out: hand over the input, get this rank's block back */
    TRY(tutti__fold_in(comm, a, (char *)in, in, a->count * (size_t)n, NULL, rem));
    return tutti__fold_out(comm, a, a->recvbuf, bytes, rem);
  }
  vblocks_t b = {a->count, p, rem, 1};
  size_t ko, kl;
  first_kept(&b, v, &ko, &kl);
  int folds = r < 2 * rem;
  char *scratch, *w, *tmp;
  size_t wbase;
  TRY(tutti__scratch(comm, (folds ? total : 2 * kl * es) + (folds ? kl * es : 0),
                     (void **)&scratch));
  if (folds) {
    /* The partner's input lands in scratch and is combined there, lower rank first; halving
     * then works in place over it. */
    TRY(tutti__fold_in(comm, a, scratch, in, a->count * (size_t)n, scratch, rem));
    in = scratch;
    w = scratch;
    wbase = 0;
    tmp = scratch + total;
  } else {
    w = scratch;
    wbase = ko;
    tmp = scratch + kl * es;
  }
  TRY(halving(comm, a, &b, v, in, w, wbase, tmp));
  int first = tutti__fold_first(v, rem);
  size_t nb = (size_t)(tutti__fold_first(v + 1, rem) - first);
  char *mine = w + ((size_t)first * a->count - wbase) * es;
  if (a->op == TUTTI_AVG) tutti__avg_finish(mine, nb * a->count, a->dtype, n);
  if (nb == 2) {
    TRY(tutti__fold_out(comm, a, mine, bytes, rem));
    mine += bytes;
  }
  memcpy(a->recvbuf, mine, bytes);
  return TUTTI_SUCCESS;
}
