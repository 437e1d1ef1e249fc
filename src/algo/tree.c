/*
 * Binary trees (patterns.h: NCCL's in-order btree and its mirrored or shifted twin).
 *
 * All-reduce is NCCL's double binary tree: tree 0 carries the first half of the vector and
 * tree 1 the second; each half is reduced up its tree to the root and broadcast back down,
 * in chunks, so a chunk moves up (or down) while the next is being received. Most inner nodes
 * of one tree are leaves of the other, so the two halves share the links and the cores.
 * Broadcast and reduce use tree 0 over ranks renumbered so that the root is 0.
 *
 * A node folds its first child's partial, its own data and its second child's partial in that
 * order (children satisfy down0 < rank < down1), every element is reduced at one root and
 * then copied, so all ranks hold the same bits. All messages go in (chunk, tree) order on
 * every rank, which is what keeps the per-peer streams matched and the waits acyclic.
 */
#include "algo/algo.h"
#include "algo/patterns.h"
#include "kernels/kernels.h"

typedef struct node {
  int up, down[2]; /* real ranks, -1 for none */
} node_t;

typedef struct span {
  size_t off, len; /* elements of the vector one tree carries */
} span_t;

static size_t chunk_len(const span_t *s, size_t c, size_t ce) {
  size_t at = c * ce;
  return at < s->len ? (s->len - at < ce ? s->len - at : ce) : 0;
}

/* Receives this chunk from every child into tmp[0], tmp[1] (posted together). */
static tutti_result_t recv_children(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                    const node_t *nd, char *tmp[2], size_t bytes) {
  tutti_xfer_t x[2];
  for (int i = 0; i < 2; i++)
    if (nd->down[i] >= 0) TRY(tutti__irecv(comm, &x[i], nd->down[i], tmp[i], bytes));
  for (int i = 0; i < 2; i++)
    if (nd->down[i] >= 0) TRY(tutti__wait(comm, &x[i], a->deadline));
  return TUTTI_SUCCESS;
}

/* The subtree's partial of one chunk: down0's, then own, then down1's, into acc. Returns
 * where the partial is (own when there are no children). */
static const char *fold_children(const tutti_coll_args_t *a, const node_t *nd, char *tmp[2],
                                 const char *own, char *acc, size_t elems) {
  const char *src = own;
  if (nd->down[0] >= 0) {
    tutti__reduce(acc, tmp[0], src, elems, a->dtype, a->op);
    src = acc;
  }
  if (nd->down[1] >= 0) {
    tutti__reduce(acc, src, tmp[1], elems, a->dtype, a->op);
    src = acc;
  }
  return src;
}

static tutti_result_t send_down(struct tutti_comm *comm, const tutti_coll_args_t *a,
                                tutti_sendq_t *q, const node_t *nd, const char *buf,
                                size_t bytes) {
  for (int i = 0; i < 2; i++) {
    if (nd->down[i] < 0) continue;
    int slot;
    TRY(tutti__sendq_acquire(comm, q, a->deadline, &slot));
    TRY(tutti__sendq_post(comm, q, slot, nd->down[i], buf, bytes));
  }
  return TUTTI_SUCCESS;
}

tutti_result_t tutti__tree_allreduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, r = comm->rank;
  size_t es = a->esize, ce = tutti__chunk_elems(comm, es);
  const char *in = a->sendbuf;
  char *out = a->recvbuf;
  if (n == 1) {
    tutti__copy_if_apart(out, in, a->count * es);
    return TUTTI_SUCCESS;
  }
  node_t nd[2];
  for (int t = 0; t < 2; t++)
    tutti__dtree(n, r, t, &nd[t].up, &nd[t].down[0], &nd[t].down[1]);
  size_t half = (a->count + 1) / 2;
  span_t sp[2] = {{0, half}, {half, a->count - half}};
  char *tmp[2];
  TRY(tutti__scratch(comm, 2 * ce * es, (void **)&tmp[0]));
  tmp[1] = tmp[0] + ce * es;
  size_t nc = tutti__nchunks(half, ce);
  tutti_sendq_t q;
  tutti__sendq_init(&q);
  /* Up: partial sums flow to each root, which completes (and for AVG divides) its chunks. */
  for (size_t c = 0; c < nc; c++)
    for (int t = 0; t < 2; t++) {
      size_t len = chunk_len(&sp[t], c, ce), off = (sp[t].off + c * ce) * es;
      if (!len) continue;
      TRY(recv_children(comm, a, &nd[t], tmp, len * es));
      const char *part = fold_children(a, &nd[t], tmp, in + off, out + off, len);
      if (nd[t].up < 0) {
        if (a->op == TUTTI_AVG) tutti__avg_finish(out + off, len, a->dtype, n);
        continue;
      }
      int slot;
      TRY(tutti__sendq_acquire(comm, &q, a->deadline, &slot));
      TRY(tutti__sendq_post(comm, &q, slot, nd[t].up, part, len * es));
    }
  /* The result lands where the partials were sent from (in place, the input): every send
   * must be complete first. */
  TRY(tutti__sendq_drain(comm, &q, a->deadline));
  for (size_t c = 0; c < nc; c++)
    for (int t = 0; t < 2; t++) {
      size_t len = chunk_len(&sp[t], c, ce), off = (sp[t].off + c * ce) * es;
      if (!len) continue;
      if (nd[t].up >= 0) TRY(tutti__recv(comm, nd[t].up, out + off, len * es, a->deadline));
      TRY(send_down(comm, a, &q, &nd[t], out + off, len * es));
    }
  return tutti__sendq_drain(comm, &q, a->deadline);
}

