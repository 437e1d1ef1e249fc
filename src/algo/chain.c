/*
 * Pipelined chains for broadcast (away from the root) and reduce (toward the root). A chain
 * has no cycle, so a window of sends in flight cannot deadlock: the last rank only
 * receives, and every rank's sends drain once the ranks after it do. The chain visits the
 * ranks host by host (core/topo.h), so it crosses each host's link once.
 */
#include <string.h>

#include "algo/algo.h"
#include "algo/patterns.h"
#include "core/topo.h"
#include "kernels/kernels.h"

tutti_result_t tutti__chain_broadcast(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, r = comm->rank;
  size_t es = a->esize, ce = tutti__chunk_elems(comm, es);
  char *out = a->recvbuf;
  const char *in = a->sendbuf;
  const tutti_topo_t *t = tutti__topo(comm);
  if (!t) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for the topology");
  int me = t->pos_of[r];
  int pos = tutti__chain_pos_from_root(me, t->pos_of[a->root], n);
  int prev = t->ranks[tutti__ring_left(me, n)], next = t->ranks[tutti__ring_right(me, n)];
  int is_root = pos == 0, is_last = pos == n - 1;
  tutti_sendq_t q;
  tutti__sendq_init(&q);
  for (size_t c = 0, nc = tutti__nchunks(a->count, ce); c < nc; c++) {
    size_t off = c * ce * es, len = (c * ce + ce <= a->count ? ce : a->count - c * ce) * es;
    const char *src = is_root ? in + off : out + off;
    if (!is_root) TRY(tutti__recv(comm, prev, out + off, len, a->deadline));
    if (!is_last) {
      int slot;
      TRY(tutti__sendq_acquire(comm, &q, a->deadline, &slot));
      TRY(tutti__sendq_post(comm, &q, slot, next, src, len));
    }
    /* The root's own copy runs while its chunk is on the way. */
    if (is_root && out != in) tutti__copy(out + off, in + off, len, comm->recv_nt);
  }
  return tutti__sendq_drain(comm, &q, a->deadline);
}

tutti_result_t tutti__chain_reduce(struct tutti_comm *comm, const tutti_coll_args_t *a) {
  int n = comm->nranks, r = comm->rank;
  size_t es = a->esize, ce = tutti__chunk_elems(comm, es), cbytes = ce * es;
  const char *in = a->sendbuf;
  if (n == 1) {
    if (a->recvbuf != a->sendbuf) memmove(a->recvbuf, a->sendbuf, a->count * es);
    return TUTTI_SUCCESS;
  }
  const tutti_topo_t *t = tutti__topo(comm);
  if (!t) return tutti__error(comm, TUTTI_ERR_SYSTEM, "out of memory for the topology");
  int me = t->pos_of[r];
  int pos = tutti__chain_pos_to_root(me, t->pos_of[a->root], n);
  int prev = t->ranks[tutti__ring_left(me, n)], next = t->ranks[tutti__ring_right(me, n)];
  int is_first = pos == 0, is_root = pos == n - 1;
  /* Scratch: one receive chunk plus one outgoing partial per send slot, reused only after
   * that slot's send has completed. */
  char *tmp = NULL, *outs = NULL;
  if (!is_first) {
    TRY(tutti__scratch(comm, cbytes * (1 + TUTTI_SENDQ_SLOTS), (void **)&tmp));
    outs = tmp + cbytes;
  }
  tutti_sendq_t q;
  tutti__sendq_init(&q);
  for (size_t c = 0, nc = tutti__nchunks(a->count, ce); c < nc; c++) {
    size_t elems = c * ce + ce <= a->count ? ce : a->count - c * ce, off = c * cbytes;
    int slot;
    if (is_first) {
      TRY(tutti__sendq_acquire(comm, &q, a->deadline, &slot));
      TRY(tutti__sendq_post(comm, &q, slot, next, in + off, elems * es));
      continue;
    }
    if (is_root) {
      TRY(tutti__sendrecv_reduce(comm, a, next, NULL, 0, prev, (char *)a->recvbuf + off,
                                 in + off, 1, tmp, elems));
    } else {
      TRY(tutti__sendq_acquire(comm, &q, a->deadline, &slot));
      char *partial = outs + (size_t)slot * cbytes;
      TRY(tutti__sendrecv_reduce(comm, a, next, NULL, 0, prev, partial, in + off, 1, tmp,
                                 elems));
      TRY(tutti__sendq_post(comm, &q, slot, next, partial, elems * es));
    }
  }
  TRY(tutti__sendq_drain(comm, &q, a->deadline));
  if (is_root && a->op == TUTTI_AVG) tutti__avg_finish(a->recvbuf, a->count, a->dtype, n);
  return TUTTI_SUCCESS;
}