/* Tree 0 over ranks renumbered so that root is 0, in real ranks. */
static void rooted_node(int n, int rank, int root, node_t *nd) {
  int v = tutti__mod(rank - root, n), u, d0, d1;
  tutti__btree(n, v, &u, &d0, &d1);
  nd->up = u < 0 ? -1 : (u + root) % n;
  nd->down[0] = d0 < 0 ? -1 : (d0 + root) % n;
  nd->down[1] = d1 < 0 ? -1 : (d1 + root) % n;
}

tutti_result_t tutti__tree_broadcast(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks;
  size_t es = a->esize, ce = tutti__chunk_elems(comm, es);
  const char *in = a->sendbuf;
  char *out = a->recvbuf;
  node_t nd;
  rooted_node(n, comm->rank, a->root, &nd);
  span_t all = {0, a->count};
  tutti_sendq_t q;
  tutti__sendq_init(&q);
  for (size_t c = 0, nc = tutti__nchunks(a->count, ce); c < nc; c++) {
    size_t len = chunk_len(&all, c, ce) * es, off = c * ce * es;
    const char *src = nd.up < 0 ? in + off : out + off;
    if (nd.up >= 0) TRY(tutti__recv(comm, nd.up, out + off, len, a->deadline));
    TRY(send_down(comm, a, &q, &nd, src, len));
    /* The root's own copy runs while its chunk is on the way. */
    if (nd.up < 0) tutti__copy_if_apart(out + off, in + off, len);
  }
  return tutti__sendq_drain(comm, &q, a->deadline);
}

/* Only the root writes recvbuf; inner nodes build partials in scratch, one per send slot,
 * reused only once that slot's send has completed. */
tutti_result_t tutti__tree_reduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks;
  size_t es = a->esize, ce = tutti__chunk_elems(comm, es), cbytes = ce * es;
  const char *in = a->sendbuf;
  if (n == 1) {
    tutti__copy_if_apart(a->recvbuf, in, a->count * es);
    return TUTTI_SUCCESS;
  }
  node_t nd;
  rooted_node(n, comm->rank, a->root, &nd);
  int leaf = nd.down[0] < 0 && nd.down[1] < 0;
  char *tmp[2] = {NULL, NULL}, *outs = NULL;
  if (!leaf) {
    TRY(tutti__scratch(comm, cbytes * (2 + TUTTI_SENDQ_SLOTS), (void **)&tmp[0]));
    tmp[1] = tmp[0] + cbytes;
    outs = tmp[1] + cbytes;
  }
  span_t all = {0, a->count};
  tutti_sendq_t q;
  tutti__sendq_init(&q);
  for (size_t c = 0, nc = tutti__nchunks(a->count, ce); c < nc; c++) {
    size_t len = chunk_len(&all, c, ce), off = c * cbytes;
    int slot = -1;
    TRY(recv_children(comm, a, &nd, tmp, len * es));
    if (nd.up >= 0) TRY(tutti__sendq_acquire(comm, &q, a->deadline, &slot));
    char *acc = nd.up < 0 ? (char *)a->recvbuf + off : leaf ? NULL : outs + (size_t)slot * cbytes;
    const char *part = fold_children(a, &nd, tmp, in + off, acc, len);
    if (nd.up >= 0) TRY(tutti__sendq_post(comm, &q, slot, nd.up, part, len * es));
  }
  TRY(tutti__sendq_drain(comm, &q, a->deadline));
  if (nd.up < 0 && a->op == TUTTI_AVG) tutti__avg_finish(a->recvbuf, a->count, a->dtype, n);
  return TUTTI_SUCCESS;
}
